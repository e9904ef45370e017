/*
 * opener.h — opening files on a trapped process's behalf, TOCTOU-safely.
 *
 * A handler that checks a path and answers CONTINUE loses to a second
 * thread that rewrites the path after the check: the kernel reads it
 * again.  The opener closes that race for the open family (open, creat,
 * openat, openat2): the supervisor reads the arguments once, a dedicated
 * thread confined by the sandbox's own Landlock ruleset performs the
 * open, the handler decides on the file actually opened (its real path,
 * device and inode), and the fd is injected with ADDFD+SEND.  See
 * opener.c for the details (credentials, /proc/self, magic links, FIFOs).
 *
 * One opener per run, created from the launch's ruleset before the
 * listener is served, and found by the listener fd
 * (sandlock_open_on_behalf only has the handler's sandlock_mem_t).
 */
#ifndef SANDLOCK_OPENER_H
#define SANDLOCK_OPENER_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "sandlock.h"
#include "util.h"

struct sl_opener;

/*
 * A file the opener opened for reading for the guest, offered to be
 * served as something else (files the builtins contribute, the synthetic
 * views): real is its canonical path, *fd our fd of it, caller the
 * guest's thread.  0: served (*fd closed and replaced, e.g. by
 * sl_serve_text), an errno: the open fails (never the real file then),
 * -1: not served, the guest gets the file itself.  Runs on whatever
 * thread opens on behalf (the loop, a deferred handler's worker).
 */
typedef int (*sl_opener_serve_fn)(void *ud, const char *real, pid_t caller, int *fd);

struct sl_view;
/* Start the opener thread confined by ruleset_fd (a Landlock ruleset,
 * which it does not keep).  view: under a virtual chroot every path is a
 * guest path, opened inside it (chroot.h; not owned, outlives the
 * opener), else NULL.  serve (may be NULL) with ud: see above.  NULL with
 * *err, *msg on failure. */
struct sl_opener *sl_opener_new(int ruleset_fd, const struct sl_view *view,
                                sl_opener_serve_fn serve, void *ud, int *err, char **msg);
/* With /proc readable: apply the /proc policy (builtins/proc.h) to every
 * file opened, for the sandbox whose init is init; fast_self: nothing is
 * denied beneath /proc, so the caller's own /proc/TID files may be opened
 * by the supervisor thread (see opener.c).  Before bind. */
void sl_opener_guard_proc(struct sl_opener *op, pid_t init, bool fast_self);
/* Make the opener the one sandlock_open_on_behalf finds for listener. */
int sl_opener_bind(struct sl_opener *op, int listener);
/* Unbind, stop and join the thread (NULL is fine). */
void sl_opener_free(struct sl_opener *op);
/* The opener bound to listener, or NULL. */
struct sl_opener *sl_opener_find(int listener);
/*
 * Perform the trapped open n on the caller's behalf; check (may be NULL)
 * decides on the opened file before O_TRUNC/O_CREAT take effect (see
 * sandlock_open_on_behalf).  0 with *out filled
 * (out->fd and out->path are the caller's to release), or a positive
 * errno that is the answer to give (the open failed as it would have for
 * the caller, or could not be performed safely).
 */
typedef sandlock_open_check_fn sl_opener_check_fn;
int sl_opener_open_call(struct sl_opener *op, int listener, const sandlock_notif_t *n,
                        sandlock_mem_t *m, sl_opener_check_fn check, void *ud,
                        sandlock_opened_t *out);

/* Open path (from base: AT_FDCWD or our fd) for reading with flags and
 * the RESOLVE_ flags resolve, by the confined thread, for the caller of
 * n (its ids checked as for any open).  0 with *fd, or an errno (EACCES
 * for write flags or a /proc file). */
int sl_opener_open_at(struct sl_opener *op, int listener, const sandlock_notif_t *n, int base,
                      const char *path, uint64_t flags, uint64_t resolve, int *fd);

/* bind(2) our socket sock (a unix one) to the path in addr, by the
 * confined thread: resolved from the caller's cwd, the socket file made
 * with its umask, Landlock's MAKE_SOCK right checked by the kernel as for
 * the caller's own call (netdest: a bind it must not continue).  0 or an
 * errno. */
int sl_opener_bind_socket(struct sl_opener *op, int listener, const sandlock_notif_t *n,
                          int sock, const struct sockaddr *addr, socklen_t len);

#endif /* SANDLOCK_OPENER_H */
