/*
 * ndbind.c — the server side of a socket, where netdest traps it: bind(2)
 * (net_deny_bind, port_remap, policy_fn, UDP ports), listen(2) (an
 * unbound TCP socket autobinds a port) and getsockname/getpeername
 * (port_remap's virtual ports), each performed on our duplicate of the
 * caller's socket, never continued (a second thread could swap the fd).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "builtins/netdest/ndint.h"
#include "builtins/policy.h"
#include "compat.h"
#include "launch/mechs.h"
#include "net/portmap.h"
#include "net/sockadopt.h"
#include "net/sockbindat.h"
#include "net/sockname.h"
#include "opener/opener.h"
#include "supervisor/childfd.h"
#include "supervisor/services.h"

/* The port of an IP address, 0 for others. */
static uint16_t nd_bound_port_of(struct sl_sockaddr *a)
{
	uint16_t *p = nd_port_field(a);
	return p ? ntohs(*p) : 0;
}

/* The port our socket fd is bound to, 0 if unknown. */
static uint16_t nd_bound_port(int fd)
{
	struct sl_sockaddr a = { .len = sizeof a.ss };
	if (getsockname(fd, (struct sockaddr *)&a.ss, &a.len) < 0)
		return 0;
	return nd_bound_port_of(&a);
}

/*
 * Bind fd with SO_REUSEADDR and SO_REUSEPORT off, then put the caller's
 * values back.  Two SO_REUSEADDR sockets may both bind a port neither
 * listens on yet (and SO_REUSEPORT ones of one uid may even both
 * listen): another sandbox's socket, bound but not yet listening, would
 * then share the real port, and one listen() fail with EADDRINUSE.
 * Without the options a bind fails while anyone holds the port.
 */
static long bind_alone(int fd, const struct sl_sockaddr *sa)
{
	int addr = 0, port = 0, off = 0;
	socklen_t len = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &addr, &len) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &port, &len) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &off, sizeof off) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &off, sizeof off) < 0)
		return -errno;
	long r = AS_CALLER(bind(fd, (const struct sockaddr *)&sa->ss, sa->len));
	if ((setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &addr, sizeof addr) < 0 ||
	     setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &port, sizeof port) < 0) && r == 0)
		r = -errno;
	return r;
}

/*
 * port_remap: bind virtual port v on behalf.  On v itself when the host
 * has it free (bind_alone: not shared with a socket of another sandbox,
 * whatever the guest's SO_REUSEADDR says); else, the first time, on a
 * port the kernel picks.  A v this sandbox bound before goes to the same
 * real port again, with the guest's options (its own sockets may share
 * it as they would bare), and when that one is taken (the sandbox's own
 * socket still holds it) the guest gets the EADDRINUSE its own port
 * space has.  (Left open: once this sandbox closed every socket of v,
 * another one may take that real port, and a rebind here with
 * SO_REUSEADDR would share it again.)
 */
static long bind_remapped(struct sl_portmap *m, int fd, struct sl_sockaddr *sa, uint16_t v)
{
	uint16_t *p = nd_port_field(sa);
	uint16_t prev = sl_portmap_real(m, v);
	if (prev)
		*p = htons(prev);
	long r = prev ? AS_CALLER(bind(fd, (struct sockaddr *)&sa->ss, sa->len)) : bind_alone(fd, sa);
	if (r == -EADDRINUSE && !prev) {
		*p = 0;
		r = AS_CALLER(bind(fd, (struct sockaddr *)&sa->ss, sa->len));
	}
	uint16_t real = r == 0 ? nd_bound_port(fd) : 0;
	if (real && sl_portmap_add(m, v, real) < 0)
		r = -ENOMEM;
	return r;
}

/* What Landlock allows a TCP bind to (landlock.c's ll_bind), and what the
 * bind rules allow a UDP one: with a deny list or `*` every port (the
 * deny list is checked apart), else the net_allow_bind ports. */
static bool bind_allowed(const struct nd_state *st, uint16_t port, bool tcp)
{
	if ((tcp && st->tcp_disabled) || st->bind_allow.all || st->bind_deny.n ||
	    st->bind_deny.all)
		return true;
	return sl_portranges_has(&st->bind_allow, port);
}

