/*
 * openat.c — the cost of one openat(2) (+ close) inside loop_open:
 *   bare       loop_open run directly, no sandbox;
 *   untrapped  in a sandbox, openat not trapped (Landlock + BPF only);
 *   c_handler  in a sandbox with a C handler on openat that answers
 *              CONTINUE (one seccomp notification round trip per call).
 * With "onbehalf" as third argument it measures instead, interleaved in
 * one batch so that machine load drifts over all three alike:
 *   bare, continue (the racy check-then-continue shape) and onbehalf (a C
 *   handler that calls sandlock_open_on_behalf and injects the fd: the
 *   race-free shape).
 * loop_open times its own loop, so startup is excluded.
 *
 *   openat [N] [REPS] [onbehalf]  prints "<mode>_<variant>_ns X"
 *                                 (median of REPS runs)
 */
#include <fcntl.h>
#include <stdint.h>
#include <sys/wait.h>

#include "bench_util.h"

static char loop_path[PATH_MAX];
static char n_arg[32];

/* Parse loop_open's single output line. */
static double parse_ns(const char *s, const char *what)
{
	char *end = NULL;
	double v = s ? strtod(s, &end) : 0;
	if (!s || end == s || v <= 0) {
		fprintf(stderr, "openat: %s: bad loop_open output '%s'\n", what, s ? s : "");
		exit(1);
	}
	return v;
}

static double run_bare(void)
{
	int p[2];
	if (pipe(p) != 0)
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		execl(loop_path, loop_path, n_arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[64] = { 0 };
	ssize_t got = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	int st = 0;
	waitpid(pid, &st, 0);
	if (got <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		fprintf(stderr, "openat: bare loop_open failed\n");
		exit(1);
	}
	return parse_ns(buf, "bare");
}

static int32_t continue_handler(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
				sandlock_action_t *out)
{
	(void)ud, (void)n, (void)m;
	sandlock_action_set_continue(out);
	return 0;
}

static int32_t onbehalf_handler(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
				sandlock_action_t *out)
{
	(void)ud;
	sandlock_opened_t o;
	int32_t e = sandlock_open_on_behalf(m, n, NULL, NULL, &o);
	if (e) {
		sandlock_action_set_errno(out, e);
		return 0;
	}
	sandlock_action_set_inject_fd_send(out, o.fd, o.newfd_flags);
	sandlock_string_free(o.path);
	return 0;
}

/* fn NULL: openat not trapped.  deferred: fn on a worker thread (the
 * hand-off's cost). */
static double run_sandboxed(const sandlock_sandbox_t *sb, sandlock_handler_fn fn, bool deferred,
			    const char *what)
{
	const char *argv[] = { loop_path, n_arg, NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r;
	if (fn) {
		sandlock_handler_t *h = sandlock_handler_new(fn, NULL, NULL, SANDLOCK_EXCEPTION_KILL);
		sandlock_handler_set_deferred(h, deferred);
		sandlock_registration_t reg = { "openat", h };
		r = sandlock_run_with_handlers_err(sb, argv, 2, &reg, 1, &err, &msg);
	} else {
		r = sandlock_run_err(sb, argv, 2, &err, &msg);
	}
	if (!r || !sandlock_result_success(r)) {
		char *e = r ? sandlock_result_stderr(r) : NULL;
		fprintf(stderr, "openat: %s loop_open failed (%d): %s %s\n", what, err,
			msg ? msg : "", e ? e : "");
		exit(1);
	}
	char *out = sandlock_result_stdout(r);
	double v = parse_ns(out, what);
	sandlock_string_free(out);
	sandlock_result_free(r);
	return v;
}

/* The default figures, one variant after the other. */
static void bench_variants(const sandlock_sandbox_t *sb, double *v, long reps)
{
	for (long i = 0; i < reps; i++)
		v[i] = run_bare();
	printf("openat_bare_ns %.1f\n", bench_median(v, (size_t)reps));
	for (long i = 0; i < reps; i++)
		v[i] = run_sandboxed(sb, NULL, false, "untrapped");
	printf("openat_untrapped_ns %.1f\n", bench_median(v, (size_t)reps));
	for (long i = 0; i < reps; i++)
		v[i] = run_sandboxed(sb, continue_handler, false, "c_handler");
	printf("openat_c_handler_ns %.1f\n", bench_median(v, (size_t)reps));
	for (long i = 0; i < reps; i++)
		v[i] = run_sandboxed(sb, continue_handler, true, "c_deferred");
	printf("openat_c_deferred_ns %.1f\n", bench_median(v, (size_t)reps));
}

/* On behalf vs CONTINUE vs bare, interleaved. */
static int bench_onbehalf(const sandlock_sandbox_t *sb, double *v, long reps)
{
	double *bare = calloc((size_t)reps, sizeof(*v)), *cont = calloc((size_t)reps, sizeof(*v));
	if (!bare || !cont) {
		free(bare);
		free(cont);
		return 1;
	}
	for (long i = 0; i < reps; i++) {
		bare[i] = run_bare();
		cont[i] = run_sandboxed(sb, continue_handler, false, "continue");
		v[i] = run_sandboxed(sb, onbehalf_handler, false, "onbehalf");
	}
	printf("onbehalf_bare_ns %.1f\n", bench_median(bare, (size_t)reps));
	printf("onbehalf_continue_ns %.1f\n", bench_median(cont, (size_t)reps));
	printf("onbehalf_onbehalf_ns %.1f\n", bench_median(v, (size_t)reps));
	free(bare);
	free(cont);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
	long reps = argc > 2 ? strtol(argv[2], NULL, 10) : 5;
	bool onbehalf = argc > 3 && strcmp(argv[3], "onbehalf") == 0;
	char dir[PATH_MAX];
	if (n <= 0 || reps <= 0 || reps > 1000 || (argc > 3 && !onbehalf) ||
	    bench_self_dir(dir, sizeof(dir)) != 0) {
		fprintf(stderr, "usage: openat [N>0] [REPS 1..1000] [onbehalf]\n");
		return 2;
	}
	if (snprintf(loop_path, sizeof(loop_path), "%s/loop_open", dir) >= (int)sizeof(loop_path))
		return 2;
	snprintf(n_arg, sizeof(n_arg), "%ld", n);
	sandlock_sandbox_t *sb = bench_sandbox(dir, false);
	double *v = calloc((size_t)reps, sizeof(*v));
	if (!v)
		return 1;
	int rc = onbehalf ? bench_onbehalf(sb, v, reps) : (bench_variants(sb, v, reps), 0);
	sandlock_sandbox_free(sb);
	free(v);
	return rc;
}
