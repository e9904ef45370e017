/*
 * test_chroot.c — the virtual chroot (builtins/chroot.c, chroot.c): a tiny
 * rootfs of the static busybox, run as "/" with real processes.  The
 * hostile probes (".." climbing, absolute and climbing symlinks,
 * /proc/self/root, rename out) each reach the host marker outside the
 * sandbox first; inside, Landlock is even granted the marker's directory
 * (grant_marker), so only the view can stop them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"
#include "config.h" /* struct sandlock_sandbox: the grants a build made */

#define BUSYBOX "/bin/busybox"

/* D/root: bin/busybox + applet links, etc/hostname_marker, etc/abs (an
 * absolute link to D/marker), etc/relup (../../marker); D/marker (a link
 * to the host secret D/host/marker: its directory can be granted apart
 * from D, see grant_marker); D/w (mounted rw at /work), D/ro (mounted ro
 * at /data). */
struct fx {
	char d[TU_TMPDIR_LEN];
	char root[128], marker[128], host[128], w[128], ro[128];
};

static bool fx_make(struct fx *x)
{
	if (access(BUSYBOX, X_OK) != 0 || !tu_mkdtemp(x->d, "chroot"))
		return false;
	char p[256], q[600];
	snprintf(x->root, sizeof x->root, "%s/root", x->d);
	snprintf(x->marker, sizeof x->marker, "%s/marker", x->d);
	snprintf(x->w, sizeof x->w, "%s/w", x->d);
	snprintf(x->ro, sizeof x->ro, "%s/ro", x->d);
	snprintf(x->host, sizeof x->host, "%s/host", x->d);
	const char *dirs[] = { "root", "root/bin", "root/etc", "root/work", "root/data",
			       "w",    "ro",       "host" };
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", x->d, dirs[i]);
		if (mkdir(p, 0755) < 0)
			return false;
	}
	snprintf(p, sizeof p, "%s/bin/busybox", x->root);
	snprintf(q, sizeof q, "cp %s %s", BUSYBOX, p);
	if (system(q) != 0)
		return false;
	const char *applets[] = { "sh", "ls", "cat", "pwd", "mv", "echo", "readlink" };
	for (size_t i = 0; i < sizeof applets / sizeof applets[0]; i++) {
		snprintf(p, sizeof p, "%s/bin/%s", x->root, applets[i]);
		if (symlink("/bin/busybox", p) < 0)
			return false;
	}
	snprintf(p, sizeof p, "%s/etc/hostname_marker", x->root);
	snprintf(q, sizeof q, "%s/etc/abs", x->root);
	char r[256];
	snprintf(r, sizeof r, "%s/etc/relup", x->root);
	char rof[160], secret[160];
	snprintf(rof, sizeof rof, "%s/f", x->ro);
	snprintf(secret, sizeof secret, "%s/marker", x->host);
	return tu_write_file(p, "inroot\n") && tu_write_file(secret, "HOSTSECRET\n") &&
	       symlink("host/marker", x->marker) == 0 && tu_write_file(rof, "rodata\n") &&
	       symlink(x->marker, q) == 0 && symlink("../../marker", r) == 0;
}

/*
 * Landlock reads the marker's directory too, so a probe the view let
 * through would read it.  Under chroot fs_read names guest paths (a host
 * path grants nothing outside the view), so it is granted as a read-only
 * mount at /hostd, a guest path no probe names.
 */
static void grant_marker(sandlock_builder_t *b, const struct fx *x)
{
	sandlock_sandbox_builder_fs_mount_ro(b, "/hostd", x->host);
}

/* A chroot of x's rootfs with /work and /data mounted; Landlock also
 * reads the marker (grant_marker). */
static sandlock_sandbox_t *fx_sandbox(const struct fx *x)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x->root);
	sandlock_sandbox_builder_fs_mount(b, "/work", x->w);
	sandlock_sandbox_builder_fs_mount_ro(b, "/data", x->ro);
	grant_marker(b, x);
	return tu_build(b);
}

/* sh -c script in sb (freed); stdout. */
static char *run_script(sandlock_sandbox_t *sb, const char *script, int *code)
{
	*code = -1;
	if (!sb)
		return NULL;
	const char *argv[] = { "sh", "-c", script, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	char *out = r ? sandlock_result_stdout(r) : NULL;
	*code = r ? sandlock_result_exit_code(r) : -1;
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	return out;
}

/* sh -c script inside the chroot; stdout. */
static char *inside(const struct fx *x, const char *script, int *code)
{
	return run_script(fx_sandbox(x), script, code);
}

/* inside(), whose stdout must be want; the exit code 0 unless any_code. */
static void check_inside(const struct fx *x, const char *script, const char *want, bool any_code)
{
	int code = -1;
	char *out = inside(x, script, &code);
	CHECK(out && !strstr(out, "HOSTSECRET"));
	CHECK(tu_str_is(out, want));
	if (!any_code)
		CHECK_EQ_INT(code, 0);
	sandlock_string_free(out);
}

/* The host's busybox cat of path, no sandbox: the probe's control. */
static const char *outside_cat(const char *path)
{
	const char *argv[] = { BUSYBOX, "cat", path, NULL };
	return tu_outside_line(argv);
}

TEST(guest_sees_rootfs_as_root)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	/* "/bin/ls" is both the exec path and argv[0] for sh: the rewrite
	 * to the host path must leave busybox its "ls" (execpath.c). */
	check_inside(&x, "ls /; cat /etc/hostname_marker; busybox pwd; cd /etc && busybox pwd; "
	                 "ls /data; /bin/ls /; ../bin/echo a b",
	             "bin\ndata\netc\nwork\ninroot\n/\n/etc\nf\nbin\ndata\netc\nwork\na b\n", false);
	tu_rm_rf(x.d);
}

