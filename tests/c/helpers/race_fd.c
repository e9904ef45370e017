/*
 * race_fd — a hostile guest that swaps the socket behind an fd number
 * while another thread makes a call on that number.
 *
 *   race_fd connect UNIXPATH TRIES
 *       fd N flips between a TCP socket and a unix socket (dup2 from a
 *       second thread) while the main thread connects N to the pathname
 *       socket UNIXPATH.  A supervisor that looks at N, sees TCP, and lets
 *       the kernel run the call (CONTINUE) loses: the kernel looks N up
 *       again and connects the unix socket to a path nobody checked.
 *       "reached" counts connects that succeeded (only a unix socket can
 *       connect to a sockaddr_un).
 *
 * Prints "reached=R tries=T".  Every socket is non-blocking, so a full
 * backlog on the far side is an error, never a hang.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "probe.h"

#define SWAP_FD 200 /* the fd number the two threads fight over */

static atomic_int g_a = -1, g_b = -1; /* the two sockets of this try */
static atomic_int g_stop;
static atomic_long g_rounds; /* swaps made: a try waits for the swapper to run */

/* Put one socket, then the other, at SWAP_FD, without pause. */
static void *swapper(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		int a = atomic_load_explicit(&g_a, memory_order_relaxed);
		int b = atomic_load_explicit(&g_b, memory_order_relaxed);
		if (a >= 0)
			dup2(a, SWAP_FD);
		if (b >= 0)
			dup2(b, SWAP_FD);
		atomic_fetch_add_explicit(&g_rounds, 1, memory_order_relaxed);
	}
	return NULL;
}

static socklen_t unix_addr(struct sockaddr_un *sun, const char *path)
{
	memset(sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof sun->sun_path, "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(sun->sun_path) + 1);
}

static int race_connect(const char *path, long tries)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, path);
	long reached = 0;
	for (long i = 0; i < tries; i++) {
		int t = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		int u = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (t < 0 || u < 0 || dup2(t, SWAP_FD) < 0) {
			printf("setup-");
			return report(-1);
		}
		atomic_store(&g_a, t);
		atomic_store(&g_b, u);
		long r0 = atomic_load(&g_rounds);
		while (atomic_load(&g_rounds) < r0 + 2)
			; /* the swapper is at work on this try's pair */
		if (connect(SWAP_FD, (struct sockaddr *)&sun, len) == 0)
			reached++;
		atomic_store(&g_a, -1);
		atomic_store(&g_b, -1);
		close(t);
		close(u);
	}
	printf("reached=%ld tries=%ld\n", reached, tries);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 4 || strcmp(argv[1], "connect") != 0) {
		fprintf(stderr, "usage: race_fd connect UNIXPATH TRIES\n");
		return 2;
	}
	pthread_t th;
	if (pthread_create(&th, NULL, swapper, NULL) != 0)
		return 2;
	int rc = race_connect(argv[2], strtol(argv[3], NULL, 10));
	atomic_store(&g_stop, 1);
	pthread_join(th, NULL);
	fflush(stdout);
	return rc;
}
