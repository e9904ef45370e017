/*
 * netview.c — the loopback-only network namespace of netview.h.
 *
 * One helper process per run that needs it, made on the first netlink
 * socket the guest asks for: cloned into a new network namespace (and a
 * new user namespace without CAP_SYS_ADMIN; its capabilities are dropped
 * once the namespace is set up, see netview.h) (no
 * exit signal, so the caller's own SIGCHLD handling never sees it), it
 * brings "lo" up, adds the documentation addresses, then makes one
 * NETLINK_ROUTE socket per request and sends it back over a socketpair
 * (SCM_RIGHTS).  A socket keeps the namespace it was made in, so the
 * helper is all the namespace needs.  The helper is a child of a
 * possibly multi-threaded process: it makes raw system calls only.  It
 * ends when the socketpair closes (our side, or our process, is gone) or
 * when the thread that made it exits (PR_SET_PDEATHSIG), and is reaped by
 * sl_netview_free.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/capability.h>
#include <linux/if_addr.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat.h"
#include "net/netview.h"
#include "util.h"

#define CHILD_SOCK 3 /* the helper's end of the socketpair */

struct sl_netview {
	pid_t pid;
	int sock; /* our end */
	pthread_mutex_t mu; /* one request at a time */
};

static bool have_sys_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return d[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32));
}

/* The namespaces the helper is cloned into. */
static unsigned long clone_flags(void)
{
	return have_sys_admin() ? CLONE_NEWNET : CLONE_NEWUSER | CLONE_NEWNET;
}

/* Can a child be cloned into a new user and network namespace here?
 * Once per process: a child that exits at once. */
static bool userns_works(void)
{
	static atomic_int known; /* 0 unknown, 1 yes, 2 no */
	int k = atomic_load(&known);
	if (k)
		return k == 1;
	long pid = syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | CLONE_NEWNET), NULL, NULL,
	                   NULL, NULL);
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		while (waitpid((pid_t)pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	atomic_store(&known, pid > 0 ? 1 : 2);
	return pid > 0;
}

bool sl_netview_possible(void)
{
	return have_sys_admin() || userns_works();
}

bool sl_netview_for(bool host_interfaces)
{
	return !host_interfaces && sl_netview_possible();
}

/* ---------------- the helper (raw system calls only) ---------------- */

static void lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq r;
	memset(&r, 0, sizeof r);
	memcpy(r.ifr_name, "lo", 3);
	if (s >= 0 && ioctl(s, SIOCGIFFLAGS, &r) == 0) {
		r.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &r);
	}
	if (s >= 0)
		close(s);
}

/* Add addr (len bytes of family fam) to lo as a host route of its own. */
static void add_addr(int nl, int fam, const void *addr, size_t len)
{
	struct {
		struct nlmsghdr h;
		struct ifaddrmsg a;
		char attrs[2 * RTA_SPACE(16)];
	} m;
	memset(&m, 0, sizeof m);
	m.h.nlmsg_type = RTM_NEWADDR;
	m.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL;
	m.a.ifa_family = (unsigned char)fam;
	m.a.ifa_prefixlen = (unsigned char)(len * 8);
	m.a.ifa_scope = RT_SCOPE_UNIVERSE;
	m.a.ifa_index = 1; /* lo, in a new namespace */
	char *at = m.attrs;
	const unsigned short types[] = { IFA_LOCAL, IFA_ADDRESS };
	for (size_t i = 0; i < 2; i++) {
		struct rtattr *r = (struct rtattr *)at;
		r->rta_type = types[i];
		r->rta_len = (unsigned short)RTA_LENGTH(len);
		memcpy(RTA_DATA(r), addr, len);
		at += RTA_SPACE(len);
	}
	m.h.nlmsg_len = (unsigned)(NLMSG_LENGTH(sizeof m.a) + (size_t)(at - m.attrs));
	send(nl, &m, m.h.nlmsg_len, 0);
}

static void documentation_addrs(bool v4, bool v6)
{
	int nl = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (nl < 0)
		return;
	if (v4) {
		struct in_addr a = { htonl(0xc0000201) }; /* 192.0.2.1, TEST-NET-1 */
		add_addr(nl, AF_INET, &a, sizeof a);
	}
	if (v6) {
		struct in6_addr a = { { { 0x20, 0x01, 0x0d, 0xb8, [15] = 1 } } }; /* 2001:db8::1 */
		add_addr(nl, AF_INET6, &a, sizeof a);
	}
	close(nl);
}

