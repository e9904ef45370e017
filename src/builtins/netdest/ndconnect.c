/*
 * ndconnect.c — connect(2), performed on the caller's behalf, never
 * continued (netdest.c says why): on our duplicate of the caller's
 * socket, or where pidfd_getfd is refused on a socket made like it that
 * then replaces it (sockremake.h); to the HTTP proxy for an intercepted
 * port; to the real port of a virtual one (port_remap); a blocking TCP
 * caller handed to the connect waiter (connwait.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "builtins/netdest/ndint.h"
#include "builtins/policy.h"
#include "net/connwait.h"
#include "net/portmap.h"
#include "proxy/proxy.h"
#include "supervisor/services.h"

/* port_remap: a virtual port of this sandbox becomes its real port. */
static void to_real_port(struct sl_portmap *m, struct sl_sockaddr *a)
{
	uint16_t *p = nd_port_field(a);
	uint16_t real = p ? sl_portmap_real(m, ntohs(*p)) : 0;
	if (real)
		*p = htons(real);
}

/* An IP stream socket, whose connect may wait for a handshake. */
static bool is_tcp(const struct sl_sockinfo *si)
{
	return (si->domain == AF_INET || si->domain == AF_INET6) && nd_proto_of(si) == SL_NP_TCP;
}

/* Where a checked connect goes: the destination, or the HTTP proxy, which
 * is told where the guest meant to go (proxy.h). */
struct nd_target {
	struct sockaddr_storage to;
	socklen_t len;
	bool proxied;
};

/*
 * Connect our socket s to t as the caller.  A TCP connect is started
 * without waiting (connwait.h); *wait: the caller's socket blocks and the
 * handshake goes on, so the caller must wait for it.
 */
static long connect_as_caller(const struct sl_call *call, const struct nd_sock *s,
                              const struct nd_target *t, const struct sl_sockaddr *meant,
                              bool *wait)
{
	bool blocking = false;
	const struct sockaddr *to = (const struct sockaddr *)&t->to;
	long r = is_tcp(&s->si) ? AS_CALLER(sl_connwait_connect(s->fd, to, t->len, &blocking))
	                        : AS_CALLER(connect(s->fd, to, t->len));
	if (t->proxied && (r == 0 || r == -EINPROGRESS)) {
		int e = sl_proxy_expect(call->sv->proxy, s->fd, (const struct sockaddr *)&meant->ss,
		                        meant->len, (pid_t)call->n->pid);
		if (e)
			r = e;
	}
	*wait = blocking && (r == -EINPROGRESS || r == -EALREADY);
	return r;
}

/* Our socket for the connect waiter: a duplicate of one we made (it is
 * installed in the caller's place and closed), else our duplicate itself. */
static int keep_for_wait(const struct nd_sock *s, const struct sl_remade *remade)
{
	return remade->fd >= 0 ? fcntl(remade->fd, F_DUPFD_CLOEXEC, 3) : s->fd;
}

/*
 * The connect performed (r): a socket we made is installed in the
 * caller's place; a caller that must wait is handed to the connect
 * waiter (ND_LATER) unless the handshake is already over.  Closes ours.
 */
static long connect_done(const struct nd_state *st, const struct sl_call *call,
                         const struct nd_sock *s, struct sl_remade *remade,
                         const struct nd_target *t, long r, bool wait)
{
	int waitfd = wait ? keep_for_wait(s, remade) : -1;
	if (wait && waitfd < 0)
		r = -errno; /* cannot wait: the caller is not told it is connecting */
	if (remade->fd < 0 && (r == 0 || r == -EINPROGRESS || r == -EALREADY))
		nd_sock_forget(st, s); /* a stream socket kept since its bind: done */
	if (remade->fd >= 0) {
		int ie = nd_remade_done(st, call, remade, r == 0 || r == -EINPROGRESS || r == -EALREADY,
		                        false);
		r = ie < 0 ? ie : r; /* ours is the caller's now */
	} else if (s->fd >= 0 && s->fd != waitfd) {
		close(s->fd);
	}
	if (waitfd >= 0 && (r == -EINPROGRESS || r == -EALREADY)) {
		long w = sl_connwait_wait(call->sv->connwait, call->listener, call->n, waitfd, &t->to,
		                          t->len);
		if (w == 1) {
			*call->later = true; /* the waiter answers: waitfd is closed */
			return ND_LATER;
		}
		r = w;
	}
	if (waitfd >= 0)
		close(waitfd);
	return r;
}

/*
 * connect: never continued to the kernel.  The kernel would look the
 * caller's fd number up again, and a second thread can dup2 another
 * socket over it after our look: a unix socket then connects to any
 * pathname socket (Landlock (ABI <= 7) does not check that), a UDP one
 * to any address.  So whatever the rules, the connect is performed on
 * our duplicate, the very socket checked, with the address copied once.
 */
long nd_connect(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	struct sl_remade remade;
	int e = nd_take_sock(st, call, (int)(uint32_t)a[0], &s, &remade, NULL);
	struct sl_sockaddr sa;
	if (!e)
		e = sl_sd_copy_addr(call->mem, a[1], (uint32_t)a[2], &sa);
	int hold = -1;
	if (!e)
		e = sl_policy_net(call, "connect", &sa, nd_check_dest(st, call, &s, &sa, false, &hold));
	struct nd_target t = { .proxied = !e && nd_to_proxy(call, &s, &sa) };
	if (!e && !t.proxied && call->sv->ports && nd_proto_of(&s.si) == SL_NP_TCP)
		to_real_port(call->sv->ports, &sa); /* checked as the guest sees it */
	if (t.proxied) {
		sl_proxy_target(call->sv->proxy, s.si.domain, &t.to, &t.len);
	} else if (!e) {
		t.to = sa.ss;
		t.len = sa.len;
	}
	bool wait = false;
	long r = e == SL_POLICY_KILL ? ND_KILL
	         : e                 ? -e
	                             : connect_as_caller(call, &s, &t, &sa, &wait);
	if (hold >= 0)
		close(hold);
	return connect_done(st, call, &s, &remade, &t, r, wait);
}
