/*
 * test_meta.c — the metadata guard (src/builtins/meta.c).  Landlock does not
 * control chmod, chown, xattrs or timestamps, so without the guard every
 * "denied" case below succeeds (we run as root).  Each test runs real
 * processes — the escape helper's probes, /bin/chmod, /bin/chown,
 * /usr/bin/touch, python3 — and checks both what they saw and the file on
 * the host.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"
#include "util.h" /* sl_path_under: linked from libsandlock.a */

/* A temp dir with ro/ (granted read-only), rw/ (granted writable) and
 * na/ (not granted), each holding f (mode 0644). */
struct fx {
	char dir[TU_TMPDIR_LEN];
	char ro[128], rw[128], na[128];
	char rof[160], rwf[160], naf[160];
};

static bool fx_make(struct fx *x)
{
	if (!tu_mkdtemp(x->dir, "meta"))
		return false;
	snprintf(x->ro, sizeof x->ro, "%s/ro", x->dir);
	snprintf(x->rw, sizeof x->rw, "%s/rw", x->dir);
	snprintf(x->na, sizeof x->na, "%s/na", x->dir);
	snprintf(x->rof, sizeof x->rof, "%s/f", x->ro);
	snprintf(x->rwf, sizeof x->rwf, "%s/f", x->rw);
	snprintf(x->naf, sizeof x->naf, "%s/f", x->na);
	const char *dirs[] = { x->ro, x->rw, x->na }, *files[] = { x->rof, x->rwf, x->naf };
	for (int i = 0; i < 3; i++)
		if (mkdir(dirs[i], 0755) < 0 || !tu_write_file(files[i], "data") ||
		    chmod(files[i], 0644) < 0)
			return false;
	return true;
}

/* The escape helper's sandbox plus ro read-only and rw writable. */
static sandlock_builder_t *fx_builder(const struct fx *x)
{
	sandlock_builder_t *b = tu_escape_builder();
	sandlock_sandbox_builder_fs_read(b, x->ro);
	sandlock_sandbox_builder_fs_write(b, x->rw);
	return b;
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 ? st.st_mode & 07777 : (mode_t)-1;
}

static long long mtime_of(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (long long)st.st_mtime : -1;
}

/* Run argv in the sandbox b (consumed); true if stdout is exactly want + "\n". */
static bool says(sandlock_builder_t *b, const char *const *argv, const char *want)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return false;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	if (!r)
		return false;
	char line[256];
	snprintf(line, sizeof line, "%s\n", want);
	bool ok = tu_out_is(r, line);
	if (!ok) {
		char *err = sandlock_result_stderr(r);
		fprintf(stderr, "  its stderr: '%s'\n", err ? err : "");
		sandlock_string_free(err);
	}
	sandlock_result_free(r);
	return ok;
}

/* `escape probe a1 [a2 [a3]]` in b; true if it printed want. */
static bool probe(sandlock_builder_t *b, const char *p, const char *a1, const char *a2,
                  const char *a3, const char *want)
{
	const char *argv[] = { tu_escape_path(), p, a1, a2, a3, NULL };
	return says(b, argv, want);
}

/* Exit code of argv run in b (consumed), or -1. */
static int exit_of(sandlock_builder_t *b, const char *const *argv)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return -1;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	if (!r)
		return -1;
	int rc = sandlock_result_exit_code(r);
	sandlock_result_free(r);
	return rc;
}

/* ---------------- the rule ---------------- */

TEST(path_under_is_componentwise)
{
	CHECK(sl_path_under("/tmp/a", "/tmp/a"));
	CHECK(sl_path_under("/tmp/a/b/c", "/tmp/a"));
	CHECK(sl_path_under("/tmp/a/b", "/tmp/a/"));
	CHECK(!sl_path_under("/tmp/ab", "/tmp/a"));
	CHECK(!sl_path_under("/tmp/ab/c", "/tmp/a"));
	CHECK(!sl_path_under("/tmp", "/tmp/a"));
	CHECK(sl_path_under("/x", "/"));
}