TEST(hostile_paths_stay_inside)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300];
	/* Each probe reaches the marker outside. */
	snprintf(p, sizeof p, "%s/etc/abs", x.root);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	snprintf(p, sizeof p, "%s/etc/relup", x.root);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	snprintf(p, sizeof p, "%s/../marker", x.root);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	snprintf(p, sizeof p, "/proc/self/root%s", x.marker);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	/* Inside, none does (stdout gets only what cat reads). */
	char script[900];
	snprintf(script, sizeof script,
	         "cat /etc/abs; cat /etc/relup; cat /../../../../marker; cat ../../../marker;"
	         "cat /proc/self/root%s; cat %s; cd /../../../..; cat marker; ls; echo end", x.marker,
	         x.marker);
	check_inside(&x, script, "bin\ndata\netc\nwork\nend\n", true);
	tu_rm_rf(x.d);
}

TEST(mounts_rw_ro_and_rename_out_refused)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	check_inside(&x,
	             "echo hi > /work/a && cat /work/a; cat /data/f;"
	             "echo no > /data/g || echo rofail;"
	             "mv /work/a /../../escaped || echo mvfail;"
	             "mv /work/a /etc/a || echo mvfail2; ls /work",
	             "hi\nrodata\nrofail\nmvfail\nmvfail2\na\n", true);
	char p[300];
	snprintf(p, sizeof p, "%s/a", x.w);
	CHECK(access(p, F_OK) == 0);
	snprintf(p, sizeof p, "%s/g", x.ro);
	CHECK(access(p, F_OK) != 0);
	snprintf(p, sizeof p, "%s/escaped", x.d);
	CHECK(access(p, F_OK) != 0);
	tu_rm_rf(x.d);
}

/* Bad input: a clear error naming the bad value. */
static void expect_build_error(sandlock_builder_t *b, const char *want)
{
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb == NULL);
	CHECK(msg && strstr(msg, want));
	if (msg && !strstr(msg, want))
		fprintf(stderr, "  msg '%s' (want '%s')\n", msg, want);
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}

TEST(bad_input_is_a_clear_error)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, "/nonexistent-rootfs-xyz");
	expect_build_error(b, "/nonexistent-rootfs-xyz");
	b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, "/tmp");
	sandlock_sandbox_builder_fs_mount(b, "work", "/tmp");
	expect_build_error(b, "'work': the virtual path must be absolute");
	b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_mount(b, "/work", "/tmp");
	expect_build_error(b, "needs chroot");
	b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, "/tmp");
	sandlock_sandbox_builder_workdir(b, "/usr");
	expect_build_error(b, "with chroot it must be the rootfs");
}

/* ---------------- the COW layer over the view ---------------- */

/* x's chroot (mounts, Landlock reads the marker) with workdir and action. */
static sandlock_result_t *cow_run(const struct fx *x, const char *workdir, int action,
                                  const char *script)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x->root);
	sandlock_sandbox_builder_fs_mount(b, "/work", x->w);
	sandlock_sandbox_builder_fs_mount_ro(b, "/data", x->ro);
	grant_marker(b, x);
	sandlock_sandbox_builder_workdir(b, workdir);
	sandlock_sandbox_builder_on_exit(b, action);
	return tu_run_sh(b, "sh", script);
}


/* Writes all over the rootfs, seen through guest paths: relative ones,
 * an absolute and a climbing staged symlink, a staged directory. */
static const char *ROOTFS_WORK =
	"echo new > /etc/hostname_marker; cat /etc/hostname_marker; echo made > /etc/x;"
	"rm /etc/relup; mkdir /opt; echo q > /opt/q; cat /opt/q; mv /etc/x /etc/y; ls /etc;"
	"cd /etc; cat y; ln -s /etc/y /s; cat /s; ln -s .. /etc/up; cat /etc/up/etc/up/etc/y;"
	"echo w > /work/w";
static const char *ROOTFS_OUT = "new\nq\nabs\nhostname_marker\ny\nmade\nmade\nmade\n";
static const char *ROOTFS_CHANGES =
	"M etc/hostname_marker\nD etc/relup\nA etc/up\nA etc/y\nA opt\nA opt/q\nA s\n";

