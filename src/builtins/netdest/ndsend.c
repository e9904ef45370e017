/*
 * ndsend.c — sendto(2) with an address, sendmsg(2) and sendmmsg(2),
 * performed on the caller's behalf with the message copied once
 * (sockdest.h), every destination checked first (ndcheck.c): the kernel
 * would read the address again, a second thread could change it.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "builtins/netdest/ndint.h"
#include "builtins/policy.h"
#include "net/sockadopt.h"
#include "supervisor/childfd.h"

#define ND_MAX_MMSG 1024 /* UIO_MAXIOV: the kernel's sendmmsg cap */

/* A send we performed failed with EPIPE: the caller gets its SIGPIPE. */
static void pipe_signal(const struct sl_call *call, long r, int flags)
{
	if (r != -EPIPE || (flags & MSG_NOSIGNAL))
		return;
	int pfd = sl_child_pidfd(call->listener, call->n);
	if (pfd >= 0) {
		syscall(__NR_pidfd_send_signal, pfd, SIGPIPE, NULL, 0);
		close(pfd);
	}
}

/*
 * Does a route netlink message of msg ask for a change (a kind other than
 * GET)?  Such a request needs CAP_NET_ADMIN, which the guest has not; but
 * in the loopback view made in a user namespace (netview.h) the guest's
 * uid owns that namespace and so would have it, through a send with an
 * address (the kernel then checks only the sender, not the socket's
 * opener), which is ours to perform: refused here for every netlink
 * socket, as the kernel refuses it a guest without capabilities.
 */
static bool netlink_changes(const struct sl_sd_msg *msg)
{
	size_t rem = msg->len;
	for (const struct nlmsghdr *h = msg->data; h && NLMSG_OK(h, rem); h = NLMSG_NEXT(h, rem))
		if (h->nlmsg_type >= RTM_BASE && (h->nlmsg_type & 3) != 2)
			return true;
	return false;
}

/* Send msg on s (the checks done), as sendmsg. */
static long send_checked(const struct nd_state *st, const struct sl_call *call,
                         const char *syscall, const struct nd_sock *s, struct sl_sd_msg *msg,
                         int flags)
{
	int hold = -1;
	int e = msg->has_name ? sl_policy_net(call, syscall, &msg->name,
	                                      nd_check_dest(st, call, s, &msg->name, true, &hold))
	                      : 0;
	if (!e && s->si.domain == AF_NETLINK && netlink_changes(msg))
		e = EPERM;
	/* A TCP send with an address connects (TCP Fast Open): never around
	 * the proxy. */
	if (!e && msg->has_name && nd_to_proxy(call, s, &msg->name))
		e = EOPNOTSUPP;
	long r = e == SL_POLICY_KILL ? ND_KILL : e ? -e : AS_CALLER(sl_sd_sendmsg(s->fd, msg, flags));
	if (hold >= 0)
		close(hold);
	return r;
}

/* The socket a send acts on (ndsock.c): where pidfd_getfd is refused, a
 * datagram socket with no state is made anew for its first send, then
 * kept in the caller's place (sockadopt.h): musl's resolver sends each
 * query with an address on an unconnected UDP socket. */
static int send_sock(const struct nd_state *st, const struct sl_call *call, uint64_t fd,
                     struct nd_sock *s, struct sl_remade *r)
{
	return nd_take_sock(st, call, (int)(uint32_t)fd, s, r, sl_adopted_kind);
}

long nd_sendto(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	if (a[4] == 0)
		return ND_CONTINUE; /* no address: a register, nothing to re-read */
	int flags = (int)(uint32_t)a[3];
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	struct sl_remade remade;
	struct sl_sd_msg msg;
	memset(&msg, 0, sizeof msg);
	int e = send_sock(st, call, a[0], &s, &remade);
	if (!e)
		e = sl_sd_copy_addr(call->mem, a[4], (uint32_t)a[5], &msg.name);
	msg.has_name = !e && msg.name.len > 0;
	if (!e) {
		struct sl_sockaddr keep = msg.name;
		e = sl_sd_copy_buf(call->mem, a[1], a[2], s.si.type == SOCK_STREAM, &msg);
		msg.name = keep;
		msg.has_name = keep.len > 0;
	}
	long r = e ? -e : send_checked(st, call, "sendto", &s, &msg, flags);
	sl_sd_msg_free(&msg);
	(void)nd_sock_done(st, call, &s, &remade, r >= 0); /* sent either way */
	pipe_signal(call, r, flags);
	return r;
}

long nd_sendmsg(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	int flags = (int)(uint32_t)a[2];
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	struct sl_remade remade;
	struct sl_sd_msg msg;
	memset(&msg, 0, sizeof msg);
	int e = send_sock(st, call, a[0], &s, &remade);
	if (!e)
		e = sl_sd_copy_msg(call->mem, call->listener, call->n, a[1],
		                   s.si.type == SOCK_STREAM, &msg);
	long r = e ? -e : send_checked(st, call, "sendmsg", &s, &msg, flags);
	sl_sd_msg_free(&msg);
	(void)nd_sock_done(st, call, &s, &remade, r >= 0);
	pipe_signal(call, r, flags);
	return r;
}

/* struct mmsghdr on x86_64: a 56-byte msghdr, then unsigned msg_len. */
#define MMSG_SIZE 64
#define MMSG_LEN_OFF 56

/* Each message checked and sent in turn; like the kernel, the count sent
 * so far, or the first error when nothing was sent. */
long nd_sendmmsg(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	unsigned vlen = (unsigned)(uint32_t)a[2];
	int flags = (int)(uint32_t)a[3];
	if (vlen > ND_MAX_MMSG)
		vlen = ND_MAX_MMSG;
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	struct sl_remade remade;
	int e = send_sock(st, call, a[0], &s, &remade);
	if (e)
		return -e;
	long sent = 0, r = 0;
	struct sl_sd_msg *msg = malloc(sizeof(*msg));
	for (unsigned i = 0; msg && i < vlen; i++) {
		uint64_t at = a[1] + (uint64_t)i * MMSG_SIZE;
		e = sl_sd_copy_msg(call->mem, call->listener, call->n, at, s.si.type == SOCK_STREAM,
		                   msg);
		r = e ? -e : send_checked(st, call, "sendmmsg", &s, msg, flags);
		sl_sd_msg_free(msg);
		if (r < 0)
			break;
		unsigned len = (unsigned)r;
		if (sandlock_mem_poke(call->mem, at + MMSG_LEN_OFF, &len, sizeof len) != 0) {
			r = -EFAULT;
			break;
		}
		sent++;
	}
	if (!msg)
		r = -ENOMEM;
	free(msg);
	(void)nd_sock_done(st, call, &s, &remade, sent > 0);
	if (sent == 0 && r < 0) {
		pipe_signal(call, r, flags);
		return r;
	}
	return sent;
}
