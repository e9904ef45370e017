/*
 * loop_open.c — the workload run inside the sandbox by the openat
 * benchmarks: N x (openat + close) of a file, timed inside the process so
 * that process startup and sandbox setup are not part of the per-call cost.
 *
 *   loop_open [N] [PATH]     prints "<ns per openat+close pair>\n"
 *
 * It does not use libsandlock (the Makefile links it in anyway; harmless).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Returns 0, or -1 if an open failed (a sandbox that denies the file
 * would otherwise "benchmark" a fast failure path). */
static int loop(long n, const char *path)
{
	for (long i = 0; i < n; i++) {
		int fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		close(fd);
	}
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? strtol(argv[1], NULL, 10) : 10000;
	const char *path = argc > 2 ? argv[2] : "/etc/hostname";
	if (n <= 0) {
		fprintf(stderr, "loop_open: N must be positive\n");
		return 2;
	}
	/* Warm up caches (dentry, /proc/PID/mem in the supervisor, ...). */
	if (loop(n / 10 + 1, path) != 0) {
		perror("loop_open: openat");
		return 1;
	}
	double t0 = now_ns();
	if (loop(n, path) != 0) {
		perror("loop_open: openat");
		return 1;
	}
	double t1 = now_ns();
	printf("%.1f\n", (t1 - t0) / (double)n);
	return 0;
}
