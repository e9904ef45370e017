/*
 * netprobe.c — socket destination probes run inside the sandbox by
 * tests/c/test_net.c (each also works outside, for the control).
 *   netprobe unix-connect PATH      stream connect
 *   netprobe unix-sendto PATH       datagram sendto
 *   netprobe unix-sendmsg PATH      datagram sendmsg with msg_name
 *   netprobe unix-race GOOD BAD N   N connects while a thread flips the path
 *   netprobe tcp-race PORT BAD N    the same with a TCP port on 127.0.0.1
 *   netprobe unix-listen PATH SECS  a stream listener at PATH for SECS seconds
 *                                   (the target of the others; for shells
 *                                   without one, tests/containers/)
 *   netprobe tcp-signal PORT restart|interrupt
 *                                   a blocking TCP connect to 127.0.0.1:PORT
 *                                   (a listener that answers late) while
 *                                   SIGALRM, handled with or without
 *                                   SA_RESTART, arrives after 300 ms
 * Prints "ok" or "errno=NAME"; the races print "bad=K good=M"; tcp-signal
 * puts "handled=N " (handler runs) first.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "probe.h"

static socklen_t un_addr(struct sockaddr_un *a, const char *path)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "%s", path);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(a->sun_path) + 1);
}

static int unix_probe(const char *how, const char *path)
{
	struct sockaddr_un a;
	socklen_t len = un_addr(&a, path);
	if (strcmp(how, "unix-connect") == 0) {
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		return report(connect(s, (struct sockaddr *)&a, len));
	}
	if (strcmp(how, "unix-listen") == 0) {
		int s = socket(AF_UNIX, SOCK_STREAM, 0);
		return report(bind(s, (struct sockaddr *)&a, len) < 0 ? -1 : listen(s, 64));
	}
	int s = socket(AF_UNIX, SOCK_DGRAM, 0);
	if (strcmp(how, "unix-sendto") == 0)
		return report(sendto(s, "x", 1, 0, (struct sockaddr *)&a, len));
	struct iovec iov = { "x", 1 };
	struct msghdr m = { .msg_name = &a, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1 };
	return report(sendmsg(s, &m, 0));
}

/* ---------------- races ---------------- */

/* The shared buffer the flipper thread rewrites while connect reads it. */
static union {
	struct sockaddr_un un;
	struct sockaddr_in in;
} g_addr;
static char g_good[108], g_bad[108];
static uint16_t g_goodport, g_badport;
static atomic_bool g_stop;
static bool g_tcp;

static void *flipper(void *arg)
{
	(void)arg;
	volatile char *p = g_addr.un.sun_path;
	while (!atomic_load(&g_stop)) {
		if (g_tcp) { /* each value held for a while, like the path copies */
			volatile uint16_t *port = &g_addr.in.sin_port;
			*port = htons(g_goodport);
			for (volatile int i = 0; i < 200; i++)
				;
			*port = htons(g_badport);
			for (volatile int i = 0; i < 200; i++)
				;
		} else {
			for (size_t i = 0; i < sizeof g_good; i++)
				p[i] = g_good[i];
			for (size_t i = 0; i < sizeof g_bad; i++)
				p[i] = g_bad[i];
		}
	}
	return NULL;
}

/* Which server did s reach: 1 bad, 0 good. */
static int reached_bad(int s)
{
	union {
		struct sockaddr_un un;
		struct sockaddr_in in;
	} peer;
	socklen_t len = sizeof peer;
	if (getpeername(s, (struct sockaddr *)&peer, &len) < 0)
		return 0;
	if (g_tcp)
		return ntohs(peer.in.sin_port) == g_badport;
	return strcmp(peer.un.sun_path, g_bad) == 0;
}

static int race(int n)
{
	pthread_t t;
	pthread_create(&t, NULL, flipper, NULL);
	int bad = 0, good = 0;
	for (int i = 0; i < n; i++) {
		int s = socket(g_tcp ? AF_INET : AF_UNIX, SOCK_STREAM, 0);
		socklen_t len = g_tcp ? sizeof g_addr.in : sizeof g_addr.un;
		if (connect(s, (struct sockaddr *)&g_addr, len) == 0) {
			if (reached_bad(s))
				bad++;
			else
				good++;
		}
		close(s);
	}
	atomic_store(&g_stop, true);
	pthread_join(t, NULL);
	printf("bad=%d good=%d\n", bad, good);
	return 0;
}

/* ---------------- a signal during a blocking connect ---------------- */

static volatile sig_atomic_t g_handled;

static void on_alarm(int sig)
{
	(void)sig;
	g_handled++;
}

/* The kernel's blocking connect restarts under SA_RESTART (and waits on
 * for the handshake), else fails with EINTR: the same inside, where the
 * supervisor performs the connect and answers the wait. */
static int tcp_signal(int port, bool restart)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = restart ? SA_RESTART : 0 };
	sigemptyset(&sa.sa_mask);
	struct itimerval t = { .it_value = { 0, 300000 } };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		                     .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || sigaction(SIGALRM, &sa, NULL) < 0 || setitimer(ITIMER_REAL, &t, NULL) < 0) {
		printf("setup-");
		return report(-1);
	}
	int r = connect(s, (struct sockaddr *)&a, sizeof a), e = errno;
	printf("handled=%d ", (int)g_handled);
	errno = e;
	return report(r);
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "tcp-signal") == 0)
		return tcp_signal(atoi(argv[2]), strcmp(argv[3], "restart") == 0);
	if (argc == 4 && strcmp(argv[1], "unix-listen") == 0) {
		fflush(stdout);
		int rc = unix_probe(argv[1], argv[2]);
		fflush(stdout);
		if (rc == 0)
			sleep((unsigned)atoi(argv[3]));
		return rc;
	}
	if (argc == 3 && strncmp(argv[1], "unix-", 5) == 0)
		return unix_probe(argv[1], argv[2]);
	if (argc == 5 && strcmp(argv[1], "unix-race") == 0) {
		snprintf(g_good, sizeof g_good, "%s", argv[2]);
		snprintf(g_bad, sizeof g_bad, "%s", argv[3]);
		g_addr.un.sun_family = AF_UNIX;
		return race(atoi(argv[4]));
	}
	if (argc == 5 && strcmp(argv[1], "tcp-race") == 0) {
		g_tcp = true;
		g_goodport = (uint16_t)atoi(argv[2]);
		g_badport = (uint16_t)atoi(argv[3]);
		g_addr.in.sin_family = AF_INET;
		g_addr.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return race(atoi(argv[4]));
	}
	fprintf(stderr, "usage: netprobe PROBE ARGS\n");
	return 2;
}
