/*
 * args.c — the filter's argument rules, applied again to trapped calls.
 *
 * WHY: libseccomp lets an unconditional NOTIFY rule for a syscall
 * override the conditional ERRNO rules of the same syscall (clone with
 * namespace flags, ioctl TIOCSTI, raw sockets, ...).  So when a user
 * handler traps such a syscall, the filter no longer denies those
 * arguments: this builtin does, before any handler sees the call.  It
 * also refuses a notification from an architecture the filter kills.
 * It traps nothing itself; it runs on every trapped syscall.
 */
#include <errno.h>
#include <linux/audit.h>

#include "../filter.h"
#include "builtin.h"

static bool args_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	(void)state;
	const sandlock_notif_t *n = call->n;
	int e = 0;
#ifdef __x86_64__
	/* The filter already kills foreign arches and x32; never trust a
	 * notification that would contradict it. */
	if (n->arch != AUDIT_ARCH_X86_64 || (n->syscall_nr & __X32_SYSCALL_BIT))
		e = EPERM;
#endif
	if (!e && sl_filter_has_arg_rules(n->syscall_nr))
		e = sl_filter_arg_check(n);
	if (!e)
		return false;
	sandlock_action_set_errno(act, e);
	return true;
}

const struct sl_builtin sl_builtin_args = {
	.name = "argument rules",
	.phase = SL_PHASE_FIRST,
	.every_trapped = true,
	.decide = args_decide,
};
