/*
 * ndint.h — what the files of the socket destinations builtin share
 * (builtins/netdest/): its per-run state, the socket a call names, the
 * verdicts, and the one entry point of each part.  netdest.c is the
 * builtin (traps, state, the verdict turned into an action); ndcheck.c
 * the policies (may this socket reach this address); ndsock.c the
 * socket a call acts on; ndconnect.c,
 * ndsend.c and ndbind.c perform the calls.  Nothing else includes it.
 */
#ifndef SANDLOCK_NDINT_H
#define SANDLOCK_NDINT_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "builtins/builtin.h"
#include "config.h"
#include "launch/caps.h"
#include "net/netrules.h"
#include "net/sockdest.h"
#include "net/sockremake.h"

#define ND_CONTINUE LONG_MIN /* let the kernel run the call */
#define ND_KILL (LONG_MIN + 1) /* policy_fn's verdict: end the sandbox */
#define ND_LATER (LONG_MIN + 2) /* handed to the connect waiter, which answers */

struct nd_state {
	sl_strvec write, read, deny, unix_allow;
	bool unix_readable;
	bool tcp_disabled; /* the net_tcp protection is disabled: TCP is not checked */
	struct sl_netrules net;
	struct sl_portranges bind_deny;
	bool remap;                      /* port_remap: binds on behalf, ports virtual */
	struct sl_portranges bind_allow; /* remap: what Landlock would allow a bind to */
	bool policy; /* a policy_fn is set: binds are performed to show it the address */
	bool listen; /* Landlock checks TCP binds: listen(2) must not autobind past it */
	bool binds;  /* bind is trapped (binds_trapped): never continued */
	/* A COW workdir: unix binds are trapped to make a socket under it
	 * in the layer; where pidfd_getfd is refused, a unix socket is then
	 * remade for its bind. */
	bool unix_binds;
	/* Where pidfd_getfd is refused: the sockets we made for the guest
	 * and keep (sockadopt.h: the run's, services.h); NULL where it works. */
	struct sl_adopted *adopted;
	/* The guest's route sockets are made in the loopback view
	 * (netview.h): one of ours in the host's namespace would show the
	 * host's interfaces, so a netlink socket is never remade. */
	bool netview;
	/* There too: the options the guest set on its sockets, for the
	 * sockets made like them (sockopts.h). */
	struct sl_sockopts *opts;
};

/* The socket a call names, as our duplicate. */
struct nd_sock {
	int fd;
	struct sl_sockinfo si;
	bool keep; /* a remade stream socket is kept once installed (a bind's) */
};

/* Run with our effective capabilities lowered to the caller's (none). */
#define AS_CALLER(expr)                                                                     \
	({                                                                                      \
		struct sl_caps_saved sv_;                                                           \
		long r_ = -EPERM; /* fail closed if we cannot drop them */                          \
		if (sl_caps_lower(&sv_) == 0) {                                                     \
			r_ = (expr);                                                                    \
			r_ = r_ < 0 ? -errno : r_;                                                      \
			sl_caps_restore(&sv_);                                                          \
		}                                                                                   \
		r_;                                                                                 \
	})

/* The caller's socket fdarg as ours, with its kind (ndsock.c): our
 * pidfd_getfd duplicate, or where that is refused our duplicate of the
 * socket we keep in its place (sockadopt.h; EPERM for any other).  0 or
 * an errno; close s->fd. */
int nd_open_sock(const struct nd_state *st, const struct sl_call *call, uint64_t fdarg,
                 struct nd_sock *s);
/* As nd_open_sock, and where pidfd_getfd is refused and the caller's
 * socket is not one we keep, a fresh socket made like it (r->fd >= 0,
 * s->fd the same), when it has no state and remakes (NULL: any) accepts
 * its kind (else EPERM).  Finish with nd_sock_done. */
int nd_take_sock(const struct nd_state *st, const struct sl_call *call, int num,
                 struct nd_sock *s, struct sl_remade *r,
                 bool (*remakes)(const struct sl_sockinfo *si));
/* The call on s is over (ok: it took effect): a remade socket is
 * installed in the caller's place (kept when a datagram socket, or a
 * stream one with s->keep) or, not ok, closed; else s->fd is closed.
 * 0 or -errno of the install. */
int nd_sock_done(const struct nd_state *st, const struct sl_call *call, struct nd_sock *s,
                 struct sl_remade *r, bool ok);
/* A remade socket (r->fd >= 0) installed (kept when a datagram socket,
 * or a stream one with keep_stream) when ok, else closed.  0 or -errno
 * of the install. */
int nd_remade_done(const struct nd_state *st, const struct sl_call *call, struct sl_remade *r,
                   bool ok, bool keep_stream);
/* A stream socket (TCP, unix stream or seqpacket): where pidfd_getfd is
 * refused its bind is performed on a socket we make, kept until its
 * listen or connect when listen is trapped (sockadopt.h). */
bool nd_is_stream(const struct sl_sockinfo *si);
/* Our duplicate fd of a kept stream socket was listened on or connected:
 * the table forgets it (a datagram socket stays). */
void nd_sock_forget(const struct nd_state *st, const struct nd_sock *s);
/* setsockopt where pidfd_getfd is refused: noted, then continued. */
long nd_setsockopt(const struct nd_state *st, const struct sl_call *call);
/* SL_NP_* of an IP socket, 0 for protocols no rule can allow. */
int nd_proto_of(const struct sl_sockinfo *si);
/* May socket s reach a (ndcheck.c)?  0 or the errno to deny with. */
int nd_check_dest(const struct nd_state *st, const struct sl_call *call,
                  const struct nd_sock *s, struct sl_sockaddr *a, bool sending, int *hold);
/* The port field of an IP address (NULL for other families or short ones). */
uint16_t *nd_port_field(struct sl_sockaddr *a);
/* A TCP destination on a port the HTTP proxy intercepts? */
bool nd_to_proxy(const struct sl_call *call, const struct nd_sock *s, struct sl_sockaddr *sa);

/* Each call, performed: its result, -errno, or an ND_* verdict. */
long nd_connect(const struct nd_state *st, const struct sl_call *call);
long nd_sendto(const struct nd_state *st, const struct sl_call *call);
long nd_sendmsg(const struct nd_state *st, const struct sl_call *call);
long nd_sendmmsg(const struct nd_state *st, const struct sl_call *call);
long nd_bind(const struct nd_state *st, const struct sl_call *call);
long nd_listen(const struct nd_state *st, const struct sl_call *call);
long nd_sockname(const struct nd_state *st, const struct sl_call *call, bool peer);

#endif /* SANDLOCK_NDINT_H */
