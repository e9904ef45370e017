/*
 * test_lifecycle.c — the sandbox cannot reach processes outside it (pids
 * builtin), cannot outlive its run, cannot hang or exhaust the caller
 * (run loop errors, output cap), and the library works with fds 0-2
 * closed.
 */
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/cgroup.h" /* sl_cgroup_create: linked from libsandlock.a */
#include "harness.h"
#include "testutil.h"

/* Every pid-targeting call, on argv[1] = a pid, or "child": on a child
 * the probe starts itself (inside the sandbox when the probe is). */
static const char PROBE[] =
	"import ctypes, errno, os, resource, sys\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"def sc(*a):\n"
	"    r = libc.syscall(*[ctypes.c_long(x) for x in a])\n"
	"    if r < 0:\n"
	"        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))\n"
	"    return r\n"
	"def probes(pid):\n"
	"    head = ctypes.c_void_p(); ln = ctypes.c_size_t()\n"
	"    mask = ctypes.c_ulong(1)\n"
	"    return [\n"
	"        ('prlimit', lambda: resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0))),\n"
	"        ('setpriority', lambda: os.setpriority(os.PRIO_PROCESS, pid, 5)),\n"
	"        ('setaffinity', lambda: os.sched_setaffinity(pid, {0})),\n"
	"        ('setscheduler', lambda: os.sched_setscheduler(pid, os.SCHED_BATCH, os.sched_param(0))),\n"
	"        ('setparam', lambda: os.sched_setparam(pid, os.sched_param(0))),\n"
	"        ('ioprio_set', lambda: sc(251, 1, pid, (2 << 13) | 4)),\n"
	"        ('kcmp', lambda: sc(312, pid, pid, 1, 0, 0)),\n"
	"        ('pidfd_open', lambda: os.close(os.pidfd_open(pid))),\n"
	"        ('get_robust_list', lambda: sc(274, pid, ctypes.addressof(head), ctypes.addressof(ln))),\n"
	"        ('migrate_pages', lambda: sc(256, pid, 64, ctypes.addressof(mask), ctypes.addressof(mask))),\n"
	"        ('kill', lambda: os.kill(pid, 0)),\n"
	"        ('tgkill', lambda: sc(234, pid, pid, 0)),\n"
	"    ]\n"
	"def run(pid):\n"
	"    out = []\n"
	"    for name, f in probes(pid):\n"
	"        try:\n"
	"            f(); out.append(name + '=ok')\n"
	"        except OSError as e:\n"
	"            out.append(name + '=' + errno.errorcode.get(e.errno, str(e.errno)))\n"
	"    return ' '.join(out)\n"
	"if sys.argv[1] == 'child':\n"
	"    import subprocess\n"
	"    p = subprocess.Popen(['/bin/sleep', '30'])\n"
	"    print(run(p.pid)); p.kill(); p.wait()\n"
	"else:\n"
	"    print(run(int(sys.argv[1])))\n"
;

#define ALL_OK                                                                              \
	"prlimit=ok setpriority=ok setaffinity=ok setscheduler=ok setparam=ok ioprio_set=ok "   \
	"kcmp=ok pidfd_open=ok get_robust_list=ok migrate_pages=ok kill=ok tgkill=ok\n"
#define ALL_EPERM                                                                           \
	"prlimit=EPERM setpriority=EPERM setaffinity=EPERM setscheduler=EPERM setparam=EPERM "  \
	"ioprio_set=EPERM kcmp=EPERM pidfd_open=EPERM get_robust_list=EPERM "                 \
	"migrate_pages=EPERM kill=EPERM tgkill=EPERM\n"

