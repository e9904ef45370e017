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
#include <stdlib.h>
#include <sys/syscall.h>

#include "run/proctree.h"
#include "syscalls.h"
#include "builtins/builtin.h"

static int procs_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (cfg->max_processes == 0)
		return 0;
	const int *nrs;
	size_t n = sl_sys_fork_like(&nrs);
	return sl_traps_add_all(out, nrs, n);
}

/*
 * Counting walks /proc (proctree.c): tens of microseconds per fork, paid by
 * every fork of a build.  So the walk is made only when it can matter:
 * every new process comes through a fork we continue (clone3 is ENOSYS,
 * see above), so known + forks continued since the last walk bounds the
 * live count from above.  While that bound is under max the fork passes
 * without a walk; at the bound, a walk gives the exact count again (exits
 * meanwhile are seen then).  The state is the supervisor thread's only.
 */
struct procs_state {
	uint32_t max;
	uint32_t known; /* the count at the last walk */
	uint32_t since; /* forks continued since that walk */
};

static int procs_init(const struct sandlock_sandbox *cfg, void **state, char **msg)
{
	if (cfg->max_processes == 0)
		return 0; /* traps nothing: no state */
	struct procs_state *st = calloc(1, sizeof(*st));
	if (!st) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	st->max = cfg->max_processes;
	st->known = st->max; /* no bound yet (the command itself came by no fork of ours): walk first */
	*state = st;
	return 0;
}

static void procs_free(void *state)
{
	free(state);
}

static bool procs_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	struct procs_state *st = state;
	const sandlock_notif_t *n = call->n;
	if (!st || st->max == 0 || !sl_sys_is_fork_like(n->syscall_nr))
		return false;
	/* A thread is not a process: pthread_create uses clone(CLONE_THREAD). */
	if (n->syscall_nr == __NR_clone && (n->args[0] & CLONE_THREAD))
		return false;
	if ((uint64_t)st->known + st->since >= st->max) {
		int count = sl_count_tree_processes(call->init);
		if (count < 0 || (uint32_t)count >= st->max) {
			sandlock_action_set_errno(act, EAGAIN); /* at the limit, or cannot count: fail closed */
			return true;
		}
		st->known = (uint32_t)count;
		st->since = 0;
	}
	st->since++;
	return false;
}

const struct sl_builtin sl_builtin_procs = {
	.name = "process count",
	.phase = SL_PHASE_FIRST,
	.syscalls = procs_syscalls,
	.init = procs_init,
	.decide = procs_decide,
	.free = procs_free,
};
