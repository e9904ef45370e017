/*
 * netview.h — a network namespace of loopback only, where the guest's
 * NETLINK_ROUTE sockets are made (builtins/netlink.c).
 *
 * A netlink socket answers for the network namespace it was made in, so a
 * socket made in a namespace of our own shows that namespace's links,
 * addresses and routes, not the host's, while it stays a real kernel
 * socket (bind, getsockname, recvmsg, dumps and errors as the kernel
 * gives them).  The namespace has "lo" up, and a documentation address
 * (192.0.2.1, 2001:db8::1) on it for each family the host has an address
 * of, so that getaddrinfo's AI_ADDRCONFIG still sees the families the
 * host can reach.  Nothing in it names or addresses the host.
 *
 * With CAP_SYS_ADMIN (a root sandlock) the namespace is made in our own
 * user namespace, the guest's: a change request through a socket meets
 * the guest's empty capability set.  Without it, in a new user namespace
 * (where the kernel allows unprivileged ones), which the guest's uid
 * owns: the guest then holds every capability in it by the owner's rule
 * (cap_capable), so the helper drops all of its own before it makes any
 * socket, and rtnetlink, which wants CAP_NET_ADMIN of the socket's
 * opener as well as of the caller (netlink_net_capable), refuses every
 * change.  Where neither is possible the guest keeps the host's view.
 */
#ifndef SANDLOCK_NETVIEW_H
#define SANDLOCK_NETVIEW_H

#include <stdbool.h>

struct sl_netview;

/* Can this process make the view (CAP_SYS_ADMIN, or unprivileged user
 * namespaces: probed once)?  Without it the guest keeps the host's view. */
bool sl_netview_possible(void);
/* Are the guest's route sockets made in the view in a run (unless the
 * user grants the host's view: net_host_interfaces)? */
bool sl_netview_for(bool host_interfaces);
/* Start the helper that lives in the namespace.  NULL with errno. */
struct sl_netview *sl_netview_new(void);
/* A NETLINK_ROUTE socket made in the view, type as socket(2)'s (with
 * SOCK_NONBLOCK; SOCK_CLOEXEC is the caller's to apply).  Ours, or -errno. */
int sl_netview_socket(struct sl_netview *v, int type);
/* Stop the helper (NULL is fine). */
void sl_netview_free(struct sl_netview *v);

#endif /* SANDLOCK_NETVIEW_H */
