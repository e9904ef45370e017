/*
 * race_open — a hostile guest for the on-behalf opener tests.
 *
 *   race_open DIR N [open|openat|openat2|creat]
 *
 * DIR holds secret_A (allowed) and secret_B (denied by the test's
 * handler).  A second thread flips the last byte of the path buffer
 * between 'A' and 'B' without pause while the main thread opens the
 * buffer N times: a handler that checks the string and then lets the
 * kernel read it again (CONTINUE) can be beaten.  Flipping one byte is
 * atomic, so the path is always one of the two names.
 *
 * Prints "opened=O leaked=L tries=N": L is how many opens returned the
 * content of secret_B.
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe.h"

static char g_path[4096];
static size_t g_flip;
static atomic_int g_stop;

static void *flipper(void *arg)
{
	(void)arg;
	volatile char *p = &g_path[g_flip];
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed))
		*p = *p == 'A' ? 'B' : 'A';
	return NULL;
}

static int do_open(const char *how)
{
	if (!strcmp(how, "open"))
		return (int)syscall(SYS_open, g_path, O_RDONLY | O_CLOEXEC);
	if (!strcmp(how, "creat")) /* O_WRONLY|O_CREAT|O_TRUNC: the file is not read */
		return (int)syscall(SYS_creat, g_path, 0600);
	if (!strcmp(how, "openat2")) {
		struct open_how oh = { .flags = O_RDONLY | O_CLOEXEC };
		return (int)syscall(SYS_openat2, AT_FDCWD, g_path, &oh, sizeof oh);
	}
	return (int)syscall(SYS_openat, AT_FDCWD, g_path, O_RDONLY | O_CLOEXEC);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: race_open DIR N [open|openat|openat2|creat]\n");
		return 2;
	}
	const char *how = argc > 3 ? argv[3] : "openat";
	int n = atoi(argv[2]);
	snprintf(g_path, sizeof g_path, "%s/secret_A", argv[1]);
	g_flip = strlen(g_path) - 1;
	pthread_t t;
	if (pthread_create(&t, NULL, flipper, NULL) != 0)
		return 3;
	int opened = 0, leaked = 0;
	for (int i = 0; i < n; i++) {
		int fd = do_open(how);
		if (fd < 0)
			continue;
		opened++;
		char buf[16] = { 0 };
		if (!strcmp(how, "creat")) {
			/* creat truncates: tell the files apart by their inode */
			char lk[64], real[4096];
			snprintf(lk, sizeof lk, "/proc/self/fd/%d", fd);
			ssize_t k = readlink(lk, real, sizeof real - 1);
			if (k > 0 && real[k - 1] == 'B')
				leaked++;
		} else if (read(fd, buf, sizeof buf - 1) > 0 && !strncmp(buf, "DENIED", 6)) {
			leaked++;
		}
		close(fd);
	}
	atomic_store(&g_stop, 1);
	pthread_join(t, NULL);
	printf("opened=%d leaked=%d tries=%d\n", opened, leaked, n);
	return 0;
}
