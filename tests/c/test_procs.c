/*
 * test_procs.c — the max_processes builtin (a soft, supervisor-counted
 * limit) and the /proc process-tree counter behind it.
 */
#include <errno.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "run/proctree.h" /* sl_count_tree_processes: linked from libsandlock.a */
#include "testutil.h"

/* Run argv in a sandbox for system programs, limited to max_processes
 * (0 = no limit), sharing the budget of process share (0: none).  NULL
 * on failure, reported. */
static sandlock_result_t *run_sharing(uint32_t max_processes, pid_t share,
                                      const char *const *argv)
{
	sandlock_builder_t *b = tu_system_builder();
	if (max_processes)
		sandlock_sandbox_builder_max_processes(b, max_processes);
	if (share)
		sandlock_sandbox_builder_share_budget(b, share);
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

static sandlock_result_t *run_limited(uint32_t max_processes, const char *const *argv)
{
	return run_sharing(max_processes, 0, argv);
}

/* Start 20 `sleep 5` children, count successes and failures, kill them. */
static const char *const SPAWN20[] = {
	TU_PY, "-c",
	"import subprocess\n"
	"ok=0; fail=0; errs=set(); ps=[]\n"
	"for i in range(20):\n"
	"    try:\n"
	"        ps.append(subprocess.Popen(['/bin/sleep','5'])); ok+=1\n"
	"    except OSError as e:\n"
	"        fail+=1; errs.add(e.errno)\n"
	"for p in ps: p.kill(); p.wait()\n"
	"print(ok, fail, sorted(errs))\n",
	NULL
};

TEST(max_processes_limits_children)
{
	/* python itself is one of the 5: four children fit, 16 get EAGAIN */
	sandlock_result_t *r = run_limited(5, SPAWN20);
	REQUIRE(r);
	CHECK(tu_out_is(r, "4 16 [11]\n"));
	sandlock_result_free(r);
}

TEST(children_that_exited_free_their_slots)
{
	/* 40 children one after the other under a limit of 3: the count is
	 * kept as a bound between walks of /proc, and a walk at the bound
	 * sees the exits, so every one of them starts. */
	static const char *const argv[] = {
		TU_PY, "-c",
		"import subprocess\n"
		"print(sum(subprocess.call(['/bin/true']) == 0 for _ in range(40)))\n",
		NULL
	};
	sandlock_result_t *r = run_limited(3, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "40\n"));
	sandlock_result_free(r);
}

TEST(without_limit_all_children_start)
{
	sandlock_result_t *r = run_limited(0, SPAWN20);
	REQUIRE(r);
	CHECK(tu_out_is(r, "20 0 []\n"));
	sandlock_result_free(r);
}

TEST(threads_are_not_processes)
{
	/* 10 threads under a limit of 2: clone(CLONE_THREAD) is not counted */
	const char *argv[] = {
		TU_PY, "-c",
		"import threading\n"
		"ts=[threading.Thread(target=lambda: None) for _ in range(10)]\n"
		"[t.start() for t in ts]; [t.join() for t in ts]\n"
		"print('threads ok')\n",
		NULL
	};
	sandlock_result_t *r = run_limited(2, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "threads ok\n"));
	sandlock_result_free(r);
}

/* on_decision: count the answers to clone (the hook runs on the
 * supervisor thread). */
static void count_clones(void *ud, const sandlock_decision_t *d)
{
	if (d->notif->syscall_nr == __NR_clone)
		__atomic_add_fetch((int *)ud, 1, __ATOMIC_RELAXED);
}

TEST(thread_creation_is_not_trapped)
{
	/* 20 threads and one fork under max_processes: only the fork's
	 * clone reaches the supervisor; a clone(CLONE_THREAD) stays in the
	 * kernel (no round trip per thread).  It reached the supervisor
	 * (21 answers) before the trap tested CLONE_THREAD. */
	static int clones;
	const char *argv[] = {
		TU_PY, "-c",
		"import os, threading\n"
		"ts=[threading.Thread(target=lambda: None) for _ in range(20)]\n"
		"[t.start() for t in ts]; [t.join() for t in ts]\n"
		"pid = os.fork()\n"
		"if pid == 0: os._exit(7)\n"
		"print(len(ts), os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n",
		NULL
	};
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_max_processes(b, 8);
	sandlock_sandbox_builder_on_decision(b, count_clones, &clones);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK(tu_out_is(r, "20 7\n"));
	CHECK_EQ_INT(__atomic_load_n(&clones, __ATOMIC_RELAXED), 1);
	sandlock_result_free(r);
}

/*
 * A child of the sandboxed python leaves the process group and the
 * session (setsid), then starts 20 children.  Counted by process group,
 * it and its children were invisible to the limit and all 20 started;
 * counted as the sandbox's process tree, python and the setsid child are
 * 2 of the 5: three children fit, 17 get EAGAIN.
 */
