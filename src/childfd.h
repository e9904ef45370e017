/*
 * childfd.h — getting hold of a trapped process's objects safely, for
 * calls performed on its behalf: a pidfd for it, a duplicate of one of
 * its fds (pidfd_getfd), its cwd or /proc/TID directory.
 *
 * Every function pins the object first and then checks
 * SECCOMP_IOCTL_NOTIF_ID_VALID, so a recycled pid can never hand us
 * another process's object.  All return an fd (close-on-exec) or -errno.
 */
#ifndef SANDLOCK_CHILDFD_H
#define SANDLOCK_CHILDFD_H

#include "sandlock.h"

/* A pidfd for the caller (a thread-pidfd for a non-leader thread). */
int sl_child_pidfd(int listener, const sandlock_notif_t *n);
/* Our duplicate of the caller's fd number fd (-EBADF if it has none). */
int sl_child_getfd(int listener, const sandlock_notif_t *n, int fd);
/* /proc/TID of the caller, as an O_PATH directory fd. */
int sl_child_procdir(int listener, const sandlock_notif_t *n);
/* The starting point of a *at() call: the caller's cwd for AT_FDCWD,
 * else its fd dirfd, as our own O_PATH fd. */
int sl_child_dirfd(int listener, const sandlock_notif_t *n, int dirfd);

/* The caller's umask (from /proc/TID/status; 022 if it cannot be read). */
#include <sys/types.h>
mode_t sl_child_umask(int listener, const sandlock_notif_t *n);

#endif /* SANDLOCK_CHILDFD_H */