/* Run the probe (python3 -c PROBE arg) outside any sandbox; its stdout. */
static bool probe_outside(const char *arg, char *out, size_t outsz)
{
	int p[2];
	if (pipe(p) < 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execl(TU_PY, TU_PY, "-c", PROBE, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t len = 0;
	ssize_t n;
	while (len + 1 < outsz && (n = read(p[0], out + len, outsz - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static sandlock_result_t *run_system(const char *const *argv, uint64_t timeout_ms)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_timeout_ms(b, timeout_ms);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

/* ================= foreign processes (builtins/pids.c) ================= */

TEST(foreign_process_calls_work_outside)
{
	pid_t victim = tu_spawn_victim();
	char arg[16], out[1024];
	snprintf(arg, sizeof arg, "%d", (int)victim);
	bool ok = probe_outside(arg, out, sizeof out);
	tu_reap_victim(victim);
	REQUIRE(ok);
	CHECK(strcmp(out, ALL_OK) == 0);
	if (strcmp(out, ALL_OK) != 0)
		fprintf(stderr, "  outside: %s", out);
}

TEST(foreign_process_calls_denied_inside)
{
	pid_t victim = tu_spawn_victim();
	char arg[16];
	snprintf(arg, sizeof arg, "%d", (int)victim);
	const char *argv[] = { TU_PY, "-c", PROBE, arg, NULL };
	sandlock_result_t *r = run_system(argv, 30000);
	/* The victim must be untouched: its RLIMIT_CORE is still ours. */
	struct rlimit mine, its;
	getrlimit(RLIMIT_CORE, &mine);
	bool same = prlimit(victim, RLIMIT_CORE, NULL, &its) == 0 &&
	            its.rlim_cur == mine.rlim_cur && its.rlim_max == mine.rlim_max;
	tu_reap_victim(victim);
	REQUIRE(r);
	CHECK(tu_out_is(r, ALL_EPERM));
	CHECK(same);
	sandlock_result_free(r);
}

TEST(sandboxed_child_is_still_reachable)
{
	const char *argv[] = { TU_PY, "-c", PROBE, "child", NULL };
	sandlock_result_t *r = run_system(argv, 30000);
	REQUIRE(r);
	CHECK(tu_out_is(r, ALL_OK));
	sandlock_result_free(r);
}

TEST(init_groups_and_users_are_out_of_reach)
{
	/* init is the command's parent; a process group and a uid reach
	 * beyond the sandbox; pid 0 and the caller's own pid are itself. */
	const char *argv[] = {
		TU_PY, "-c",
		"import os, resource\n"
		"def t(f):\n"
		"    try:\n"
		"        f(); return 'ok'\n"
		"    except OSError as e:\n"
		"        return str(e.errno)\n"
		"print(t(lambda: resource.prlimit(os.getppid(), resource.RLIMIT_CPU, (1, 1))),\n"
		"      t(lambda: os.sched_setaffinity(os.getppid(), {0})),\n"
		"      t(lambda: os.close(os.pidfd_open(os.getppid()))),\n"
		"      t(lambda: os.setpriority(os.PRIO_PGRP, 0, 5)),\n"
		"      t(lambda: os.setpriority(os.PRIO_USER, 0, 5)),\n"
		"      t(lambda: os.setpriority(os.PRIO_PROCESS, 0, 5)),\n"
		"      t(lambda: resource.prlimit(0, resource.RLIMIT_CORE, (0, 0))),\n"
		"      t(lambda: resource.prlimit(os.getpid(), resource.RLIMIT_CORE, (0, 0))))\n",
		NULL
	};
	sandlock_result_t *r = run_system(argv, 30000);
	REQUIRE(r);
	CHECK(tu_out_is(r, "1 1 1 1 1 ok ok ok\n"));
	sandlock_result_free(r);
}

/* ================= nothing outlives the run (cgroup.c) ================= */

/* Records init's pid (the command's parent) and that of a setsid() child
 * (out of the process group: no killpg reaches it), then waits. */
static const char ORPHAN_MAKER[] =
	"import os, sys, time\n"
	"d = sys.argv[1]\n"
	"if os.fork() == 0:\n"
	"    os.setsid()\n"
	"    open(d + '/orphan.tmp', 'w').write(str(os.getpid()))\n"
	"    os.rename(d + '/orphan.tmp', d + '/orphan')\n"
	"    os.execv('/bin/sleep', ['sleep', '300'])\n"
	"open(d + '/init.tmp', 'w').write(str(os.getppid()))\n"
	"os.rename(d + '/init.tmp', d + '/init')\n"
	"time.sleep(300)\n";

static long read_long(const char *dir, const char *name)
{
	char path[256], buf[32] = { 0 };
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	return n > 0 ? atol(buf) : -1;
}

/* True if pid exists and is not a zombie. */
static bool alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

struct killer {
	const char *dir;
	pid_t orphan;
	bool killed;
};

/* Outside the sandbox: SIGKILL its init once the orphan exists, as the
 * kernel did to an init whose RLIMIT_CPU the sandbox had lowered. */
static void *kill_init(void *arg)
{
	struct killer *k = arg;
	for (int i = 0; i < 3000; i++) {
		long orphan = read_long(k->dir, "orphan"), init = read_long(k->dir, "init");
		if (orphan > 0 && init > 0) {
			k->orphan = (pid_t)orphan;
			k->killed = kill((pid_t)init, SIGKILL) == 0;
			return NULL;
		}
		usleep(10000);
	}
	return NULL;
}

TEST(init_killed_from_outside_leaves_no_survivor)
{
	struct sl_cgroup probe;
	if (!sl_cgroup_create(&probe, 0))
		SKIP("no cgroup v2 subtree can be made here (the CLI's fallback is tested in Python)");
	sl_cgroup_destroy(&probe);
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "lifecycle"));
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, dir);
	sandlock_sandbox_builder_timeout_ms(b, 120000);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	struct killer k = { dir, 0, false };
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, kill_init, &k) == 0);
	const char *argv[] = { TU_PY, "-c", ORPHAN_MAKER, dir, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	pthread_join(t, NULL);
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
	REQUIRE(r);
	CHECK(k.killed);
	CHECK(k.orphan > 0);
	/* the reference's meaning: a SIGKILL from anywhere is KILLED */
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK(!sandlock_result_killed_by_handler(r));
	/* Checked the moment the run returned: no waiting for a late death. */
	bool survived = k.orphan > 0 && alive(k.orphan);
	CHECK(!survived);
	if (survived)
		kill(k.orphan, SIGKILL);
	sandlock_result_free(r);
}

/* The cgroup v2 mount point (first one in mountinfo, root "/"), or false. */
static bool cgroup2_mount(char *out, size_t sz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096], root[1024], mnt[1024];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		char *dash = strstr(line, " - cgroup2 ");
		found = dash && sscanf(line, "%*s %*s %*s %1023s %1023s", root, mnt) == 2 &&
		        strcmp(root, "/") == 0 && snprintf(out, sz, "%s", mnt) < (int)sz;
	}
	fclose(f);
	return found;
}

