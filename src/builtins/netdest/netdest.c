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
 * mechs.h), a connect, a bind, an unbound socket's listen, or the first
 * send of a datagram socket, is performed on a fresh socket made like
 * the caller's, with the options noted for it (setsockopt is trapped
 * there: sockopts.h), which then replaces it (sockremake.h); a datagram
 * socket so made is kept, and its later calls performed on it; a stream
 * socket so bound is kept until its listen or connect, performed on it
 * (sockadopt.h, ndsock.c).  Other calls that need the caller's own
 * socket are refused (EPERM) there (a send or listen on a socket bound
 * or connected before, fd passing).
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
 * opener's confined thread, for Landlock's check of the file it makes;
 * one under a COW workdir in the layer, as the view shows the path:
 * builtins/cow/sock.c, through the run's services).
 *
 * The builtin is this file (its traps, state and the verdict turned
 * into an action); the policies are ndcheck.c, the calls ndconnect.c,
 * ndsend.c and ndbind.c (ndint.h: what they share).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "builtins/netdest/ndint.h"
#include "launch/mechs.h"
#include "net/netview.h"
#include "net/sockopts.h"
#include "sandlock.h"
#include "supervisor/services.h"

static bool nd_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct nd_state *st = state;
	long r;
	switch (call->n->syscall_nr) {
	case __NR_connect:
		r = nd_connect(st, call);
		break;
	case __NR_sendto:
		r = nd_sendto(st, call);
		break;
	case __NR_sendmsg:
		r = nd_sendmsg(st, call);
		break;
	case __NR_sendmmsg:
		r = nd_sendmmsg(st, call);
		break;
	case __NR_bind:
		r = st->binds ? nd_bind(st, call)
		        : ND_CONTINUE;
		break;
	case __NR_listen:
		r = st->listen ? nd_listen(st, call) : ND_CONTINUE;
		break;
	case __NR_setsockopt:
		r = nd_setsockopt(st, call);
		break;
	case __NR_getsockname:
	case __NR_getpeername:
		r = call->sv->ports ? nd_sockname(st, call, call->n->syscall_nr == __NR_getpeername)
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

/* bind is trapped to check it for net_deny_bind (Landlock cannot
 * express a deny list), port_remap and policy_fn's bind events. */
static bool bind_rules(const struct sandlock_sandbox *cfg)
{
	return cfg->bind_deny.n || cfg->bind_deny.all || cfg->port_remap || cfg->policy_fn;
}

/* ... and wherever UDP sockets may exist (no Landlock rule covers a UDP
 * bind); elsewhere the kernel's Landlock checks every bind a continued
 * call could make.  Without pidfd_getfd (mechs.h) a UDP socket is bound
 * as a socket of ours kept in the caller's place (ndbind.c), which its
 * sends with an address then need; and where listen is trapped, a
 * stream socket's bind too: kept until its listen, which is then
 * performed on ours (a continued listen could autobind).  With a COW
 * workdir, a unix socket bound under it is made in the layer (the real
 * tree is read-only to the guest: cow/sock.c). */
static bool binds_trapped(const struct sandlock_sandbox *cfg)
{
	return bind_rules(cfg) || cfg->filter.allow_udp || cfg->workdir ||
	       (!sl_mech_getfd() && listen_checked(cfg));
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
	/* Without pidfd_getfd: options are noted for the sockets we remake. */
	if (!sl_mech_getfd() && sl_traps_add(out, __NR_setsockopt) < 0)
		return -1;
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
	sl_sockopts_free(s->opts);
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
	struct nd_state *s = calloc(1, sizeof(*s));
	bool ok = s && copy_vec(&s->write, &cfg->fs_write) && copy_vec(&s->read, &cfg->fs_read) &&
	          copy_vec(&s->deny, &cfg->fs_deny) && copy_vec(&s->unix_allow, &cfg->unix_allow) &&
	          copy_rules(s, cfg) && (sl_mech_getfd() || (s->opts = sl_sockopts_new()));
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
	s->unix_binds = cfg->workdir != NULL;
	s->adopted = sv->adopted;
	s->netview = sl_netview_for(cfg->net_host_interfaces);
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