TEST(cow_over_the_rootfs_abort_leaves_it_identical)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char *before = tu_tree_sum(x.root);
	sandlock_result_t *r = cow_run(&x, x.root, SANDLOCK_BRANCH_ABORT, ROOTFS_WORK);
	REQUIRE(r);
	CHECK(tu_out_is(r, ROOTFS_OUT));
	char ch[1024];
	tu_changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, ROOTFS_CHANGES) == 0);
	if (strcmp(ch, ROOTFS_CHANGES) != 0)
		fprintf(stderr, "  changes '%s'\n", ch);
	char *after = tu_tree_sum(x.root);
	CHECK(before && after && strcmp(before, after) == 0);
	char p[300];
	snprintf(p, sizeof p, "%s/w", x.w); /* the mount is not part of the layer */
	CHECK(access(p, F_OK) == 0);
	free(before);
	free(after);
	sandlock_result_free(r);
	tu_rm_rf(x.d);
}

TEST(cow_over_the_rootfs_commit_applies_it)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	sandlock_result_t *r = cow_run(&x, x.root, SANDLOCK_BRANCH_COMMIT, ROOTFS_WORK);
	REQUIRE(r);
	CHECK(tu_out_is(r, ROOTFS_OUT));
	CHECK_EQ_INT(sandlock_result_change_count(r, true), 0);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "cd %s && cat etc/hostname_marker etc/y opt/q && readlink s "
	         "etc/up && ! ls etc/relup etc/x 2>/dev/null", x.root);
	FILE *p = popen(cmd, "r");
	char got[256] = "";
	size_t n = p ? fread(got, 1, sizeof got - 1, p) : 0;
	got[n] = '\0';
	CHECK(p && pclose(p) == 0);
	CHECK(strcmp(got, "new\nmade\nq\n/etc/y\n..\n") == 0);
	sandlock_result_free(r);
	tu_rm_rf(x.d);
}

/* Hostile, with the rootfs writable through the layer: staged symlinks
 * to the host marker (absolute host path, climbing) and a rename out of
 * the layer reach nothing outside the view. */
TEST(cow_over_the_rootfs_staged_links_stay_inside)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300];
	/* The same links made on the host reach the marker. */
	snprintf(p, sizeof p, "%s/etc/relup", x.root); /* ../../marker, as e2 */
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	snprintf(p, sizeof p, "%s/../marker", x.root); /* /up/marker with up -> .. */
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	char script[900];
	snprintf(script, sizeof script,
	         "ln -s %s /etc/e1; cat /etc/e1; ln -s ../../marker /etc/e2; cat /etc/e2;"
	         "cd /etc; ln -s .. /up; cat /up/marker; cat /etc/abs; cat /etc/relup;"
	         "echo x > /etc/e1; ls /up; mv /etc/hostname_marker /../../m || echo mvout;"
	         "ln -s /work /etc/tow; echo via > /work/v; cat /etc/tow/v; echo no > /etc/tow/n || echo rw;"
	         "echo end", x.marker);
	sandlock_result_t *r = cow_run(&x, x.root, SANDLOCK_BRANCH_COMMIT, script);
	REQUIRE(r);
	const char *want = "bin\ndata\netc\nup\nwork\nvia\nrw\nend\n";
	CHECK(tu_out_is(r, want));
	/* Committed: e1 is still a link, which named a guest path (the write
	 * through it failed: no such directory in the rootfs); the marker is
	 * untouched. */
	snprintf(p, sizeof p, "%s/etc/e1", x.root);
	struct stat st;
	CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode));
	snprintf(p, sizeof p, "%s%s", x.root, x.marker);
	CHECK(access(p, F_OK) != 0);
	CHECK(strcmp(outside_cat(x.marker), "HOSTSECRET") == 0);
	snprintf(p, sizeof p, "%s/n", x.w);
	CHECK(access(p, F_OK) != 0);
	sandlock_result_free(r);
	tu_rm_rf(x.d);
}

TEST(cow_over_a_mount)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	sandlock_result_t *r = cow_run(&x, x.w, SANDLOCK_BRANCH_ABORT,
	                               "echo a > /work/a; cd /work; cat a; ls; echo r > /etc/r || echo ro");
	REQUIRE(r);
	CHECK(tu_out_is(r, "a\na\nro\n"));
	char ch[256];
	tu_changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, "A a\n") == 0);
	char p[300];
	snprintf(p, sizeof p, "%s/a", x.w);
	CHECK(access(p, F_OK) != 0);
	sandlock_result_free(r);
	tu_rm_rf(x.d);
}

/* A workdir the guest does not see at one place is refused. */
TEST(cow_workdir_outside_the_view_is_refused)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char sub[200], inner[200];
	snprintf(sub, sizeof sub, "%s/sub", x.w);
	snprintf(inner, sizeof inner, "%s/etc", x.root);
	mkdir(sub, 0755);
	const char *cases[][3] = {
		{ x.d, NULL, "with chroot it must be the rootfs" },
		{ x.ro, NULL, "inside the read-only fs_mount '/data'" },
		{ sub, NULL, "inside the read-write fs_mount '/work'" },
		{ x.root, inner, "is inside workdir" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sandlock_builder_t *b = sandlock_sandbox_builder_new();
		sandlock_sandbox_builder_chroot(b, x.root);
		sandlock_sandbox_builder_fs_mount(b, "/work", x.w);
		sandlock_sandbox_builder_fs_mount_ro(b, "/data", x.ro);
		if (cases[i][1])
			sandlock_sandbox_builder_fs_mount(b, "/m", cases[i][1]);
		sandlock_sandbox_builder_workdir(b, cases[i][0]);
		expect_build_error(b, cases[i][2]);
	}
	tu_rm_rf(x.d);
}

