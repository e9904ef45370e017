/*
 * contain.c — hostile probes for the containment rules, run inside the
 * sandbox by tests/c/test_containment.c (and outside it, as the control).
 *   contain <probe> [args]
 * Prints "ok" (the probe got through) and exits 0, or "errno=NAME" and
 * exits 1; 2 is a usage error.  Numbers may be given in hex (0x...).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "probe.h"

/* A failure before the probed call: "setup-errno=NAME". */
static int setup_failed(void)
{
	printf("setup-");
	return report(-1);
}

static unsigned long long num(const char *s)
{
	return strtoull(s, NULL, 0);
}

/* ---------------- sockets ---------------- */

/* Raw syscalls so a test can pass garbage in the upper 32 bits. */
static int p_socket(char **a)
{
	return report(syscall(SYS_socket, num(a[0]), num(a[1]), num(a[2])));
}

static int p_socketpair(char **a)
{
	int sv[2];
	return report(syscall(SYS_socketpair, num(a[0]), num(a[1]), num(a[2]), sv));
}

/* Loopback address of family (AF_INET or AF_INET6) and port. */
static socklen_t loopback(int family, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		a->sin6_addr = in6addr_loopback;
		return sizeof *a;
	}
	struct sockaddr_in *a = (struct sockaddr_in *)ss;
	a->sin_family = AF_INET;
	a->sin_port = htons((uint16_t)port);
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return sizeof *a;
}

/* stream FAMILY PROTO connect|listen|autolisten PORT: a stream socket of
 * protocol PROTO (0, IPPROTO_TCP, IPPROTO_MPTCP, ...) connects to /
 * listens on PORT; autolisten listens without bind(2) (the kernel binds
 * an ephemeral port: a server on a port nobody granted). */
static int p_stream(char **a)
{
	int family = (int)num(a[0]);
	int s = socket(family, SOCK_STREAM | SOCK_CLOEXEC, (int)num(a[1]));
	if (s < 0)
		return report(-1);
	struct sockaddr_storage ss;
	socklen_t len = loopback(family, atoi(a[3]), &ss);
	if (strcmp(a[2], "connect") == 0)
		return report(connect(s, (struct sockaddr *)&ss, len));
	if (strcmp(a[2], "autolisten") == 0)
		return report(listen(s, 4));
	if (bind(s, (struct sockaddr *)&ss, len) < 0)
		return report(-1);
	return report(listen(s, 4));
}

/*
 * tfo sendto|sendmsg|sendmmsg|sockopt PORT: reach a listener on PORT with
 * TCP Fast Open instead of connect(2).  "ok" means the data went out on
 * a connection that the port rule never saw.
 */
static int p_tfo(char **a)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return setup_failed();
	struct sockaddr_storage ss;
	socklen_t len = loopback(AF_INET, atoi(a[1]), &ss);
	char data[] = "fastopen";
	struct iovec iov = { data, sizeof data - 1 };
	struct msghdr mh = { .msg_name = &ss, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1 };
	if (strcmp(a[0], "sendto") == 0)
		return report(sendto(s, data, sizeof data - 1, MSG_FASTOPEN, (struct sockaddr *)&ss, len));
	if (strcmp(a[0], "sendmsg") == 0)
		return report(sendmsg(s, &mh, MSG_FASTOPEN));
	if (strcmp(a[0], "sendmmsg") == 0) {
		struct mmsghdr mm = { .msg_hdr = mh };
		return report(sendmmsg(s, &mm, 1, MSG_FASTOPEN));
	}
	int on = 1; /* sockopt: TCP_FASTOPEN_CONNECT (connect(2) follows) */
	if (setsockopt(s, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &on, sizeof on) < 0)
		return report(-1);
	return report(connect(s, (struct sockaddr *)&ss, len));
}

/* dgram FAMILY PROTO PORT: send "ping" to an echo server on PORT and
 * read the echo back (5 s receive timeout: never hangs). */
static int p_dgram(char **a)
{
	int family = (int)num(a[0]);
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, (int)num(a[1]));
	if (s < 0)
		return report(-1);
	struct timeval tv = { 5, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	struct sockaddr_storage ss;
	socklen_t len = loopback(family, atoi(a[2]), &ss);
	if (sendto(s, "ping", 4, 0, (struct sockaddr *)&ss, len) != 4)
		return report(-1);
	char buf[16];
	ssize_t n = recv(s, buf, sizeof buf, 0);
	if (n < 0)
		return report(-1);
	return report(n == 4 && memcmp(buf, "ping", 4) == 0 ? 0 : (errno = EBADMSG, -1));
}