TEST(chmod_read_only_tree_denied)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	CHECK(probe(fx_builder(&x), "chmod", x.rof, "777", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	CHECK(probe(fx_builder(&x), "chmod", x.naf, "777", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(x.naf), 0644);
	/* a real program sees the same */
	const char *argv[] = { "/bin/chmod", "0777", x.rof, NULL };
	CHECK(exit_of(sandlock_sandbox_builder_fs_read(fx_builder(&x), "/bin"), argv) != 0);
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	tu_rm_rf(x.dir);
}

TEST(chmod_writable_tree_allowed)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	CHECK(probe(fx_builder(&x), "chmod", x.rwf, "600", NULL, "ok"));
	CHECK_EQ_INT(mode_of(x.rwf), 0600);
	const char *argv[] = { "/bin/chmod", "0751", x.rwf, NULL };
	CHECK_EQ_INT(exit_of(sandlock_sandbox_builder_fs_read(fx_builder(&x), "/bin"), argv), 0);
	CHECK_EQ_INT(mode_of(x.rwf), 0751);
	tu_rm_rf(x.dir);
}

/* fchmodat2 (no glibc wrapper yet) is guarded too, also by number. */
TEST(fchmodat2_guarded)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	CHECK(probe(fx_builder(&x), "fchmodat2_nofollow", x.rof, "777", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	CHECK(probe(fx_builder(&x), "fchmodat2_nofollow", x.rwf, "640", NULL, "ok"));
	CHECK_EQ_INT(mode_of(x.rwf), 0640);
	tu_rm_rf(x.dir);
}

TEST(chown_follows_tree_and_kernel_rules)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	char uid[16], gid[16];
	snprintf(uid, sizeof uid, "%d", (int)geteuid());
	snprintf(gid, sizeof gid, "%d", (int)getegid());
	/* to ourselves: allowed only in the writable tree */
	CHECK(probe(fx_builder(&x), "chown", x.rof, uid, gid, "errno=EPERM"));
	CHECK(probe(fx_builder(&x), "chown", x.rwf, uid, gid, "ok"));
	const char *argv[] = { "/bin/chown", "-h", uid, x.rwf, NULL };
	CHECK_EQ_INT(exit_of(sandlock_sandbox_builder_fs_read(fx_builder(&x), "/bin"), argv), 0);
	/* to another user: the kernel needs CAP_CHOWN, which the sandbox has not
	 * (the supervisor acts with its capabilities lowered) */
	CHECK(probe(fx_builder(&x), "chown", x.rwf, "12345", "-1", "errno=EPERM"));
	struct stat st;
	REQUIRE(stat(x.rwf, &st) == 0);
	CHECK_EQ_INT(st.st_uid, geteuid());
	if (geteuid() == 0) { /* control: root outside the sandbox can */
		CHECK_EQ_INT(chown(x.naf, 12345, (gid_t)-1), 0);
		CHECK(stat(x.naf, &st) == 0 && st.st_uid == 12345);
	}
	tu_rm_rf(x.dir);
}

static bool user_xattrs_supported(const char *dir)
{
	char f[160];
	snprintf(f, sizeof f, "%s/xattr-probe", dir);
	bool ok = tu_write_file(f, "") && setxattr(f, "user.sandlock", "1", 1, 0) == 0;
	unlink(f);
	return ok;
}

TEST(setxattr_follows_tree)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	if (!user_xattrs_supported(x.dir)) {
		fprintf(stderr, "  skipped: no user xattrs in /tmp\n");
		tu_rm_rf(x.dir);
		return;
	}
	char v[16];
	CHECK(probe(fx_builder(&x), "setxattr", x.rof, "user.k", "bad", "errno=EPERM"));
	CHECK(getxattr(x.rof, "user.k", v, sizeof v) < 0);
	CHECK(probe(fx_builder(&x), "setxattr", x.rwf, "user.k", "good", "ok"));
	ssize_t n = getxattr(x.rwf, "user.k", v, sizeof v);
	CHECK(n == 4 && memcmp(v, "good", 4) == 0);
	/* trusted.* needs CAP_SYS_ADMIN: not even in the writable tree */
	CHECK(probe(fx_builder(&x), "setxattr", x.rwf, "trusted.k", "x", "errno=EPERM"));
	tu_rm_rf(x.dir);
}

