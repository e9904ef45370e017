/*
 * sysvipc.c — SysV IPC and POSIX message queues refused, and seen.
 *
 * WHY: the group is denied by default (launch/filter.c: those objects live
 * in the IPC namespace the sandbox shares with the host, out of Landlock's
 * reach).  A program that needs it (PostgreSQL's shared memory, an old
 * test harness) fails with EPERM and nothing says why.  With a supervisor
 * the group is trapped instead of answered by the filter, refused here
 * with the same EPERM, so the run's decision hook sees it: the CLI's
 * end-of-run line and --trace name the flag that allows it
 * (--extra-allow-syscalls sysv_ipc).  A filter without a supervisor
 * (confine, sandlock_fork) keeps answering EPERM itself.
 */
#include <errno.h>

#include "builtins/builtin.h"
#include "launch/filter.h"

static int sysv_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	const int *nrs;
	size_t n;
	if (cfg->filter.groups & SL_GROUP_SYSV_IPC) /* re-allowed: the kernel's */
		return 0;
	if (sl_filter_group_members("sysv_ipc", &nrs, &n) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!sl_filter_extra_denied(cfg, nrs[i]) && sl_traps_add(out, nrs[i]) < 0)
			return -1;
	return 0;
}

static bool sysv_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	(void)state;
	(void)call;
	sandlock_action_set_errno(act, EPERM); /* what the filter answers without us */
	return true;
}

const struct sl_builtin sl_builtin_sysvipc = {
	.name = "SysV IPC",
	.phase = SL_PHASE_LAST,
	.syscalls = sysv_syscalls,
	.decide = sysv_decide,
};