/*
 * route FAMILY sockopt|cmsg|pktoptions PORT MARKER: send MARKER by UDP to
 * PORT of a documentation address (2001:db8::53, 192.0.2.1: what a rule
 * allows) while telling the kernel to route it through the loopback
 * address first: an IPv6 segment-routing header (type 4, segments left
 * 0: delivered to ::1) set by setsockopt(IPV6_RTHDR), sent as ancillary
 * data, or through RFC 2292's IPV6_2292PKTOPTIONS; on IPv4 a loose
 * source route (IP_OPTIONS; cmsg: IP_RETOPTS) whose first hop is
 * 127.0.0.1.  "ok" when the send went out; the test sees where on lo.
 */
static int p_route(char **a)
{
	int family = (int)num(a[0]);
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return setup_failed();
	struct sockaddr_storage ss;
	socklen_t len = loopback(family, atoi(a[2]), &ss);
	unsigned char opt[40];
	size_t optlen;
	int level, name;
	memset(opt, 0, sizeof opt);
	if (family == AF_INET6) {
		inet_pton(AF_INET6, "2001:db8::53", &((struct sockaddr_in6 *)&ss)->sin6_addr);
		opt[1] = 2; /* hdrlen: 8 + one 16-byte segment, in 8-byte units past the first 8 */
		opt[2] = 4; /* IPV6_SRCRT_TYPE_4: segment routing */
		memcpy(opt + 8, &in6addr_loopback, 16);
		optlen = 24;
		level = IPPROTO_IPV6;
		name = strcmp(a[1], "pktoptions") == 0 ? IPV6_2292PKTOPTIONS : IPV6_RTHDR;
	} else {
		inet_pton(AF_INET, "192.0.2.1", &((struct sockaddr_in *)&ss)->sin_addr);
		opt[0] = IPOPT_NOP;
		opt[1] = IPOPT_LSRR;
		opt[2] = 7; /* type, length, pointer, one address */
		opt[3] = 4;
		uint32_t lo = htonl(INADDR_LOOPBACK);
		memcpy(opt + 4, &lo, 4);
		optlen = 8;
		level = IPPROTO_IP;
		name = strcmp(a[1], "cmsg") == 0 ? IP_RETOPTS : IP_OPTIONS;
	}
	union {
		struct cmsghdr h;
		unsigned char b[CMSG_SPACE(sizeof opt)];
	} ctl;
	memset(&ctl, 0, sizeof ctl);
	struct iovec iov = { a[3], strlen(a[3]) };
	struct msghdr mh = { .msg_name = &ss, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1 };
	if (strcmp(a[1], "pktoptions") == 0) { /* the header as a control message, by setsockopt */
		ctl.h.cmsg_level = IPPROTO_IPV6;
		ctl.h.cmsg_type = IPV6_2292RTHDR;
		ctl.h.cmsg_len = CMSG_LEN(optlen);
		memcpy(CMSG_DATA(&ctl.h), opt, optlen);
		if (setsockopt(s, level, name, &ctl, (socklen_t)CMSG_SPACE(optlen)) < 0)
			return report(-1);
	} else if (strcmp(a[1], "cmsg") == 0) {
		ctl.h.cmsg_level = level;
		ctl.h.cmsg_type = name;
		ctl.h.cmsg_len = CMSG_LEN(optlen);
		memcpy(CMSG_DATA(&ctl.h), opt, optlen);
		mh.msg_control = &ctl;
		mh.msg_controllen = CMSG_SPACE(optlen);
	} else if (setsockopt(s, level, name, opt, (socklen_t)optlen) < 0) {
		return report(-1);
	}
	return report(sendmsg(s, &mh, 0));
}

