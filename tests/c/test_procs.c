/*
 * test_procs.c — the max_processes builtin (a soft, supervisor-counted
 * limit) and the /proc process-group counter behind it.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h"
#include "sandlock.h"

static sandlock_sandbox_t *mk_sb(uint32_t max_processes)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	const char *dirs[] = { "/usr", "/bin", "/lib", "/lib64", "/etc" };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (access(dirs[i], F_OK) == 0)
			sandlock_sandbox_builder_fs_read(b, dirs[i]);
	if (max_processes)
		sandlock_sandbox_builder_max_processes(b, max_processes);
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb)
		fprintf(stderr, "  build failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return sb;
}

/* Start 20 `sleep 5` children, count successes and failures, kill them. */
static const char *const SPAWN20[] = {
	"/usr/bin/python3", "-c",
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

static char *run_spawn20(uint32_t max_processes)
{
	sandlock_sandbox_t *sb = mk_sb(max_processes);
	if (!sb)
		return NULL;
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_run(sb, SPAWN20, 3, &err, &msg);
	char *out = NULL;
	if (r)
		out = sandlock_result_stdout(r);
	else
		fprintf(stderr, "  run failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	return out;
}

TEST(max_processes_limits_children)
{
	/* python itself is one of the 5: four children fit, 16 get EAGAIN */
	char *out = run_spawn20(5);
	REQUIRE(out);
	CHECK(strcmp(out, "4 16 [11]\n") == 0);
	if (strcmp(out, "4 16 [11]\n") != 0)
		fprintf(stderr, "  got: %s", out);
	sandlock_string_free(out);
}

TEST(without_limit_all_children_start)
{
	char *out = run_spawn20(0);
	REQUIRE(out);
	CHECK(strcmp(out, "20 0 []\n") == 0);
	if (strcmp(out, "20 0 []\n") != 0)
		fprintf(stderr, "  got: %s", out);
	sandlock_string_free(out);
}

TEST(threads_are_not_processes)
{
	/* 10 threads under a limit of 2: clone(CLONE_THREAD) is not counted */
	sandlock_sandbox_t *sb = mk_sb(2);
	REQUIRE(sb);
	const char *argv[] = {
		"/usr/bin/python3", "-c",
		"import threading\n"
		"ts=[threading.Thread(target=lambda: None) for _ in range(10)]\n"
		"[t.start() for t in ts]; [t.join() for t in ts]\n"
		"print('threads ok')\n",
		NULL
	};
	sandlock_result_t *r = sandlock_run(sb, argv, 3, NULL, NULL);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strcmp(out, "threads ok\n") == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
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
