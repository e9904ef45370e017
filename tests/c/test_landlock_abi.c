/*
 * test_landlock_abi.c — graceful degradation on older kernels.  The hidden
 * test hook sl_landlock_abi_cap makes the library negotiate Landlock ABI
 * min(kernel, cap), so one modern kernel exercises every older ABI: the
 * ruleset masks and attr sizes must be exactly what that ABI accepts (the
 * kernel answers unknown bits with EINVAL, which would fail every run),
 * filesystem confinement must hold at every ABI, and what an old ABI
 * cannot restrict (TCP < 4, scopes < 6) must be unrestricted, and reported
 * as DEGRADED (sandlock_sandbox_protection_status).  Every run here lists
 * every protection in allow_degraded: without that the strict default
 * refuses to run below ABI 6 (tested in test_knobs.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "launch/landlock.h" /* sl_landlock_abi_cap: linked from libsandlock.a */
#include "testutil.h"

/* The kernel's own ABI (cap lifted). */
static int kernel_abi(void)
{
	int saved = sl_landlock_abi_cap;
	sl_landlock_abi_cap = 0;
	int abi = sandlock_landlock_abi_version();
	sl_landlock_abi_cap = saved;
	return abi;
}

/* ---- a fresh temp directory with a readable dir, a secret dir, a writable dir ---- */
struct tree {
	char root[TU_TMPDIR_LEN];
	char pub[128], pub_file[160];
	char sec[128], sec_file[160];
	char rw[128];
	char err_log[128];
};

static bool tree_make(struct tree *t)
{
	if (!tu_mkdtemp(t->root, "abi"))
		return false;
	snprintf(t->pub, sizeof t->pub, "%s/pub", t->root);
	snprintf(t->sec, sizeof t->sec, "%s/sec", t->root);
	snprintf(t->rw, sizeof t->rw, "%s/rw", t->root);
	snprintf(t->pub_file, sizeof t->pub_file, "%s/hello", t->pub);
	snprintf(t->sec_file, sizeof t->sec_file, "%s/secret", t->sec);
	snprintf(t->err_log, sizeof t->err_log, "%s/stderr.log", t->root);
	return mkdir(t->pub, 0755) == 0 && mkdir(t->sec, 0755) == 0 && mkdir(t->rw, 0755) == 0 &&
	       tu_write_file(t->pub_file, "hello\n") && tu_write_file(t->sec_file, "secret\n");
}

static void tree_remove(struct tree *t)
{
	tu_rm_rf(t->root);
}

/* ---- running with the library's stderr (its warnings) captured ---- */
struct run {
	sandlock_result_t *r;
	char out[4096];
	char warn[4096]; /* what the library itself printed on our stderr */
	int status[SANDLOCK_PROTECTION_COUNT]; /* each protection's status at the cap */
};

/* status of protection p at the cap: DEGRADED below its ABI, else ACTIVE */
#define DEGRADED_BELOW(r, p, abi)                                                          \
	CHECK_EQ_INT((r).status[p], cap < (abi) ? SANDLOCK_PROTECTION_DEGRADED                \
	                                        : SANDLOCK_PROTECTION_ACTIVE)

static void slurp(const char *path, char *buf, size_t cap)
{
	buf[0] = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
}

