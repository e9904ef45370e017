/*
 * refusals.c — the filter's own refusals, seen (report_refusals, --trace).
 *
 * WHY: the seccomp filter answers the blocklist (ptrace, mount, bpf,
 * keyctl, io_uring_*, ...) and extra_deny_syscalls with EPERM by itself,
 * in the kernel, where no decision hook sees it: a program that fails on
 * one says "Operation not permitted" and --trace said nothing.  With
 * report_refusals a supervised run traps them instead (filter.c leaves
 * them no rule of their own) and this builtin, first of their chains,
 * refuses every call with the same EPERM: nothing else runs on them, and
 * the hook names the syscall and "syscall filter".  The argument rules'
 * refusals come the same way to builtins/args.c (argrules.c's prefix).
 * Off, it traps nothing and costs nothing; a filter without a supervisor
 * (confine, sandlock_fork) never traps them.
 */
#include <errno.h>

#include "builtins/builtin.h"
#include "launch/filter.h"

static int refusals_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	return cfg->filter.report_refusals ? sl_filter_refusal_traps(cfg, out) : 0;
}

static bool refusals_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	(void)state;
	(void)call;
	sandlock_action_set_errno(act, EPERM); /* what the filter answers without us */
	return true;
}

const struct sl_builtin sl_builtin_refusals = {
	.name = "syscall filter",
	.phase = SL_PHASE_FIRST,
	.syscalls = refusals_syscalls,
	.decide = refusals_decide,
};
