/*
 * startup.c — how long it takes to start and finish /bin/true:
 *   bare       fork + execve + waitpid, no sandbox;
 *   sandboxed  sandlock_run() through the C ABI (Landlock ruleset, BPF
 *              filter, supervisor thread, launch handshake, reap).
 * The sandbox is built once: its cost (path resolution) is not per run.
 *
 *   startup [RUNS]   prints "startup_bare_us X" and "startup_sandboxed_us Y"
 *                    (medians over RUNS runs after a short warm-up)
 */
#include <stdint.h>
#include <sys/wait.h>

#include "bench_util.h"

static const char *const true_argv[] = { "/bin/true", NULL };

static double bare_once(void)
{
	double t0 = bench_now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		execv(true_argv[0], (char *const *)true_argv);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "startup: bare /bin/true failed\n");
		exit(1);
	}
	return bench_now_ns() - t0;
}

static double sandboxed_once(const sandlock_sandbox_t *sb)
{
	int err = 0;
	char *msg = NULL;
	double t0 = bench_now_ns();
	sandlock_result_t *r = sandlock_run(sb, true_argv, 1, &err, &msg);
	double dt = bench_now_ns() - t0;
	if (!r || !sandlock_result_success(r)) {
		fprintf(stderr, "startup: sandboxed /bin/true failed (%d): %s\n", err,
			msg ? msg : "non-zero exit");
		exit(1);
	}
	sandlock_result_free(r);
	return dt;
}

int main(int argc, char **argv)
{
	long runs = argc > 1 ? strtol(argv[1], NULL, 10) : 50;
	if (runs <= 0 || runs > 100000) {
		fprintf(stderr, "startup: RUNS must be 1..100000\n");
		return 2;
	}
	double *v = calloc((size_t)runs, sizeof(*v));
	if (!v)
		return 1;
	sandlock_sandbox_t *sb = bench_sandbox(NULL, true);

	for (int i = 0; i < 5; i++) /* warm up page cache and allocator */
		bare_once(), sandboxed_once(sb);

	for (long i = 0; i < runs; i++)
		v[i] = bare_once();
	printf("startup_bare_us %.1f\n", bench_median(v, (size_t)runs) / 1e3);
	for (long i = 0; i < runs; i++)
		v[i] = sandboxed_once(sb);
	printf("startup_sandboxed_us %.1f\n", bench_median(v, (size_t)runs) / 1e3);

	sandlock_sandbox_free(sb);
	free(v);
	return 0;
}
