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
 * share_budget (an exec into a running container): the runs' v2 groups
 * nest, so a run counts the processes of its budget's group and of every
 * group below it (cgroup.c, the runs' inits not counted) instead of its
 * own tree; so does a run with a sharing run below its group.  Then every
 * fork walks: the other run's forks never pass here.
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
#include <unistd.h>
#include <string.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "run/cgroup.h"
#include "run/proctree.h"
#include "syscalls.h"
#include "builtins/builtin.h"

/* Set explicitly, even to 0 (no limit): a run would count. */
static const char *procs_refusal(const struct sandlock_sandbox *cfg)
{
	return cfg->max_processes_set ? "max_processes (needs the supervisor)" : NULL;
}

/*
 * fork and vfork always make a process; clone only without CLONE_THREAD
 * (the kernel reads the low 32 bits of its flags, as the mask does).  A
 * thread is not counted, so its clone stays in the kernel: no round trip
 * per pthread_create (Go, Java and Node start dozens).  Where another
 * builtin traps clone outright, threads still reach decide, which lets
 * them pass.
 */
static int procs_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (cfg->max_processes == 0)
		return 0;
	const int *nrs;
	size_t n = sl_sys_fork_like(&nrs);
	for (size_t i = 0; i < n; i++) {
		struct sl_trap t = SL_TRAP_ALWAYS(nrs[i]);
		if (nrs[i] == __NR_clone)
			t = (struct sl_trap)SL_TRAP_IF_NO_BITS(__NR_clone, 0, CLONE_THREAD);
		if (sl_traps_add_trap(out, &t) < 0)
			return -1;
	}
	return 0;
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
	int budget;     /* share_budget: the other run's v2 group, else -1 */
	int own;        /* our run's v2 group: -1 not looked up yet, -2 none */
};

static int procs_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                      char **msg)
{
	(void)sv;
	if (cfg->max_processes == 0)
		return 0; /* traps nothing: no state */
	struct procs_state *st = calloc(1, sizeof(*st));
	if (!st) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	st->max = cfg->max_processes;
	st->known = st->max; /* no bound yet (the command itself came by no fork of ours): walk first */
	st->own = -1;
	st->budget = cfg->budget_pid ? sl_cgroup_open_of(cfg->budget_pid) : -1;
	*state = st;
	if (cfg->budget_pid && st->budget < 0) {
		*msg = sl_asprintf("share_budget: process %d has no cgroup v2 group to share",
		                   (int)cfg->budget_pid);
		return -1;
	}
	return 0;
}

static void procs_free(void *state)
{
	struct procs_state *st = state;
	if (st && st->budget >= 0)
		close(st->budget);
	if (st && st->own >= 0)
		close(st->own);
	free(state);
}

/* Our run's own v2 group (named sandlock-<our pid>-N by cgroup.c), or -2. */
static int own_group(pid_t init)
{
	char prefix[32], line[512] = "";
	snprintf(prefix, sizeof prefix, "sandlock-%d-", (int)getpid());
	char file[64];
	snprintf(file, sizeof file, "/proc/%d/cgroup", (int)init);
	FILE *f = fopen(file, "re");
	while (f && fgets(line, sizeof line, f) && strncmp(line, "0::", 3) != 0)
		line[0] = '\0';
	if (f)
		fclose(f);
	const char *base = strrchr(line, '/');
	if (strncmp(line, "0::", 3) != 0 || !base || strncmp(base + 1, prefix, strlen(prefix)) != 0)
		return -2;
	int fd = sl_cgroup_open_of(init);
	return fd >= 0 ? fd : -2;
}

/* The live count where groups are shared, else -2 (count the tree). */
static int shared_count(struct procs_state *st, pid_t init)
{
	if (st->budget >= 0)
		return sl_cgroup_count_processes(st->budget);
	if (st->own == -1)
		st->own = own_group(init);
	if (st->own >= 0 && sl_cgroup_has_children(st->own))
		return sl_cgroup_count_processes(st->own);
	return -2;
}

static bool procs_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	struct procs_state *st = state;
	const sandlock_notif_t *n = call->n;
	if (!st || st->max == 0 || !sl_sys_is_fork_like(n->syscall_nr))
		return false;
	/* A thread is not a process: pthread_create uses clone(CLONE_THREAD). */
	if (sl_sys_makes_thread(n->syscall_nr, n->args))
		return false;
	int shared = shared_count(st, call->init);
	if (shared != -2 || (uint64_t)st->known + st->since >= st->max) {
		int count = shared != -2 ? shared : sl_count_tree_processes(call->init);
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
	.refusal = procs_refusal,
	.phase = SL_PHASE_FIRST,
	.syscalls = procs_syscalls,
	.init = procs_init,
	.decide = procs_decide,
	.free = procs_free,
};
