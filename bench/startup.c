/*
 * startup.c — how long it takes to start and finish /bin/true:
 *   bare       fork + execve + waitpid, no sandbox;
 *   env        the same for `env /bin/true`: one extra exec, the floor
 *              for any launcher command;
 *   cli        the same for `sandlock run -r /usr ... -- /bin/true` (only
 *              when the CLI's path is given);
 *   sandboxed  sandlock_run_err() through the C ABI (Landlock ruleset, BPF
 *              filter, supervisor thread, launch handshake, reap).
 * The sandbox is built once: its cost (path resolution) is not per run.
 * The variants take turns, one run each per round, so that a change of
 * the machine's load between them does not skew their ratios.
 *
 *   startup [RUNS [CLI]]  prints "startup_<variant>_us X" (medians over
 *                         RUNS runs after a short warm-up)
 */
#include <stdint.h>
#include <sys/wait.h>

#include "bench_util.h"

extern char **environ;

static const char *const true_argv[] = { "/bin/true", NULL };
static const char *const env_argv[] = { "/usr/bin/env", "/bin/true", NULL };

/* fork + exec argv + wait; exits unless it ran and exited 0. */
static double spawn_once(const char *const *argv)
{
	double t0 = bench_now_ns();
	pid_t pid = fork();
	if (pid == 0) {
		execve(argv[0], (char *const *)argv, environ);
		_exit(127);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "startup: %s failed\n", argv[0]);
		exit(1);
	}
	return bench_now_ns() - t0;
}

static double sandboxed_once(const sandlock_sandbox_t *sb)
{
	int err = 0;
	char *msg = NULL;
	double t0 = bench_now_ns();
	sandlock_result_t *r = sandlock_run_err(sb, true_argv, 1, &err, &msg);
	double dt = bench_now_ns() - t0;
	if (!r || !sandlock_result_success(r)) {
		fprintf(stderr, "startup: sandboxed /bin/true failed (%d): %s\n", err,
			msg ? msg : "non-zero exit");
		exit(1);
	}
	sandlock_result_free(r);
	return dt;
}

enum { V_BARE, V_ENV, V_CLI, V_SANDBOXED, N_VARIANTS };
static const char *const names[N_VARIANTS] = { "bare", "env", "cli", "sandboxed" };

int main(int argc, char **argv)
{
	long runs = argc > 1 ? strtol(argv[1], NULL, 10) : 50;
	if (runs <= 0 || runs > 100000) {
		fprintf(stderr, "startup: RUNS must be 1..100000\n");
		return 2;
	}
	/* The CLI with the same policy as bench_sandbox(). */
	const char *cli_argv[] = { argc > 2 ? argv[2] : NULL, "run", "-r", "/usr", "-r", "/lib",
				   "-r", "/lib64", "-r", "/bin", "-r", "/etc", "--", "/bin/true",
				   NULL };
	double *v[N_VARIANTS];
	for (int k = 0; k < N_VARIANTS; k++)
		if (!(v[k] = calloc((size_t)runs, sizeof(double))))
			return 1;
	sandlock_sandbox_t *sb = bench_sandbox(NULL, true);

	for (long i = -5; i < runs; i++) { /* 5 rounds of warm-up first */
		double t[N_VARIANTS];
		t[V_BARE] = spawn_once(true_argv);
		t[V_ENV] = spawn_once(env_argv);
		t[V_CLI] = cli_argv[0] ? spawn_once(cli_argv) : 0;
		t[V_SANDBOXED] = sandboxed_once(sb);
		for (int k = 0; i >= 0 && k < N_VARIANTS; k++)
			v[k][i] = t[k];
	}
	for (int k = 0; k < N_VARIANTS; k++) {
		if (k != V_CLI || cli_argv[0])
			printf("startup_%s_us %.1f\n", names[k], bench_median(v[k], (size_t)runs) / 1e3);
		free(v[k]);
	}
	sandlock_sandbox_free(sb);
	return 0;
}
