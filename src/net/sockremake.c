/*
 * sockremake.c — a socket made like the caller's (sockremake.h).
 *
 * What we learn without the socket itself, all through /proc and
 * sock_diag, on the file pinned with an O_PATH open of /proc/TID/fd/N
 * (confirmed the caller's with NOTIF_ID_VALID):
 *  - its protocol: sockfs names every socket's inode after its protocol
 *    (the system.sockprotoname attribute: "TCP", "UDPv6", "UNIX-STREAM"...);
 *  - for AF_UNIX, its type, name and peer: a sock_diag query by inode;
 *  - for IP sockets, whether the kernel lists it bound or connected: its
 *    inode in /proc/net/{udp,icmp}[6], for TCP in a sock_diag dump
 *    (sockname.h: the same sockets, less the TIME_WAIT ones); for a
 *    netlink socket (of the host's namespace: the loopback view's are
 *    never remade, ndsock.c), in /proc/net/netlink;
 *  - O_NONBLOCK and close-on-exec: /proc/TID/fdinfo/N.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include "supervisor/childfd.h"
#include "compat.h"
#include "launch/caps.h"
#include "net/sockname.h"
#include "net/sockremake.h"

static const struct {
	const char *name; /* sockfs's name of the protocol */
	int domain, type, protocol;
	const char *table; /* /proc/net file listing bound ones */
} k_kinds[] = {
	{ "TCP", AF_INET, SOCK_STREAM, IPPROTO_TCP, "tcp" },
	{ "TCPv6", AF_INET6, SOCK_STREAM, IPPROTO_TCP, "tcp6" },
	{ "UDP", AF_INET, SOCK_DGRAM, IPPROTO_UDP, "udp" },
	{ "UDPv6", AF_INET6, SOCK_DGRAM, IPPROTO_UDP, "udp6" },
	{ "PING", AF_INET, SOCK_DGRAM, IPPROTO_ICMP, "icmp" },
	{ "PINGv6", AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6, "icmp6" },
	{ "UNIX-STREAM", AF_UNIX, SOCK_STREAM, 0, NULL },
	{ "UNIX", AF_UNIX, 0, 0, NULL }, /* datagram or seqpacket: sock_diag says */
	/* Every netlink protocol has this name, but the filter lets the
	 * guest make only route sockets; SOCK_RAW and SOCK_DGRAM are the
	 * same socket there, and nothing tells which an unbound one is. */
	{ "NETLINK", AF_NETLINK, SOCK_RAW, NETLINK_ROUTE, "netlink" },
};
#define NKINDS (sizeof k_kinds / sizeof k_kinds[0])

/* What a socket has that a fresh one would not. */
struct sock_state {
	bool busy;  /* bound, connected or listening */
	bool bound; /* it has an address (busy too) */
};

/* AF_UNIX socket ino: its type and state (sock_diag's exact lookup by
 * inode). */
static int unix_state(unsigned long ino, int *type, struct sock_state *st)
{
	struct unix_diag_req r = { .udiag_states = ~0u, .udiag_ino = (__u32)ino,
		                       .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER,
		                       .udiag_cookie = { INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE } };
	int nl = sl_sd_unix_diag(&r, false);
	if (nl < 0)
		return -nl;
	char buf[1024] __attribute__((aligned(8)));
	ssize_t len = recv(nl, buf, sizeof buf, 0);
	int e = len < 0 ? errno : 0;
	close(nl);
	const struct nlmsghdr *h = (const void *)buf;
	if (e || !NLMSG_OK(h, (size_t)len) || h->nlmsg_type != SOCK_DIAG_BY_FAMILY)
		return e ? e : EPERM;
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	*type = m->udiag_type;
	st->busy = m->udiag_state == TCP_LISTEN || m->udiag_state == TCP_ESTABLISHED;
	st->bound = false;
	size_t rem = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (const struct rtattr *at = (const void *)(m + 1); RTA_OK(at, rem);
	     at = RTA_NEXT(at, rem)) {
		if (at->rta_type == UNIX_DIAG_NAME)
			st->busy = st->bound = true;
		if (at->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(at) >= sizeof(__u32) &&
		    *(const __u32 *)RTA_DATA(at))
			st->busy = true;
	}
	return 0;
}

/* Does /proc/net/TABLE list socket ino (bound, connected or listening)? */
static bool listed(const char *table, unsigned long ino)
{
	char path[32], line[512];
	snprintf(path, sizeof path, "/proc/net/%s", table);
	FILE *f = fopen(path, "re");
	if (!f)
		return true; /* cannot tell: treated as bound (refused) */
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		unsigned long i = 0;
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %*s %*s %*s %lu", &i) == 1 && i == ino)
			found = true;
	}
	fclose(f);
	return found;
}