/* cd between guest directories, deeper and back up: the kernel chdirs to
 * the host path swapped in for the call (execpath.c), so the shell's own
 * string, hence $PWD, stays the guest's.  Before, a cd whose host form
 * from the cwd was longer than the guest's string failed (ENAMETOOLONG). */
TEST(chdir_anywhere_keeps_the_guest_pwd)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	check_inside(&x, "cd /bin && cd /etc && echo $PWD && busybox pwd && cd ../bin && "
	                 "echo $PWD && cd /work && busybox pwd && cd / && ls",
	             "/etc\n/etc\n/bin\n/work\nbin\ndata\netc\nwork\n", false);
	tu_rm_rf(x.d);
}

/* The short /dev/fd/N form of an exec (execpath.c) installs the file in
 * the caller before the kernel checks it: it must come from the confined
 * opener.  A program in the rootfs under fs_deny (readable outside, the
 * control), exec'd from a deep cwd with argv right behind its path so no
 * host form fits; before, the supervisor opened it unconfined and the
 * failed exec left the guest an fd reading it. */
TEST(hostile_exec_short_form_reads_nothing_denied)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	char probe[4200];
	snprintf(probe, sizeof probe, "%s/execprobe-static", tu_helpers_dir());
	if (access(probe, X_OK) != 0)
		SKIP("no static execprobe");
	REQUIRE(fx_make(&x));
	char p[600], cmd[9000];
	snprintf(cmd, sizeof cmd, "mkdir -p %s/secret %s/a/b/c/d/e/f/g && cp %s %s/secret/tool && "
	         "cp %s %s/bin/execprobe", x.root, x.root, BUSYBOX, x.root, probe, x.root);
	REQUIRE(system(cmd) == 0);
	snprintf(p, sizeof p, "%s/secret/tool", x.root);
	const char *ctl[] = { probe, "open", p, NULL };
	CHECK(strcmp(tu_outside_line(ctl), "direct: opened") == 0);
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x.root);
	sandlock_sandbox_builder_fs_deny(b, "/secret"); /* a guest path */
	sandlock_sandbox_builder_cwd(b, "/a/b/c/d/e/f/g");
	sandlock_result_t *r = tu_run_sh(b, "sh", "/bin/execprobe open /secret/tool; "
	                                          "/bin/execprobe execat /secret/tool 32");
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strstr(out, "direct: Permission denied\nexecve: -1 "));
	CHECK(out && !strstr(out, "fd "));
	if (out && strstr(out, "fd "))
		fprintf(stderr, "  got '%s'\n", out);
	sandlock_string_free(out);
	sandlock_result_free(r);
	tu_rm_rf(x.d);
}

/* COW over the rootfs: a directory made in the run is entered (cd swaps
 * in the layer's host path for the call; getcwd and $PWD stay guest
 * paths) and a program copied there runs from the layer.  The rootfs is
 * unchanged after ABORT. */
TEST(cow_over_the_rootfs_cd_and_run_what_was_made)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	sandlock_result_t *r = cow_run(&x, x.root, SANDLOCK_BRANCH_ABORT,
	                               "mkdir -p /opt/x && cd /opt/x && echo $PWD && busybox pwd && "
	                               "cp /bin/busybox ./bb && ln -s bb ls && ./ls && cd .. && ls");
	REQUIRE(r);
	CHECK(tu_out_is(r, "/opt/x\n/opt/x\nbb\nls\nx\n"));
	char ch[1024];
	tu_changes_text(r, ch, sizeof ch);
	CHECK(strcmp(ch, "A opt\nA opt/x\nA opt/x/bb\nA opt/x/ls\n") == 0);
	char p[300];
	snprintf(p, sizeof p, "%s/opt", x.root);
	CHECK(access(p, F_OK) != 0);
	sandlock_result_free(r);
	tu_rm_rf(x.d);
}

/* Symlinks are followed as the guest sees them: an absolute link inside
 * a mount to another place in that mount, one in the mount pointing into
 * the rootfs, one in the rootfs pointing into the mount; realpath(3)
 * (readlink of a non-link must be EINVAL, not ENOENT); mkdir -p of an
 * absolute path whose first names are the read-only rootfs's (EEXIST
 * comes before EACCES/EROFS); mkfifo in a writable mount (a device node
 * stays EPERM).  Before, each of these failed. */
TEST(guest_level_symlinks_realpath_and_mkdir_p)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300];
	snprintf(p, sizeof p, "%s/etc/towork", x.root);
	REQUIRE(symlink("/work/in", p) == 0);
	check_inside(&x, "mkdir -p /work/in/deep && echo w > /work/in/deep/f && "
	                 "ln -s /work/in /work/abs && cat /work/abs/deep/f && "
	                 "ln -s /etc/hostname_marker /work/tom && cat /work/tom && "
	                 "cat /etc/towork/deep/f && cd /etc && realpath towork hostname_marker && "
	                 "mkfifo /work/p && ls -l /work/p | cut -c1 && "
	                 "{ mknod /work/d c 1 3 2>&- || echo eperm; }",
	             "w\ninroot\nw\n/work/in\n/etc/hostname_marker\np\neperm\n", false);
	tu_rm_rf(x.d);
}

