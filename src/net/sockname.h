/*
 * sockname.h — the local or peer address of a TCP socket the guest
 * holds, found without the socket (no pidfd_getfd, mechs.h): for
 * port_remap's getsockname/getpeername, which show virtual ports.
 *
 * sock_diag dumps the TCP sockets of our network namespace (listening,
 * connected and, since Linux 6.8, bound-only ones; TIME_WAIT ones, which
 * no fd holds, skipped) with their inode; the
 * one whose inode the caller's fd links to gives the names.  A socket
 * the dump does not list is unbound (its name the family's wildcard
 * with port 0) and not connected (ENOTCONN for the peer), as the kernel
 * would answer.
 */
#ifndef SANDLOCK_SOCKNAME_H
#define SANDLOCK_SOCKNAME_H

#include <stdbool.h>

#include "net/sockdest.h"

/* The name (peer: the peer's) of the TCP socket with inode ino, of
 * family domain (AF_INET or AF_INET6), in out.  0 or an errno
 * (ENOTCONN: no peer). */
int sl_sock_tcp_name(int domain, unsigned long ino, bool peer, struct sl_sockaddr *out);

/* Does the kernel list the TCP socket with inode ino as listening or
 * connected (what /proc/net/tcp shows; not bound-only)?  On error: true
 * (cannot tell, treated as having state).  The dump skips TIME_WAIT and
 * connection requests in the kernel, which /proc/net/tcp cannot: on a
 * busy host it is the thousands of lines a text scan would parse. */
bool sl_sock_tcp_listed(int domain, unsigned long ino);

#endif /* SANDLOCK_SOCKNAME_H */