TEST(setsid_child_is_still_limited)
{
	const char *argv[] = {
		TU_PY, "-c",
		"import os, subprocess, sys\n"
		"pid = os.fork()\n"
		"if pid == 0:\n"
		"    os.setsid()\n"
		"    ok=0; fail=0; errs=set(); ps=[]\n"
		"    for i in range(20):\n"
		"        try:\n"
		"            ps.append(subprocess.Popen(['/bin/sleep','5'])); ok+=1\n"
		"        except OSError as e:\n"
		"            fail+=1; errs.add(e.errno)\n"
		"    for p in ps: p.kill(); p.wait()\n"
		"    print(os.getsid(0) == os.getpid(), ok, fail, sorted(errs), flush=True)\n"
		"    os._exit(0)\n"
		"os.waitpid(pid, 0)\n",
		NULL
	};
	sandlock_result_t *r = run_limited(5, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "True 3 17 [11]\n"));
	sandlock_result_free(r);
}

/* Wait for a byte on fd (a child's "I am ready"). */
static bool got_byte(int fd)
{
	char c;
	return read(fd, &c, 1) == 1;
}

TEST(count_tree_processes_counts_descendants_only)
{
	/* root -> a -> b (setsid, new group) -> c; plus root's sibling s,
	 * which is not below root.  Each reports "ready" once its own child
	 * exists, and all wait for `hold` to close. */
	int hold[2], ready[2];
	REQUIRE(pipe(hold) == 0 && pipe(ready) == 0);
	pid_t root = fork();
	REQUIRE(root >= 0);
	if (root == 0) {
		close(hold[1]);
		for (int depth = 0; depth < 3; depth++) {
			pid_t kid = fork();
			if (kid < 0)
				_exit(1);
			if (kid > 0)
				break;
			if (depth == 1)
				setsid(); /* b */
			if (depth == 2)
				(void)!write(ready[1], "r", 1); /* c exists: all do */
		}
		char c;
		(void)!read(hold[0], &c, 1);
		while (wait(NULL) > 0)
			;
		_exit(0);
	}
	pid_t sibling = tu_spawn_victim();
	REQUIRE(got_byte(ready[0]));
	CHECK_EQ_INT(sl_count_tree_processes(root), 3);
	CHECK_EQ_INT(sl_count_tree_processes(sibling), 0);
	tu_reap_victim(sibling); /* it holds a copy of hold[1] too */
	close(hold[0]);
	close(hold[1]);
	waitpid(root, NULL, 0);
	close(ready[0]);
	close(ready[1]);
	CHECK_EQ_INT(sl_count_tree_processes(root), 0);
}

/*
 * share_budget (sandlock-oci exec): a second run's processes count against
 * the first run's max_processes.  A holds 3 of its 4 (sh and two sleeps);
 * B, sharing A's budget with the same limit, is its 4th process and its
 * own fork is refused.  The probe works: the same B without sharing forks.
 */
static const char *const FORK_ONCE[] = {
	TU_PY, "-c",
	"import os\n"
	"try:\n"
	"    pid = os.fork()\n"
	"except OSError as e:\n"
	"    print('errno', e.errno)\n"
	"else:\n"
	"    if pid == 0: os._exit(0)\n"
	"    os.waitpid(pid, 0); print('forked')\n",
	NULL
};

TEST(share_budget_counts_both_runs_processes)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_max_processes(b, 4);
	sandlock_sandbox_t *sa = tu_build(b);
	REQUIRE(sa);
	static const char *const hold[] = { "/bin/sh", "-c",
		                            "sleep 30 & sleep 30 & echo ready; wait", NULL };
	sandlock_spawn_opts_t o = { .size = sizeof o };
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *a = sandlock_spawn(sa, hold, 3, NULL, 0, &o, &err, &msg);
	REQUIRE(a);
	int out = sandlock_handle_stdout_fd(a);
	char ready[8] = "";
	REQUIRE(out >= 0 && read(out, ready, sizeof ready - 1) > 0);
	sandlock_result_t *r = run_sharing(4, 0, FORK_ONCE);
	REQUIRE(r);
	CHECK(tu_out_is(r, "forked\n")); /* a budget of its own: the probe works */
	sandlock_result_free(r);
	r = run_sharing(4, sandlock_handle_init_pid(a), FORK_ONCE);
	if (!r || (sandlock_result_exit_code(r) != 0 && !tu_out_is(r, "errno 11\n"))) {
		sandlock_handle_kill(a);
		sandlock_result_free(sandlock_handle_wait(a));
		sandlock_handle_free(a);
		sandlock_sandbox_free(sa);
		close(out);
		sandlock_result_free(r);
		SKIP("share_budget: no cgroup v2 group can be made here");
	}
	CHECK(tu_out_is(r, "errno 11\n")); /* EAGAIN: A's 3 + B's python = 4 */
	sandlock_result_free(r);
	sandlock_handle_kill(a);
	sandlock_result_free(sandlock_handle_wait(a));
	sandlock_handle_free(a);
	sandlock_sandbox_free(sa);
	close(out);
}