/* Build b (consumed), run argv at Landlock ABI cap, capture fd 2 meanwhile. */
static bool run_capped(struct tree *t, int cap, sandlock_builder_t *b, const char *const *argv,
                       struct run *out)
{
	memset(out, 0, sizeof *out);
	sl_landlock_abi_cap = cap;
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++)
		b = sandlock_sandbox_builder_allow_degraded(b, p);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb) {
		fprintf(stderr, "  cap %d: build failed\n", cap);
		sl_landlock_abi_cap = 0;
		return false;
	}
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++)
		out->status[p] = sandlock_sandbox_protection_status(sb, p);
	int err = 0;
	char *msg = NULL;
	fflush(stderr);
	int saved = dup(2);
	int logfd = open(t->err_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (saved < 0 || logfd < 0 || dup2(logfd, 2) < 0) {
		fprintf(stderr, "  cannot redirect stderr\n");
		sandlock_sandbox_free(sb);
		return false;
	}
	out->r = sandlock_run_err(sb, argv, tu_argc(argv), &err, &msg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(logfd);
	sl_landlock_abi_cap = 0;
	sandlock_sandbox_free(sb);
	slurp(t->err_log, out->warn, sizeof out->warn);
	if (!out->r) {
		fprintf(stderr, "  cap %d: run failed: %d %s\n", cap, err, msg ? msg : "?");
		sandlock_string_free(msg);
		return false;
	}
	char *s = sandlock_result_stdout(out->r);
	snprintf(out->out, sizeof out->out, "%s", s ? s : "");
	sandlock_string_free(s);
	return true;
}

static void run_free(struct run *r)
{
	sandlock_result_free(r->r);
	r->r = NULL;
}

/* Enough to run system binaries and the escape helper. */
static sandlock_builder_t *base(void)
{
	return tu_escape_builder();
}

/* ---------------- the hook itself ---------------- */

TEST(cap_is_applied_at_call_time)
{
	int k = kernel_abi();
	REQUIRE(k >= 1);
	for (int cap = 1; cap <= k; cap++) {
		sl_landlock_abi_cap = cap;
		CHECK_EQ_INT(sandlock_landlock_abi_version(), cap);
	}
	sl_landlock_abi_cap = k + 5; /* a cap above the kernel changes nothing */
	CHECK_EQ_INT(sandlock_landlock_abi_version(), k);
	sl_landlock_abi_cap = 0;
	CHECK_EQ_INT(sandlock_landlock_abi_version(), k);
}

/* ---------------- filesystem confinement at every ABI ---------------- */

TEST(fs_confinement_holds_at_every_abi)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	int k = kernel_abi();
	for (int cap = 1; cap <= 7 && cap <= k; cap++) {
		struct run r;
		const char *pub[] = { "/bin/cat", t.pub_file, NULL };
		if (!run_capped(&t, cap, sandlock_sandbox_builder_fs_read(base(), t.pub), pub, &r)) {
			CHECK(!"run failed");
			continue;
		}
		CHECK(sandlock_result_success(r.r));
		CHECK(strcmp(r.out, "hello\n") == 0);
		/* what this ABI cannot restrict is reported degraded, exactly when it applies */
		DEGRADED_BELOW(r, SANDLOCK_PROTECTION_NET_TCP, 4);
		DEGRADED_BELOW(r, SANDLOCK_PROTECTION_SIGNAL_SCOPE, 6);
		DEGRADED_BELOW(r, SANDLOCK_PROTECTION_FS_REFER, 2);
		/* degraded on purpose: silently, as the caller asked */
		CHECK(strstr(r.warn, "NOT") == NULL);
		run_free(&r);

		const char *sec[] = { "/bin/cat", t.sec_file, NULL };
		if (!run_capped(&t, cap, sandlock_sandbox_builder_fs_read(base(), t.pub), sec, &r)) {
			CHECK(!"run failed");
			continue;
		}
		CHECK(!sandlock_result_success(r.r));
		CHECK(strcmp(r.out, "") == 0);
		char *e = sandlock_result_stderr(r.r);
		CHECK(e && strstr(e, "Permission denied"));
		if (th_failed_now)
			fprintf(stderr, "  at cap %d: stderr '%s'\n", cap, e ? e : "");
		sandlock_string_free(e);
		run_free(&r);
	}
	tree_remove(&t);
}

/* ABI 1 has no REFER right: fs_write must still let the program write, rename and delete. */
TEST(fs_write_works_without_refer)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	char script[512];
	snprintf(script, sizeof script,
	         "cd '%s' && echo data > f && mv f g && cat g && echo more >> g && rm g && "
	         "mkdir d && echo kept > d/k && echo done",
	         t.rw);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct run r;
	bool ok = run_capped(&t, 1, sandlock_sandbox_builder_fs_write(base(), t.rw), argv, &r);
	CHECK(ok);
	if (ok) {
		CHECK(sandlock_result_success(r.r));
		CHECK(strcmp(r.out, "data\ndone\n") == 0);
		char path[256], buf[64];
		snprintf(path, sizeof path, "%s/d/k", t.rw);
		slurp(path, buf, sizeof buf);
		CHECK(strcmp(buf, "kept\n") == 0);
		snprintf(path, sizeof path, "%s/g", t.rw);
		CHECK(access(path, F_OK) < 0 && errno == ENOENT);
		run_free(&r);
	}
	/* and the readable-only tree stays unwritable at ABI 1 */
	snprintf(script, sizeof script, "echo x > '%s/new'", t.pub);
	const char *argv2[] = { "/bin/sh", "-c", script, NULL };
	ok = run_capped(&t, 1, sandlock_sandbox_builder_fs_read(base(), t.pub), argv2, &r);
	CHECK(ok);
	if (ok) {
		CHECK(!sandlock_result_success(r.r));
		char path[256];
		snprintf(path, sizeof path, "%s/new", t.pub);
		CHECK(access(path, F_OK) < 0);
		run_free(&r);
	}
	tree_remove(&t);
}

