/*
 * procpolicy.h — the /proc policy (procpolicy.c).
 */
#ifndef SANDLOCK_PROCPOLICY_H
#define SANDLOCK_PROCPOLICY_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"

/* True when cfg lets the sandbox read /proc (the builtin is then on). */
bool sl_proc_readable(const struct sandlock_sandbox *cfg);
/* True when cfg denies nothing beneath /proc (the opener may then open
 * the caller's own /proc/TID files itself: see opener.c). */
bool sl_proc_undenied(const struct sandlock_sandbox *cfg);
/* The number in "123" or "123/...", or -1. */
long sl_proc_leading_pid(const char *s);
/* True if pid belongs to the sandbox: a descendant of init (init itself
 * is not).  procfd: an fd of /proc. */
bool sl_proc_in_sandbox(int procfd, pid_t init, long pid);
/* 0 if the sandbox may open the file whose real path is real (a file on
 * procfs), else the errno: ENOENT for another process's /proc/PID,
 * EACCES for the kernel files on the deny list. */
int sl_proc_policy(int procfd, pid_t init, const char *real);
/* fd is a file of procfs (or cannot be told otherwise). */
bool sl_on_procfs(int fd);

#endif /* SANDLOCK_PROCPOLICY_H */
