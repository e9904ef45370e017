/*
 * xattrprobe.c — path xattr calls for tests/c/test_chroot.c, static so it
 * runs inside a rootfs without libraries.  One line per call: the value,
 * the names (comma-separated), "ok", or "err N" (the errno).
 *   xattrprobe get|lget PATH NAME
 *   xattrprobe set|lset PATH NAME VALUE
 *   xattrprobe list|llist PATH
 *   xattrprobe rm|lrm PATH NAME
 * Several calls may follow each other: xattrprobe get P N -- list P ...
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>

static int report(long r)
{
	if (r < 0)
		printf("err %d\n", errno);
	else
		printf("ok\n");
	return 0;
}

/* One call at argv[0..]; returns how many words it used, 0 if unknown. */
static int one(int argc, char **argv)
{
	char buf[4096];
	const char *op = argv[0];
	bool l = op[0] == 'l' && strcmp(op, "list") != 0;
	const char *verb = l ? op + 1 : op;
	if (strcmp(verb, "get") == 0 && argc >= 3) {
		ssize_t n = l ? lgetxattr(argv[1], argv[2], buf, sizeof buf - 1)
		              : getxattr(argv[1], argv[2], buf, sizeof buf - 1);
		if (n < 0)
			return report(-1), 3;
		printf("%.*s\n", (int)n, buf);
		return 3;
	}
	if (strcmp(verb, "set") == 0 && argc >= 4) {
		size_t len = strlen(argv[3]);
		report(l ? lsetxattr(argv[1], argv[2], argv[3], len, 0)
		         : setxattr(argv[1], argv[2], argv[3], len, 0));
		return 4;
	}
	if (strcmp(verb, "rm") == 0 && argc >= 3) {
		report(l ? lremovexattr(argv[1], argv[2]) : removexattr(argv[1], argv[2]));
		return 3;
	}
	if (strcmp(verb, "list") == 0 && argc >= 2) {
		ssize_t n = l ? llistxattr(argv[1], buf, sizeof buf) : listxattr(argv[1], buf, sizeof buf);
		if (n < 0)
			return report(-1), 2;
		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
			printf("%s%s", i ? "," : "", buf + i);
		printf("\n");
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc;) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			continue;
		}
		int used = one(argc - i, argv + i);
		if (!used) {
			fprintf(stderr, "xattrprobe: bad call at '%s'\n", argv[i]);
			return 2;
		}
		i += used;
	}
	return 0;
}