TEST(timestamps_follow_tree)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	long long before = mtime_of(x.rof);
	CHECK(probe(fx_builder(&x), "utimes", x.rof, "1000000000", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mtime_of(x.rof), before);
	CHECK(probe(fx_builder(&x), "utimes", x.rwf, "1000000000", NULL, "ok"));
	CHECK_EQ_INT(mtime_of(x.rwf), 1000000000);
	/* touch: same outcome with a real program */
	const char *ro[] = { "/usr/bin/touch", "-c", "-d", "@1200000000", x.rof, NULL };
	CHECK(exit_of(fx_builder(&x), ro) != 0);
	CHECK_EQ_INT(mtime_of(x.rof), before);
	const char *rw[] = { "/usr/bin/touch", "-c", "-d", "@1200000000", x.rwf, NULL };
	CHECK_EQ_INT(exit_of(fx_builder(&x), rw), 0);
	CHECK_EQ_INT(mtime_of(x.rwf), 1200000000);
	tu_rm_rf(x.dir);
}

/* A relative path is resolved from the caller's cwd, not the supervisor's. */
TEST(relative_path_uses_child_cwd)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	CHECK(probe(sandlock_sandbox_builder_cwd(fx_builder(&x), x.rw), "chmod", "f", "600", NULL,
	            "ok"));
	CHECK_EQ_INT(mode_of(x.rwf), 0600);
	CHECK(probe(sandlock_sandbox_builder_cwd(fx_builder(&x), x.ro), "chmod", "f", "777", NULL,
	            "errno=EPERM"));
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	tu_rm_rf(x.dir);
}

/* The decision is on the object the call reaches, not on the name given. */
TEST(symlink_out_of_writable_tree)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	char link[200];
	snprintf(link, sizeof link, "%s/link", x.rw);
	REQUIRE(symlink(x.rof, link) == 0);
	CHECK(probe(fx_builder(&x), "chmod", link, "777", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	char uid[16], gid[16];
	snprintf(uid, sizeof uid, "%d", (int)geteuid());
	snprintf(gid, sizeof gid, "%d", (int)getegid());
	CHECK(probe(fx_builder(&x), "chown", link, uid, gid, "errno=EPERM"));
	/* the link itself lives in the writable tree */
	CHECK(probe(fx_builder(&x), "lchown", link, uid, gid, "ok"));
	/* chmod of a symlink itself: Linux has no such thing */
	CHECK(probe(fx_builder(&x), "fchmodat2_nofollow", link, "777", NULL, "errno=EOPNOTSUPP"));
	tu_rm_rf(x.dir);
}

/* Reading is enough to get an fd; the fd must not be enough to chmod. */
TEST(fchmod_on_read_only_fd_denied)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	CHECK(probe(fx_builder(&x), "fchmod_ro", x.rof, "777", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	CHECK(probe(fx_builder(&x), "fchmod_ro", x.rwf, "600", NULL, "ok"));
	CHECK_EQ_INT(mode_of(x.rwf), 0600);
	tu_rm_rf(x.dir);
}

TEST(fs_deny_inside_writable_tree_denied)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	char sec[160], secf[200];
	snprintf(sec, sizeof sec, "%s/secret", x.rw);
	snprintf(secf, sizeof secf, "%s/f", sec);
	REQUIRE(mkdir(sec, 0755) == 0 && tu_write_file(secf, "s") && chmod(secf, 0644) == 0);
	sandlock_builder_t *b = fx_builder(&x);
	sandlock_sandbox_builder_fs_deny(b, sec);
	CHECK(probe(b, "chmod", secf, "777", NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(secf), 0644);
	b = fx_builder(&x);
	sandlock_sandbox_builder_fs_deny(b, sec);
	CHECK(probe(b, "chmod", x.rwf, "600", NULL, "ok"));
	CHECK_EQ_INT(mode_of(x.rwf), 0600);
	tu_rm_rf(x.dir);
}

/* fs_write /X/a must not cover /X/ab. */
TEST(sibling_with_common_prefix_denied)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	char ab[160], abf[200];
	snprintf(ab, sizeof ab, "%sx", x.rw); /* .../rwx next to .../rw */
	snprintf(abf, sizeof abf, "%s/f", ab);
	REQUIRE(mkdir(ab, 0755) == 0 && tu_write_file(abf, "d") && chmod(abf, 0644) == 0);
	CHECK(probe(sandlock_sandbox_builder_fs_read(fx_builder(&x), ab), "chmod", abf, "777",
	            NULL, "errno=EPERM"));
	CHECK_EQ_INT(mode_of(abf), 0644);
	tu_rm_rf(x.dir);
}

/* /proc/self in the caller's path means the caller (glibc uses it). */
TEST(proc_self_fd_names_the_caller)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	char code[512];
	snprintf(code, sizeof code,
	         "import os\nfd = os.open('%s', os.O_RDONLY)\nos.chmod('/proc/self/fd/%%d' %% fd, 0o604)\n"
	         "print(oct(os.stat('%s').st_mode & 0o7777))\n",
	         x.rwf, x.rwf);
	const char *argv[] = { TU_PY, "-c", code, NULL };
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_write(tu_system_builder(), x.rw);
	CHECK(says(b, argv, "0o604"));
	CHECK_EQ_INT(mode_of(x.rwf), 0604);
	tu_rm_rf(x.dir);
}