/*
 * A lookup follows its last name or keeps it as the call says (syscalls.c
 * decodes that once for the chroot and COW builtins), and follows it in
 * the view: a guest-absolute link that leads nowhere on the host is a file
 * to stat, access and stat -L, a link to lstat, readlink and stat.
 */
TEST(lookups_follow_their_last_link_in_the_view)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300];
	snprintf(p, sizeof p, "%s/etc/glink", x.root);
	REQUIRE(symlink("/etc/hostname_marker", p) == 0);
	struct stat st;
	CHECK(stat(p, &st) != 0 && errno == ENOENT); /* outside: only the view can follow it */
	check_inside(&x, "[ -L /etc/glink ] && echo lstat-link; [ -f /etc/glink ] && echo stat-file; "
	                 "[ -r /etc/glink ] && echo access-ok; readlink /etc/glink; "
	                 "stat -c %F /etc/glink; stat -L -c %F /etc/glink; cat /etc/glink",
	             "lstat-link\nstat-file\naccess-ok\n/etc/hostname_marker\nsymbolic link\n"
	             "regular file\ninroot\n", false);
	tu_rm_rf(x.d);
}

/*
 * The host's /proc mounted at /proc: lookups (readlink, stat) are made
 * by the supervisor, and must mean what they mean for the guest.
 * /proc/self is the caller (its exe and cwd as guest paths), and a host
 * process's /proc/PID (the test's own, whose exe the kernel shows the
 * same user outside any chroot) does not resolve.
 */
TEST(proc_lookups_are_the_callers)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char me[64], script[512], host_exe[4096];
	snprintf(me, sizeof me, "/proc/%d/exe", (int)getpid());
	ssize_t n = readlink(me, host_exe, sizeof host_exe - 1);
	REQUIRE(n > 0); /* the control: outside, the test's exe is there to read */
	host_exe[n] = 0;
	const char *argv[] = { BUSYBOX, "readlink", me, NULL };
	CHECK(tu_str_is(tu_outside_line(argv), host_exe));
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x.root);
	sandlock_sandbox_builder_fs_mount_ro(b, "/proc", "/proc");
	snprintf(script, sizeof script,
	         "readlink /proc/self/exe; cd /etc; readlink /proc/self/cwd; "
	         "readlink /proc/thread-self/exe; readlink %s || echo hidden; "
	         "readlink /proc/%d/cwd || echo hidden; readlink /proc/1/exe || echo hidden; "
	         "cat /proc/self/cwd/hostname_marker || echo no-magic",
	         me, (int)getpid());
	int code;
	char *out = run_script(tu_build(b), script, &code);
	CHECK(out && !strstr(out, host_exe));
	CHECK(tu_str_is(out, "/bin/busybox\n/etc\n/bin/busybox\nhidden\nhidden\nhidden\n"
	                     "no-magic\n"));
	sandlock_string_free(out);
	tu_rm_rf(x.d);
}

/*
 * Magic links in the middle of a path (/proc/self/root, /proc/PID/root,
 * /proc/self/cwd, /proc/self/fd/N) lead to host objects: the kernel
 * follows them whatever the view.  Every call the view resolves must
 * refuse them (they are never followed: EACCES), reads, listings, chdir,
 * exec, creation and a directory fd alike.  The host directory is
 * mounted read-write, so Landlock would allow each probe: the view is
 * what refuses.  Outside, the same script reaches the host each way.
 */
TEST(magic_links_inside_paths_fail_closed)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300], q[600], script[1600], made[300];
	snprintf(p, sizeof p, "%s/busybox", x.host);
	snprintf(q, sizeof q, "cp %s %s", BUSYBOX, p);
	REQUIRE(system(q) == 0);
	snprintf(p, sizeof p, "%s/bin/mkdir", x.root);
	REQUIRE(symlink("/bin/busybox", p) == 0);
	snprintf(made, sizeof made, "%s/made", x.host);
	snprintf(script, sizeof script,
	         "M=%s/marker; cd %s || cd /work\n"
	         "for p in /proc/self/root$M /proc/$$/root$M /proc/thread-self/root$M "
	         "/proc/self/cwd/../host/marker; do\n"
	         "  cat $p 2>&-; ls $p >&- 2>&- && echo LS\n"
	         "done\n"
	         "(cd /proc/self/root%s 2>&- && echo CD)\n"
	         "/proc/self/root%s/busybox echo EXEC 2>&-\n"
	         "mkdir /proc/self/root%s 2>&- && echo MKDIR\n"
	         "(exec 3</proc/self/root%s && cat /proc/self/fd/3/host/marker) 2>&-\n"
	         "echo end\n",
	         x.host, x.w, x.host, x.host, made, x.d);
	char one_line[1700];
	snprintf(one_line, sizeof one_line, "{ %s} | " BUSYBOX " tr '\\n' ' '", script);
	const char *argv[] = { BUSYBOX, "sh", "-c", one_line, NULL };
	CHECK(tu_str_is(tu_outside_line(argv), "HOSTSECRET LS HOSTSECRET LS HOSTSECRET LS "
	                                       "HOSTSECRET LS CD EXEC MKDIR HOSTSECRET end "));
	REQUIRE(rmdir(made) == 0);
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x.root);
	sandlock_sandbox_builder_fs_mount(b, "/work", x.w);
	sandlock_sandbox_builder_fs_mount(b, "/hostw", x.host);
	sandlock_sandbox_builder_fs_mount_ro(b, "/proc", "/proc");
	int code;
	char *out = run_script(tu_build(b), script, &code);
	CHECK(tu_str_is(out, "end\n"));
	CHECK(access(made, F_OK) != 0);
	sandlock_string_free(out);
	tu_rm_rf(x.d);
}