/* ---------------- TCP: ABI 4 ---------------- */

/* What `escape probe arg` printed at ABI cap (first line), and protection p's status. */
static bool probe_at(struct tree *t, int cap, const char *probe, const char *arg, char *said,
                     size_t cap_said, uint32_t p, int *status)
{
	const char *argv[] = { tu_escape_path(), probe, arg, NULL };
	struct run r;
	if (!run_capped(t, cap, base(), argv, &r))
		return false;
	size_t n = strcspn(r.out, "\n");
	if (n >= cap_said)
		n = cap_said - 1;
	memcpy(said, r.out, n);
	said[n] = 0;
	*status = r.status[p];
	run_free(&r);
	return true;
}

/* Below ABI 4 Landlock has no TCP rules: connect is still checked by the
 * supervisor (builtins/netdest/), bind is not restricted (degraded). */
TEST(tcp_connect_checked_bind_degraded_below_abi4)
{
	int k = kernel_abi();
	REQUIRE(k >= 4); /* otherwise the control below cannot be made */
	struct tree t;
	REQUIRE(tree_make(&t));
	int port;
	int s = tu_tcp_listener(&port);
	REQUIRE(s >= 0);
	char ps[16], said[256];
	int st;
	const uint32_t P = SANDLOCK_PROTECTION_NET_TCP;
	snprintf(ps, sizeof ps, "%d", port);
	/* control: with TCP rules the same probe is blocked */
	CHECK(probe_at(&t, 4, "connect", ps, said, sizeof said, P, &st));
	CHECK(strcmp(said, "errno=EACCES") == 0);
	CHECK_EQ_INT(st, SANDLOCK_PROTECTION_ACTIVE);
	CHECK(probe_at(&t, 3, "connect", ps, said, sizeof said, P, &st));
	CHECK(strcmp(said, "errno=EACCES") == 0);
	CHECK_EQ_INT(st, SANDLOCK_PROTECTION_DEGRADED);
	if (th_failed_now)
		fprintf(stderr, "  cap 3: probe said '%s'\n", said);
	for (int cap = 5; cap <= k && cap <= 7; cap++) {
		CHECK(probe_at(&t, cap, "connect", ps, said, sizeof said, P, &st));
		CHECK(strcmp(said, "errno=EACCES") == 0);
	}
	close(s);
	tree_remove(&t);
}

/* ---------------- scopes: ABI 6 ---------------- */

TEST(signal_scope_absent_and_degraded_below_abi6)
{
	int k = kernel_abi();
	REQUIRE(k >= 6);
	struct tree t;
	REQUIRE(tree_make(&t));
	pid_t victim = tu_spawn_victim();
	REQUIRE(victim >= 0);
	char ps[16], said[256];
	int st;
	const uint32_t P = SANDLOCK_PROTECTION_SIGNAL_SCOPE;
	snprintf(ps, sizeof ps, "%d", (int)victim);
	CHECK(probe_at(&t, 6, "kill", ps, said, sizeof said, P, &st));
	CHECK(strcmp(said, "errno=EPERM") == 0);
	CHECK_EQ_INT(st, SANDLOCK_PROTECTION_ACTIVE);
	CHECK(probe_at(&t, 5, "kill", ps, said, sizeof said, P, &st));
	CHECK(strcmp(said, "ok") == 0);
	CHECK_EQ_INT(st, SANDLOCK_PROTECTION_DEGRADED);
	if (th_failed_now)
		fprintf(stderr, "  cap 5: probe said '%s'\n", said);
	if (k >= 7) {
		CHECK(probe_at(&t, 7, "kill", ps, said, sizeof said, P, &st));
		CHECK(strcmp(said, "errno=EPERM") == 0);
	}
	tu_reap_victim(victim);
	tree_remove(&t);
}

/* ---------------- per-right masks: REFER (2), TRUNCATE (3), IOCTL_DEV (5) ---------------- */

/*
 * A hard link into another directory is "reparenting": without REFER in
 * the handled set (ABI 1) Landlock always refuses it (EXDEV); from ABI 2
 * fs_write grants it.  A cap-1 mask that wrongly handled REFER would let
 * the link through; a cap-2 mask that forgot it would refuse it.
 */