/*
 * An IP bind's address in the one form the port rules read.  The kernel
 * takes two more that name a port: AF_UNSPEC with INADDR_ANY on an IPv4
 * socket (inet_bind: taken for AF_INET), and an IPv6 address of RFC
 * 2133's 24 bytes, with no sin6_scope_id (inet6_bind).  Read as "no
 * port", they passed every port rule (as port 0) and port_remap, and the
 * kernel bound the port they name: so they are rewritten to the full
 * form, which binds the same.  0, or the errno the kernel would answer.
 */
static int bind_form(const struct nd_sock *s, struct sl_sockaddr *sa)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&sa->ss;
	if (s->si.domain == AF_INET && sa->len >= sizeof(*in) && in->sin_family == AF_UNSPEC) {
		if (in->sin_addr.s_addr != htonl(INADDR_ANY))
			return EAFNOSUPPORT;
		in->sin_family = AF_INET;
	}
	if (s->si.domain == AF_INET6 && sa->ss.ss_family == AF_INET6 &&
	    sa->len >= SL_SIN6_LEN_RFC2133 && sa->len < sizeof(struct sockaddr_in6))
		sa->len = sizeof(struct sockaddr_in6); /* the rest was zeroed: scope 0 */
	return 0;
}

/* An IP bind, checked on the port the guest names: net_deny_bind, and
 * what Landlock would allow (the bind is ours, outside Landlock); with
 * port_remap a TCP port is bound through the run's port map.  UDP binds
 * are held to the same port rules (a UDP server is a server: Landlock
 * has no UDP rule, the reference leaves them open), but for port 0,
 * which binds no more than a first sendto would. */
static long bind_ip(const struct nd_state *st, const struct sl_call *call,
                    const struct nd_sock *s, struct sl_sockaddr *sa)
{
	int fe = bind_form(s, sa);
	if (fe)
		return -fe;
	uint16_t *pf = nd_port_field(sa);
	uint16_t port = pf ? ntohs(*pf) : 0;
	bool tcp = s->si.type == SOCK_STREAM && s->si.protocol == IPPROTO_TCP;
	bool udp = s->si.type == SOCK_DGRAM && s->si.protocol == IPPROTO_UDP && port;
	int d = 0;
	if ((tcp || udp) && (port || st->bind_deny.all) && sl_portranges_has(&st->bind_deny, port))
		d = EACCES;
	else if ((tcp || udp) && !bind_allowed(st, port, tcp))
		d = EACCES; /* what Landlock answers */
	if (st->policy) /* policy_fn sees the copied address, allowed or not */
		d = sl_policy_net(call, "bind", sa, d);
	if (d == SL_POLICY_KILL)
		return ND_KILL;
	if (d)
		return -d;
	if (call->sv->ports && tcp && port)
		return bind_remapped(call->sv->ports, s->fd, sa, port);
	return AS_CALLER(bind(s->fd, (struct sockaddr *)&sa->ss, sa->len));
}

/* A path under the COW workdir: the socket is made in the layer
 * (services.h), by us, as the caller (its umask, no capability).  1:
 * bound; 0: not the layer's, the real tree's rules apply; -errno. */
static long bind_in_layer(const struct sl_call *call, const struct nd_sock *s, const char *path)
{
	const struct sl_socklayer *l = &call->sv->socklayer;
	if (!l->state)
		return 0;
	struct sl_sockplace *p = malloc(sizeof(*p));
	if (!p)
		return -ENOMEM;
	int k = l->place(l->state, call, path, true, p);
	if (k > 0) {
		k = sl_sock_bind_at(s->fd, p->fd, p->name, sl_child_umask(call->listener, call->n));
		close(p->fd);
		k = k ? k : 1;
	}
	free(p);
	return k;
}

/* A unix bind: a path is made into a socket file by the opener's
 * confined thread (Landlock's MAKE_SOCK checked there, from the caller's
 * cwd, with its umask); an abstract name or an autobind makes no file. */
