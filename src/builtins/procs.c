/*
 * procs.c — max_processes: refuse fork/vfork/clone with EAGAIN (what fork
 * returns at RLIMIT_NPROC) once the sandboxed command has that many live
 * processes.  Trapped only when max_processes is set.
 *
 * "The command's processes" are the descendants of the sandbox's init,
 * init itself excluded (proctree.c): the command and everything it
 * started, so max_processes N means what it always meant (the command
 * counts as one).  A process that leaves the process group (setsid,
 * setpgid) or whose parent died stays in the count: init is a child
 * subreaper.  Threads are not counted.
 *
 * The limit is still SOFT: the count can race with a concurrent fork (two
 * forks may both see N-1).  A hard limit needs cgroup v2 pids.max.
 * clone3 never reaches us: the filter answers it with ENOSYS so libc
 * falls back to clone, whose flags are visible.
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "../proctree.h"
#include "../syscalls.h"
#include "builtin.h"

static int procs_syscalls(const struct sandlock_sandbox *cfg, struct sl_nrset *out)
{
	if (cfg->max_processes == 0)
		return 0;
	const int *nrs;
	size_t n = sl_sys_fork_like(&nrs);
	return sl_nrset_add_all(out, nrs, n);
}

static int procs_init(const struct sandlock_sandbox *cfg, void **state, char **msg)
{
	(void)msg;
	*state = (void *)(uintptr_t)cfg->max_processes;
	return 0;
}

static bool procs_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	uint32_t max = (uint32_t)(uintptr_t)state;
	const sandlock_notif_t *n = call->n;
	if (max == 0 || !sl_sys_is_fork_like(n->syscall_nr))
		return false;
	/* A thread is not a process: pthread_create uses clone(CLONE_THREAD). */
	if (n->syscall_nr == __NR_clone && (n->args[0] & CLONE_THREAD))
		return false;
	int count = sl_count_tree_processes(call->init);
	if (count >= 0 && (uint32_t)count < max)
		return false;
	sandlock_action_set_errno(act, EAGAIN); /* at the limit, or cannot count: fail closed */
	return true;
}

const struct sl_builtin sl_builtin_procs = {
	.name = "process count",
	.phase = SL_PHASE_FIRST,
	.syscalls = procs_syscalls,
	.init = procs_init,
	.decide = procs_decide,
};
