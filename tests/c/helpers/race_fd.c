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
 *   race_fd bind PORT TRIES
 *       fd N flips between a unix socket and a TCP socket while the main
 *       thread binds N to 127.0.0.1:PORT.  A supervisor that sees the unix
 *       socket and continues the call lets the kernel bind the TCP one to
 *       a port a net_deny_bind list refuses.  "reached" counts tries that
 *       left the TCP socket bound to PORT.
 *
 *   race_fd listen TRIES
 *       fd N flips between an unbound unix socket and an unbound TCP
 *       socket while the main thread calls listen(N): continued after the
 *       supervisor saw the unix one, the kernel makes the TCP socket listen
 *       on an ephemeral port it binds itself, which no bind rule granted.
 *       "reached" counts tries that left the TCP socket listening.
 *
 *   race_fd sendto OKPORT BADPORT TRIES
 *       fd N flips between two UDP sockets (one already used for a send,
 *       one fresh) while a third thread flips the port of the address
 *       the main thread sends a datagram to, between 127.0.0.1:OKPORT and
 *       127.0.0.1:BADPORT.  A supervisor that checks one socket or one
 *       address and sends on another (or lets the kernel read the address
 *       again) lets a datagram reach BADPORT; the test counts what each
 *       port received.  "reached" counts sends that succeeded.
 *
 *   race_fd bindaddr OKPORT BADPORT TRIES
 *       a fresh TCP socket at fd N each try, bound by the main thread to
 *       127.0.0.1 while a second thread flips the address's port between
 *       OKPORT and BADPORT.  A supervisor that checks the address and lets
 *       the kernel read it again binds BADPORT.  "reached" counts sockets
 *       bound to BADPORT, "ok" those bound to OKPORT.
 *
 *   race_fd udpbind KIND PORT TRIES SECONDS
 *       fd N flips between a fresh UDP socket and one socket of KIND
 *       (unix: a unix datagram socket; netlink: a route socket) while the
 *       main thread binds N to 127.0.0.1:PORT, for TRIES tries or SECONDS
 *       seconds, whichever ends first.  A supervisor that cannot act on
 *       the KIND socket and continues the call lets the kernel bind the
 *       UDP one to a port no rule checked (Landlock has no UDP rule).
 *       "reached" counts tries that left the UDP socket bound to PORT.
 *
 * Prints "reached=R tries=T" (bindaddr: "reached=R ok=K tries=T").  Every socket is non-blocking, so a full
 * backlog on the far side is an error, never a hang.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <linux/netlink.h>

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

/* Make a and b this try's pair, wait until the swapper works on them. */
static void publish(int a, int b)
{
	atomic_store(&g_a, a);
	atomic_store(&g_b, b);
	long r0 = atomic_load(&g_rounds);
	while (atomic_load(&g_rounds) < r0 + 2)
		;
}

/* This try's pair: a TCP socket *t and a unix socket *u, the TCP one at
 * SWAP_FD first when tcp_first, the swapper at work on them.  False if
 * they cannot be made. */
static bool start_try(int *t, int *u, bool tcp_first)
{
	*t = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	*u = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int first = tcp_first ? *t : *u, second = tcp_first ? *u : *t;
	if (*t < 0 || *u < 0 || dup2(first, SWAP_FD) < 0)
		return false;
	publish(first, second);
	return true;
}

/* The try is over: the swapper lets go, the unix socket is at SWAP_FD
 * (the TCP one's only fd is t: closing it frees its port). */
static void end_try(int t, int u)
{
	atomic_store(&g_a, -1);
	atomic_store(&g_b, -1);
	dup2(u, SWAP_FD);
	close(t);
	close(u);
}

static int setup_failed(void)
{
	printf("setup-");
	return report(-1);
}

static int race_connect(const char *path, long tries)
{
	struct sockaddr_un sun;
	socklen_t len = unix_addr(&sun, path);
	long reached = 0;
	for (long i = 0; i < tries; i++) {
		int t, u;
		if (!start_try(&t, &u, true))
			return setup_failed();
		if (connect(SWAP_FD, (struct sockaddr *)&sun, len) == 0)
			reached++;
		end_try(t, u);
	}
	printf("reached=%ld tries=%ld\n", reached, tries);
	return 0;
}

/* The TCP socket t is bound to port (want 0: to any port). */
static bool tcp_bound(int t, int want)
{
	struct sockaddr_in in;
	socklen_t len = sizeof in;
	if (getsockname(t, (struct sockaddr *)&in, &len) < 0 || in.sin_family != AF_INET)
		return false;
	return want ? ntohs(in.sin_port) == want : in.sin_port != 0;
}

static int race_bind(int port, long tries)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		                      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long reached = 0;
	for (long i = 0; i < tries; i++) {
		int t, u;
		if (!start_try(&t, &u, false))
			return setup_failed();
		bind(SWAP_FD, (struct sockaddr *)&in, sizeof in);
		if (tcp_bound(t, port))
			reached++;
		end_try(t, u);
	}
	printf("reached=%ld tries=%ld\n", reached, tries);
	return 0;
}

static int race_listen(long tries)
{
	long reached = 0;
	for (long i = 0; i < tries; i++) {
		int t, u, on = 0;
		if (!start_try(&t, &u, false))
			return setup_failed();
		listen(SWAP_FD, 1);
		socklen_t len = sizeof on;
		if (getsockopt(t, SOL_SOCKET, SO_ACCEPTCONN, &on, &len) == 0 && on)
			reached++;
		end_try(t, u);
	}
	printf("reached=%ld tries=%ld\n", reached, tries);
	return 0;
}

