/*
 * test_onbehalf.c — sandlock_open_on_behalf: the TOCTOU race of
 * check-then-CONTINUE, closed by opening on the caller's behalf.
 *
 * The hostile guest (helpers/race_open.c) flips one byte of its path
 * buffer between an allowed and a denied file while it opens it.  A
 * handler that checks the string and continues is shown to lose (the
 * control); the same policy decided on the file opened on behalf never
 * does.  The other tests check that the opener can do no more than the
 * program could: Landlock, DAC without capabilities, the supervisor's
 * own /proc, and that it opens what the program meant (cwd, umask,
 * /dev/stdin).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

#define TRIES "20000"

/* ON_BEHALF decides on the opened file after sandlock_open_on_behalf
 * returns; ON_BEHALF_CHECK decides in its check, before O_TRUNC/O_CREAT
 * take effect. */
enum { CHECK_THEN_CONTINUE, ON_BEHALF, ON_BEHALF_CHECK };

struct pol {
	int mode;
	atomic_int onbehalf_errors; /* sandlock_open_on_behalf failures seen */
};

static bool ends_with_b(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return n >= 2 && s[n - 2] == '_' && s[n - 1] == 'B';
}

static int32_t refuse_b(void *ud, const sandlock_opened_t *file)
{
	(void)ud;
	return ends_with_b(file->path) ? EACCES : 0;
}

/* The path argument of open/creat (0) or openat/openat2 (1). */
static uint64_t path_arg(const sandlock_notif_t *n)
{
	return n->syscall_nr == SYS_open || n->syscall_nr == SYS_creat ? n->args[0] : n->args[1];
}

/* Deny every file whose name ends in "_B". */
static int32_t policy(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                      sandlock_action_t *out)
{
	struct pol *p = ud;
	if (p->mode == CHECK_THEN_CONTINUE) {
		char *s = sandlock_mem_read_string(m, path_arg(n), 4096);
		if (ends_with_b(s))
			sandlock_action_set_errno(out, EACCES);
		else
			sandlock_action_set_continue(out);
		sandlock_string_free(s);
		return 0;
	}
	sandlock_opened_t o;
	int32_t e = sandlock_open_on_behalf(m, n, p->mode == ON_BEHALF_CHECK ? refuse_b : NULL,
	                                    NULL, &o);
	if (e) {
		sandlock_action_set_errno(out, e);
		return 0;
	}
	if (ends_with_b(o.path)) { /* ON_BEHALF: decided after the open */
		close(o.fd);
		sandlock_action_set_errno(out, EACCES);
	} else {
		sandlock_action_set_inject_fd_send(out, o.fd, o.newfd_flags);
	}
	sandlock_string_free(o.path);
	return 0;
}

static sandlock_result_t *run_policy(sandlock_builder_t *b, const char *const *argv, int mode)
{
	sandlock_sandbox_builder_timeout_ms(b, 60000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	struct pol *p = calloc(1, sizeof(*p));
	p->mode = mode;
	/* One handler on four syscalls: freed once by the run. */
	sandlock_handler_t *h = sandlock_handler_new(policy, p, free, SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t regs[] = {
		{ "open", h }, { "openat", h }, { "openat2", h }, { "creat", h },
	};
	sandlock_result_t *r = tu_run_with(sb, argv, regs, 4);
	sandlock_sandbox_free(sb);
	return r;
}

/* A directory with secret_A ("ALLOWED") and secret_B ("DENIED"). */
static bool make_secrets(char dir[TU_TMPDIR_LEN])
{
	char a[128], b[128];
	if (!tu_mkdtemp(dir, "onbehalf"))
		return false;
	snprintf(a, sizeof a, "%s/secret_A", dir);
	snprintf(b, sizeof b, "%s/secret_B", dir);
	return tu_write_file(a, "ALLOWED") && tu_write_file(b, "DENIED");
}

/* Run race_open in dir; *opened and *leaked from its report. */
static bool race(const char *dir, const char *how, int mode, bool writable, int *opened,
                 int *leaked)
{
	char exe[4200];
	snprintf(exe, sizeof exe, "%s/race_open", tu_helpers_dir());
	const char *argv[] = { exe, dir, TRIES, how, NULL };
	sandlock_builder_t *b = tu_escape_builder();
	if (writable)
		sandlock_sandbox_builder_fs_write(b, dir);
	else
		sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_result_t *r = run_policy(b, argv, mode);
	if (!r)
		return false;
	char *out = sandlock_result_stdout(r);
	int tries = 0;
	bool ok = sscanf(out, "opened=%d leaked=%d tries=%d", opened, leaked, &tries) == 3 &&
	          tries == atoi(TRIES);
	if (!ok)
		fprintf(stderr, "  race_open said: %s / %s\n", out, sandlock_result_stderr(r));
	else
		fprintf(stderr, "  %s %s: opened=%d leaked=%d of %d\n", how,
		        mode == ON_BEHALF ? "on behalf" : "check+continue", *opened, *leaked, tries);
	sandlock_string_free(out);
	sandlock_result_free(r);
	return ok;
}

/* The control: the race is real, check-then-CONTINUE loses it. */
TEST(check_then_continue_loses_the_race)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(make_secrets(dir));
	int opened = 0, leaked = 0;
	CHECK(race(dir, "openat", CHECK_THEN_CONTINUE, false, &opened, &leaked));
	CHECK(opened > 0);
	CHECK(leaked > 0);
	tu_rm_rf(dir);
}

static void never_loses(const char *how, bool writable)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(make_secrets(dir));
	int opened = 0, leaked = 0;
	CHECK(race(dir, how, ON_BEHALF, writable, &opened, &leaked));
	CHECK(opened > 0); /* the allowed file still opens */
	CHECK_EQ_INT(leaked, 0);
	tu_rm_rf(dir);
}

