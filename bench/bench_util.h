/*
 * bench_util.h — small helpers shared by the C benchmarks (header-only so
 * the Makefile's one-binary-per-C-file bench rule keeps working).
 * Output format, parsed by bench/run.py: one "key value" line per figure.
 */
#ifndef SANDLOCK_BENCH_UTIL_H
#define SANDLOCK_BENCH_UTIL_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sandlock.h"

static inline double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v in place). */
static inline double bench_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Directory holding this binary (the other bench programs live there). */
static inline int bench_self_dir(char *out, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return -1;
	exe[n] = '\0';
	snprintf(out, len, "%s", dirname(exe));
	return 0;
}

/*
 * A sandbox able to run dynamically linked programs from the system and
 * from dir; caller adds nothing else, so every figure measures the same
 * policy (bench_builder: the builder, for one setting more).  Exits on
 * error: a benchmark with a broken setup is worthless.
 */
static inline sandlock_builder_t *bench_builder(const char *dir, bool inherit_stdio)
{
	static const char *const ro[] = { "/usr", "/bin", "/lib", "/lib64", "/etc" };
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	for (size_t i = 0; i < sizeof(ro) / sizeof(ro[0]); i++)
		if (access(ro[i], F_OK) == 0)
			sandlock_sandbox_builder_fs_read(b, ro[i]);
	if (dir)
		sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_sandbox_builder_inherit_stdio(b, inherit_stdio);
	return b;
}

/* bench_builder's sandbox, or b's where the caller added to it. */
static inline sandlock_sandbox_t *bench_build(sandlock_builder_t *b)
{
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb) {
		fprintf(stderr, "bench: sandbox build failed (%d): %s\n", err, msg ? msg : "?");
		exit(1);
	}
	return sb;
}

static inline sandlock_sandbox_t *bench_sandbox(const char *dir, bool inherit_stdio)
{
	return bench_build(bench_builder(dir, inherit_stdio));
}

#endif