/* The guest's cgroup path as it reads it; the group must be gone after. */
static void check_run_in_own_cgroup(void)
{
	struct sl_cgroup probe;
	char mnt[1024];
	if (!sl_cgroup_create(&probe, 0) || !cgroup2_mount(mnt, sizeof mnt))
		SKIP("no cgroup v2 subtree can be made here");
	sl_cgroup_destroy(&probe);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, "/proc");
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sed", "-n", "s/^0:://p", "/proc/self/cgroup", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	char *path = sandlock_result_stdout(r);
	REQUIRE(path);
	path[strcspn(path, "\n")] = '\0';
	CHECK(strstr(path, "/sandlock-") != NULL);
	char full[2048];
	snprintf(full, sizeof full, "%s%s", mnt, path);
	CHECK(access(full, F_OK) < 0 && errno == ENOENT);
	sandlock_string_free(path);
	sandlock_result_free(r);
}

TEST(sandbox_runs_in_its_own_cgroup_removed_after_the_run)
{
	check_run_in_own_cgroup();
}

/* clone3 answered ENOSYS, as a container runtime's seccomp profile does
 * (Docker's default profile did before clone3 was allowed): the launcher
 * must fall back to fork and have the child join the group itself. */
static int refuse_clone3(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -1;
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

TEST(sandbox_joins_its_cgroup_where_clone3_is_refused)
{
	REQUIRE(refuse_clone3() == 0);
	/* The probe: clone3 really is refused in this process now (a real
	 * clone3 with an invalid size would say EINVAL, not ENOSYS). */
	errno = 0;
	CHECK(syscall(__NR_clone3, NULL, (size_t)0) < 0 && errno == ENOSYS);
	check_run_in_own_cgroup();
}

/* ================= the run loop fails loudly (run.c) ================= */

static rlim_t saved_nofile;

/* On the supervisor thread, i.e. in the caller: what a guest's prlimit on
 * the caller did before builtins/pids.c. */
static int32_t lower_nofile(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                            sandlock_action_t *out)
{
	(void)ud;
	(void)n;
	(void)m;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	saved_nofile = rl.rlim_cur;
	rl.rlim_cur = 2; /* poll() of the run loop's 3 fds now fails: EINVAL */
	setrlimit(RLIMIT_NOFILE, &rl);
	sandlock_action_set_continue(out);
	return 0;
}

TEST(run_loop_failure_ends_the_run_with_an_error)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "lifecycle"));
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, dir);
	sandlock_sandbox_builder_timeout_ms(b, 120000);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	char script[256];
	snprintf(script, sizeof script, "echo $$ > %s/pid; /bin/uname >&2; exec sleep 300", dir);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_registration_t reg = { "uname", sandlock_handler_new(lower_nofile, NULL, NULL,
	                                                              SANDLOCK_EXCEPTION_KILL) };
	alarm(60); /* a spinning loop would hang here: fail loudly instead */
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r =
		sandlock_run_with_handlers_err(sb, argv, tu_argc(argv), &reg, 1, &err, &msg);
	alarm(0);
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (saved_nofile) {
		rl.rlim_cur = saved_nofile;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sandlock_sandbox_free(sb);
	long pid = read_long(dir, "pid");
	tu_rm_rf(dir);
	CHECK(saved_nofile != 0); /* the handler ran */
	CHECK(r == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_SYSTEM);
	CHECK(msg && strstr(msg, "poll") && strstr(msg, "killed"));
	if (msg)
		fprintf(stderr, "  (%s)\n", msg);
	CHECK(pid > 0 && !alive((pid_t)pid)); /* the sandbox was ended */
	sandlock_string_free(msg);
	sandlock_result_free(r);
}

