/*
 * loop_path.c — the workload of the per-call COW figures (bench/run.py,
 * cow_calls): N x one path call, timed inside the process so that start-up
 * and sandbox setup are not part of the per-call cost.
 *
 *   loop_path CALL N PATH     prints "<ns per call>\n"
 *
 * CALL: readlink (what gcc's realpath does to every /usr directory: most
 * answer EINVAL, not a link), stat (newfstatat), open (openat + close,
 * read-only).  A call failing otherwise (ENOENT, EACCES) is an error: a
 * sandbox that denies the path would "benchmark" a fast failure path.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int one(const char *call, const char *path)
{
	char buf[PATH_MAX];
	struct stat st;
	if (!strcmp(call, "readlink"))
		return readlink(path, buf, sizeof buf) >= 0 || errno == EINVAL ? 0 : -1;
	if (!strcmp(call, "stat"))
		return fstatat(AT_FDCWD, path, &st, 0);
	int fd = openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int loop(const char *call, long n, const char *path)
{
	for (long i = 0; i < n; i++)
		if (one(call, path) != 0)
			return -1;
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 3 ? strtol(argv[2], NULL, 10) : 0;
	if (n <= 0 || (strcmp(argv[1], "readlink") && strcmp(argv[1], "stat") &&
	               strcmp(argv[1], "open"))) {
		fprintf(stderr, "usage: loop_path readlink|stat|open N PATH\n");
		return 2;
	}
	if (loop(argv[1], n / 10 + 1, argv[3]) != 0) { /* warm-up */
		perror("loop_path");
		return 1;
	}
	double t0 = now_ns();
	if (loop(argv[1], n, argv[3]) != 0) {
		perror("loop_path");
		return 1;
	}
	printf("%.1f\n", (now_ns() - t0) / (double)n);
	return 0;
}