TEST(on_behalf_openat_never_loses)
{
	never_loses("openat", false);
}

TEST(on_behalf_open_never_loses)
{
	never_loses("open", false);
}

/* openat2 is answered ENOSYS by the filter (its mode is out of the
 * filter's reach): every try fails, none leaks. */
TEST(openat2_gives_the_race_nothing)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(make_secrets(dir));
	int opened = -1, leaked = -1;
	CHECK(race(dir, "openat2", ON_BEHALF, false, &opened, &leaked));
	CHECK_EQ_INT(opened, 0);
	CHECK_EQ_INT(leaked, 0);
	tu_rm_rf(dir);
}

TEST(on_behalf_creat_never_loses)
{
	never_loses("creat", true);
}

/* O_TRUNC through a symlink to a denied file: decided after the open, the
 * file is already truncated (the control, why checks exist); decided in
 * the check, it is untouched.  Likewise a denied file O_CREAT made is
 * removed again. */
TEST(on_behalf_check_runs_before_truncate_and_create)
{
	char dir[TU_TMPDIR_LEN], b[128], l[128], cmd[512], made[128];
	struct stat st;
	for (int mode = ON_BEHALF; mode <= ON_BEHALF_CHECK; mode++) {
		REQUIRE(make_secrets(dir));
		snprintf(b, sizeof b, "%s/secret_B", dir);
		snprintf(l, sizeof l, "%s/innocent", dir);
		REQUIRE(symlink(b, l) == 0);
		snprintf(made, sizeof made, "%s/new_B", dir);
		snprintf(cmd, sizeof cmd, "true > %s/innocent; true > %s; echo done", dir, made);
		sandlock_builder_t *bl = tu_system_builder();
		sandlock_sandbox_builder_fs_write(bl, dir);
		const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
		sandlock_result_t *r = run_policy(bl, argv, mode);
		REQUIRE(r);
		CHECK(tu_out_is(r, "done\n"));
		CHECK(stat(b, &st) == 0);
		if (mode == ON_BEHALF) {
			CHECK_EQ_INT(st.st_size, 0); /* refused, but too late */
			CHECK(access(made, F_OK) == 0);
		} else {
			CHECK_EQ_INT(st.st_size, 6); /* "DENIED" intact */
			CHECK(access(made, F_OK) != 0);
		}
		sandlock_result_free(r);
		tu_rm_rf(dir);
	}
}

/* Run sh -c script with the on-behalf policy; the result. */
static sandlock_result_t *sh_onbehalf(sandlock_builder_t *b, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	return run_policy(b, argv, ON_BEHALF);
}

/* The opener carries the sandbox's Landlock ruleset: a file outside every
 * grant stays unreadable although the supervisor itself could read it. */
TEST(on_behalf_open_is_confined_by_landlock)
{
	char dir[TU_TMPDIR_LEN], cmd[256];
	REQUIRE(make_secrets(dir));
	snprintf(cmd, sizeof cmd, "%s/secret_A", dir);
	int fd = open(cmd, O_RDONLY); /* control: we can read it */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof cmd, "cat %s/secret_A 2>&1; echo rc=$?", dir);
	sandlock_result_t *r = sh_onbehalf(tu_system_builder(), cmd);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(strstr(out, "Permission denied") != NULL);
	CHECK(strstr(out, "ALLOWED") == NULL);
	sandlock_string_free(out);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Relative paths resolve against the program's cwd; O_CREAT applies the
 * program's umask, not the supervisor's. */
