/*
 * test_chroot.c — the virtual chroot (builtins/chroot.c, chroot.c): a tiny
 * rootfs of the static busybox, run as "/" with real processes.  The
 * hostile probes (".." climbing, absolute and climbing symlinks,
 * /proc/self/root, rename out) each reach the host marker outside the
 * sandbox first; inside, Landlock is even granted the marker's directory,
 * so only the view can stop them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

#define BUSYBOX "/bin/busybox"

/* D/root: bin/busybox + applet links, etc/hostname_marker, etc/abs (an
 * absolute link to D/marker), etc/relup (../../marker); D/marker (host
 * secret); D/w (mounted rw at /work), D/ro (mounted ro at /data). */
struct fx {
	char d[TU_TMPDIR_LEN];
	char root[128], marker[128], w[128], ro[128];
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
	const char *dirs[] = { "root", "root/bin", "root/etc", "root/work", "root/data", "w", "ro" };
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		snprintf(p, sizeof p, "%s/%s", x->d, dirs[i]);
		if (mkdir(p, 0755) < 0)
			return false;
	}
	snprintf(p, sizeof p, "%s/bin/busybox", x->root);
	snprintf(q, sizeof q, "cp %s %s", BUSYBOX, p);
	if (system(q) != 0)
		return false;
	const char *applets[] = { "sh", "ls", "cat", "pwd", "mv", "echo" };
	for (size_t i = 0; i < sizeof applets / sizeof applets[0]; i++) {
		snprintf(p, sizeof p, "%s/bin/%s", x->root, applets[i]);
		if (symlink("/bin/busybox", p) < 0)
			return false;
	}
	snprintf(p, sizeof p, "%s/etc/hostname_marker", x->root);
	snprintf(q, sizeof q, "%s/etc/abs", x->root);
	char r[256];
	snprintf(r, sizeof r, "%s/etc/relup", x->root);
	char rof[160];
	snprintf(rof, sizeof rof, "%s/f", x->ro);
	return tu_write_file(p, "inroot\n") && tu_write_file(x->marker, "HOSTSECRET\n") &&
	       tu_write_file(rof, "rodata\n") && symlink(x->marker, q) == 0 &&
	       symlink("../../marker", r) == 0;
}

/* A chroot of x's rootfs with /work and /data mounted; Landlock also
 * reads all of D (the marker too). */
static sandlock_sandbox_t *fx_sandbox(const struct fx *x)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_chroot(b, x->root);
	sandlock_sandbox_builder_fs_mount(b, "/work", x->w);
	sandlock_sandbox_builder_fs_mount_ro(b, "/data", x->ro);
	sandlock_sandbox_builder_fs_read(b, x->d);
	return tu_build(b);
}

/* sh -c script inside the chroot; stdout. */
static char *inside(const struct fx *x, const char *script, int *code)
{
	sandlock_sandbox_t *sb = fx_sandbox(x);
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
	int code;
	char *out = inside(&x, "ls /; cat /etc/hostname_marker; busybox pwd; cd /etc && busybox pwd; ls /data; /bin/ls / || echo absrefused", &code);
	CHECK(out && strcmp(out, "bin\ndata\netc\nwork\ninroot\n/\n/etc\nf\nabsrefused\n") == 0);
	if (out && strcmp(out, "bin\ndata\netc\nwork\ninroot\n/\n/etc\nf\nabsrefused\n") != 0)
		fprintf(stderr, "  got '%s'\n", out);
	CHECK_EQ_INT(code, 0);
	sandlock_string_free(out);
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
	int code;
	char *out = inside(&x, script, &code);
	CHECK(out && !strstr(out, "HOSTSECRET"));
	CHECK(out && strcmp(out, "bin\ndata\netc\nwork\nend\n") == 0);
	if (out && strcmp(out, "bin\ndata\netc\nwork\nend\n") != 0)
		fprintf(stderr, "  got '%s'\n", out);
	sandlock_string_free(out);
	tu_rm_rf(x.d);
}

TEST(mounts_rw_ro_and_rename_out_refused)
{
	struct fx x;
	if (access(BUSYBOX, X_OK) != 0)
		SKIP("no static busybox (apt-get install busybox-static)");
	REQUIRE(fx_make(&x));
	int code;
	char *out = inside(&x,
	                   "echo hi > /work/a && cat /work/a; cat /data/f;"
	                   "echo no > /data/g || echo rofail;"
	                   "mv /work/a /../../escaped || echo mvfail;"
	                   "mv /work/a /etc/a || echo mvfail2; ls /work",
	                   &code);
	CHECK(out && strcmp(out, "hi\nrodata\nrofail\nmvfail\nmvfail2\na\n") == 0);
	if (out && strcmp(out, "hi\nrodata\nrofail\nmvfail\nmvfail2\na\n") != 0)
		fprintf(stderr, "  got '%s'\n", out);
	sandlock_string_free(out);
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
	sandlock_sandbox_builder_workdir(b, "/tmp");
	expect_build_error(b, "not supported yet");
}
