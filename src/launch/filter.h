/*
 * filter.h — the seccomp-bpf program: blocklist, argument rules, and the
 * syscalls that are trapped to the supervisor.
 */
#ifndef SANDLOCK_FILTER_H
#define SANDLOCK_FILTER_H

#include <linux/filter.h>

#include "config.h"
#include "launch/argrules.h"
#include "trap.h"

/* True if nr is denied by the blocklist under policy p (a handler may not
 * be registered on it). */
bool sl_filter_is_blocked(const struct sl_filter_policy *p, int nr);
/* The SL_GROUP_* bit of a syscall group name; 0 if unknown, and then
 * *is_syscall tells whether name is a single syscall's name instead. */
uint32_t sl_filter_group(const char *name, bool *is_syscall);
/* "sysv_ipc, ..." — the known group names, for messages. */
const char *sl_filter_group_names(void);
/* ... or by cfg's extra_deny_syscalls (cfg may be NULL). */
bool sl_filter_extra_denied(const struct sandlock_sandbox *cfg, int nr);
/* Blocklisted under cfg's policy or extra-denied: no handler may be registered on nr. */
bool sl_filter_denies(const struct sandlock_sandbox *cfg, int nr);
/* With report_refusals: the syscalls a supervised run sends to
 * builtins/refusals.c instead of refusing them in the filter: the
 * blocklist (not the ENOSYS ones, which say "not here" rather than "no")
 * and cfg's extra_deny_syscalls.  0 or -1 (OOM). */
int sl_filter_refusal_traps(const struct sandlock_sandbox *cfg, struct sl_traps *out);
/* Members of the group called name: 0 with *nrs, *n set, or -1 (no such group). */
int sl_filter_group_members(const char *name, const int **nrs, size_t *n);
/*
 * Build the BPF program (before fork): blocklist -> ERRNO/KILL, x32/i386
 * -> kill, argument filters, and trapped[] (trap.h, normalized: each
 * condition of a trap one rule) -> SECCOMP_RET_USER_NOTIF.  supervised:
 * a supervisor answers the notifications (a run), so report_refusals may
 * send refusals to it; confine and sandlock_fork have none.  0 or -1 with
 * *err, *msg set.  Free with sl_filter_free.
 */
int sl_filter_build(const struct sandlock_sandbox *cfg, const struct sl_trap *trapped,
                    size_t ntrapped, bool supervised, struct sock_fprog *out, int *err,
                    char **msg);
void sl_filter_free(struct sock_fprog *prog);

#endif /* SANDLOCK_FILTER_H */