TEST(on_behalf_uses_the_callers_cwd_and_umask)
{
	char dir[TU_TMPDIR_LEN], cmd[256], f[128];
	REQUIRE(make_secrets(dir));
	snprintf(cmd, sizeof cmd, "cd %s && cat secret_A && umask 077 && echo x > made", dir);
	mode_t old = umask(0);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, dir);
	sandlock_result_t *r = sh_onbehalf(b, cmd);
	umask(old);
	REQUIRE(r);
	CHECK(tu_out_is(r, "ALLOWED"));
	snprintf(f, sizeof f, "%s/made", dir);
	struct stat st;
	CHECK(stat(f, &st) == 0);
	CHECK_EQ_INT(st.st_mode & 0777, 0600);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/*
 * /dev/stdin is the program's stdin (a pipe here: dash writes a short
 * here-document into one), not the supervisor's.  No `echo piped | cat`:
 * the second fork of a pipeline races the first child's SIGCHLD, and a
 * trapped fork (max_processes) interrupted before the supervisor takes it
 * fails with EINTR, which dash reports as "Cannot fork" (README, limits).
 */
TEST(on_behalf_dev_stdin_is_the_callers)
{
	sandlock_result_t *r =
		sh_onbehalf(tu_system_builder(), "exec cat /dev/stdin <<EOF\npiped\nEOF\n");
	REQUIRE(r);
	CHECK(tu_out_is(r, "piped\n"));
	if (th_failed_now) {
		char *e = sandlock_result_stderr(r);
		fprintf(stderr, "  exit %d, stderr '%s'\n", sandlock_result_exit_code(r), e ? e : "");
		sandlock_string_free(e);
	}
	sandlock_result_free(r);
}

/* The opener is a thread of the supervisor: /proc/self there is us.
 * Neither our pid spelled out nor a symlink to /proc/self may reach our
 * environment. */
TEST(on_behalf_never_opens_the_supervisors_proc)
{
	char dir[TU_TMPDIR_LEN], cmd[512], link[128];
	REQUIRE(tu_mkdtemp(dir, "onbehalf"));
	/* The marker: the first entry of our environment as the kernel keeps it. */
	char secret[256] = { 0 };
	int efd = open("/proc/self/environ", O_RDONLY);
	REQUIRE(efd >= 0);
	ssize_t got = read(efd, secret, sizeof secret - 1);
	close(efd);
	if (got <= 0 || strlen(secret) < 4)
		SKIP("the test process has no environment to look for");
	snprintf(link, sizeof link, "%s/env", dir);
	REQUIRE(symlink("/proc/self/environ", link) == 0);
	snprintf(cmd, sizeof cmd, "%s/env", dir);
	int fd = open(cmd, O_RDONLY); /* control: the link does name our environment */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof cmd,
	         "cat /proc/%d/environ %s/env /proc/%d/task/%d/environ; cat /proc/self/status",
	         (int)getpid(), dir, (int)getpid(), (int)getpid());
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, "/proc");
	sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_result_t *r = sh_onbehalf(b, cmd);
	REQUIRE(r);
	size_t len;
	const uint8_t *out = sandlock_result_stdout_bytes(r, &len); /* environ has NULs */
	CHECK(memmem(out, len, secret, strlen(secret)) == NULL);
	CHECK(memmem(out, len, "Name:\tcat", 9) != NULL); /* the program's own /proc/self */
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* A root supervisor keeps CAP_DAC_OVERRIDE; the program has none, and
 * neither has the opener. */
