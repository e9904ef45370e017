/*
 * sockremake.h — a socket made like the caller's, where its own cannot be
 * had: a container's default seccomp profile refuses pidfd_getfd
 * (mechs.h), and a socket cannot be reopened through /proc.
 *
 * A connect performed on the caller's behalf (or a datagram socket's
 * first bind or send: sockadopt.h) then acts on a socket of
 * ours of the same domain, type, protocol and O_NONBLOCK, and installs it
 * at the caller's fd number in place of its own (SECCOMP_IOCTL_NOTIF_ADDFD
 * with SETFD, close-on-exec kept).  Only a socket with no state to carry
 * over is remade: one that is bound, connected or listening is refused
 * (EPERM).  Socket options cannot be read without the socket itself:
 * the ones the guest set are noted as it sets them (sockopts.h) and set
 * on ours by the caller of sl_sock_remake.  A TCP socket the kernel
 * bound before its connect loses that bind (the kernel lists no
 * bound-only TCP socket where we could see it); where sandlock performs
 * binds, the socket it bound is kept until the connect (sockadopt.h).
 */
#ifndef SANDLOCK_SOCKREMAKE_H
#define SANDLOCK_SOCKREMAKE_H

#include <stdbool.h>

#include "sandlock.h"
#include "net/sockdest.h"

struct sl_remade {
	int fd;      /* ours, -1 when none */
	int num;     /* the caller's fd number */
	int install; /* newfd_flags for the install (its close-on-exec) */
	unsigned long ino; /* the caller's socket's sockfs inode (its noted options) */
	bool bound; /* refused (EPERM) for an address it has: a bind's EINVAL */
	struct sl_sockinfo si;
};

/* The kind of the caller's socket num, without the socket (the protocol
 * sockfs names it by, sock_diag for AF_UNIX's type), and (busy, unless
 * NULL) whether the kernel lists it bound, connected or listening (a
 * bound-only TCP socket is not listed).  0 or an errno: ENOTSOCK, EPERM
 * for a kind we would not know how to remake. */
int sl_sock_kind(int listener, const sandlock_notif_t *n, int num, struct sl_sockinfo *si,
                 bool *busy);

/* The sockfs inode of the caller's socket num (its /proc/TID/fd/N link,
 * the file pinned and confirmed the caller's).  0 or an errno (ENOTSOCK). */
int sl_sock_inode(int listener, const sandlock_notif_t *n, int num, unsigned long *ino);

/* A fresh socket like the caller's socket num, in r.  0 or an errno
 * (EPERM: it has state we cannot carry over). */
int sl_sock_remake(int listener, const sandlock_notif_t *n, int num, struct sl_remade *r);

/* Install r's socket at the caller's fd number, close ours: 0 or -errno. */
int sl_sock_remade_install(int listener, const sandlock_notif_t *n, struct sl_remade *r);

#endif /* SANDLOCK_SOCKREMAKE_H */
