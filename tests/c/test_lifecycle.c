/*
 * test_lifecycle.c — the sandbox cannot reach processes outside it (pids
 * builtin), cannot outlive its run, cannot hang or exhaust the caller
 * (run loop errors, output cap), and the library works with fds 0-2
 * closed.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
	"kcmp=ok pidfd_open=ok get_robust_list=ok migrate_pages=ok kill=ok\n"
#define ALL_EPERM                                                                           \
	"prlimit=EPERM setpriority=EPERM setaffinity=EPERM setscheduler=EPERM setparam=EPERM "  \
	"ioprio_set=EPERM kcmp=EPERM pidfd_open=EPERM get_robust_list=EPERM "                 \
	"migrate_pages=EPERM kill=EPERM\n"

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
