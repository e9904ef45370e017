/*
 * chroot.h — the guest's view of the filesystem under a virtual chroot
 * (cfg->chroot, cfg->mounts): guest paths map to a host directory fd
 * (the rootfs or a mount's host directory) plus a path to resolve from it
 * with openat2(RESOLVE_IN_ROOT), so ".." and absolute symlinks never leave
 * it; host paths map back to guest paths (getcwd, readlink).
 *
 * One view per run (supervisor/services.c), used by builtins/chroot.c
 * (the path syscalls), builtins/cow/, the opener (opens on behalf,
 * opener.c) and the launch (the command on PATH, launch_prepare.c); the
 * builder makes one to check the configuration (build.c).
 */
#ifndef SANDLOCK_CHROOT_H
#define SANDLOCK_CHROOT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"

struct sl_view;

/* The view of cfg (which must have chroot set).  NULL with *msg (heap). */
struct sl_view *sl_view_new(const struct sandlock_sandbox *cfg, char **msg);
void sl_view_free(struct sl_view *v);

/* The caller the calling thread's next walks are for (NULL, 0: none; n
 * must live until then): /proc/self in the view names its thread group,
 * /proc/thread-self its thread, and /proc/ files reached pass the /proc
 * policy against init (procpolicy.h).  Thread-local. */
void sl_view_for(const sandlock_notif_t *n, pid_t init);
/* The target of procfs's "self" or "thread-self" link (name) for that
 * caller, into target: "TGID" or "TGID/task/TID" (read by us, the links
 * would name the supervisor).  0 and target unchanged for another name;
 * -errno (EACCES: no caller). */
int sl_view_proc_self(const char *name, char *target, size_t cap);

/* Where an absolute guest path lives: *base (the view's fd: do not close),
 * rel (in out, "." for the base itself), *ro (a read-only mount).  The
 * path is first walked as the guest sees it: symlinks followed in the
 * view (an absolute target is a guest path, into a mount or out of one),
 * ".." to the parent of what was reached; the last name only when
 * follow.  0 or an errno (ENOENT, ENOTDIR, ELOOP as the walk fails). */
int sl_view_map(const struct sl_view *v, const char *guest, bool follow, int *base, char *out,
                size_t cap, bool *ro);
/* The guest path of a canonical host path (into out), false when the host
 * path is outside the view. */
bool sl_view_guest(const struct sl_view *v, const char *host, char *out, size_t cap);
/* The absolute guest path a call names: path (read from the caller)
 * relative to its dirfd (AT_FDCWD: its cwd), into out.  EACCES when the
 * starting point is outside the view.  0 or an errno. */
int sl_view_call_path(const struct sl_view *v, int listener, const sandlock_notif_t *n, int dirfd,
                      const char *path, char *out, size_t cap);
/* The guest path of one of our fds (its /proc/self/fd link), false if
 * outside the view. */
bool sl_view_fd_guest(const struct sl_view *v, int fd, char *out, size_t cap);
/* Open an absolute guest path with flags (e.g. O_PATH | O_NOFOLLOW)
 * inside the view, by the calling thread with its capabilities lowered
 * (the caller's DAC rights, but not its Landlock domain: for O_PATH
 * lookups and files the view's own checks allow).  fd or -errno. */
int sl_view_open(const struct sl_view *v, const char *guest, int flags, bool *ro);
/* The canonical host path behind the absolute guest path guest, opened as
 * sl_view_open does (flags: O_PATH plus e.g. O_DIRECTORY) and read back
 * from the fd, into out; *ro as sl_view_open.  The result always lies in
 * the rootfs or a mount's host directory (checked again: EACCES
 * otherwise).  0 or an errno (ENOENT, ENOTDIR, ELOOP, EACCES...). */
int sl_view_host(const struct sl_view *v, const char *guest, int flags, char *out, size_t cap,
                 bool *ro);
/* True if the canonical host path may be written: under a read-write
 * mount or an fs_write tree of cfg, and not under fs_deny. */
bool sl_view_writable(const struct sl_view *v, const char *host);
/* True if the entry name of the directory behind our fd dirfd is a mount
 * point of the view, or holds one below it: unlink, rmdir and rename
 * must leave it alone (EBUSY), as the kernel leaves a mount point, or the
 * file under a mount (a masked one, say) would be reachable by another
 * name.  Fails closed (true) when dirfd is outside the view. */
bool sl_view_busy(const struct sl_view *v, int dirfd, const char *name);
/* True if the canonical host path is under an fs_deny tree of cfg. */
bool sl_view_denied(const struct sl_view *v, const char *host);

/* Whether the kernel may run the file behind our O_PATH fd for the guest
 * (v NULL: no chroot, only that it is a regular file): a regular file the
 * caller can read (our capabilities lowered) whose interpreter, if any
 * (execpath.h), is the same file on the host and in the view.  0 or an
 * errno (EACCES, ENOEXEC, ENOENT). */
int sl_view_exec_check(const struct sl_view *v, int fd);

#endif /* SANDLOCK_CHROOT_H */