/* Another thread swaps the path between check and use: the supervisor
 * performs the call on what it checked, so the denied file never changes. */
TEST(path_swap_race_never_reaches_denied_file)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	CHECK(probe(fx_builder(&x), "chmod_race", x.rwf, x.rof, "3000", "ok"));
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	CHECK_EQ_INT(mode_of(x.rwf), 0777); /* the race did run */
	tu_rm_rf(x.dir);
}

/* New *at metadata calls the guard does not decode look absent. */
TEST(unguarded_new_metadata_syscalls_enosys)
{
	static const char *const nrs[] = { "463" /* setxattrat */, "466" /* removexattrat */,
		                           "469" /* file_setattr */ };
	for (int i = 0; i < 3; i++)
		CHECK(probe(tu_escape_builder(), "rawsys", nrs[i], NULL, NULL, "errno=ENOSYS"));
}

/* ---------------- user handlers on guarded syscalls ---------------- */

static int32_t deny_eacces(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                           sandlock_action_t *out)
{
	(void)n;
	(void)m;
	atomic_fetch_add(&((struct tu_counter *)ud)->calls, 1);
	sandlock_action_set_errno(out, EACCES);
	return 0;
}

/* Set: run_chmod_with's handlers are deferred (run on worker threads). */
static bool g_deferred;

static bool run_chmod_with(const struct fx *x, const char *path, const char *mode,
                           sandlock_handler_fn fn, struct tu_counter *cnt, const char *want)
{
	sandlock_sandbox_t *sb = tu_build(fx_builder(x));
	if (!sb)
		return false;
	sandlock_handler_t *h1 = sandlock_handler_new(fn, cnt, tu_counter_free,
	                                              SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_t *h2 = sandlock_handler_new(fn, cnt, tu_counter_free,
	                                              SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_set_deferred(h1, g_deferred);
	sandlock_handler_set_deferred(h2, g_deferred);
	sandlock_registration_t regs[] = { { "chmod", h1 }, { "fchmodat", h2 } };
	const char *argv[] = { tu_escape_path(), "chmod", path, mode, NULL };
	sandlock_result_t *r = tu_run_with(sb, argv, regs, 2);
	sandlock_sandbox_free(sb);
	if (!r)
		return false;
	char line[64];
	snprintf(line, sizeof line, "%s\n", want);
	bool ok = tu_out_is(r, line);
	sandlock_result_free(r);
	return ok;
}

/* Handlers (deferred ones too: run_chmod_with's g_deferred) still see
 * the calls, but "continue" cannot let one through, and a deny still wins. */
static void continue_meets_the_guard(void)
{
	struct fx x;
	REQUIRE(fx_make(&x));
	struct tu_counter c = { 0, 0 };
	CHECK(run_chmod_with(&x, x.rof, "777", tu_count_and_continue, &c, "errno=EPERM"));
	CHECK(atomic_load(&c.calls) >= 1);
	CHECK_EQ_INT(mode_of(x.rof), 0644);
	CHECK(run_chmod_with(&x, x.rwf, "600", tu_count_and_continue, &c, "ok"));
	CHECK_EQ_INT(mode_of(x.rwf), 0600);
	/* a handler may still deny what the guard would allow */
	struct tu_counter d = { 0, 0 };
	CHECK(run_chmod_with(&x, x.rwf, "666", deny_eacces, &d, "errno=EACCES"));
	CHECK(atomic_load(&d.calls) >= 1);
	CHECK_EQ_INT(mode_of(x.rwf), 0600);
	tu_rm_rf(x.dir);
}

TEST(user_handler_continue_cannot_bypass_guard)
{
	continue_meets_the_guard();
}

/* A deferred handler's "continue" resumes the chain at the guard (issue
 * 25: async handlers on any syscall). */
TEST(deferred_handler_continue_resumes_at_the_guard)
{
	g_deferred = true;
	continue_meets_the_guard();
	g_deferred = false;
}