/* resolve NAME: getaddrinfo with AI_ADDRCONFIG (which asks netlink). */
static int p_resolve(char **a)
{
	struct addrinfo hints = { .ai_flags = AI_ADDRCONFIG, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int rc = getaddrinfo(a[0], "80", &hints, &res);
	if (rc != 0) {
		printf("gai=%d\n", rc);
		return 1;
	}
	freeaddrinfo(res);
	return report(0);
}

/* ---------------- personality ---------------- */

static int p_personality(char **a)
{
	return report(syscall(SYS_personality, num(a[0])));
}

/* ---------------- IPC shared with the host ---------------- */

/* shm ID: attach an outside segment and overwrite its start with "guest". */
static int p_shm(char **a)
{
	void *p = shmat((int)num(a[0]), NULL, 0);
	if (p == (void *)-1)
		return report(-1);
	memcpy(p, "guest", 6);
	return report(shmdt(p));
}

struct probe_msg {
	long type;
	char text[8];
};

/* msg ID: post "guest" to an outside message queue. */
static int p_msg(char **a)
{
	struct probe_msg m = { 1, "guest" };
	return report(msgsnd((int)num(a[0]), &m, sizeof m.text, IPC_NOWAIT));
}

/* sem ID: raise semaphore 0 of an outside set. */
static int p_sem(char **a)
{
	struct sembuf op = { 0, 1, IPC_NOWAIT };
	return report(semop((int)num(a[0]), &op, 1));
}

/* mq NAME: post "guest" to an outside POSIX message queue. */
static int p_mq(char **a)
{
	mqd_t q = mq_open(a[0], O_WRONLY | O_CLOEXEC);
	if (q == (mqd_t)-1)
		return report(-1);
	return report(mq_send(q, "guest", 5, 0));
}

/* ---------------- set-id files ---------------- */

/*
 * create HOW PATH MODE: make PATH with MODE (octal) by HOW = open, openat,
 * creat, mknod (S_IFREG), mkdir, openat2 or tmpfile (O_TMPFILE in the
 * directory PATH: "ok" only if the unnamed file got a set-id bit).
 */
static int p_create(char **a)
{
	const char *how = a[0], *path = a[1];
	mode_t mode = (mode_t)strtoul(a[2], NULL, 8);
	if (strcmp(how, "open") == 0)
		return report(syscall(SYS_open, path, O_CREAT | O_WRONLY | O_CLOEXEC, mode));
	if (strcmp(how, "openat") == 0)
		return report(openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_CLOEXEC, mode));
	if (strcmp(how, "creat") == 0)
		return report(creat(path, mode));
	if (strcmp(how, "mknod") == 0)
		return report(mknod(path, S_IFREG | mode, 0));
	if (strcmp(how, "mkdir") == 0)
		return report(mkdir(path, mode));
	if (strcmp(how, "openat2") == 0) {
		uint64_t how2[3] = { O_CREAT | O_WRONLY | O_CLOEXEC, mode, 0 }; /* struct open_how */
		return report(syscall(SYS_openat2, AT_FDCWD, path, how2, sizeof how2));
	}
	if (strcmp(how, "tmpfile") == 0) {
		int fd = open(path, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0)
			return report(-1);
		if (!(st.st_mode & (S_ISUID | S_ISGID))) {
			puts("no-setid-bits");
			return 1;
		}
		return report(0);
	}
	return 2;
}

/* chmod PATH MODE / fchmod PATH MODE (octal). */
static int p_chmod(char **a, int by_fd)
{
	mode_t mode = (mode_t)strtoul(a[1], NULL, 8);
	if (!by_fd)
		return report(chmod(a[0], mode));
	int fd = open(a[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return setup_failed();
	return report(fchmod(fd, mode));
}

/* setcap PATH: give PATH the file capability cap_net_raw+ep (VFS_CAP v2). */
static int p_setcap(char **a)
{
	uint32_t cap[5] = { 0x02000000u | 1u /* revision 2, effective */, 1u << 13, 0, 0, 0 };
	return report(setxattr(a[0], "security.capability", cap, sizeof cap, 0));
}

/* ---------------- dispatch ---------------- */

struct probe {
	const char *name;
	int nargs;
	int (*fn)(char **a);
};

static int p_fchmod(char **a) { return p_chmod(a, 1); }
static int p_chmod_path(char **a) { return p_chmod(a, 0); }

static const struct probe k_probes[] = {
	{ "socket", 3, p_socket },       { "socketpair", 3, p_socketpair },
	{ "stream", 4, p_stream },       { "tfo", 2, p_tfo },
	{ "dgram", 3, p_dgram },         { "resolve", 1, p_resolve },
	{ "route", 4, p_route },
	{ "personality", 1, p_personality },
	{ "shm", 1, p_shm },             { "msg", 1, p_msg },
	{ "sem", 1, p_sem },             { "mq", 1, p_mq },
	{ "create", 3, p_create },       { "chmod", 2, p_chmod_path },
	{ "fchmod", 2, p_fchmod },       { "setcap", 1, p_setcap },
};

int main(int argc, char **argv)
{
	for (size_t i = 0; argc >= 2 && i < sizeof k_probes / sizeof k_probes[0]; i++) {
		if (strcmp(argv[1], k_probes[i].name) != 0)
			continue;
		if (argc - 2 < k_probes[i].nargs)
			break;
		int rc = k_probes[i].fn(argv + 2);
		fflush(stdout);
		return rc;
	}
	fprintf(stderr, "usage: contain <probe> [args] (unknown probe or missing argument)\n");
	return 2;
}