static long bind_unix(const struct sl_call *call, const struct nd_sock *s,
                      const struct sl_sockaddr *sa)
{
	if (!sl_sd_unix_pathname(sa))
		return AS_CALLER(bind(s->fd, (const struct sockaddr *)&sa->ss, sa->len));
	struct sl_opener *op = call->sv->opener; /* the run's (services.h) */
	if (!op)
		return -EPERM; /* cannot make the file as the caller would: refused */
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	const struct sockaddr_un *from = (const void *)&sa->ss;
	size_t max = sa->len - offsetof(struct sockaddr_un, sun_path);
	memcpy(u.sun_path, from->sun_path, max < sizeof u.sun_path ? max : sizeof u.sun_path - 1);
	/* /proc/self would be ours in the opener; the kernel keeps the
	 * address's length up to the NUL (unix_bind_bsd) */
	int e = -sl_child_self_path(u.sun_path, sizeof u.sun_path, call->n);
	long k = e ? 0 : bind_in_layer(call, s, u.sun_path);
	if (k)
		return k < 0 ? k : 0;
	if (!e)
		e = sl_opener_bind_socket(op, call->listener, call->n, s->fd,
		                          (const struct sockaddr *)&u, (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		                               strlen(u.sun_path) + 1));
	return -e;
}

/* A bind on our socket s, by its family (a netlink one: no rule). */
static long bind_on(const struct nd_state *st, const struct sl_call *call,
                    const struct nd_sock *s, struct sl_sockaddr *sa)
{
	if (s->si.domain == AF_INET || s->si.domain == AF_INET6)
		return bind_ip(st, call, s, sa);
	if (s->si.domain == AF_UNIX)
		return bind_unix(call, s, sa);
	return AS_CALLER(bind(s->fd, (struct sockaddr *)&sa->ss, sa->len));
}

/*
 * bind: trapped for net_deny_bind, port_remap, policy_fn and UDP's bind
 * rules, and then never continued to the kernel, whatever the socket: the
 * kernel would look the fd number up again, and a second thread can dup2
 * a TCP socket over a unix or UDP one meanwhile (Landlock allows every
 * port under a deny list, and policy_fn would never see that bind).  So
 * every bind is performed on our duplicate, the very socket checked.
 *
 * Where pidfd_getfd is refused (ndsock.c), never continued either: the
 * socket is one we keep (a datagram or netlink one, a stream one until
 * its listen or connect: sockadopt.h, with the loopback view's route
 * sockets: builtins/netlink.c), or one with no state, of any kind we
 * can make (sockremake.h), which is bound as a socket of ours made like
 * it, then installed in the caller's place (kept as above).  A socket
 * with an address gets the kernel's EINVAL for a second bind; any other
 * (connected without an address, or a kind we cannot make) EPERM.  A
 * continued bind would be performed on whatever socket a racing thread
 * put at the fd number by then: a UDP socket, on a port no rule checked.
 * A port taken by a socket we still keep for a closed one is freed by a
 * sweep, and the bind tried again.
 */
long nd_bind(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	struct sl_remade remade;
	int e = nd_take_sock(st, call, (int)(uint32_t)a[0], &s, &remade, NULL);
	if (e == EPERM && remade.bound)
		e = EINVAL; /* inet_bind, unix_bind, netlink_bind: already bound */
	if (e)
		return -e;
	s.keep = st->listen; /* a stream socket, until its listen (trapped) */
	struct sl_sockaddr sa;
	e = sl_sd_copy_addr(call->mem, a[1], (uint32_t)a[2], &sa);
	struct sl_sockaddr asked = sa;
	long r = e ? -e : bind_on(st, call, &s, &sa);
	if (r == -EADDRINUSE && st->adopted && sl_adopted_sweep(st->adopted, call->init)) {
		sa = asked;
		r = bind_on(st, call, &s, &sa);
	}
	int ie = nd_sock_done(st, call, &s, &remade, r == 0);
	return r == 0 && ie < 0 ? ie : r;
}

