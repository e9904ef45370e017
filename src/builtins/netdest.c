/*
 * netdest.c — where sockets may connect and send: one builtin for every
 * destination check performed on the caller's behalf, with two policies.
 *
 *  - Pathname AF_UNIX sockets.  Landlock does not check connect(2) or a
 *    sendto/sendmsg to a socket file, so without this a guest could reach
 *    docker.sock, the D-Bus system bus or /dev/log in trees it was never
 *    granted.  A pathname destination is allowed only when the socket
 *    file actually reached lies in an fs_write tree, at or below a
 *    net_allow_unix path, or (net_unix_readable) in an fs_read tree, and
 *    under no fs_deny path.
 *  - Abstract AF_UNIX names.  Landlock (ABI 6) scopes them to the
 *    sandbox only for calls the sandbox makes itself, and such a call
 *    (CONTINUE) would let the kernel re-read the address, which a second
 *    thread can turn into a path after the check: Landlock (ABI <= 7)
 *    does not check a connect to a socket file, so that path could be
 *    docker.sock.  So the supervisor finds the socket bound to the name
 *    (sock_diag) and allows it only when a process of the sandbox holds
 *    it (its /proc/PID/fd), then connects or sends on behalf like for a
 *    path.  Unnamed destinations (no address, AF_UNSPEC) pass.
 *  - IP endpoints (net_allow / net_deny, config.h): TCP, UDP and ICMP
 *    destinations must match a rule of the socket's protocol, learnt from
 *    the socket itself (SO_TYPE/SO_PROTOCOL), not from the caller.
 *    MPTCP, SCTP, UDP-Lite and other protocols have no rules: refused.
 *
 * Every denial is EACCES (what Landlock answers for a TCP port it
 * denies), except abstract unix names (EPERM, Landlock's scope answer).
 *
 * Where pidfd_getfd is refused (a container's default seccomp profile,
 * mechs.h), a connect is performed on a fresh socket made like the
 * caller's, which then replaces it (sockremake.h); sends with an address
 * need the caller's own socket and are refused (EPERM) there, and so is
 * a listen that could autobind a port nobody granted.
 *
 * TOCTOU: the call is never continued to the kernel once its address or
 * its socket has been looked at: the kernel would read the address again
 * and look the fd number up again, and a second thread can change either
 * meanwhile (dup2 a unix socket over a TCP one: Landlock (ABI <= 7)
 * checks no connect to a socket file).  This holds even where Landlock
 * alone would decide the address (`:port` rules): the fd is not Landlock's
 * to check.  The supervisor copies the address (and for sendmsg the
 * whole message) once, takes a pidfd_getfd duplicate of the socket,
 * checks, and performs the call on the duplicate with its copy; for a
 * unix path it opens the socket file with O_PATH as the caller would
 * reach it (its cwd), checks that file's canonical path and connects to
 * /proc/self/fd/N, i.e. to exactly the file checked.  The result (or
 * errno, EINPROGRESS for a non-blocking connect included) is the
 * caller's.  The supervisor thread lowers its effective capabilities for
 * the call, so the kernel's permission checks are the caller's (it has
 * none).  A TCP connect is started without waiting; a caller whose socket
 * blocks then waits for the handshake in the connect waiter (connwait.h),
 * which answers it as the kernel's blocking connect would, while the
 * supervisor goes on.  Known differences from a call made by the caller:
 * a blocking unix connect (a full backlog) or a blocking send blocks the
 * supervisor meanwhile; a peer's SO_PEERCRED /
 * SCM_CREDENTIALS show the supervisor's pid (a listener's clients too:
 * init_peercred at listen; cli/control.c checks the pid holds the
 * listener, ctldir.h); explicit SCM_CREDENTIALS are
 * refused (EPERM); SIGPIPE is sent to the caller by us.
 *
 * sendto without an address (send(2) on a connected socket) is not even
 * trapped (a conditional trap on arg 4, filter.h); when a user handler
 * traps every sendto, that form is continued: its address is a register,
 * nothing to re-read.  bind, listen and getsockname/getpeername, where
 * trapped, are performed on our duplicate too (a unix bind by the
 * opener's confined thread, for Landlock's check of the file it makes).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "net/connwait.h"
#include "run/ctldir.h"
#include "launch/mechs.h"
#include "net/netrules.h"
#include "opener/opener.h"
#include "net/portmap.h"
#include "run/proctree.h"
#include "proxy/proxy.h"
#include "net/sockdest.h"
#include "net/sockremake.h"
#include "builtins/builtin.h"
#include "builtins/policy.h"
#include "supervisor/services.h"

#define ND_CONTINUE LONG_MIN /* let the kernel run the call */
#define ND_KILL (LONG_MIN + 1) /* policy_fn's verdict: end the sandbox */
#define ND_LATER (LONG_MIN + 2) /* handed to the connect waiter, which answers */
#define ND_MAX_MMSG 1024     /* UIO_MAXIOV: the kernel's sendmmsg cap */

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
};