static struct sockaddr_in g_dst; /* the sendto race's address, its port flipped */
static atomic_int g_flip_stop;

static void *flipper(void *arg)
{
	const uint16_t *ports = arg;
	for (unsigned i = 0; !atomic_load_explicit(&g_flip_stop, memory_order_relaxed); i++)
		__atomic_store_n(&g_dst.sin_port, htons(ports[i & 1]), __ATOMIC_RELAXED);
	return NULL;
}

/* g_dst: 127.0.0.1 on ports[0], flipped to ports[1] and back by a
 * thread *th from now on (ports must outlive it). */
static bool start_flipper(uint16_t ports[2], pthread_t *th)
{
	g_dst.sin_family = AF_INET;
	g_dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	g_dst.sin_port = htons(ports[0]);
	return pthread_create(th, NULL, flipper, ports) == 0;
}

static int race_sendto(int ok, int bad, long tries)
{
	uint16_t ports[2] = { (uint16_t)ok, (uint16_t)bad };
	pthread_t th;
	if (!start_flipper(ports, &th))
		return setup_failed();
	int used = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	long reached = 0;
	for (long i = 0; i < tries && used >= 0; i++) {
		int fresh = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (fresh < 0 || dup2(used, SWAP_FD) < 0)
			break;
		publish(used, fresh);
		if (sendto(SWAP_FD, "x", 1, 0, (struct sockaddr *)&g_dst, sizeof g_dst) == 1)
			reached++;
		atomic_store(&g_a, -1);
		atomic_store(&g_b, -1);
		dup2(used, SWAP_FD);
		close(fresh);
	}
	atomic_store(&g_flip_stop, 1);
	pthread_join(th, NULL);
	printf("reached=%ld tries=%ld\n", reached, tries);
	return 0;
}

/* The port the socket at fd is bound to (0: none). */
static int bound_port(int fd)
{
	struct sockaddr_in in;
	socklen_t len = sizeof in;
	if (getsockname(fd, (struct sockaddr *)&in, &len) < 0 || in.sin_family != AF_INET)
		return 0;
	return ntohs(in.sin_port);
}

static int race_bindaddr(int ok, int bad, long tries)
{
	uint16_t ports[2] = { (uint16_t)ok, (uint16_t)bad };
	pthread_t th;
	if (!start_flipper(ports, &th))
		return setup_failed();
	long reached = 0, good = 0;
	for (long i = 0; i < tries; i++) {
		int t = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (t < 0 || dup2(t, SWAP_FD) < 0)
			break;
		close(t);
		int one = 1; /* the port is free again at once for the next try */
		setsockopt(SWAP_FD, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		bind(SWAP_FD, (struct sockaddr *)&g_dst, sizeof g_dst);
		int p = bound_port(SWAP_FD);
		reached += p == bad;
		good += p == ok;
		close(SWAP_FD);
	}
	atomic_store(&g_flip_stop, 1);
	pthread_join(th, NULL);
	printf("reached=%ld ok=%ld tries=%ld\n", reached, good, tries);
	return 0;
}

/* The other socket of a udpbind race: KIND's, made once. */
static int kind_socket(const char *kind)
{
	if (strcmp(kind, "unix") == 0)
		return socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (strcmp(kind, "netlink") == 0)
		return socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK, NETLINK_ROUTE);
	errno = EINVAL;
	return -1;
}

static int race_udpbind(const char *kind, int port, long tries, long seconds)
{
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		                      .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int other = kind_socket(kind);
	if (other < 0)
		return setup_failed();
	time_t end = time(NULL) + seconds;
	long reached = 0, i;
	for (i = 0; i < tries && time(NULL) < end; i++) {
		int u = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (u < 0 || dup2(other, SWAP_FD) < 0)
			return setup_failed();
		publish(other, u);
		bind(SWAP_FD, (struct sockaddr *)&in, sizeof in);
		atomic_store(&g_a, -1);
		atomic_store(&g_b, -1);
		reached += bound_port(u) == port;
		dup2(other, SWAP_FD);
		close(u); /* its only fd now: the port is free for the next try */
	}
	printf("reached=%ld tries=%ld\n", reached, i);
	return 0;
}

static int run(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "connect") == 0)
		return race_connect(argv[2], strtol(argv[3], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "bind") == 0)
		return race_bind((int)strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10));
	if (argc == 3 && strcmp(argv[1], "listen") == 0)
		return race_listen(strtol(argv[2], NULL, 10));
	if (argc == 5 && strcmp(argv[1], "sendto") == 0)
		return race_sendto((int)strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10),
		                   strtol(argv[4], NULL, 10));
	if (argc == 5 && strcmp(argv[1], "bindaddr") == 0)
		return race_bindaddr((int)strtol(argv[2], NULL, 10), (int)strtol(argv[3], NULL, 10),
		                     strtol(argv[4], NULL, 10));
	if (argc == 6 && strcmp(argv[1], "udpbind") == 0)
		return race_udpbind(argv[2], (int)strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
		                    strtol(argv[5], NULL, 10));
	fprintf(stderr, "usage: race_fd connect UNIXPATH TRIES | bind PORT TRIES | listen TRIES"
	                " | sendto OKPORT BADPORT TRIES | bindaddr OKPORT BADPORT TRIES"
	                " | udpbind unix|netlink PORT TRIES SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	pthread_t th;
	if (pthread_create(&th, NULL, swapper, NULL) != 0)
		return 2;
	int rc = run(argc, argv);
	atomic_store(&g_stop, 1);
	pthread_join(th, NULL);
	fflush(stdout);
	return rc;
}
