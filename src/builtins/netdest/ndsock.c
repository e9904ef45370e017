/*
 * ndsock.c — the socket a netdest call acts on.  Where pidfd_getfd works
 * (mechs.h): our duplicate of the caller's own.  Where it is refused (a
 * container's default seccomp profile): a socket of ours that stands in
 * for the caller's — one we made and keep (sockadopt.h: datagram sockets
 * after their first bind or send, stream sockets from their bind until
 * their listen or connect), or a fresh one made like the caller's
 * (sockremake.h, with the options noted for it: sockopts.h), installed
 * in its place once the call took effect.
 * Either way the call is performed on a socket we hold, whose kind we
 * read from it, not on whatever the caller's fd number holds by then
 * (ndbind.c says when a bind it cannot perform is left to the kernel).
 */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "builtins/netdest/ndint.h"
#include "launch/mechs.h"
#include "net/sockadopt.h"
#include "net/sockopts.h"
#include "supervisor/childfd.h"

/* s->fd (ours, or -errno) and its kind: 0 or an errno. */
static int with_kind(struct nd_sock *s)
{
	if (s->fd < 0)
		return -s->fd;
	int e = sl_sd_sockinfo(s->fd, &s->si);
	if (e) {
		close(s->fd);
		s->fd = -1;
	}
	return e;
}

int nd_open_sock(const struct nd_state *st, const struct sl_call *call, uint64_t fdarg,
                 struct nd_sock *s)
{
	int num = (int)(uint32_t)fdarg;
	if (sl_mech_getfd() || !st->adopted) {
		s->fd = sl_child_getfd(call->listener, call->n, num);
	} else {
		s->fd = sl_adopted_get(st->adopted, call->listener, call->n, num);
		if (s->fd == -ENOENT)
			s->fd = -EPERM; /* not ours: the caller's own cannot be had */
	}
	return with_kind(s);
}

int nd_take_sock(const struct nd_state *st, const struct sl_call *call, int num,
                 struct nd_sock *s, struct sl_remade *r,
                 bool (*remakes)(const struct sl_sockinfo *si))
{
	r->fd = -1;
	r->ino = 0;
	r->bound = false;
	if (sl_mech_getfd() || !st->adopted)
		return nd_open_sock(st, call, (uint64_t)(uint32_t)num, s);
	s->fd = sl_adopted_get(st->adopted, call->listener, call->n, num);
	if (s->fd != -ENOENT)
		return with_kind(s);
	int e = sl_sock_remake(call->listener, call->n, num, r);
	if (!e && ((remakes && !remakes(&r->si)) || (st->netview && r->si.domain == AF_NETLINK))) {
		close(r->fd);
		r->fd = -1;
		e = EPERM; /* a kind this call does not remake */
	}
	struct sl_caps_saved sv;
	if (!e && st->opts && sl_caps_lower(&sv) == 0) { /* set as the caller would */
		sl_sockopts_apply(st->opts, r->ino, r->fd); /* forgotten once it is installed */
		sl_caps_restore(&sv);
	}
	s->fd = r->fd;
	s->si = r->si;
	return e;
}

/*
 * setsockopt where pidfd_getfd is refused: the value copied and noted
 * under the inode the caller's fd links to, for a socket we may make
 * like it later (sockopts.h), then the call continued: it sets an
 * option on the caller's own socket, nothing we check.  One we do not
 * carry over costs the trip and no more.
 */
long nd_setsockopt(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	int level = (int)(uint32_t)a[1], name = (int)(uint32_t)a[2];
	size_t len = (uint32_t)a[4];
	unsigned char val[64];
	unsigned long ino = 0;
	if (st->opts && sl_sockopts_carried(level, name, len) && len <= sizeof val &&
	    sandlock_mem_peek(call->mem, a[3], val, len) == 0 &&
	    sl_sock_inode(call->listener, call->n, (int)(uint32_t)a[0], &ino) == 0)
		sl_sockopts_note(st->opts, ino, level, name, val, len);
	return ND_CONTINUE;
}

int nd_remade_done(const struct nd_state *st, const struct sl_call *call, struct sl_remade *r,
                   bool ok, bool keep_stream)
{
	if (r->fd < 0)
		return 0;
	if (!ok) {
		close(r->fd);
		r->fd = -1;
		return 0;
	}
	/* Kept before it is installed; one the install fails to place is
	 * held by no process of the sandbox, and goes at the next sweep.  A
	 * socket we fail to keep is still installed: later calls that need
	 * it are refused (it has state now). */
	if (st->adopted && (sl_adopted_kind(&r->si) || (keep_stream && nd_is_stream(&r->si))))
		(void)sl_adopted_add(st->adopted, r->fd, call->init);
	if (st->opts) /* the caller's socket is gone: a failed call kept them */
		sl_sockopts_forget(st->opts, r->ino);
	return sl_sock_remade_install(call->listener, call->n, r);
}

bool nd_is_stream(const struct sl_sockinfo *si)
{
	if (si->domain == AF_UNIX)
		return si->type == SOCK_STREAM || si->type == SOCK_SEQPACKET;
	return (si->domain == AF_INET || si->domain == AF_INET6) && si->type == SOCK_STREAM &&
	       si->protocol == IPPROTO_TCP;
}

void nd_sock_forget(const struct nd_state *st, const struct nd_sock *s)
{
	if (st->adopted && s->fd >= 0 && !sl_adopted_kind(&s->si))
		sl_adopted_forget(st->adopted, s->fd);
}

int nd_sock_done(const struct nd_state *st, const struct sl_call *call, struct nd_sock *s,
                 struct sl_remade *r, bool ok)
{
	int e = 0;
	if (r->fd >= 0)
		e = nd_remade_done(st, call, r, ok, s->keep);
	else if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	return e;
}