/* ================= the output cap (run.c) ================= */

#define MIB (1024ull * 1024)

/* sh -c script under a max_output cap (UINT64_MAX: the default). */
static sandlock_result_t *run_capped(uint64_t cap, const char *script)
{
	sandlock_builder_t *b = tu_system_builder();
	if (cap != UINT64_MAX)
		sandlock_sandbox_builder_max_output(b, cap);
	sandlock_sandbox_builder_timeout_ms(b, 60000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

/* All len bytes of p are the repeating "y\n" of yes(1). */
static bool is_yes(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != (i % 2 ? '\n' : 'y'))
			return false;
	return true;
}

TEST(output_past_the_default_cap_is_dropped_and_counted)
{
	/* 100 MiB on stdout; the command still ends normally (its writes
	 * never block on a full pipe: the rest is read and discarded). */
	sandlock_result_t *r = run_capped(UINT64_MAX, "yes | head -c 104857600; echo done >&2");
	REQUIRE(r);
	size_t len = 0;
	const uint8_t *out = sandlock_result_stdout_bytes(r, &len);
	CHECK_EQ_INT(len, SANDLOCK_DEFAULT_MAX_OUTPUT);
	CHECK(is_yes(out, len));
	CHECK_EQ_INT(sandlock_result_stdout_truncated(r), 100 * MIB - SANDLOCK_DEFAULT_MAX_OUTPUT);
	CHECK_EQ_INT(sandlock_result_stderr_truncated(r), 0);
	CHECK(tu_err_has(r, "done\n"));
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	sandlock_result_free(r);
}

TEST(smaller_cap_applies_to_each_stream)
{
	sandlock_result_t *r = run_capped(1000, "yes | head -c 5000; yes | head -c 3000 >&2");
	REQUIRE(r);
	size_t olen = 0, elen = 0;
	const uint8_t *out = sandlock_result_stdout_bytes(r, &olen);
	const uint8_t *err = sandlock_result_stderr_bytes(r, &elen);
	CHECK_EQ_INT(olen, 1000);
	CHECK_EQ_INT(elen, 1000);
	CHECK(is_yes(out, olen) && is_yes(err, elen));
	CHECK_EQ_INT(sandlock_result_stdout_truncated(r), 4000);
	CHECK_EQ_INT(sandlock_result_stderr_truncated(r), 2000);
	sandlock_result_free(r);
}

TEST(no_cap_keeps_everything)
{
	sandlock_result_t *r = run_capped(0, "yes | head -c 104857600");
	REQUIRE(r);
	size_t len = 0;
	const uint8_t *out = sandlock_result_stdout_bytes(r, &len);
	CHECK_EQ_INT(len, 100 * MIB);
	CHECK(is_yes(out, len));
	CHECK_EQ_INT(sandlock_result_stdout_truncated(r), 0);
	sandlock_result_free(r);
}

TEST(output_under_the_cap_is_not_truncated)
{
	sandlock_result_t *r = run_capped(6, "printf hello");
	REQUIRE(r);
	CHECK(tu_out_is(r, "hello"));
	CHECK_EQ_INT(sandlock_result_stdout_truncated(r), 0);
	sandlock_result_free(r);
}

/* ================= the caller's fds 0-2 closed ================= */

/*
 * In a forked copy of the test with fds 0, 1 and 2 closed, run
 * "echo hi" captured (or, inherit, "echo hi > file"), and write
 * "<run ok> <what the sandbox printed>" to report (an fd above 2).
 */
static void run_with_stdio_closed(int report, bool inherit, const char *dir)
{
	for (int fd = 0; fd <= 2; fd++)
		close(fd);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_builder_fs_write(b, dir);
	sandlock_sandbox_builder_inherit_stdio(b, inherit);
	sandlock_sandbox_builder_fs_read(b, "/proc");
	int err = 0;
	char *msg = NULL, script[1024], line[512];
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	/* Inherited: the closed stdout is /dev/null in the sandbox, so the
	 * command writes its proof to a file: whether each of 0-2 is
	 * /dev/null (not the seccomp listener, which the kernel would have put
	 * in a free slot) and that nothing of ours is open above 2. */
	snprintf(script, sizeof script,
	         "import os, stat\n"
	         "def what(fd):\n"
	         "    try:\n"
	         "        st = os.fstat(fd)\n"
	         "    except OSError:\n"
	         "        return 'closed'\n"
	         "    null = stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)\n"
	         "    return 'null' if null else 'other'\n"
	         "seen = ' '.join(what(fd) for fd in range(13))\n"
	         "open('%s/out', 'w').write(seen)\n"
	         "print('hi')\n",
	         dir);
	const char *argv[] = { TU_PY, "-c", script, NULL };
	sandlock_result_t *r = sb ? sandlock_run_err(sb, argv, 3, &err, &msg) : NULL;
	char *out = r ? sandlock_result_stdout(r) : NULL;
	snprintf(line, sizeof line, "%d %s|%s", r && sandlock_result_success(r), out ? out : "",
	         msg ? msg : "");
	(void)!write(report, line, strlen(line));
	_exit(0);
}

/* What run_with_stdio_closed reported. */
static bool closed_stdio_report(bool inherit, const char *dir, char *buf, size_t sz)
{
	int p[2];
	if (pipe(p) < 0)
		return false;
	pid_t pid = fork();
	if (pid == 0) {
		int report = fcntl(p[1], F_DUPFD_CLOEXEC, 10);
		run_with_stdio_closed(report, inherit, dir);
	}
	close(p[1]);
	size_t len = 0;
	ssize_t n;
	while (len + 1 < sz && (n = read(p[0], buf + len, sz - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

TEST(runs_with_the_callers_stdio_closed)
{
	char dir[TU_TMPDIR_LEN], buf[1024];
	REQUIRE(tu_mkdtemp(dir, "lifecycle"));
	bool ok = closed_stdio_report(false, dir, buf, sizeof buf);
	tu_rm_rf(dir);
	REQUIRE(ok);
	CHECK(strcmp(buf, "1 hi\n|") == 0);
	if (strcmp(buf, "1 hi\n|") != 0)
		fprintf(stderr, "  report: %s\n", buf);
}

TEST(runs_with_the_callers_stdio_closed_inherited)
{
	char dir[TU_TMPDIR_LEN], buf[1024], path[128];
	REQUIRE(tu_mkdtemp(dir, "lifecycle"));
	bool ok = closed_stdio_report(true, dir, buf, sizeof buf);
	snprintf(path, sizeof path, "%s/out", dir);
	char out[256] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!read(fd, out, sizeof out - 1);
		close(fd);
	}
	tu_rm_rf(dir);
	REQUIRE(ok);
	CHECK(strcmp(buf, "1 |") == 0);
	if (strcmp(buf, "1 |") != 0)
		fprintf(stderr, "  report: %s\n", buf);
	const char *want = "null null null closed closed closed closed closed closed closed "
	                   "closed closed closed";
	CHECK(strcmp(out, want) == 0);
	if (strcmp(out, want) != 0)
		fprintf(stderr, "  sandbox wrote: %s\n", out);
}

/* ================= the timeout bounds the whole run ================= */

/* A handler that does not return until the test lets it (or 60 s pass). */
struct stuck {
	atomic_int entered, release, returned, freed;
};

static int32_t stuck_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                        sandlock_action_t *out)
{
	(void)n;
	(void)m;
	struct stuck *s = ud;
	atomic_store(&s->entered, 1);
	for (int i = 0; i < 6000 && !atomic_load(&s->release); i++)
		usleep(10000);
	sandlock_action_set_errno(out, EPERM); /* late: must go nowhere */
	atomic_store(&s->returned, 1);
	return 0;
}

static void stuck_free(void *ud)
{
	atomic_fetch_add(&((struct stuck *)ud)->freed, 1);
}

/* Threads of this process (/proc/self/task entries). */
static int thread_count(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Wait (bounded) until only `want` threads are left. */
static bool threads_back_to(int want)
{
	for (int i = 0; i < 3000; i++) {
		if (thread_count() <= want)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * pwd(1)'s getcwd traps into a handler that never returns by itself; the run has
 * a 300 ms timeout.  The run must return (TIMEOUT) while the handler is
 * still inside; afterwards the handler is let go, and its thread must
 * finish without touching anything of the finished run (ASan), without
 * closing a recycled fd, and without calling ud_free on it.
 */
static void check_stuck_handler(bool deferred)
{
	static struct stuck s, idle;
	memset(&s, 0, sizeof s);
	memset(&idle, 0, sizeof idle);
	int baseline = thread_count();
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_timeout_ms(b, 300);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_handler_t *h = sandlock_handler_new(stuck_fn, &s, stuck_free,
	                                             SANDLOCK_EXCEPTION_KILL);
	sandlock_handler_set_deferred(h, deferred);
	/* A second handler, never called: released normally (ud_free once). */
	sandlock_handler_t *other = sandlock_handler_new(stuck_fn, &idle, stuck_free,
	                                                 SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t regs[] = { { "getcwd", h }, { "getppid", other } };
	const char *argv[] = { "/bin/pwd", NULL };
	alarm(60); /* a run waiting for the handler would never return */
	sandlock_result_t *r = tu_run_with(sb, argv, regs, 2);
	alarm(0);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK(atomic_load(&s.entered));
	CHECK(!atomic_load(&s.returned)); /* returned while the handler still ran */
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	CHECK(sandlock_result_handlers_abandoned(r));
	sandlock_result_free(r);
	CHECK_EQ_INT(atomic_load(&idle.freed), 1);
	CHECK_EQ_INT(atomic_load(&s.freed), 0); /* still in use: leaked, never freed under it */

	/* Take the run's old fd numbers, then let the handler go. */
	int p[2];
	REQUIRE(pipe(p) == 0);
	atomic_store(&s.release, 1);
	CHECK(threads_back_to(baseline));
	CHECK(atomic_load(&s.returned));
	CHECK(fcntl(p[0], F_GETFD) >= 0 && fcntl(p[1], F_GETFD) >= 0);
	CHECK_EQ_INT(atomic_load(&s.freed), 0);
	close(p[0]);
	close(p[1]);
}

TEST(timeout_bounds_a_run_with_a_stuck_handler)
{
	check_stuck_handler(false);
}

TEST(timeout_bounds_a_run_with_a_stuck_deferred_handler)
{
	check_stuck_handler(true);
}

TEST(foreign_pid_denied_even_with_a_user_handler_on_the_syscall)
{
	/* A handler on prlimit64 makes the filter trap it unconditionally (no
	 * pid condition): the builtin still runs first, and the handler sees
	 * only the calls it lets through (pid 0: the caller itself). */
	pid_t victim = tu_spawn_victim();
	char script[512];
	snprintf(script, sizeof script,
	         "import resource\n"
	         "def t(pid):\n"
	         "    try:\n"
	         "        resource.prlimit(pid, resource.RLIMIT_CORE, (0, 0)); return 'ok'\n"
	         "    except OSError as e:\n"
	         "        return str(e.errno)\n"
	         "print(t(%d), t(0))\n",
	         (int)victim);
	const char *argv[] = { TU_PY, "-c", script, NULL };
	static struct tu_counter seen;
	memset(&seen, 0, sizeof seen);
	sandlock_registration_t reg = {
		"prlimit64", sandlock_handler_new(tu_count_and_continue, &seen, tu_counter_free,
		                                  SANDLOCK_EXCEPTION_KILL)
	};
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_result_t *r = tu_run_with(sb, argv, &reg, 1);
	sandlock_sandbox_free(sb);
	tu_reap_victim(victim);
	REQUIRE(r);
	CHECK(tu_out_is(r, "1 ok\n"));
	CHECK(atomic_load(&seen.calls) >= 1); /* the pid-0 call (and python's own) */
	CHECK_EQ_INT(atomic_load(&seen.freed), 1);
	CHECK(!sandlock_result_handlers_abandoned(r)); /* every handler thread was joined */
	sandlock_result_free(r);
}

static int32_t lower_nofile_to_1(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                                 sandlock_action_t *out)
{
	(void)ud;
	(void)n;
	(void)m;
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	saved_nofile = rl.rlim_cur;
	rl.rlim_cur = 1; /* the supervisor's poll of 2 fds now fails; the loop's 1 fd works */
	setrlimit(RLIMIT_NOFILE, &rl);
	sandlock_action_set_continue(out);
	return 0;
}

TEST(supervisor_failure_ends_the_run_with_an_error)
{
	/* inherit_stdio: the run loop polls only the pidfd, so it is the
	 * notification thread that fails; nobody answers trapped calls any
	 * more, and the run must notice and end instead of hanging. */
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "lifecycle"));
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_write(b, dir);
	sandlock_sandbox_builder_inherit_stdio(b, true);
	sandlock_sandbox_builder_timeout_ms(b, 120000);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	char script[256];
	snprintf(script, sizeof script, "/bin/uname > %s/u; /bin/uname > %s/u; exec sleep 300",
	         dir, dir);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	sandlock_registration_t reg = { "uname", sandlock_handler_new(lower_nofile_to_1, NULL,
	                                                              NULL, SANDLOCK_EXCEPTION_KILL) };
	saved_nofile = 0;
	alarm(60);
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r =
		sandlock_run_with_handlers_err(sb, argv, tu_argc(argv), &reg, 1, &err, &msg);
	alarm(0);
	if (saved_nofile) {
		struct rlimit rl;
		getrlimit(RLIMIT_NOFILE, &rl);
		rl.rlim_cur = saved_nofile;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
	CHECK(saved_nofile != 0);
	CHECK(r == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_SYSTEM);
	CHECK(msg && strstr(msg, "supervisor"));
	if (msg)
		fprintf(stderr, "  (%s)\n", msg);
	sandlock_string_free(msg);
	sandlock_result_free(r);
}
