/*
 * sockadopt.h — sockets the supervisor made for the guest and keeps,
 * where the guest's own cannot be had (no pidfd_getfd, mechs.h).
 *
 * A socket made like the caller's (sockremake.h) replaces it at its fd
 * number.  For a connect that is enough: the connected socket needs no
 * further check.  A datagram socket is different: musl's resolver binds
 * its UDP socket, then sends each query with an address, and every such
 * send must be checked and performed on that very socket.  So the first
 * bind or send of a datagram socket with no state is performed on a
 * socket we make, installed in the caller's place, and a duplicate is
 * kept here, keyed by its sockfs inode.  A later call on the caller's fd
 * N finds ours through the inode /proc/TID/fd/N links to (the file
 * pinned and confirmed the caller's); whatever socket a racing thread
 * put at N meanwhile, the call is performed on a socket of ours whose
 * kind we read from it, with the address checked for that kind.
 *
 * Datagram sockets are kept for good, and so are netlink sockets (the
 * loopback view's route sockets are kept from their making on:
 * builtins/netlink.c).  A stream socket (TCP, unix) is
 * kept only from the bind we performed until its listen or connect,
 * which are then performed on ours (ndbind.c: a listen continued to the
 * kernel could meet an unbound socket a racing thread put at the fd
 * number, and autobind a port nobody granted), and forgotten at once:
 * a kept listener or connection would outlive the guest's close (no
 * FIN for the peer, a listener keeping its port).  A kept socket keeps
 * its port until it is forgotten or swept: a sweep drops
 * the sockets no process of the sandbox holds any more (their
 * /proc/PID/fd), when the table has doubled since the last sweep,
 * before a bind that found its port taken is tried again, and while a
 * stream socket is kept, 0.1 s after its keeping and then at gaps
 * doubling up to 1.6 s (sl_adopted_expire: the supervisor's loop asks),
 * so that the port of a socket closed before its listen is soon free
 * for other processes (the guest's close is no call of ours).  At most 512
 * are kept (each is an fd of ours); past that, a socket is installed but
 * not kept, and its later calls are refused (EPERM).
 */
#ifndef SANDLOCK_SOCKADOPT_H
#define SANDLOCK_SOCKADOPT_H

#include <stdbool.h>
#include <sys/types.h>

#include "sandlock.h"
#include "net/sockdest.h"

struct sl_adopted;

struct sl_adopted *sl_adopted_new(void);
void sl_adopted_free(struct sl_adopted *t);

/* Is a socket of this kind kept for good (a datagram or netlink socket)? */
bool sl_adopted_kind(const struct sl_sockinfo *si);

/* Our duplicate of the caller's socket num when it is one we keep: an fd
 * (close it), -ENOENT when it is not ours, or -errno. */
int sl_adopted_get(struct sl_adopted *t, int listener, const sandlock_notif_t *n, int num);

/* Keep a duplicate of our socket fd, about to be installed in the
 * caller's place; init: the sandbox's init, whose descendants a sweep
 * asks.  0 or -errno (EMFILE: as many kept as we allow). */
int sl_adopted_add(struct sl_adopted *t, int fd, pid_t init);

/* Forget the kept socket fd is a duplicate of (none: nothing happens). */
void sl_adopted_forget(struct sl_adopted *t, int fd);

/* Drop the sockets no descendant of init holds: how many were dropped. */
size_t sl_adopted_sweep(struct sl_adopted *t, pid_t init);

/* The timed sweep, when due, while a stream socket is kept (NULL t: no
 * table).  Milliseconds until the next one, or -1 for none. */
int sl_adopted_expire(struct sl_adopted *t, pid_t init);

#endif /* SANDLOCK_SOCKADOPT_H */
