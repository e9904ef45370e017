/*
 * probe.c — a static probe run inside OCI containers by test_oci.py
 * (the image holds busybox and this).  Each subcommand prints one line:
 * "ok ..." or "err ERRNO_NAME", so a test can tell a denial from a bug.
 *
 *   probe read PATH          open + read PATH, print its first line
 *   probe readat DIR REL     open DIR, then openat(dirfd, REL): ".." walks
 *   probe memhog MB          allocate and touch MB MiB
 *   probe memhold MB         the same, then print "held" and keep it (pause)
 *   probe mkdir PATH         mkdir(2) (the engine's seccomp profile test)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int result(int rc)
{
	if (rc < 0) {
		printf("err %s\n", strerrorname_np(errno));
		return 1;
	}
	return 0;
}

static int show(int fd)
{
	if (fd < 0)
		return result(-1);
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n < 0)
		return result(-1);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	printf("ok %s\n", buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "read") == 0)
		return show(open(argv[2], O_RDONLY));
	if (argc == 4 && strcmp(argv[1], "readat") == 0) {
		int d = open(argv[2], O_RDONLY | O_DIRECTORY);
		return d < 0 ? result(-1) : show(openat(d, argv[3], O_RDONLY));
	}
	if (argc == 3 && (strcmp(argv[1], "memhog") == 0 || strcmp(argv[1], "memhold") == 0)) {
		size_t mb = strtoul(argv[2], NULL, 10);
		for (size_t i = 0; i < mb; i++) {
			char *p = malloc(1 << 20);
			if (!p)
				return result(-1);
			memset(p, 1, 1 << 20);
		}
		printf("ok %zu\n", mb);
		if (strcmp(argv[1], "memhold") == 0) {
			printf("held\n");
			fflush(stdout);
			pause();
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "mkdir") == 0) {
		if (result(mkdir(argv[2], 0755)))
			return 1;
		printf("ok\n");
		return 0;
	}
	fprintf(stderr, "usage: probe read|readat|memhog|memhold|mkdir ...\n");
	return 2;
}