/* A build of b must fail naming the read-only mount. */
static bool mount_conflict(sandlock_builder_t *b)
{
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	bool ok = !sb && err == SANDLOCK_ERR_CONFLICT && msg && strstr(msg, "'/v' is read-only");
	if (!ok)
		fprintf(stderr, "  build: err %d '%s'\n", err, msg ? msg : "(built)");
	sandlock_sandbox_free(sb);
	sandlock_string_free(msg);
	return ok;
}

/*
 * A read-only mount of H/sub with a read-write mount of H: H/sub would be
 * writable as /w/sub.  Refused whichever is given first (the first order
 * used to be accepted, and /w/sub written); apart, both are fine.
 */
TEST(read_only_mount_inside_a_writable_one_refused_in_any_order)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char sub[160];
	snprintf(sub, sizeof sub, "%s/sub", x.w);
	REQUIRE(mkdir(sub, 0755) == 0);
	for (int order = 0; order < 2; order++) {
		sandlock_builder_t *b = sandlock_sandbox_builder_new();
		sandlock_sandbox_builder_chroot(b, x.root);
		if (order == 0)
			sandlock_sandbox_builder_fs_mount_ro(b, "/v", sub);
		sandlock_sandbox_builder_fs_mount(b, "/w", x.w);
		if (order == 1)
			sandlock_sandbox_builder_fs_mount_ro(b, "/v", sub);
		CHECK(mount_conflict(b));
	}
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x.root);
	sandlock_sandbox_builder_fs_mount_ro(b, "/v", x.ro);
	sandlock_sandbox_builder_fs_mount(b, "/w", x.w);
	sandlock_sandbox_t *sb = tu_build(b);
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
	tu_rm_rf(x.d);
}

/* ---------------- fs_read / fs_write / fs_deny are guest paths ---------------- */

/* A chroot of x's rootfs with x's /work and /data mounts (nothing else). */
static sandlock_builder_t *guest_builder(const struct fx *x)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x->root);
	sandlock_sandbox_builder_fs_mount(b, "/work", x->w);
	sandlock_sandbox_builder_fs_mount_ro(b, "/data", x->ro);
	return b;
}

/* True if every path sb grants or denies lies in x's rootfs or mounts,
 * and no grant is a host path outside (shown). */
static bool grants_inside(const sandlock_sandbox_t *sb, const struct fx *x)
{
	const sl_strvec *lists[] = { &sb->fs_read, &sb->fs_write, &sb->fs_deny };
	bool ok = true;
	for (size_t l = 0; l < 3; l++)
		for (size_t i = 0; i < lists[l]->n; i++) {
			const char *p = lists[l]->v[i];
			if (!sl_path_under(p, x->root) && !sl_path_under(p, x->w) &&
			    !sl_path_under(p, x->ro)) {
				fprintf(stderr, "  granted outside the view: '%s'\n", p);
				ok = false;
			}
		}
	return ok;
}

/* True if list holds exactly path. */
static bool has_path(const sl_strvec *list, const char *path)
{
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->v[i], path) == 0)
			return true;
	return false;
}

/* The rootfs is read-only until fs_write names a guest path of it; then
 * that guest path (the host's ROOT/tmp) is writable.  fs_deny names a
 * guest file, which the guest then cannot read. */
TEST(guest_path_grants_apply_inside)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300];
	snprintf(p, sizeof p, "%s/tmp", x.root);
	REQUIRE(mkdir(p, 0755) == 0);
	const char *script = "echo hi > /tmp/f && cat /tmp/f || echo ro; "
	                     "cat /etc/hostname_marker || echo denied";
	/* The control: without the grants, /tmp is read-only, the file read. */
	sandlock_result_t *r = tu_run_sh(guest_builder(&x), "sh", script);
	REQUIRE(r);
	CHECK(tu_out_is(r, "ro\ninroot\n"));
	sandlock_result_free(r);
	sandlock_builder_t *b = guest_builder(&x);
	sandlock_sandbox_builder_fs_write(b, "/tmp");
	sandlock_sandbox_builder_fs_deny(b, "/etc/hostname_marker");
	r = tu_run_sh(b, "sh", script);
	REQUIRE(r);
	CHECK(tu_out_is(r, "hi\ndenied\n"));
	sandlock_result_free(r);
	snprintf(p, sizeof p, "%s/tmp/f", x.root);
	CHECK(access(p, F_OK) == 0);
	tu_rm_rf(x.d);
}