/* The inode of the socket behind our O_PATH fd. */
static int inode_of(int path, unsigned long *ino)
{
	char self[32], link[64];
	snprintf(self, sizeof self, "/proc/self/fd/%d", path);
	ssize_t n = readlink(self, link, sizeof link - 1);
	if (n <= 0)
		return errno ? errno : EIO;
	link[n] = '\0';
	return sscanf(link, "socket:[%lu]", ino) == 1 ? 0 : ENOTSOCK;
}

/* The protocol name and inode of the socket behind our O_PATH fd. */
static int kind_of(int path, char *name, size_t cap, unsigned long *ino)
{
	int e = inode_of(path, ino);
	if (e)
		return e;
	char self[32];
	snprintf(self, sizeof self, "/proc/self/fd/%d", path);
	ssize_t n = getxattr(self, "system.sockprotoname", name, cap - 1);
	if (n <= 0)
		return EPERM;
	name[n] = '\0';
	return 0;
}

/* The caller's socket num: its kind, its inode, and (st, unless NULL)
 * its state. */
static int identify(int listener, const sandlock_notif_t *n, int num, struct sl_sockinfo *si,
                    struct sock_state *st, unsigned long *inode)
{
	int path = sl_child_dirfd(listener, n, num);
	if (path < 0)
		return -path;
	char name[32];
	unsigned long ino = 0;
	int e = kind_of(path, name, sizeof name, &ino);
	*inode = ino;
	close(path);
	if (e)
		return e;
	for (size_t i = 0; i < NKINDS; i++) {
		if (strcmp(name, k_kinds[i].name) != 0)
			continue;
		si->domain = k_kinds[i].domain;
		si->type = k_kinds[i].type;
		si->protocol = k_kinds[i].protocol;
		struct sock_state ignored;
		if (si->domain == AF_UNIX)
			return unix_state(ino, &si->type, st ? st : &ignored);
		if (st && si->protocol == IPPROTO_TCP)
			st->busy = sl_sock_tcp_listed(si->domain, ino); /* /proc/net/tcp without TIME_WAIT */
		else if (st)
			st->busy = listed(k_kinds[i].table, ino);
		if (st) /* a connected IP or netlink socket was bound by its connect */
			st->bound = st->busy;
		return 0;
	}
	return EPERM; /* raw, packet, MPTCP, ...: nothing we remake */
}

int sl_sock_inode(int listener, const sandlock_notif_t *n, int num, unsigned long *ino)
{
	int path = sl_child_dirfd(listener, n, num);
	if (path < 0)
		return -path;
	int e = inode_of(path, ino);
	close(path);
	return e;
}

int sl_sock_kind(int listener, const sandlock_notif_t *n, int num, struct sl_sockinfo *si,
                 bool *busy)
{
	unsigned long ino;
	struct sock_state st = { true, true };
	int e = identify(listener, n, num, si, busy ? &st : NULL, &ino);
	if (busy)
		*busy = st.busy;
	return e;
}

int sl_sock_remake(int listener, const sandlock_notif_t *n, int num, struct sl_remade *r)
{
	r->fd = -1;
	r->num = num;
	struct sock_state st = { true, true };
	int e = identify(listener, n, num, &r->si, &st, &r->ino);
	r->bound = !e && st.bound;
	if (e)
		return e;
	if (st.busy)
		return EPERM; /* its bind or connection would not carry over */
	int64_t pos;
	int flags = 0;
	e = -sl_child_fdinfo((pid_t)n->pid, num, &pos, &flags);
	if (e)
		return e;
	r->install = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	int type = r->si.type | SOCK_CLOEXEC | ((flags & O_NONBLOCK) ? SOCK_NONBLOCK : 0);
	/* Made without our capabilities: the file's credentials are the
	 * ones checks like netlink's file_ns_capable read, and the guest
	 * will hold it. */
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) < 0)
		return EPERM;
	r->fd = socket(r->si.domain, type, r->si.protocol);
	e = r->fd < 0 ? errno : 0;
	sl_caps_restore(&sv);
	return e;
}

int sl_sock_remade_install(int listener, const sandlock_notif_t *n, struct sl_remade *r)
{
	struct sl_child_file f = { r->fd, r->num, r->install };
	r->fd = -1;
	return sl_child_file_done(listener, n, &f, true);
}
