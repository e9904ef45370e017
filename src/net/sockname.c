/*
 * sockname.c — a TCP socket's names by its inode, from sock_diag
 * (sockname.h).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "compat.h"
#include "net/sockname.h"

/* Every state but those no fd holds (TIME_WAIT, connection requests). */
#define HELD_STATES (~((1u << TCP_TIME_WAIT) | (1u << SL_TCP_NEW_SYN_RECV)))

/* Ask for the TCP sockets of family domain in states (a TCPF_ mask). */
static int dump_tcp(int domain, unsigned states)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	struct {
		struct nlmsghdr h;
		struct inet_diag_req_v2 r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP },
		.r = { .sdiag_family = (__u8)domain, .sdiag_protocol = IPPROTO_TCP,
		       .idiag_states = states },
	};
	if (send(nl, &req, sizeof req, 0) != (ssize_t)sizeof req) {
		int e = errno;
		close(nl);
		return -e;
	}
	return nl;
}

/* Read the dump on nl until the socket with inode ino: 1 (found, in
 * *out), 0 (the dump ended without it) or -errno. */
static int find(int nl, unsigned long ino, struct inet_diag_msg *out)
{
	char buf[16384] __attribute__((aligned(8)));
	for (;;) {
		ssize_t len = recv(nl, buf, sizeof buf, 0);
		if (len < 0)
			return -errno;
		if (len == 0)
			return 0;
		for (const struct nlmsghdr *h = (const void *)buf; NLMSG_OK(h, (size_t)len);
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE)
				return 0;
			if (h->nlmsg_type == NLMSG_ERROR)
				return -EIO;
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && m->idiag_inode == ino) {
				*out = *m;
				return 1;
			}
		}
	}
}

/* One end of m (peer: the remote one) as a sockaddr of family domain. */
static void to_addr(int domain, const struct inet_diag_msg *m, bool peer,
                    struct sl_sockaddr *out)
{
	const __be32 *a = peer ? m->id.idiag_dst : m->id.idiag_src;
	__be16 port = peer ? m->id.idiag_dport : m->id.idiag_sport;
	memset(out, 0, sizeof *out);
	if (domain == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)&out->ss;
		in->sin_family = AF_INET;
		in->sin_port = port;
		memcpy(&in->sin_addr, a, sizeof in->sin_addr);
		out->len = sizeof *in;
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->ss;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = port;
		memcpy(&in6->sin6_addr, a, sizeof in6->sin6_addr);
		out->len = sizeof *in6;
	}
}

/* Find the TCP socket ino among those in states: 1 (in *m), 0, -errno. */
static int lookup(int domain, unsigned states, unsigned long ino, struct inet_diag_msg *m)
{
	if (domain != AF_INET && domain != AF_INET6)
		return -EAFNOSUPPORT;
	int nl = dump_tcp(domain, states);
	if (nl < 0)
		return nl;
	int r = find(nl, ino, m);
	close(nl);
	return r;
}

bool sl_sock_tcp_listed(int domain, unsigned long ino)
{
	struct inet_diag_msg m;
	return lookup(domain, HELD_STATES & ~(1u << SL_TCP_BOUND_INACTIVE), ino, &m) != 0;
}

int sl_sock_tcp_name(int domain, unsigned long ino, bool peer, struct sl_sockaddr *out)
{
	struct inet_diag_msg m;
	memset(&m, 0, sizeof m); /* not listed: unbound, unconnected */
	int r = lookup(domain, HELD_STATES, ino, &m); /* bound-only ones too (>= 6.8) */
	if (r < 0)
		return -r;
	if (peer && !m.id.idiag_dport)
		return ENOTCONN;
	to_addr(domain, &m, peer, out);
	return 0;
}
