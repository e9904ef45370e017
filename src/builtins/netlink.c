/*
 * netlink.c — NETLINK_ROUTE sockets that show a loopback-only view.
 *
 * WHY: the filter lets a guest make NETLINK_ROUTE sockets (getaddrinfo's
 * AI_ADDRCONFIG, if_nameindex and `ip` read interfaces through them), and
 * a dump through one lists every host interface, address, MAC and
 * route.  So socket(AF_NETLINK, ...) (the filter lets through only
 * NETLINK_ROUTE, and traps only AF_NETLINK: SL_TRAP_IF_EQ32) is answered
 * with a socket made in a network namespace of loopback only
 * (netview.h), injected at the caller's fd number.  It is a real kernel
 * socket: everything works as on the host, with lo (and documentation
 * addresses for the families the host has) as the whole network.  The
 * guest's other sockets stay in the host's namespace.
 *
 * net_host_interfaces (--net-host-interfaces) turns it off: the user grants
 * the host's view.  The view needs CAP_SYS_ADMIN or unprivileged user
 * namespaces (netview.h); without either nothing is trapped and the
 * guest keeps the host's view.  If the view
 * cannot be made at run time, the socket is refused (EACCES): never the
 * host's view instead.
 *
 * Where pidfd_getfd is refused (mechs.h) the socket is also kept in the
 * run's table of sockets made for the guest (services.h, sockadopt.h):
 * netdest performs its bind and its sends with an address on ours, as
 * it does for every socket there (a bind continued to the kernel would
 * act on whatever a racing thread put at the fd number by then), and a
 * socket it cannot find there is never remade in the host's namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch/filter.h"
#include "net/netview.h"
#include "net/sockadopt.h"
#include "supervisor/services.h"
#include "util.h"
#include "builtins/builtin.h"

struct nl_state {
	struct sl_netview *view; /* made at the first netlink socket */
	bool failed;             /* it could not be: every later socket refused too */
};

static int nl_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (!sl_netview_for(cfg->net_host_interfaces))
		return 0;
	const struct sl_trap t = SL_TRAP_IF_EQ32(__NR_socket, 0, AF_NETLINK);
	return sl_traps_add_trap(out, &t);
}

static bool nl_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	struct nl_state *s = state;
	const uint64_t *a = call->n->args;
	if ((int)(uint32_t)a[0] != AF_NETLINK)
		return false; /* a user handler traps every socket: not ours */
	int type = (int)(uint32_t)a[1];
	if (!s->view && !s->failed && !(s->view = sl_netview_new()))
		s->failed = true;
	int fd = s->view ? sl_netview_socket(s->view, type & ~SOCK_CLOEXEC) : -EACCES;
	if (fd >= 0 && call->sv->adopted) {
		int e = sl_adopted_add(call->sv->adopted, fd, call->init);
		if (e < 0) { /* its bind and sends could not be performed: refused now */
			close(fd);
			fd = e;
		}
	}
	if (fd < 0)
		sandlock_action_set_errno(act, -fd);
	else
		sandlock_action_set_inject_fd_send(act, fd, (type & SOCK_CLOEXEC) ? O_CLOEXEC : 0);
	return true;
}

static int nl_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                   char **msg)
{
	(void)sv;
	(void)cfg;
	if (!(*state = calloc(1, sizeof(struct nl_state)))) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	return 0;
}

static void nl_free(void *state)
{
	struct nl_state *s = state;
	if (s)
		sl_netview_free(s->view);
	free(s);
}

const struct sl_builtin sl_builtin_netlink = {
	.name = "netlink view",
	.phase = SL_PHASE_FIRST,
	.syscalls = nl_syscalls,
	.init = nl_init,
	.free = nl_free,
	.decide = nl_decide,
};
