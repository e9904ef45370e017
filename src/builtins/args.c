/*
 * args.c — the filter's argument rules, applied again to trapped calls.
 *
 * WHY: the filter (filter.c) applies its argument rules (namespace clone
 * flags, TIOCSTI, socket families and protocols, MSG_FASTOPEN, set-id
 * modes, ...) in a prefix that runs before any NOTIFY, so a trapped call
 * should never carry denied arguments.  This builtin checks them again,
 * from the same rule table and the run's filter policy, before any
 * handler sees the call: defence in depth should the BPF and the table
 * ever disagree.  It also refuses a notification from an architecture
 * the filter kills.  It traps nothing itself; it runs on every trapped
 * syscall.
 */
#include <errno.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <stdlib.h>

#include "launch/filter.h"
#include "builtins/builtin.h"

/* State: the run's filter policy (the rules depend on it: the UDP gate). */
static int args_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                     char **msg)
{
	(void)sv;
	struct sl_filter_policy *p = malloc(sizeof(*p));
	if (!p) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	*p = cfg->filter;
	*state = p;
	return 0;
}

static bool args_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct sl_filter_policy *policy = state;
	const sandlock_notif_t *n = call->n;
	int e = 0;
	/* The filter already kills foreign arches (and x32); never trust a
	 * notification that would contradict it. */
	if (n->arch != seccomp_arch_native())
		e = EPERM;
#ifdef __x86_64__
	if (n->syscall_nr & __X32_SYSCALL_BIT)
		e = EPERM;
#endif
	if (!e && sl_filter_has_arg_rules(n->syscall_nr))
		e = sl_filter_arg_check(policy, n);
	if (!e)
		return false;
	sandlock_action_set_errno(act, e);
	return true;
}

const struct sl_builtin sl_builtin_args = {
	.name = "argument rules",
	.phase = SL_PHASE_FIRST,
	.every_trapped = true,
	.init = args_init,
	.free = free,
	.decide = args_decide,
};
