/*
 * pause.h — stopping and continuing a running sandbox as a whole (run.c,
 * sandlock_handle_pause / _resume).
 */
#ifndef SANDLOCK_PAUSE_H
#define SANDLOCK_PAUSE_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * A run's pause (run.c) freezes its cgroup v2 group where it has one
 * (sl_cgroup_freeze, cgroup.c: init included, thawed before the sandbox is
 * ended) and falls back to sl_pause_tree below without one, or when the
 * freeze fails.  Tests set this false to force the fallback.
 */
extern bool sl_pause_freezer;

/*
 * stop: SIGSTOP every descendant of init (init itself stays awake to reap
 * and to end the sandbox on request) until a scan finds all of them
 * stopped, so a process that forked just before its stop is caught too.
 * !stop: SIGCONT every descendant.  The caller guarantees init is its
 * unreaped child.  0, or -1 with errno.
 */
int sl_pause_tree(pid_t init, bool stop);

/*
 * SIGKILL every descendant of init but spare, in one scan, so that a kill
 * verdict ends the sandbox before its caller's death can wake a parent
 * (a shell waiting for it would otherwise run on until init's sweep).
 * Best effort: init's own kill sweeps whatever forked meanwhile.
 */
void sl_kill_tree(pid_t init, pid_t spare);

/*
 * A freeze for one trapped call of thread `except` (builtins/policy.c):
 * SIGSTOP every descendant of init, and wait until every THREAD of them
 * but `except` is stopped (or dead, or in an uninterruptible wait), so no
 * task of the sandbox can write memory the supervisor is about to read.
 * `except` sits in its seccomp wait, which only a fatal signal ends: its
 * own process is stopped too and it takes that stop when its call
 * returns.  The processes stopped are remembered in f for the thaw.
 * 0, or -1 with errno (ETIMEDOUT: some task would not stop; the processes
 * stopped so far are in f and must be thawed).
 */
struct sl_freeze {
	pid_t *pids; /* the processes we sent SIGSTOP */
	size_t n, cap;
};
int sl_freeze_except(pid_t init, pid_t except, struct sl_freeze *f);
/* SIGCONT every process of f and forget them. */
void sl_freeze_thaw(struct sl_freeze *f);
/* Wait (bounded: 2 s) until the frozen caller tid of process tgid has
 * taken its stop, i.e. its trapped call is over (an exec then copied its
 * arguments, or failed), or it is gone. */
void sl_freeze_wait_stopped(pid_t tgid, pid_t tid);

#endif /* SANDLOCK_PAUSE_H */