TEST(refer_only_from_abi2)
{
	int k = kernel_abi();
	REQUIRE(k >= 2);
	struct tree t;
	REQUIRE(tree_make(&t));
	char script[512];
	snprintf(script, sizeof script,
	         "cd '%s' && mkdir -p a b && echo x > a/f && rm -f b/f && ln a/f b/f && echo linked",
	         t.rw);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	struct run r;
	REQUIRE(run_capped(&t, 1, sandlock_sandbox_builder_fs_write(base(), t.rw), argv, &r));
	CHECK(!sandlock_result_success(r.r));
	char *e = sandlock_result_stderr(r.r);
	CHECK(e && strstr(e, "cross-device"));
	sandlock_string_free(e);
	run_free(&r);
	REQUIRE(run_capped(&t, 2, sandlock_sandbox_builder_fs_write(base(), t.rw), argv, &r));
	CHECK(sandlock_result_success(r.r));
	CHECK(strcmp(r.out, "linked\n") == 0);
	run_free(&r);
	tree_remove(&t);
}

/* truncate(2) needs no open for writing: only the TRUNCATE right (ABI 3) stops it. */
TEST(truncate_unrestricted_and_degraded_below_abi3)
{
	int k = kernel_abi();
	REQUIRE(k >= 3);
	struct tree t;
	REQUIRE(tree_make(&t));
	char script[512];
	snprintf(script, sizeof script,
	         "import os\ntry:\n os.truncate('%s', 0); print('ok')\n"
	         "except OSError as e:\n print('errno', e.errno)\n",
	         t.pub_file);
	const char *argv[] = { TU_PY, "-c", script, NULL };
	struct run r;
	char buf[64];
	REQUIRE(run_capped(&t, 3, sandlock_sandbox_builder_fs_read(base(), t.pub), argv, &r));
	char want[32];
	snprintf(want, sizeof want, "errno %d\n", EACCES);
	CHECK(strcmp(r.out, want) == 0);
	CHECK_EQ_INT(r.status[SANDLOCK_PROTECTION_FS_TRUNCATE], SANDLOCK_PROTECTION_ACTIVE);
	run_free(&r);
	slurp(t.pub_file, buf, sizeof buf);
	CHECK(strcmp(buf, "hello\n") == 0);
	REQUIRE(run_capped(&t, 2, sandlock_sandbox_builder_fs_read(base(), t.pub), argv, &r));
	CHECK(strcmp(r.out, "ok\n") == 0);
	CHECK_EQ_INT(r.status[SANDLOCK_PROTECTION_FS_TRUNCATE], SANDLOCK_PROTECTION_DEGRADED);
	run_free(&r);
	slurp(t.pub_file, buf, sizeof buf);
	CHECK(strcmp(buf, "") == 0);
	tree_remove(&t);
}

/* A device ioctl (TIOCGPTN on a pty master) needs IOCTL_DEV from ABI 5 on. */
TEST(device_ioctl_unrestricted_and_degraded_below_abi5)
{
	int k = kernel_abi();
	REQUIRE(k >= 5);
	struct tree t;
	REQUIRE(tree_make(&t));
	const char *script = "import os, fcntl\nfd = os.open('/dev/ptmx', os.O_RDWR)\n"
	                     "try:\n fcntl.ioctl(fd, 0x80045430, bytes(4)); print('ok')\n"
	                     "except OSError as e:\n print('errno', e.errno)\n";
	const char *argv[] = { TU_PY, "-c", script, NULL };
	struct run r;
	REQUIRE(run_capped(&t, 5, sandlock_sandbox_builder_fs_write(base(), "/dev/ptmx"), argv, &r));
	char want[32];
	snprintf(want, sizeof want, "errno %d\n", EACCES);
	CHECK(strcmp(r.out, want) == 0);
	CHECK_EQ_INT(r.status[SANDLOCK_PROTECTION_FS_IOCTL_DEV], SANDLOCK_PROTECTION_ACTIVE);
	run_free(&r);
	REQUIRE(run_capped(&t, 4, sandlock_sandbox_builder_fs_write(base(), "/dev/ptmx"), argv, &r));
	CHECK(strcmp(r.out, "ok\n") == 0);
	CHECK_EQ_INT(r.status[SANDLOCK_PROTECTION_FS_IOCTL_DEV], SANDLOCK_PROTECTION_DEGRADED);
	if (th_failed_now)
		fprintf(stderr, "  cap 4: out '%s'\n", r.out);
	run_free(&r);
	tree_remove(&t);
}
