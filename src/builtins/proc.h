/*
 * proc.h — the /proc policy of builtins/proc.c, also applied by the
 * on-behalf opener (opener.c) to every file it opens, whoever asked.
 */
#ifndef SANDLOCK_BUILTIN_PROC_H
#define SANDLOCK_BUILTIN_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#include "../config.h"
#include "../opener.h"
#include "builtin.h"

/* True when cfg lets the sandbox read /proc (the builtin is then on). */
bool sl_proc_readable(const struct sandlock_sandbox *cfg);
/* True when cfg denies nothing beneath /proc (the opener may then open
 * the caller's own /proc/TID files itself: see opener.c). */
bool sl_proc_undenied(const struct sandlock_sandbox *cfg);
/* True if pid belongs to the sandbox: a descendant of init (init itself
 * is not).  procfd: an fd of /proc. */
bool sl_proc_in_sandbox(int procfd, pid_t init, long pid);
/* 0 if the sandbox may open the file whose real path is real (a file on
 * procfs), else the errno: ENOENT for another process's /proc/PID,
 * EACCES for the kernel files on the deny list. */
int sl_proc_policy(int procfd, pid_t init, const char *real);

/* The open call performed by the run's opener (the /proc policy and
 * check, if any, applied to the file it opened) and its fd injected as
 * the answer; an errno answer when it cannot be.  Always decides. */
bool sl_open_on_behalf(const struct sl_call *call, sl_opener_check_fn check, void *ud,
                       sandlock_action_t *act);

#endif /* SANDLOCK_BUILTIN_PROC_H */
