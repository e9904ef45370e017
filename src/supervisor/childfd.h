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

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandlock.h"

/* A pidfd for the caller (a thread-pidfd for a non-leader thread). */
int sl_child_pidfd(int listener, const sandlock_notif_t *n);
/* Our duplicate of the caller's fd number fd (-EBADF if it has none;
 * -EPERM where pidfd_getfd is refused, mechs.h). */
int sl_child_getfd(int listener, const sandlock_notif_t *n, int fd);
/*
 * The caller's open file num as ours, sharing its file offset, for a call
 * performed on its behalf (getdents, a write under max_disk):
 * pidfd_getfd's duplicate where that works.  Where a container's seccomp
 * profile refuses pidfd_getfd (mechs.h), a fresh open of the same file
 * (regular files and directories only: -ENXIO for others) through
 * /proc/TID/fd/N with the caller's flags, at the caller's offset;
 * sl_child_file_done then installs it at the caller's number
 * (SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SETFD, its
 * close-on-exec kept), so the caller goes on with our description and the
 * offset the call left.  (Other holders of the caller's old description,
 * a dup or a forked child, keep their own offset then.)
 */
struct sl_child_file {
	int fd;        /* ours */
	int num;       /* the caller's fd number */
	int install;   /* reopened: the newfd_flags to install it with; else -1 */
};
int sl_child_file(int listener, const sandlock_notif_t *n, int num, struct sl_child_file *f);
/* Close ours; if it was reopened and used (ok), install it first.  0 or
 * -errno (the install failed: the caller's offset did not move). */
int sl_child_file_done(int listener, const sandlock_notif_t *n, struct sl_child_file *f,
                       bool ok);

/* The offset and open flags (O_CLOEXEC included when set) of fd num of
 * pid (/proc/PID/fdinfo/N): 0 or -errno (-EBADF: no such fd).  Not
 * confirmed: the caller pins what it acts on. */
#include <stdint.h>
#include <sys/types.h>
int sl_child_fdinfo(pid_t pid, int num, int64_t *pos, int *flags);

/* /proc/TID of the caller, as an O_PATH directory fd. */
int sl_child_procdir(int listener, const sandlock_notif_t *n);
/* The starting point of a *at() call: the caller's cwd for AT_FDCWD,
 * else its fd dirfd, as our own O_PATH fd. */
int sl_child_dirfd(int listener, const sandlock_notif_t *n, int dirfd);
/* The path of that directory, as the caller's /proc link names it, into
 * out (cap bytes): 1; 0 when the link names no path (a socket, a pipe:
 * the kernel answers ENOTDIR); -errno (EBADF for a closed fd).  One
 * readlink, not an open, a confirmation, a readlink and a close: the
 * COW builtin asks it for most paths a build names in the workdir.  NOT
 * confirmed: the caller asks sl_notif_valid after it before acting on the
 * path (a pid reused meanwhile would name another process). */
int sl_child_dir_path(const sandlock_notif_t *n, int dirfd, char *out, size_t cap);

/* The caller's thread group id: n->pid for a process's main thread, the
 * leader's pid for any other thread.  From /proc/TID/status (not pinned:
 * what is opened or signalled with it is confirmed by its user); -errno. */
long sl_child_tgid(const sandlock_notif_t *n);
/* A path naming the caller through /proc/self, /proc/thread-self,
 * /dev/fd, /dev/std*, /proc/mounts or /proc/net, rewritten in place (cap
 * bytes) to the caller's own /proc/PID or /proc/PID/task/TID directory,
 * as the kernel would resolve it for that thread: the supervisor
 * following them would reach itself.  0 or -errno. */
int sl_child_self_path(char *p, size_t cap, const sandlock_notif_t *n);
/* A path argument of the call (at addr), read once and rewritten as above,
 * in a heap buffer of SL_CHILD_PATH_CAP bytes (to free()); NULL with *e:
 * EFAULT, ENAMETOOLONG (no NUL within PATH_MAX), ENOMEM, ESRCH.  The one
 * reader of a caller's path for every builtin (a symlink's target or an
 * xattr name is no path: read as it is).  !follow: the call does not
 * follow its last name, so a path that is one of those names itself
 * (lstat or readlink of /proc/self) is left as it is. */
#define SL_CHILD_PATH_CAP (PATH_MAX + 64)
char *sl_child_read_path(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n, bool follow,
                         int *e);
/* The same without the ID_VALID check after the read (childmem.h,
 * sl_mem_read_string_unverified): the caller asks sl_notif_valid itself
 * before acting on the path other than by passing the call on. */
char *sl_child_read_path_unverified(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n,
                                    bool follow, int *e);

/* Whether the caller (piddir: its /proc/TID, pinned) acts with our
 * effective and filesystem uid and gid, so DAC treats what we do on its
 * behalf as its own: 0; EPERM if not (or its ids cannot be parsed: fail
 * closed); ESRCH if its status cannot be read.  umask_out (may be NULL):
 * its umask as well (EPERM without one).  The opener and the metadata
 * guard ask it. */
int sl_child_same_ids(int piddir, mode_t *umask_out);
/* The caller's umask (from /proc/TID/status; 022 if it cannot be read). */
mode_t sl_child_umask(int listener, const sandlock_notif_t *n);

#endif /* SANDLOCK_CHILDFD_H */