/* The socket a call names, as our duplicate. */
struct nd_sock {
	int fd;
	struct sl_sockinfo si;
};

static int open_sock(const struct sl_call *call, uint64_t fdarg, struct nd_sock *s)
{
	s->fd = sl_child_getfd(call->listener, call->n, (int)(uint32_t)fdarg);
	if (s->fd < 0)
		return -s->fd;
	int e = sl_sd_sockinfo(s->fd, &s->si);
	if (e) {
		close(s->fd);
		s->fd = -1;
	}
	return e;
}

/* ---------------- the policies ---------------- */

static bool under_any(const sl_strvec *v, const char *path)
{
	for (size_t i = 0; i < v->n; i++)
		if (sl_path_under(path, v->v[i]))
			return true;
	return false;
}

static bool unix_allowed(const struct nd_state *st, const char *canon)
{
	if (under_any(&st->deny, canon))
		return false;
	return under_any(&st->unix_allow, canon) || under_any(&st->write, canon) ||
	       (st->unix_readable && under_any(&st->read, canon));
}

/* SL_NP_* of an IP socket, 0 for protocols no rule can allow. */
static int proto_of(const struct sl_sockinfo *si)
{
	if (si->type == SOCK_STREAM && si->protocol == IPPROTO_TCP)
		return SL_NP_TCP;
	if (si->type == SOCK_DGRAM && si->protocol == IPPROTO_UDP)
		return SL_NP_UDP;
	if (si->type == SOCK_DGRAM &&
	    (si->protocol == IPPROTO_ICMP || si->protocol == IPPROTO_ICMPV6))
		return SL_NP_ICMP;
	return 0;
}

/* A pathname destination: open the file reached, check it, and make a
 * point at that very file.  *hold: our O_PATH fd (close after the call). */
static int check_unix(const struct nd_state *st, const struct sl_call *call,
                      struct sl_sockaddr *a, int *hold)
{
	char canon[PATH_MAX];
	int e = sl_sd_unix_open(call->listener, call->n, a, hold, canon, sizeof canon);
	if (e)
		return e;
	struct stat sb;
	if (!unix_allowed(st, canon) || sl_ctldir_holds(canon))
		e = EACCES; /* a named run's control socket: never from a sandbox */
	else if (fstat(*hold, &sb) < 0 || !S_ISSOCK(sb.st_mode))
		e = ECONNREFUSED; /* the kernel's answer for a file that is no socket */
	if (e) {
		close(*hold);
		*hold = -1;
		return e;
	}
	sl_sd_unix_via_fd(a, *hold);
	return 0;
}

/* An abstract name: only a socket held by a process of this sandbox, the
 * scope Landlock gives the calls a sandboxed process makes itself.  The
 * kernel's answers: ECONNREFUSED for a name nobody has bound, EPERM (the
 * scope's) for a socket outside. */
