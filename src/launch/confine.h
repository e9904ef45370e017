/*
 * confine.h — the calling process confines itself (confine.c): what
 * sandlock_confine and the fork mode's template (fork_child.c) share.
 */
#ifndef SANDLOCK_CONFINE_H
#define SANDLOCK_CONFINE_H

#include <stdbool.h>

#include <linux/filter.h>

#include "config.h"

/* The first setting of sb a process cannot apply to itself, or NULL;
 * for_fork: cwd, env and timeout are applied by the fork mode itself. */
const char *sl_confine_refusal(const struct sandlock_sandbox *sb, bool for_fork);
/* The seccomp program of a process without a supervisor (confine, the
 * fork mode): blocklist, argument rules and the traps the kernel answers
 * ENOSYS there (builtin.h in_every_filter).  0, or -1 with *err, *msg. */
int sl_confine_filter(const struct sandlock_sandbox *sb, struct sock_fprog *prog, int *err,
                      char **msg);
/* Limits, NO_NEW_PRIVS, capabilities dropped, Landlock ruleset rs, seccomp
 * program prog, on the calling thread (the process must have only it).
 * 0, or -1 with *err, *msg. */
int sl_confine_apply(const struct sandlock_sandbox *sb, int rs, struct sock_fprog *prog,
                     int *err, char **msg);

#endif /* SANDLOCK_CONFINE_H */