TEST(on_behalf_open_has_no_capabilities)
{
	if (geteuid() != 0)
		SKIP("needs root (a file only CAP_DAC_OVERRIDE can read)");
	char dir[TU_TMPDIR_LEN], f[128], cmd[256];
	REQUIRE(make_secrets(dir));
	snprintf(f, sizeof f, "%s/secret_A", dir);
	REQUIRE(chown(f, 65534, 65534) == 0 && chmod(f, 0600) == 0);
	int fd = open(f, O_RDONLY); /* control: we (root) can */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(cmd, sizeof cmd, "cat %s 2>&1", f);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_result_t *r = sh_onbehalf(b, cmd);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(strstr(out, "ALLOWED") == NULL);
	CHECK(strstr(out, "Permission denied") != NULL);
	sandlock_string_free(out);
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* Misuse is a clear error, never a crash. */
TEST(open_on_behalf_rejects_misuse)
{
	sandlock_opened_t o;
	CHECK_EQ_INT(sandlock_open_on_behalf(NULL, NULL, NULL, NULL, &o), EINVAL);
	CHECK_EQ_INT(o.fd, -1);
	CHECK_EQ_INT(sandlock_open_on_behalf(NULL, NULL, NULL, NULL, NULL), EINVAL);
}

/* A FIFO without a writer must not stall the opener (and with it every
 * trapped call of the run): it is opened non-blocking. */
TEST(on_behalf_fifo_does_not_stall_the_supervisor)
{
	char dir[TU_TMPDIR_LEN], f[128], cmd[256];
	REQUIRE(tu_mkdtemp(dir, "onbehalf"));
	snprintf(f, sizeof f, "%s/fifo", dir);
	REQUIRE(mkfifo(f, 0600) == 0);
	snprintf(cmd, sizeof cmd, "cat %s; echo done", f);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_result_t *r = sh_onbehalf(b, cmd);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK(tu_out_is(r, "done\n"));
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* The caller's flags are its own: O_NOFOLLOW on a symlink is ELOOP. */
TEST(on_behalf_keeps_o_nofollow)
{
	char dir[TU_TMPDIR_LEN], a[128], l[128], cmd[512];
	REQUIRE(make_secrets(dir));
	snprintf(a, sizeof a, "%s/secret_A", dir);
	snprintf(l, sizeof l, "%s/link", dir);
	REQUIRE(symlink(a, l) == 0);
	snprintf(cmd, sizeof cmd,
	         TU_PY " -c 'import os\n"
	         "try:\n os.open(\"%s\", os.O_RDONLY | os.O_NOFOLLOW)\n print(\"opened\")\n"
	         "except OSError as e:\n print(e.errno)\n"
	         "print(open(\"%s\").read())'", l, l);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_result_t *r = sh_onbehalf(b, cmd);
	REQUIRE(r);
	char want[64];
	snprintf(want, sizeof want, "%d\nALLOWED\n", ELOOP);
	CHECK(tu_out_is(r, want));
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* ================= the /proc view (builtins/proc.c) ================= */

/* sh -c script in a sandbox that may read /proc; no user handler. */
static sandlock_result_t *run_with_proc(const char *script)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, "/proc");
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

/* True if the whitespace-separated word w occurs in s. */
static bool has_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	for (const char *p = s; (p = strstr(p, w)) != NULL; p++)
		if ((p == s || p[-1] == ' ' || p[-1] == '\n') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

/* Processes outside the sandbox (a host process, pid 1, the sandbox's own
 * init) cannot be opened or listed; the sandbox's own can. */
TEST(proc_hides_processes_outside_the_sandbox)
{
	pid_t victim = tu_spawn_victim();
	REQUIRE(victim > 0);
	char p[64], script[512];
	snprintf(p, sizeof p, "/proc/%d/cmdline", (int)victim);
	int fd = open(p, O_RDONLY); /* control: visible from outside */
	CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	snprintf(script, sizeof script,
	         "echo me $$ init $PPID; echo list $(ls /proc); "
	         "for f in /proc/%d/cmdline /proc/1/cmdline /proc/$PPID/status; do "
	         "x=$(cat $f 2>&1) && echo saw $f; done; "
	         "head -1 /proc/$$/status; echo end",
	         (int)victim);
	sandlock_result_t *r = run_with_proc(script);
	tu_reap_victim(victim);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	int me = 0, init = 0;
	CHECK(sscanf(out, "me %d init %d", &me, &init) == 2);
	char num[16];
	snprintf(num, sizeof num, "%d", me);
	CHECK(has_word(out, num)); /* its own pid is listed */
	snprintf(num, sizeof num, "%d", init);
	CHECK(!has_word(strstr(out, "list") ? strstr(out, "list") : out, num));
	snprintf(num, sizeof num, "%d", (int)victim);
	CHECK(!has_word(out, num));
	CHECK(!has_word(out, "1"));
	CHECK(strstr(out, "saw") == NULL);
	CHECK(strstr(out, "Name:\tsh") != NULL);
	CHECK(strstr(out, "end") != NULL);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/* Kernel files are refused and the mount tables filtered (only /proc is a
 * mount point the policy shows); the rest of /proc (and the program's own
 * /proc/self, ptrace-guarded files included) works. */
TEST(proc_denies_sensitive_kernel_files)
{
	static const char *const denied[] = { "/proc/kallsyms", "/proc/timer_list",
	                                      "/proc/self/mountstats" };
	int nreadable = 0;
	for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
		int fd = open(denied[i], O_RDONLY); /* control: readable outside */
		nreadable += fd >= 0;              /* (timer_list is root's only) */
		if (fd >= 0)
			close(fd);
	}
	CHECK(nreadable > 0);
	/* control: outside, the table has more than /proc (at least "/") */
	FILE *f = fopen("/proc/self/mounts", "re");
	char line[1024];
	int outside = 0;
	while (f && fgets(line, sizeof line, f))
		outside += strstr(line, " /proc ") == NULL;
	if (f)
		fclose(f);
	CHECK(outside > 0);
	sandlock_result_t *r = run_with_proc(
		"for f in /proc/kallsyms /proc/timer_list /proc/self/mountstats "
		"/proc/kcore /proc/sysrq-trigger; do "
		"x=$(head -c1 $f 2>&1) && echo read $f; done; "
		"head -1 /proc/cpuinfo | cut -c1-9; x=$(head -1 /proc/self/maps) && echo maps; "
		"cat /proc/thread-self/comm; cut -d' ' -f2 /proc/mounts /proc/$$/mounts; "
		"cut -d' ' -f5 /proc/self/mountinfo");
	REQUIRE(r);
	CHECK(tu_out_is(r, "processor\nmaps\ncat\n/proc\n/proc\n/proc\n"));
	sandlock_result_free(r);
}

/* Without -r /proc nothing changes: Landlock alone refuses /proc. */
TEST(proc_view_off_without_proc)
{
	/* exec, no pipeline: see on_behalf_dev_stdin_is_the_callers */
	const char *argv[] = { "/bin/sh", "-c", "exec cat /proc/self/status 2>&1", NULL };
	sandlock_sandbox_t *sb = tu_build(tu_system_builder());
	REQUIRE(sb);
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(strstr(out, "Permission denied") != NULL);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/* A thread naming its process's /proc/PID (not its own tid) still gets its
 * ptrace-guarded files: the supervisor opens them, as for /proc/self. */
TEST(proc_own_files_from_a_thread)
{
	sandlock_result_t *r = run_with_proc(
		"exec " TU_PY " -c 'import os, threading\n"
		"def t():\n"
		"    print(len(open(\"/proc/%d/maps\" % os.getpid()).readline()) > 0)\n"
		"    print(len(open(\"/proc/self/maps\").readline()) > 0)\n"
		"th = threading.Thread(target=t); th.start(); th.join()'");
	REQUIRE(r);
	CHECK(tu_out_is(r, "True\nTrue\n"));
	sandlock_result_free(r);
}

/* ================= the virtual hostname (builtins/uts.c) ================= */

/* uname's nodename is the sandbox's name: sandbox-<init pid> by default. */
TEST(uts_default_name_is_sandbox_pid)
{
	struct utsname u;
	REQUIRE(uname(&u) == 0);
	const char *argv[] = { "/bin/sh", "-c", "echo $(uname -n) sandbox-$PPID", NULL };
	sandlock_sandbox_t *sb = tu_build(tu_system_builder());
	REQUIRE(sb);
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	char a[80] = "", b[80] = "";
	CHECK(sscanf(out, "%79s %79s", a, b) == 2);
	CHECK(strcmp(a, b) == 0);
	CHECK(strcmp(a, u.nodename) != 0); /* control: not the host's name */
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/* A configured name, also in /proc/sys/kernel/hostname and /etc/hostname
 * (opened on behalf when /proc is readable). */
TEST(uts_configured_name_everywhere)
{
	char host[128] = "";
	int fd = open("/proc/sys/kernel/hostname", O_RDONLY);
	REQUIRE(fd >= 0);
	CHECK(read(fd, host, sizeof host - 1) > 0);
	close(fd);
	CHECK(strcmp(host, "box-77\n") != 0); /* control */
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, "/proc");
	sandlock_sandbox_builder_name(b, "box-77");
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c",
	                       "uname -n; cat /proc/sys/kernel/hostname; cat /etc/hostname", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK(tu_out_is(r, "box-77\nbox-77\nbox-77\n"));
	sandlock_result_free(r);
}

TEST(uts_name_is_validated)
{
	char long_name[80];
	memset(long_name, 'x', 65);
	long_name[65] = 0;
	const char *bad[] = { "", long_name, NULL };
	for (int i = 0; i < 3; i++) {
		int err = 0;
		char *msg = NULL;
		sandlock_builder_t *b = sandlock_sandbox_builder_name(sandlock_sandbox_builder_new(),
		                                                      bad[i]);
		sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
		CHECK(sb == NULL);
		CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
		CHECK(msg && strstr(msg, "name"));
		sandlock_string_free(msg);
		sandlock_sandbox_free(sb);
	}
	long_name[64] = 0; /* 64 bytes: fine */
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_name(tu_system_builder(), long_name));
	CHECK(sb != NULL);
	sandlock_sandbox_free(sb);
}