static int check_abstract(const struct sl_call *call, const struct nd_sock *s,
                          const struct sl_sockaddr *a)
{
	unsigned long ino;
	int e = sl_sd_abstract_inode(a, s->si.type, &ino);
	if (e)
		return EPERM; /* cannot tell where it leads: refused */
	if (!ino)
		return ECONNREFUSED;
	return sl_tree_holds_socket(call->init, ino) ? 0 : EPERM;
}

/*
 * May socket s reach a?  0 (a possibly rewritten, *hold set for a unix
 * path) or the errno to deny with.  sending: the address of a send, where
 * AF_UNSPEC on a UDP socket means AF_INET (udp_sendmsg), not "disconnect".
 */
static int check_dest(const struct nd_state *st, const struct sl_call *call,
                      const struct nd_sock *s, struct sl_sockaddr *a, bool sending, int *hold)
{
	*hold = -1;
	int fam = a->len >= sizeof(sa_family_t) ? a->ss.ss_family : AF_UNSPEC;
	switch (s->si.domain) {
	case AF_UNIX:
		if (sl_sd_unix_abstract(a))
			return check_abstract(call, s, a);
		return sl_sd_unix_pathname(a) ? check_unix(st, call, a, hold) : 0;
	case AF_INET:
	case AF_INET6: {
		if (fam == AF_UNSPEC && !sending)
			return 0; /* connect(AF_UNSPEC): dissolve an association */
		if (fam != AF_INET && fam != AF_INET6)
			return sending ? EACCES : 0; /* the kernel refuses other families */
		int proto = proto_of(&s->si);
		if (proto == SL_NP_TCP && st->tcp_disabled)
			return 0;
		if (!proto || !sl_netrules_permit(&st->net, proto, (const struct sockaddr *)&a->ss,
		                                  a->len))
			return EACCES;
		return 0;
	}
	default: /* netlink (filter-restricted): no destinations to guard */
		return 0;
	}
}

/* ---------------- performing ---------------- */

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

/* The port field of an IP address (NULL for other families or short ones). */
static uint16_t *port_field(struct sl_sockaddr *a)
{
	if (a->ss.ss_family == AF_INET && a->len >= sizeof(struct sockaddr_in))
		return &((struct sockaddr_in *)&a->ss)->sin_port;
	if (a->ss.ss_family == AF_INET6 && a->len >= sizeof(struct sockaddr_in6))
		return &((struct sockaddr_in6 *)&a->ss)->sin6_port;
	return NULL;
}

/* port_remap: a virtual port of this sandbox becomes its real port. */
static void to_real_port(struct sl_portmap *m, struct sl_sockaddr *a)
{
	uint16_t *p = port_field(a);
	uint16_t real = p ? sl_portmap_real(m, ntohs(*p)) : 0;
	if (real)
		*p = htons(real);
}

/* A TCP destination on a port the HTTP proxy intercepts? */
static bool to_proxy(const struct sl_call *call, const struct nd_sock *s, struct sl_sockaddr *sa)
{
	if (!call->sv->proxy || proto_of(&s->si) != SL_NP_TCP)
		return false;
	uint16_t *p = port_field(sa);
	return p && sl_proxy_intercepts(call->sv->proxy, ntohs(*p));
}

/* An IP stream socket, whose connect may wait for a handshake. */
static bool is_tcp(const struct sl_sockinfo *si)
{
	return (si->domain == AF_INET || si->domain == AF_INET6) && proto_of(si) == SL_NP_TCP;
}

/*
 * The socket a connect acts on: our duplicate of the caller's; where
 * pidfd_getfd is refused (mechs.h), a fresh one made like it, which
 * replaces the caller's once connected (sockremake.h: r->fd >= 0).
 */
