/*
 * argrules.h — the seccomp filter's argument rules (argrules.c): which
 * arguments of which syscalls the sandbox refuses (namespace flags,
 * TIOCSTI, socket families and protocols, MSG_FASTOPEN, set-id modes,
 * personality flags, ...), as the BPF prefix of the filter and as C for
 * the supervisor, from one table.
 */
#ifndef SANDLOCK_ARGRULES_H
#define SANDLOCK_ARGRULES_H

#include <linux/filter.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"

/* True if nr has argument rules (clone, ioctl, socket, prctl, unshare, ...). */
bool sl_filter_has_arg_rules(int nr);
/*
 * The filter's argument rules, evaluated on a notification (the same table
 * the BPF is generated from).  The filter applies them before any NOTIFY,
 * so a trapped call never carries denied arguments; the supervisor
 * re-applies them first anyway (builtins/args.c).  Returns an errno to
 * deny with, or 0.
 */
int sl_filter_arg_check(const struct sl_filter_policy *p, const sandlock_notif_t *n);
/* What the rule n breaks refuses ("new namespaces (CLONE_NEW* flags)"),
 * for a message, with *gate true when a network rule would open it (UDP
 * and ping sockets); NULL if none.  p NULL: every UDP/ping gate shut (a
 * call refused under any policy breaks the same rule, or that gate's). */
const char *sl_filter_arg_rule(const struct sl_filter_policy *p, const sandlock_notif_t *n,
                               bool *gate);

#define SL_PREFIX_MAX 1024 /* instructions; far above what the rules need */
/*
 * The BPF prefix of the filter, into out[SL_PREFIX_MAX]: anything not the
 * native ABI (on x86_64 also i386 int 0x80 and x32 numbers) is killed
 * outright (libseccomp does this too; the prefix makes it independent of
 * its version), then the argument rules; falls through to libseccomp's
 * program, which reloads what it needs.  A call a rule refuses gets
 * SECCOMP_RET_ERRNO, or, with notify (a supervised run that reports its
 * refusals), SECCOMP_RET_USER_NOTIF for the EPERM rules: the supervisor
 * answers the same EPERM (builtins/args.c) and its decision hook sees
 * it.  0 with *n, or -1 (too long).
 */
int sl_filter_prefix(const struct sl_filter_policy *pol, bool notify, struct sock_filter *out,
                     size_t *n);

#endif /* SANDLOCK_ARGRULES_H */