/*
 * listen(2) on an unbound TCP socket binds an ephemeral port on the
 * wildcard address itself (inet_csk_listen_start), with no bind(2) for
 * Landlock to check: a server nobody granted.  So an unbound listen is
 * allowed only where an explicit bind to port 0 would be (Landlock's
 * rule for port 0), and a bound one only on the port it holds.
 *
 * The socket's state is read on our duplicate, then the listen is
 * performed on it; only a CLOSE socket (or a listener changing its
 * backlog) is listened on.  A CLOSE socket that shows a port got it from
 * bind(2), or from a connect(2) that ended, and the kernel refuses to
 * make a once-connected socket listen (EINVAL).  A socket in any other
 * state gets that EINVAL at once, so a connect that ends meanwhile
 * cannot turn "bound" into "autobinds".  With a net_deny_bind list the
 * port an autobind picked is checked after the fact (and the listener
 * closed again when it is denied), and so is a port a bind to port 0
 * got (allowed: a client's source port), before the listen.
 */
static bool autobind_allowed(const struct nd_state *st)
{
	return !st->bind_deny.all && bind_allowed(st, 0, true);
}

/* The port the guest sees for our real port (port_remap's virtual one). */
static uint16_t shown_port(const struct sl_call *call, uint16_t real)
{
	uint16_t v = real && call->sv->ports ? sl_portmap_virt(call->sv->ports, real) : 0;
	return v ? v : real;
}