/*
 * A host path given under chroot is a guest path: the host directory of
 * the marker (readable and writable outside, the control) is not granted,
 * the guest cannot reach it by its host name, and once the rootfs has a
 * directory at that path, the grant is that directory.
 */
TEST(host_paths_are_read_as_guest_paths)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[600], script[900];
	snprintf(p, sizeof p, "%s/marker", x.host);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	snprintf(script, sizeof script,
	         "cat %s/marker || echo none; echo w > %s/new || echo ro; cat %s/new", x.host,
	         x.host, x.host);
	for (int mirror = 0; mirror < 2; mirror++) {
		if (mirror) { /* ROOT/<host path of D/host>: now a guest directory */
			snprintf(p, sizeof p, "mkdir -p %s%s", x.root, x.host);
			REQUIRE(system(p) == 0);
		}
		sandlock_builder_t *b = guest_builder(&x);
		sandlock_sandbox_builder_fs_read(b, x.host);
		sandlock_sandbox_builder_fs_write(b, x.host);
		sandlock_sandbox_t *sb = tu_build(b);
		REQUIRE(sb);
		CHECK(grants_inside(sb, &x));
		CHECK(!has_path(&sb->fs_write, x.host) && !has_path(&sb->fs_read, x.host));
		int code;
		char *out = run_script(sb, script, &code);
		CHECK(out && !strstr(out, "HOSTSECRET"));
		CHECK(tu_str_is(out, mirror ? "none\nw\n" : "none\nro\n"));
		sandlock_string_free(out);
		snprintf(p, sizeof p, "%s/new", x.host);
		CHECK(access(p, F_OK) != 0);
	}
	snprintf(p, sizeof p, "%s%s/new", x.root, x.host);
	CHECK(access(p, F_OK) == 0);
	tu_rm_rf(x.d);
}

/* A guest path the view does not have is skipped (the reference skips
 * it), whichever list names it, and relative ones start at the guest's /. */
TEST(missing_guest_paths_are_skipped)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	sandlock_builder_t *b = guest_builder(&x);
	sandlock_sandbox_builder_fs_read(b, "/nonexistent");
	sandlock_sandbox_builder_fs_write(b, "/nope/deeper");
	sandlock_sandbox_builder_fs_write(b, "/etc/hostname_marker/under-a-file");
	sandlock_sandbox_builder_fs_deny(b, "/gone");
	sandlock_sandbox_builder_fs_read(b, "etc");
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	char etc[300];
	snprintf(etc, sizeof etc, "%s/etc", x.root);
	CHECK(has_path(&sb->fs_read, etc));
	CHECK(sb->fs_deny.n == 0);
	CHECK(grants_inside(sb, &x));
	int code;
	char *out = run_script(sb, "cat /etc/hostname_marker", &code);
	CHECK(tu_str_is(out, "inroot\n"));
	CHECK_EQ_INT(code, 0);
	sandlock_string_free(out);
	tu_rm_rf(x.d);
}

/*
 * Grants that climb with ".." or go through a symlink out of the rootfs
 * (each reaching the marker or D on the host: the control) stay in the
 * view: ".." stops at the guest's /, an absolute link target is a guest
 * path, a climbing one stops at /.  /proc/self/root with the host's /proc
 * mounted is a magic link to the host's /: refused at build.
 */
TEST(hostile_grants_never_leave_the_view)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[700], up[300], hostabs[300];
	snprintf(up, sizeof up, "%s/etc/up", x.root);
	snprintf(hostabs, sizeof hostabs, "%s/etc/hostd", x.root);
	REQUIRE(symlink("../..", up) == 0 && symlink(x.d, hostabs) == 0);
	snprintf(p, sizeof p, "%s/marker", up);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	snprintf(p, sizeof p, "%s/marker", hostabs);
	CHECK(strcmp(outside_cat(p), "HOSTSECRET") == 0);
	sandlock_builder_t *b = guest_builder(&x);
	const char *reads[] = { "/etc/abs", "/etc/relup", "/../marker", "/etc/up/marker",
		                "/etc/hostd/marker", "/etc/hostd/host" };
	for (size_t i = 0; i < sizeof reads / sizeof reads[0]; i++)
		sandlock_sandbox_builder_fs_read(b, reads[i]);
	sandlock_sandbox_builder_fs_write(b, "/../../..");
	sandlock_sandbox_builder_fs_write(b, "/etc/up");
	sandlock_sandbox_builder_fs_write(b, "/etc/hostd");
	sandlock_sandbox_builder_fs_deny(b, "/etc/up/../../w");
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	CHECK(grants_inside(sb, &x));
	CHECK(has_path(&sb->fs_write, x.root)); /* "/../../.." and "/etc/up": the guest's / */
	CHECK(sb->fs_deny.n == 0);              /* "/w": no such guest path */
	int code;
	char *out = run_script(sb, "echo x > /etc/new && cat /etc/new /etc/up/marker || echo none",
	                       &code);
	CHECK(tu_str_is(out, "x\nnone\n"));
	sandlock_string_free(out);
	b = guest_builder(&x);
	sandlock_sandbox_builder_fs_mount_ro(b, "/proc", "/proc");
	sandlock_sandbox_builder_fs_read(b, "/proc/self/root");
	expect_build_error(b, "fs_read '/proc/self/root': cannot resolve this guest path");
	tu_rm_rf(x.d);
}