static int connect_sock(const struct sl_call *call, int fdnum, struct nd_sock *s,
                        struct sl_remade *r)
{
	r->fd = -1;
	if (sl_mech_getfd())
		return open_sock(call, (uint64_t)(uint32_t)fdnum, s);
	int e = sl_sock_remake(call->listener, call->n, fdnum, r);
	s->fd = r->fd;
	s->si = r->si;
	return e;
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
static long connect_done(const struct sl_call *call, const struct nd_sock *s,
                         struct sl_remade *remade, const struct nd_target *t, long r, bool wait)
{
	int waitfd = wait ? keep_for_wait(s, remade) : -1;
	if (wait && waitfd < 0)
		r = -errno; /* cannot wait: the caller is not told it is connecting */
	if (remade->fd >= 0 && (r == 0 || r == -EINPROGRESS || r == -EALREADY)) {
		int ie = sl_sock_remade_install(call->listener, call->n, remade);
		r = ie < 0 ? ie : r; /* ours is the caller's now */
	} else if (remade->fd >= 0) {
		close(remade->fd);
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
static long do_connect(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	struct nd_sock s = { -1, { 0, 0, 0 } };
	struct sl_remade remade;
	int e = connect_sock(call, (int)(uint32_t)a[0], &s, &remade);
	struct sl_sockaddr sa;
	if (!e)
		e = sl_sd_copy_addr(call->mem, a[1], (uint32_t)a[2], &sa);
	int hold = -1;
	if (!e)
		e = sl_policy_net(call, "connect", &sa, check_dest(st, call, &s, &sa, false, &hold));
	struct nd_target t = { .proxied = !e && to_proxy(call, &s, &sa) };
	if (!e && !t.proxied && call->sv->ports && proto_of(&s.si) == SL_NP_TCP)
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
	return connect_done(call, &s, &remade, &t, r, wait);
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
	                                      check_dest(st, call, s, &msg->name, true, &hold))
	                      : 0;
	if (!e && s->si.domain == AF_NETLINK && netlink_changes(msg))
		e = EPERM;
	/* A TCP send with an address connects (TCP Fast Open): never around
	 * the proxy. */
	if (!e && msg->has_name && to_proxy(call, s, &msg->name))
		e = EOPNOTSUPP;
	long r = e == SL_POLICY_KILL ? ND_KILL : e ? -e : AS_CALLER(sl_sd_sendmsg(s->fd, msg, flags));
	if (hold >= 0)
		close(hold);
	return r;
}

static long do_sendto(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	if (a[4] == 0)
		return ND_CONTINUE; /* no address: a register, nothing to re-read */
	int flags = (int)(uint32_t)a[3];
	struct nd_sock s = { -1, { 0, 0, 0 } };
	struct sl_sd_msg msg;
	memset(&msg, 0, sizeof msg);
	int e = open_sock(call, a[0], &s);
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
	if (s.fd >= 0)
		close(s.fd);
	pipe_signal(call, r, flags);
	return r;
}

static long do_sendmsg(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	int flags = (int)(uint32_t)a[2];
	struct nd_sock s = { -1, { 0, 0, 0 } };
	struct sl_sd_msg msg;
	memset(&msg, 0, sizeof msg);
	int e = open_sock(call, a[0], &s);
	if (!e)
		e = sl_sd_copy_msg(call->mem, call->listener, call->n, a[1],
		                   s.si.type == SOCK_STREAM, &msg);
	long r = e ? -e : send_checked(st, call, "sendmsg", &s, &msg, flags);
	sl_sd_msg_free(&msg);
	if (s.fd >= 0)
		close(s.fd);
	pipe_signal(call, r, flags);
	return r;
}

/* struct mmsghdr on x86_64: a 56-byte msghdr, then unsigned msg_len. */
#define MMSG_SIZE 64
#define MMSG_LEN_OFF 56

/* Each message checked and sent in turn; like the kernel, the count sent
 * so far, or the first error when nothing was sent. */
static long do_sendmmsg(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	unsigned vlen = (unsigned)(uint32_t)a[2];
	int flags = (int)(uint32_t)a[3];
	if (vlen > ND_MAX_MMSG)
		vlen = ND_MAX_MMSG;
	struct nd_sock s = { -1, { 0, 0, 0 } };
	int e = open_sock(call, a[0], &s);
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
	close(s.fd);
	if (sent == 0 && r < 0) {
		pipe_signal(call, r, flags);
		return r;
	}
	return sent;
}

/* The port our socket fd is bound to, 0 if unknown. */
static uint16_t bound_port(int fd)
{
	struct sl_sockaddr a = { .len = sizeof a.ss };
	if (getsockname(fd, (struct sockaddr *)&a.ss, &a.len) < 0)
		return 0;
	uint16_t *p = port_field(&a);
	return p ? ntohs(*p) : 0;
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
	uint16_t *p = port_field(sa);
	uint16_t prev = sl_portmap_real(m, v);
	if (prev)
		*p = htons(prev);
	long r = prev ? AS_CALLER(bind(fd, (struct sockaddr *)&sa->ss, sa->len)) : bind_alone(fd, sa);
	if (r == -EADDRINUSE && !prev) {
		*p = 0;
		r = AS_CALLER(bind(fd, (struct sockaddr *)&sa->ss, sa->len));
	}
	uint16_t real = r == 0 ? bound_port(fd) : 0;
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

/* An IP bind, checked on the port the guest names: net_deny_bind, and
 * what Landlock would allow (the bind is ours, outside Landlock); with
 * port_remap a TCP port is bound through the run's port map.  UDP binds
 * are held to the same port rules (a UDP server is a server: Landlock
 * has no UDP rule, the reference leaves them open), but for port 0,
 * which binds no more than a first sendto would. */
static long bind_ip(const struct nd_state *st, const struct sl_call *call,
                    const struct nd_sock *s, struct sl_sockaddr *sa)
{
	uint16_t *pf = port_field(sa);
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

/* A unix bind: a path is made into a socket file by the opener's
 * confined thread (Landlock's MAKE_SOCK checked there, from the caller's
 * cwd, with its umask); an abstract name or an autobind makes no file. */
static long bind_unix(const struct sl_call *call, const struct nd_sock *s,
                      const struct sl_sockaddr *sa)
{
	if (!sl_sd_unix_pathname(sa))
		return AS_CALLER(bind(s->fd, (const struct sockaddr *)&sa->ss, sa->len));
	struct sl_opener *op = sl_opener_find(call->listener);
	if (!op)
		return -EPERM; /* cannot make the file as the caller would: refused */
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	const struct sockaddr_un *from = (const void *)&sa->ss;
	size_t max = sa->len - offsetof(struct sockaddr_un, sun_path);
	memcpy(u.sun_path, from->sun_path, max < sizeof u.sun_path ? max : sizeof u.sun_path - 1);
	/* /proc/self would be ours in the opener; the kernel keeps the
	 * address's length up to the NUL (unix_bind_bsd) */
	int e = -sl_child_self_path(u.sun_path, sizeof u.sun_path, call->n);
	if (!e)
		e = sl_opener_bind_socket(op, call->listener, call->n, s->fd,
		                          (const struct sockaddr *)&u, (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		                               strlen(u.sun_path) + 1));
	return -e;
}

/*
 * bind: trapped for net_deny_bind, port_remap and policy_fn, and then
 * never continued to the kernel, whatever the socket: the kernel would
 * look the fd number up again, and a second thread can dup2 a TCP socket
 * over a unix or UDP one meanwhile (Landlock allows every port under a
 * deny list, and policy_fn would never see that bind).  So every bind is
 * performed on our duplicate, the very socket checked.
 */
static long do_bind(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	struct nd_sock s = { -1, { 0, 0, 0 } };
	int e = open_sock(call, a[0], &s);
	if (e)
		return -e;
	struct sl_sockaddr sa;
	e = sl_sd_copy_addr(call->mem, a[1], (uint32_t)a[2], &sa);
	long r = e                                                        ? -e
	         : s.si.domain == AF_INET || s.si.domain == AF_INET6 ? bind_ip(st, call, &s, &sa)
	         : s.si.domain == AF_UNIX                             ? bind_unix(call, &s, &sa)
	                                  : AS_CALLER(bind(s.fd, (struct sockaddr *)&sa.ss, sa.len));
	close(s.fd);
	return r;
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
 * closed again when it is denied).
 */
static bool autobind_allowed(const struct nd_state *st)
{
	return !st->bind_deny.all && bind_allowed(st, 0, true);
}

static long do_listen(const struct nd_state *st, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	struct nd_sock s = { -1, { 0, 0, 0 } };
	/* Without pidfd_getfd (mechs.h) the socket's state cannot be read,
	 * and a continued call would act on whatever the caller's fd number
	 * holds by then: continued only where any outcome is allowed. */
	if (!sl_mech_getfd())
		return autobind_allowed(st) ? ND_CONTINUE : -EPERM;
	int e = open_sock(call, a[0], &s);
	if (e)
		return -e; /* EBADF, ENOTSOCK: never continued (the fd could change) */
	long r;
	if ((s.si.domain == AF_INET || s.si.domain == AF_INET6) && s.si.type == SOCK_STREAM) {
		struct tcp_info ti;
		socklen_t tl = sizeof ti;
		uint16_t port = bound_port(s.fd);
		if (getsockopt(s.fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) < 0)
			r = -errno;
		else if (ti.tcpi_state != TCP_CLOSE && ti.tcpi_state != TCP_LISTEN)
			r = -EINVAL; /* connected or connecting: inet_listen's answer */
		else if (ti.tcpi_state == TCP_CLOSE && port == 0 && !autobind_allowed(st))
			r = -EACCES; /* what Landlock answers a bind it refuses */
		else
			r = AS_CALLER(listen(s.fd, (int)(uint32_t)a[1]));
		/* A net_deny_bind list: the port the kernel picked is checked too. */
		if (r == 0 && port == 0 && sl_portranges_has(&st->bind_deny, bound_port(s.fd))) {
			struct sockaddr unspec = { .sa_family = AF_UNSPEC };
			connect(s.fd, &unspec, sizeof unspec); /* closes the listener again */
			r = -EACCES;
		}
	} else {
		r = AS_CALLER(listen(s.fd, (int)(uint32_t)a[1]));
	}
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

/* port_remap: getsockname/getpeername of a TCP socket show virtual
 * ports.  Performed on our duplicate for every socket (the call only
 * writes the caller's memory; continued, a thread could swap a TCP
 * socket in and read its real port). */
static long do_sockname(const struct sl_call *call, bool peer)
{
	struct nd_sock s = { -1, { 0, 0, 0 } };
	int e = open_sock(call, call->n->args[0], &s);
	if (e)
		return -e;
	struct sl_sockaddr sa = { .len = sizeof sa.ss };
	long r = (peer ? getpeername : getsockname)(s.fd, (struct sockaddr *)&sa.ss, &sa.len);
	if (r == 0) {
		uint16_t *p = proto_of(&s.si) == SL_NP_TCP ? port_field(&sa) : NULL;
		uint16_t v = p ? sl_portmap_virt(call->sv->ports, ntohs(*p)) : 0;
		if (v)
			*p = htons(v);
		r = put_name(call, &sa);
	} else {
		r = -errno;
	}
	close(s.fd);
	return r;
}

/* ---------------- the builtin ---------------- */

static bool nd_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct nd_state *st = state;
	long r;
	switch (call->n->syscall_nr) {
	case __NR_connect:
		r = do_connect(st, call);
		break;
	case __NR_sendto:
		r = do_sendto(st, call);
		break;
	case __NR_sendmsg:
		r = do_sendmsg(st, call);
		break;
	case __NR_sendmmsg:
		r = do_sendmmsg(st, call);
		break;
	case __NR_bind:
		r = st->binds ? do_bind(st, call)
		        : ND_CONTINUE;
		break;
	case __NR_listen:
		r = st->listen ? do_listen(st, call) : ND_CONTINUE;
		break;
	case __NR_getsockname:
	case __NR_getpeername:
		r = call->sv->ports ? do_sockname(call, call->n->syscall_nr == __NR_getpeername)
		                : ND_CONTINUE;
		break;
	default:
		return false;
	}
	if (r == ND_LATER)
		sandlock_action_set_errno(act, EIO); /* unused: the waiter answers (call->later) */
	else if (r == ND_KILL)
		sandlock_action_set_kill(act, SIGKILL, 0);
	else if (r == ND_CONTINUE)
		sandlock_action_set_continue(act);
	else if (r < 0)
		sandlock_action_set_errno(act, (int)-r);
	else
		sandlock_action_set_return_value(act, r);
	return true;
}

/* sendto only with a destination (arg 4): send(2) on a connected socket
 * is glibc's sendto(fd, buf, len, flags, NULL, 0) and never leaves the
 * kernel.  sendmsg's name is inside the message: no register to test. */
static const struct sl_trap k_send_traps[] = {
	SL_TRAP_ALWAYS(__NR_connect), SL_TRAP_IF_NONZERO(__NR_sendto, 4),
	SL_TRAP_ALWAYS(__NR_sendmsg), SL_TRAP_ALWAYS(__NR_sendmmsg),
};

/* listen is trapped where TCP binds are checked (Landlock, or on behalf
 * for a deny list or port_remap): else a bind checks nothing either. */
static bool listen_checked(const struct sandlock_sandbox *cfg)
{
	bool any_port = cfg->bind_allow.all && !cfg->bind_deny.n && !cfg->bind_deny.all;
	return !any_port && sandlock_sandbox_protection_status(cfg, SANDLOCK_PROTECTION_NET_TCP) ==
	                        SANDLOCK_PROTECTION_ACTIVE;
}

/* bind is trapped for net_deny_bind (Landlock cannot express a deny
 * list), port_remap, policy_fn's bind events, and wherever UDP sockets
 * may exist (no Landlock rule covers a UDP bind); elsewhere the kernel's
 * Landlock checks every bind a continued call could make.  Without
 * pidfd_getfd (mechs.h) a trapped bind is refused (EPERM: it needs the
 * caller's socket), so UDP alone does not trap it there: UDP binds stay
 * unchecked in such a container, as TCP ones stay Landlock's. */
static bool binds_trapped(const struct sandlock_sandbox *cfg)
{
	return cfg->bind_deny.n || cfg->bind_deny.all || cfg->port_remap || cfg->policy_fn ||
	       (cfg->filter.allow_udp && sl_mech_getfd());
}

/* Landlock alone enforces TCP ports: every other rule, and the port
 * map, need this builtin. */
static const char *nd_refusal(const struct sandlock_sandbox *cfg)
{
	if (!sl_netrules_landlock_only(&cfg->net))
		return "net_allow/net_deny rules naming an address, a host or a protocol other "
		       "than TCP (Landlock alone enforces only TCP ports; the rest is checked "
		       "by the supervisor)";
	return cfg->port_remap ? "port_remap (binds are performed by the supervisor)" : NULL;
}

static int nd_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	/* Always: pathname unix sockets are guarded by default. */
	size_t nsend = sizeof(k_send_traps) / sizeof(k_send_traps[0]);
	if (sl_traps_add_traps(out, k_send_traps, nsend) < 0)
		return -1;
	if (listen_checked(cfg) && sl_traps_add(out, __NR_listen) < 0)
		return -1;
	if (cfg->port_remap) {
		static const int k_remap_nrs[] = { __NR_getsockname, __NR_getpeername };
		if (sl_traps_add_all(out, k_remap_nrs, 2) < 0)
			return -1;
	}
	return binds_trapped(cfg) ? sl_traps_add(out, __NR_bind) : 0;
}

static void nd_free(void *state)
{
	struct nd_state *s = state;
	if (!s)
		return;
	sl_strvec_free(&s->write);
	sl_strvec_free(&s->read);
	sl_strvec_free(&s->deny);
	sl_strvec_free(&s->unix_allow);
	sl_netrules_free(&s->net);
	sl_portranges_free(&s->bind_deny);
	sl_portranges_free(&s->bind_allow);
	free(s);
}

static bool copy_vec(sl_strvec *to, const sl_strvec *from)
{
	for (size_t i = 0; i < from->n; i++)
		if (sl_strvec_push(to, from->v[i]) < 0)
			return false;
	return true;
}

static bool copy_rules(struct nd_state *s, const struct sandlock_sandbox *cfg)
{
	s->net.deny_mode = cfg->net.deny_mode;
	if (cfg->net.n) {
		s->net.v = malloc(cfg->net.n * sizeof(*s->net.v));
		if (!s->net.v)
			return false;
		memcpy(s->net.v, cfg->net.v, cfg->net.n * sizeof(*s->net.v));
		s->net.n = s->net.cap = cfg->net.n;
	}
	if (cfg->bind_deny.n) {
		s->bind_deny.v = malloc(cfg->bind_deny.n * sizeof(*s->bind_deny.v));
		if (!s->bind_deny.v)
			return false;
		memcpy(s->bind_deny.v, cfg->bind_deny.v, cfg->bind_deny.n * sizeof(*s->bind_deny.v));
		s->bind_deny.n = s->bind_deny.cap = cfg->bind_deny.n;
	}
	s->bind_deny.all = cfg->bind_deny.all;
	if (cfg->bind_allow.n) {
		s->bind_allow.v = malloc(cfg->bind_allow.n * sizeof(*s->bind_allow.v));
		if (!s->bind_allow.v)
			return false;
		memcpy(s->bind_allow.v, cfg->bind_allow.v, cfg->bind_allow.n * sizeof(*s->bind_allow.v));
		s->bind_allow.n = s->bind_allow.cap = cfg->bind_allow.n;
	}
	s->bind_allow.all = cfg->bind_allow.all;
	return true;
}

static int nd_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                   char **msg)
{
	(void)sv;
	struct nd_state *s = calloc(1, sizeof(*s));
	bool ok = s && copy_vec(&s->write, &cfg->fs_write) && copy_vec(&s->read, &cfg->fs_read) &&
	          copy_vec(&s->deny, &cfg->fs_deny) && copy_vec(&s->unix_allow, &cfg->unix_allow) &&
	          copy_rules(s, cfg);
	if (!ok) {
		nd_free(s);
		*msg = sl_strdup("out of memory");
		return -1;
	}
	s->unix_readable = cfg->unix_readable;
	s->tcp_disabled = cfg->protection[SANDLOCK_PROTECTION_NET_TCP] == SL_PROT_DISABLED;
	s->remap = cfg->port_remap;
	s->policy = cfg->policy_fn != NULL;
	s->listen = listen_checked(cfg);
	s->binds = binds_trapped(cfg);
	*state = s;
	return 0;
}

const struct sl_builtin sl_builtin_netdest = {
	.name = "socket destinations",
	.phase = SL_PHASE_LAST,
	.refusal = nd_refusal,
	.syscalls = nd_syscalls,
	.init = nd_init,
	.free = nd_free,
	.decide = nd_decide,
	.opener_if = binds_trapped, /* unix binds are made by its confined thread */
};
