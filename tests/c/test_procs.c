/*
 * test_procs.c — the max_processes builtin (a soft, supervisor-counted
 * limit) and the /proc process-group counter behind it.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h" /* sl_count_group_processes: linked from libsandlock.a */
#include "testutil.h"

/* Run argv in a sandbox for system programs, limited to max_processes
 * (0 = no limit).  NULL on failure, reported. */
static sandlock_result_t *run_limited(uint32_t max_processes, const char *const *argv)
{
	sandlock_builder_t *b = tu_system_builder();
	if (max_processes)
		sandlock_sandbox_builder_max_processes(b, max_processes);
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
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

TEST(count_group_processes_counts_only_the_group)
{
	int p[2];
	REQUIRE(pipe(p) == 0);
	pid_t kids[3];
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		REQUIRE(kids[i] >= 0);
		if (kids[i] == 0) {
			/* first child leads a new group; the others join it */
			setpgid(0, i == 0 ? 0 : kids[0]);
			close(p[1]);
			char c;
			(void)!read(p[0], &c, 1); /* wait until the parent closes */
			_exit(0);
		}
		setpgid(kids[i], kids[0]); /* avoid racing the child's own call */
	}
	CHECK_EQ_INT(sl_count_group_processes(kids[0]), 3);
	close(p[0]);
	close(p[1]);
	for (int i = 0; i < 3; i++)
		waitpid(kids[i], NULL, 0);
	CHECK_EQ_INT(sl_count_group_processes(kids[0]), 0);
}
