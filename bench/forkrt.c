/*
 * forkrt.c — what a trapped fork costs: the supervisor round trip that
 * max_processes puts on every process creation (the plain sandbox's only
 * trapped call on a build: docs/performance.md).
 *
 *   forkrt loop N      the workload: N x (vfork, the child _exits, wait),
 *                      printing the median and 90th percentile ns of the
 *                      vfork call alone (until the parent runs again)
 *   forkrt [N [REPS]]  runs the loop bare, sandboxed with max_processes 0
 *                      (fork not trapped) and sandboxed with the default
 *                      max_processes (every fork a round trip), in turns,
 *                      REPS times, and prints medians:
 *                        fork_<variant>_us      vfork median
 *                        fork_<variant>_p90_us  vfork 90th percentile
 *                        fork_roundtrip_us      trapped - untrapped
 *                        fork_supervisor_cpu_us the supervisor thread's
 *                          CPU per trapped fork (this process's CPU in a
 *                          trapped run minus an untrapped one, over N)
 * vfork, not fork: the parent waits for nothing but the call itself, so
 * the figure is the call's own latency, not the child's scheduling.
 */
#include <sys/resource.h>
#include <sys/wait.h>

#include "bench_util.h"

enum { V_BARE, V_UNTRAPPED, V_TRAPPED, N_VARIANTS };
static const char *const names[N_VARIANTS] = { "bare", "untrapped", "trapped" };

static char self_path[PATH_MAX];
static char n_arg[32];

/* ns of one vfork (the child _exits at once), or -1.  A function of its
 * own: nothing of the caller's frame lives across the vfork. */
static __attribute__((noinline)) double timed_vfork(void)
{
	double t0 = bench_now_ns();
	pid_t pid = vfork();
	if (pid == 0)
		_exit(0);
	double dt = bench_now_ns() - t0;
	return pid > 0 && waitpid(pid, NULL, 0) == pid ? dt : -1;
}

/* The workload: median and p90 ns of vfork over n calls. */
static int loop(long n)
{
	double *v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return 1;
	for (long i = 0; i < n; i++)
		if ((v[i] = timed_vfork()) < 0) {
			perror("forkrt: vfork");
			return 1;
		}
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	double p90 = v[(size_t)n * 9 / 10];
	printf("%.1f %.1f\n", bench_median(v, (size_t)n), p90);
	free(v);
	return 0;
}

static double cpu_us(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

static void parse(const char *out, const char *what, double *med, double *p90)
{
	if (!out || sscanf(out, "%lf %lf", med, p90) != 2) {
		fprintf(stderr, "forkrt: %s: no figures in %s\n", what, out ? out : "(null)");
		exit(1);
	}
}

static void run_bare(double *med, double *p90)
{
	char cmd[PATH_MAX + 64];
	snprintf(cmd, sizeof cmd, "'%s' loop %s", self_path, n_arg);
	FILE *f = popen(cmd, "r");
	char out[128] = "";
	if (!f || !fgets(out, sizeof out, f) || pclose(f) != 0) {
		fprintf(stderr, "forkrt: bare loop failed\n");
		exit(1);
	}
	parse(out, "bare", med, p90);
}

/* One sandboxed loop; *cpu: this process's CPU during it (the
 * supervisor thread, plus the launch both variants share). */
static void run_sandboxed(const sandlock_sandbox_t *sb, const char *what, double *med, double *p90,
                          double *cpu)
{
	const char *argv[] = { self_path, "loop", n_arg, NULL };
	int err = 0;
	char *msg = NULL;
	double c0 = cpu_us();
	sandlock_result_t *r = sandlock_run_err(sb, argv, 3, &err, &msg);
	*cpu = cpu_us() - c0;
	if (!r || !sandlock_result_success(r)) {
		fprintf(stderr, "forkrt: %s loop failed (%d): %s\n", what, err, msg ? msg : "");
		exit(1);
	}
	char *out = sandlock_result_stdout(r);
	parse(out, what, med, p90);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "loop") == 0)
		return loop(strtol(argv[2], NULL, 10) > 0 ? strtol(argv[2], NULL, 10) : 1000);
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 2000;
	long reps = argc > 2 ? strtol(argv[2], NULL, 10) : 7;
	char dir[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
	if (n <= 0 || reps <= 0 || len <= 0 || bench_self_dir(dir, sizeof dir) < 0) {
		fprintf(stderr, "usage: forkrt [N [REPS]] | forkrt loop N\n");
		return 2;
	}
	self_path[len] = '\0';
	snprintf(n_arg, sizeof n_arg, "%ld", n);
	sandlock_builder_t *b = bench_builder(dir, false);
	sandlock_sandbox_builder_max_processes(b, 0);
	sandlock_sandbox_t *untrapped = bench_build(b);
	sandlock_sandbox_t *trapped = bench_sandbox(dir, false); /* the default max_processes */
	double med[N_VARIANTS][reps], p90[N_VARIANTS][reps], cpu[2][reps], rt[reps];
	for (long i = 0; i < reps; i++) {
		run_bare(&med[V_BARE][i], &p90[V_BARE][i]);
		run_sandboxed(untrapped, "untrapped", &med[V_UNTRAPPED][i], &p90[V_UNTRAPPED][i],
		              &cpu[0][i]);
		run_sandboxed(trapped, "trapped", &med[V_TRAPPED][i], &p90[V_TRAPPED][i], &cpu[1][i]);
		rt[i] = med[V_TRAPPED][i] - med[V_UNTRAPPED][i];
		cpu[1][i] = (cpu[1][i] - cpu[0][i]) / (double)n;
	}
	for (int v = 0; v < N_VARIANTS; v++) {
		printf("fork_%s_us %.2f\n", names[v], bench_median(med[v], (size_t)reps) / 1e3);
		printf("fork_%s_p90_us %.2f\n", names[v], bench_median(p90[v], (size_t)reps) / 1e3);
	}
	printf("fork_roundtrip_us %.2f\n", bench_median(rt, (size_t)reps) / 1e3);
	printf("fork_supervisor_cpu_us %.2f\n", bench_median(cpu[1], (size_t)reps));
	sandlock_sandbox_free(untrapped);
	sandlock_sandbox_free(trapped);
	return 0;
}