/* listen on our socket s, as the kernel would answer it (see above). */
static long listen_on(const struct nd_state *st, const struct sl_call *call,
                      const struct nd_sock *s, int backlog)
{
	if ((s->si.domain != AF_INET && s->si.domain != AF_INET6) || s->si.type != SOCK_STREAM)
		return AS_CALLER(listen(s->fd, backlog));
	struct tcp_info ti;
	socklen_t tl = sizeof ti;
	uint16_t port = nd_bound_port(s->fd);
	long r;
	if (getsockopt(s->fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0)
		r = -errno;
	else if (ti.tcpi_state != TCP_CLOSE && ti.tcpi_state != TCP_LISTEN)
		r = -EINVAL; /* connected or connecting: inet_listen's answer */
	else if (ti.tcpi_state == TCP_CLOSE && port == 0 && !autobind_allowed(st))
		r = -EACCES; /* what Landlock answers a bind it refuses */
	else if (ti.tcpi_state == TCP_CLOSE && port &&
	         sl_portranges_has(&st->bind_deny, shown_port(call, port)))
		r = -EACCES; /* a port a bind to 0 got, on a net_deny_bind list */
	else
		r = AS_CALLER(listen(s->fd, backlog));
	/* A net_deny_bind list: the port the kernel picked is checked too. */
	if (r == 0 && port == 0 && sl_portranges_has(&st->bind_deny, nd_bound_port(s->fd))) {
		struct sockaddr unspec = { .sa_family = AF_UNSPEC };
		connect(s->fd, &unspec, sizeof unspec); /* closes the listener again */
		r = -EACCES;
	}
	return r;
}

/*
 * Without pidfd_getfd, a listen on a socket we do not keep: its state
 * cannot be read, and a continued call would act on whatever the
 * caller's fd number holds by then, so it is continued only where any
 * outcome is allowed (any port, no deny list).  Else a stream socket
 * with no state (an unbound TCP socket: the kernel would autobind it)
 * is made like the caller's and listened on as above, checked, then
 * installed in its place, not kept; one bound, listening or connected
 * some other way (inherited) is refused with EPERM: sandlock cannot act
 * on it here.
 */
static long listen_unkept(const struct nd_state *st, const struct sl_call *call)
{
	if (autobind_allowed(st) && !st->bind_deny.n)
		return ND_CONTINUE;
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	struct sl_remade remade;
	int e = nd_take_sock(st, call, (int)(uint32_t)call->n->args[0], &s, &remade, nd_is_stream);
	if (e)
		return -e;
	/* A TCP socket bound some other way (one we could not keep) is not
	 * in /proc/net/tcp: sock_diag lists it (Linux >= 6.8), and a fresh
	 * socket would listen without its bind. */
	struct sl_sockaddr name;
	long r = 0;
	if (remade.fd >= 0 && nd_proto_of(&s.si) == SL_NP_TCP &&
	    sl_sock_tcp_name(s.si.domain, remade.ino, false, &name) == 0 && nd_bound_port_of(&name))
		r = -EPERM;
	if (!r)
		r = listen_on(st, call, &s, (int)(uint32_t)call->n->args[1]);
	if (r == 0 && remade.fd < 0)
		nd_sock_forget(st, &s); /* a kept one, put there by a racing thread */
	int ie = nd_sock_done(st, call, &s, &remade, r == 0);
	return r == 0 && ie < 0 ? ie : r;
}

long nd_listen(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	int e = nd_open_sock(st, call, a[0], &s);
	if (e == EPERM && !sl_mech_getfd())
		return listen_unkept(st, call);
	if (e)
		return -e; /* EBADF, ENOTSOCK: never continued (the fd could change) */
	long r = listen_on(st, call, &s, (int)(uint32_t)a[1]);
	if (r == 0)
		nd_sock_forget(st, &s); /* a kept stream socket: its listen is done */
	close(s.fd);
	return r;
}

/* Write sa into the caller's (addr, *addrlen) as getsockname does. */
static long put_name(const struct sl_call *call, const struct sl_sockaddr *sa)
{
	const uint64_t *a = call->n->args;
	int32_t cap;
	if (sandlock_mem_peek(call->mem, a[2], &cap, sizeof cap) != 0)
		return -EFAULT;
	if (cap < 0)
		return -EINVAL;
	int32_t len = (int32_t)sa->len;
	size_t n = (size_t)(len < cap ? len : cap);
	if ((n && sandlock_mem_poke(call->mem, a[1], &sa->ss, n) != 0) ||
	    sandlock_mem_poke(call->mem, a[2], &len, sizeof len) != 0)
		return -EFAULT;
	return 0;
}

/* A TCP port of ours shown as its virtual port (port_remap). */
static void to_virtual(const struct sl_call *call, struct sl_sockaddr *sa)
{
	uint16_t *p = nd_port_field(sa);
	uint16_t v = p ? sl_portmap_virt(call->sv->ports, ntohs(*p)) : 0;
	if (v)
		*p = htons(v);
}

/*
 * Without pidfd_getfd, the name of a socket we do not keep: a TCP
 * socket's from sock_diag by the inode the caller's fd links to
 * (sockname.h), its port shown virtual.  Other sockets have no virtual
 * port: continued (a TCP socket a racing thread puts at the fd number
 * meanwhile shows its real port, and no more).
 */
static long sockname_unkept(const struct sl_call *call, bool peer)
{
	struct sl_sockinfo si;
	int num = (int)(uint32_t)call->n->args[0];
	int e = sl_sock_kind(call->listener, call->n, num, &si, NULL);
	if (e == EBADF || e == ENOTSOCK)
		return -e;
	if (e || nd_proto_of(&si) != SL_NP_TCP)
		return ND_CONTINUE;
	unsigned long ino = 0;
	struct sl_sockaddr sa;
	e = sl_sock_inode(call->listener, call->n, num, &ino);
	if (!e)
		e = sl_sock_tcp_name(si.domain, ino, peer, &sa);
	if (e)
		return -e;
	to_virtual(call, &sa);
	return put_name(call, &sa);
}

/* port_remap: getsockname/getpeername of a TCP socket show virtual
 * ports.  Performed on our duplicate for every socket (the call only
 * writes the caller's memory; continued, a thread could swap a TCP
 * socket in and read its real port). */
long nd_sockname(const struct nd_state *st, const struct sl_call *call, bool peer)
{
	struct nd_sock s = { -1, { 0, 0, 0 }, false };
	int e = nd_open_sock(st, call, call->n->args[0], &s);
	if (e == EPERM && !sl_mech_getfd())
		return sockname_unkept(call, peer);
	if (e)
		return -e;
	struct sl_sockaddr sa = { .len = sizeof sa.ss };
	long r = (peer ? getpeername : getsockname)(s.fd, (struct sockaddr *)&sa.ss, &sa.len);
	if (r == 0) {
		if (nd_proto_of(&s.si) == SL_NP_TCP)
			to_virtual(call, &sa);
		r = put_name(call, &sa);
	} else {
		r = -errno;
	}
	close(s.fd);
	return r;
}