/* Send fd (or the errno e instead) over s. */
static void send_fd(int s, int fd, int e)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &e, sizeof e };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		memset(cbuf, 0, sizeof cbuf);
		m.msg_control = cbuf;
		m.msg_controllen = sizeof cbuf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	sendmsg(s, &m, MSG_NOSIGNAL);
}

/* No capability left, in any set: the sockets made from here on carry
 * credentials that may change nothing (see netview.h). */
static void drop_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		_exit(1); /* never serve sockets with our capabilities */
}

static __attribute__((noreturn)) void helper(int s, bool v4, bool v6)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(s, CHILD_SOCK) < 0)
		_exit(1);
	syscall(__NR_close_range, 0, CHILD_SOCK - 1, 0);
	syscall(__NR_close_range, CHILD_SOCK + 1, ~0u, 0);
	lo_up();
	documentation_addrs(v4, v6);
	drop_caps();
	for (;;) {
		int type;
		if (recv(CHILD_SOCK, &type, sizeof type, 0) != (ssize_t)sizeof type)
			_exit(0);
		int fd = socket(AF_NETLINK, type, NETLINK_ROUTE);
		send_fd(CHILD_SOCK, fd, fd < 0 ? errno : 0);
		if (fd >= 0)
			close(fd);
	}
}

/* ---------------- our side ---------------- */

/* Which families has the host an address of besides loopback (glibc's
 * AI_ADDRCONFIG test, check_pf.c)? */
static void host_families(bool *v4, bool *v6)
{
	*v4 = *v6 = false;
	struct ifaddrs *list;
	if (getifaddrs(&list) < 0) {
		*v4 = *v6 = true; /* as glibc assumes when it cannot tell */
		return;
	}
	for (struct ifaddrs *i = list; i; i = i->ifa_next) {
		if (!i->ifa_addr)
			continue;
		if (i->ifa_addr->sa_family == AF_INET)
			*v4 |= ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr != htonl(INADDR_LOOPBACK);
		else if (i->ifa_addr->sa_family == AF_INET6)
			*v6 |= !IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr);
	}
	freeifaddrs(list);
}

struct sl_netview *sl_netview_new(void)
{
	struct sl_netview *v = calloc(1, sizeof *v);
	int sv[2];
	if (!v || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		free(v);
		return NULL;
	}
	bool v4, v6;
	host_families(&v4, &v6);
	/* fork-like (no CLONE_VM, no stack), into a new network namespace,
	 * no exit signal: reaped with __WALL. */
	long pid = syscall(SYS_clone, clone_flags(), NULL, NULL, NULL, NULL);
	if (pid == 0)
		helper(sv[1], v4, v6);
	int e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		free(v);
		errno = e;
		return NULL;
	}
	v->pid = (pid_t)pid;
	v->sock = sl_fd_high(sv[0]); /* kept for the run: not a stdio number */
	pthread_mutex_init(&v->mu, NULL);
	return v;
}

/* The fd (ours, close-on-exec) or -errno the helper answered on s. */
static int recv_fd(int s)
{
	int e = EIO, fd = -1;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &e, sizeof e };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		                .msg_controllen = sizeof cbuf };
	if (recvmsg(s, &m, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof e)
		return -EIO;
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(c), sizeof fd);
	return fd >= 0 ? fd : -(e ? e : EIO);
}

int sl_netview_socket(struct sl_netview *v, int type)
{
	pthread_mutex_lock(&v->mu);
	int fd = send(v->sock, &type, sizeof type, MSG_NOSIGNAL) == (ssize_t)sizeof type
	             ? recv_fd(v->sock)
	             : -EIO;
	pthread_mutex_unlock(&v->mu);
	return fd;
}

void sl_netview_free(struct sl_netview *v)
{
	if (!v)
		return;
	close(v->sock); /* the helper's recv ends */
	kill(v->pid, SIGKILL);
	while (waitpid(v->pid, NULL, __WALL) < 0 && errno == EINTR)
		;
	pthread_mutex_destroy(&v->mu);
	free(v);
}