/* fs_write of a guest path inside a read-only mount (directly, or through
 * a symlink of the rootfs) is refused, as is one holding a read-only
 * mount's host directory; beside it, a read-write mount is fine. */
TEST(guest_write_grant_inside_a_read_only_mount_refused)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	char p[300];
	snprintf(p, sizeof p, "%s/etc/todata", x.root);
	REQUIRE(symlink("/data", p) == 0);
	const char *inside_ro[] = { "/data", "/data/f", "/etc/todata/f" };
	for (size_t i = 0; i < sizeof inside_ro / sizeof inside_ro[0]; i++) {
		sandlock_builder_t *b = guest_builder(&x);
		sandlock_sandbox_builder_fs_write(b, inside_ro[i]);
		char want[200];
		snprintf(want, sizeof want, "fs_write '%s' is inside the read-only fs_mount '/data'",
		         inside_ro[i]);
		expect_build_error(b, want);
	}
	sandlock_builder_t *b = guest_builder(&x);
	snprintf(p, sizeof p, "%s/etc", x.root);
	sandlock_sandbox_builder_fs_mount_ro(b, "/v", p); /* a host directory in the rootfs */
	sandlock_sandbox_builder_fs_write(b, "/");
	expect_build_error(b, "fs_mount '/v' is read-only");
	b = guest_builder(&x);
	sandlock_sandbox_builder_fs_write(b, "/work");
	sandlock_sandbox_t *sb = tu_build(b);
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
	tu_rm_rf(x.d);
}

/*
 * Path xattr calls go through the view (issue 25): on a mount they reach
 * its host directory, a read-only mount refuses writes (EROFS), the
 * read-only rootfs EACCES, and a link to the host secret (read outside
 * first, the control) finds nothing inside.  Landlock reads the secret's
 * directory (grant_marker), so only the view stops the probe.
 */
TEST(path_xattrs_go_through_the_view)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	char probe[4200];
	snprintf(probe, sizeof probe, "%s/xattrprobe-static", tu_helpers_dir());
	if (access(probe, X_OK) != 0)
		SKIP("no static xattrprobe");
	REQUIRE(fx_make(&x));
	char secret[200], rof[200], wf[200], cmd[9000];
	snprintf(secret, sizeof secret, "%s/marker", x.host);
	snprintf(rof, sizeof rof, "%s/f", x.ro);
	snprintf(wf, sizeof wf, "%s/f", x.w);
	if (setxattr(secret, "user.secret", "HOSTSECRET", 10, 0) < 0) {
		tu_rm_rf(x.d);
		SKIP("no user xattrs on this filesystem");
	}
	REQUIRE(setxattr(rof, "user.ro", "rov", 3, 0) == 0);
	REQUIRE(tu_write_file(wf, "w\n"));
	snprintf(cmd, sizeof cmd, "cp %s %s/bin/xattrprobe", probe, x.root);
	REQUIRE(system(cmd) == 0);
	/* the control: the link leads to the secret's xattr outside */
	char abs[200];
	snprintf(abs, sizeof abs, "%s/etc/abs", x.root);
	const char *ctl[] = { probe, "get", abs, "user.secret", NULL };
	CHECK(tu_str_is(tu_outside_line(ctl), "HOSTSECRET"));
	char want[256];
	snprintf(want, sizeof want,
	         "ok\nv1\nuser.k\nok\nerr %d\nok\n"   /* /work: set, get, list, rm, get, set */
	         "rov\nerr %d\nerr %d\n"               /* /data: get, set, rm */
	         "err %d\nerr %d\nerr %d\nerr %d\n",   /* rootfs set; the links; missing */
	         ENODATA, EROFS, EROFS, EACCES, ENOENT, ENOENT, ENOENT);
	check_inside(&x,
	             "xattrprobe set /work/f user.k v1 -- get /work/f user.k -- list /work/f"
	             " -- rm /work/f user.k -- get /work/f user.k -- set /work/f user.kept yes;"
	             "xattrprobe get /data/f user.ro -- set /data/f user.x y -- rm /data/f user.ro;"
	             "xattrprobe set /etc/hostname_marker user.x y -- get /etc/abs user.secret"
	             " -- get /etc/relup user.secret -- get /nonexistent user.x",
	             want, false);
	/* what the guest did is on the mount's host file; the rest unchanged */
	char v[32] = "";
	CHECK(getxattr(wf, "user.kept", v, sizeof v) == 3 && memcmp(v, "yes", 3) == 0);
	CHECK(getxattr(wf, "user.k", v, sizeof v) < 0 && errno == ENODATA);
	CHECK(getxattr(rof, "user.ro", v, sizeof v) == 3);
	tu_rm_rf(x.d);
}
