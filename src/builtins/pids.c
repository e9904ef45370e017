/*
 * pids.c — calls that act on another process by pid stay inside the
 * sandbox.
 *
 * WHY: Landlock scopes signals, not resource limits, priorities,
 * scheduling, affinity, memory placement or pidfds.  Without this, a
 * sandboxed program could prlimit() the sandbox's init to RLIMIT_CPU 1 s
 * (the kernel then kills init, and a setsid() process may outlive the
 * run), lower the supervising process's RLIMIT_NOFILE (its run loop then
 * fails), renice or pin any process of the same uid, or open a pidfd on
 * one to watch it.
 *
 * The filter lets the forms that can only mean the caller itself (pid 0,
 * PRIO_PROCESS with who 0, ...; syscalls.h) through without a trap; every
 * other form comes here.  A named pid is allowed only if it lies inside
 * the sandbox: a descendant of init, init itself excluded (the supervisor
 * relies on it).  Process groups and users (setpriority PRIO_PGRP /
 * PRIO_USER, ioprio_set IOPRIO_WHO_PGRP / IOPRIO_WHO_USER) are refused:
 * a group may have members outside (the sandbox shares the caller's
 * session), and a uid certainly does.  Everything else: EPERM.
 *
 * Limits: the allowed call proceeds in the kernel (CONTINUE), which looks
 * the pid up again.  A sandboxed target that exits and is reaped in
 * between could in principle leave its number to a new outside process;
 * that needs the whole pid space to wrap within microseconds.  Reading
 * calls (getpriority, sched_get*, ioprio_get, prlimit without a new
 * limit counts as writing here and is checked) are not trapped: they
 * only leak facts about other processes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "run/proctree.h"
#include "syscalls.h"
#include "builtins/builtin.h"

/* Ancestors are walked at most this deep (a deeper chain is refused). */
#define SL_PID_MAX_DEPTH 8192

/* True if pid is a proper descendant of init (init is a subreaper, so
 * orphans of the sandbox stay below it).  Fails closed. */
static bool inside_sandbox(pid_t init, pid_t pid)
{
	if (init <= 1 || pid == init)
		return false;
	pid_t p = pid;
	for (int depth = 0; depth < SL_PID_MAX_DEPTH; depth++) {
		if (p == init)
			return true;
		if (p <= 1)
			return false;
		char name[24], state;
		long ppid, pgrp;
		snprintf(name, sizeof name, "/proc/%d", (int)p);
		/* A thread id works too: its stat names its process's parent. */
		if (!sl_proc_stat(AT_FDCWD, name, &state, &ppid, &pgrp))
			return false;
		p = (pid_t)ppid;
	}
	return false;
}

/* Non-positive numbers never name another process: the kernel answers
 * them (EINVAL, ESRCH, or "self" for 0). */
static bool pid_allowed(pid_t init, int64_t arg)
{
	pid_t pid = (pid_t)(int32_t)arg; /* the kernel reads an int */
	return pid <= 0 || inside_sandbox(init, pid);
}

static bool allowed(const struct sl_pid_sys *f, const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	switch (f->form) {
	case SL_PID_A0:
		return pid_allowed(call->init, (int64_t)a[0]);
	case SL_PID_WHICH_WHO:
		/* Only "one process" is ever allowed: see the comment on top. */
		return (int32_t)a[0] == f->self_which && pid_allowed(call->init, (int64_t)a[1]);
	case SL_PID_ALWAYS:
		if (call->n->syscall_nr == __NR_kcmp)
			return pid_allowed(call->init, (int64_t)a[0]) &&
			       pid_allowed(call->init, (int64_t)a[1]);
		return pid_allowed(call->init, (int64_t)a[0]);
	}
	return false;
}

/*
 * The forms that can only mean the caller itself stay in the kernel (no
 * trap cost for the common case): a0 == 0, or which == the "one process"
 * value with who == 0.  The conditions compare all 64 bits, so they trap
 * a superset of what the kernel (which reads 32-bit ints) takes for a
 * foreign pid; allowed() reads 32 bits.
 */
static struct sl_trap pid_trap(const struct sl_pid_sys *f)
{
	struct sl_trap t = SL_TRAP_ALWAYS(f->nr);
	const struct sl_trap_cond a0 = { 0, SL_TRAP_NE, 0, 0 };
	const struct sl_trap_cond which = { 0, SL_TRAP_NE, 0, (uint64_t)f->self_which };
	const struct sl_trap_cond who = { 1, SL_TRAP_NE, 0, 0 };
	switch (f->form) {
	case SL_PID_A0:
		t.cond[t.ncond++] = a0;
		break;
	case SL_PID_WHICH_WHO:
		t.cond[t.ncond++] = which;
		t.cond[t.ncond++] = who;
		break;
	case SL_PID_ALWAYS:
		break;
	}
	return t;
}

static int pids_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	(void)cfg;
	const struct sl_pid_sys *v;
	size_t n = sl_sys_pid_targeting(&v);
	for (size_t i = 0; i < n; i++) {
		const struct sl_trap t = pid_trap(&v[i]);
		if (sl_traps_add_trap(out, &t) < 0)
			return -1;
	}
	return 0;
}

static bool pids_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	(void)state;
	const struct sl_pid_sys *f = sl_sys_pid_form(call->n->syscall_nr);
	if (!f || allowed(f, call))
		return false;
	sandlock_action_set_errno(act, EPERM);
	return true;
}

const struct sl_builtin sl_builtin_pids = {
	.name = "foreign processes",
	.phase = SL_PHASE_FIRST,
	.in_every_filter = true,
	.syscalls = pids_syscalls,
	.decide = pids_decide,
};
