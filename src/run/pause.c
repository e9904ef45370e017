/*
 * pause.c — pause/resume of a whole sandbox by signals: the fallback of
 * a run without a cgroup v2 group (run.c freezes that group first,
 * cgroup.c), the CPU throttle's stops, and policy_fn's per-thread freeze.
 *
 * The sandbox's processes are exactly init's descendants: init is a child
 * subreaper, so an orphan is reparented to it and stays in the tree.  A
 * signal goes through a pidfd opened before the process's parent is
 * checked again, so a pid recycled between the /proc scan and the signal
 * is never hit: once the pidfd is open it names one process for good, and
 * that process's parent is still the one the scan saw.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "run/pause.h"
#include "run/proctree.h"

bool sl_pause_freezer = true;

/* A scan lists at most this many processes (max_processes is far lower). */
#define SL_PAUSE_MAX_PROCS 4096
/* Rounds of scan + SIGSTOP until everything is seen stopped (x 1 ms). */
#define SL_PAUSE_ROUNDS 2000

/* Is pid still a child of ppid?  (/proc/PID/stat, after the pidfd exists) */
static bool parent_is(pid_t pid, pid_t ppid)
{
	char name[24], state;
	long pp, pgrp;
	snprintf(name, sizeof name, "%d", (int)pid);
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return false;
	bool ok = sl_proc_stat(procfd, name, &state, &pp, &pgrp) && pp == (long)ppid;
	close(procfd);
	return ok;
}

static void signal_one(const struct sl_proc *p, int sig)
{
	int pfd = (int)syscall(__NR_pidfd_open, p->pid, 0);
	if (pfd < 0)
		return; /* gone */
	if (parent_is(p->pid, p->ppid))
		(void)syscall(__NR_pidfd_send_signal, pfd, sig, NULL, 0);
	close(pfd);
}

/* 'T' stopped, 't' traced, dead ones; 'D' takes the stop when it wakes
 * (uninterruptible sleep uses no CPU meanwhile). */
static bool settled(char state)
{
	return state == 'T' || state == 't' || state == 'Z' || state == 'X' || state == 'D';
}

int sl_pause_tree(pid_t init, bool stop)
{
	struct sl_proc *v = malloc(SL_PAUSE_MAX_PROCS * sizeof(*v));
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	int rc = -1;
	for (int round = 0; round < SL_PAUSE_ROUNDS; round++) {
		int n = sl_tree_list(init, v, SL_PAUSE_MAX_PROCS);
		if (n < 0 || n > SL_PAUSE_MAX_PROCS) {
			errno = n < 0 ? EIO : E2BIG;
			break;
		}
		bool all = true;
		for (int i = 0; i < n; i++) {
			if (!stop) {
				signal_one(&v[i], SIGCONT);
				continue;
			}
			if (settled(v[i].state))
				continue;
			all = false;
			signal_one(&v[i], SIGSTOP);
		}
		if (!stop || all) {
			rc = 0;
			break;
		}
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	if (rc < 0 && errno == 0)
		errno = ETIMEDOUT;
	free(v);
	return rc;
}

void sl_kill_tree(pid_t init, pid_t spare)
{
	struct sl_proc *v = malloc(SL_PAUSE_MAX_PROCS * sizeof(*v));
	int n = v ? sl_tree_list(init, v, SL_PAUSE_MAX_PROCS) : -1;
	for (int i = 0; i < n && i < SL_PAUSE_MAX_PROCS; i++)
		if (v[i].pid != spare)
			signal_one(&v[i], SIGKILL);
	free(v);
}

/* ---------------- freezing around one trapped call ---------------- */

/* Rounds of scan + SIGSTOP of a freeze (x 100 us: at most 1 s), and of
 * waiting for an exec to leave the kernel's argument copy (x 100 us). */
#define SL_FREEZE_ROUNDS 10000
#define SL_FREEZE_LEFT_ROUNDS 20000

static bool freeze_has(const struct sl_freeze *f, pid_t pid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->pids[i] == pid)
			return true;
	return false;
}

static int freeze_add(struct sl_freeze *f, pid_t pid)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		pid_t *v = realloc(f->pids, cap * sizeof(*v));
		if (!v)
			return -1;
		f->pids = v;
		f->cap = cap;
	}
	f->pids[f->n++] = pid;
	return 0;
}

/*
 * A process-directed SIGSTOP is handed to one thread, which may sit in a
 * seccomp wait (the caller) or a sleep that does not end: the stop then
 * starts only when that thread wakes.  Poking each unsettled thread
 * directly makes it take the group stop now.  A thread pidfd (Linux 6.9)
 * names exactly that thread; tgkill checks the thread belongs to pid.
 */
static void stop_thread(pid_t pid, pid_t tid)
{
	int tfd = (int)syscall(__NR_pidfd_open, tid, PIDFD_THREAD);
	if (tfd >= 0) {
		(void)syscall(__NR_pidfd_send_signal, tfd, SIGSTOP, NULL, 0);
		close(tfd);
		return;
	}
	(void)syscall(__NR_tgkill, pid, tid, SIGSTOP);
}

/* Is every thread of process pid but except settled?  Threads are what
 * share memory: a stopped process whose sibling thread still runs could
 * still rewrite what we read. */
static bool threads_settled(int procfd, pid_t pid, pid_t except)
{
	char dir[48];
	snprintf(dir, sizeof dir, "%d/task", (int)pid);
	int dfd = openat(procfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return true; /* gone */
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return false;
	}
	bool all = true;
	struct dirent *de;
	while (all && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || atoi(de->d_name) == (int)except)
			continue;
		char name[320], state;
		long pp, pg;
		snprintf(name, sizeof name, "%s/%s", dir, de->d_name);
		if (sl_proc_stat(procfd, name, &state, &pp, &pg) && !settled(state)) {
			all = false;
			stop_thread(pid, (pid_t)atoi(de->d_name));
		}
	}
	closedir(d);
	return all;
}

/* One round: stop what is new, report whether every thread is settled. */
static int freeze_round(int procfd, pid_t init, pid_t except, struct sl_freeze *f,
                        struct sl_proc *v, bool *all)
{
	int n = sl_tree_list(init, v, SL_PAUSE_MAX_PROCS);
	if (n < 0 || n > SL_PAUSE_MAX_PROCS) {
		errno = n < 0 ? EIO : E2BIG;
		return -1;
	}
	*all = true;
	for (int i = 0; i < n; i++) {
		if (!freeze_has(f, v[i].pid)) {
			if (freeze_add(f, v[i].pid) < 0) {
				errno = ENOMEM;
				return -1;
			}
			signal_one(&v[i], SIGSTOP);
			*all = false; /* look again after it had time to stop */
		} else if (*all && !threads_settled(procfd, v[i].pid, except)) {
			*all = false;
		}
	}
	return 0;
}

int sl_freeze_except(pid_t init, pid_t except, struct sl_freeze *f)
{
	struct sl_proc *v = malloc(SL_PAUSE_MAX_PROCS * sizeof(*v));
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = -1;
	errno = ETIMEDOUT;
	for (int round = 0; v && procfd >= 0 && round < SL_FREEZE_ROUNDS; round++) {
		bool all;
		if (freeze_round(procfd, init, except, f, v, &all) < 0)
			break;
		if (all) {
			rc = 0;
			break;
		}
		struct timespec t = { 0, 100000 };
		nanosleep(&t, NULL);
	}
	if (!v || procfd < 0)
		errno = ENOMEM;
	if (procfd >= 0)
		close(procfd);
	free(v);
	return rc;
}

void sl_freeze_thaw(struct sl_freeze *f)
{
	for (size_t i = 0; i < f->n; i++) {
		/* The pid is ours until init reaps it, and init is blocked by
		 * nothing we do; a process that died meanwhile cannot have been
		 * replaced by an unrelated one while the run's reaper is init.
		 * Still, go through a pidfd so a recycled pid is never hit. */
		int pfd = (int)syscall(__NR_pidfd_open, f->pids[i], 0);
		if (pfd >= 0) {
			(void)syscall(__NR_pidfd_send_signal, pfd, SIGCONT, NULL, 0);
			close(pfd);
		}
	}
	free(f->pids);
	f->pids = NULL;
	f->n = f->cap = 0;
}

/* State letter of thread tid of process tgid, or 0 when gone. */
static char thread_state(pid_t tgid, pid_t tid)
{
	char name[48], state;
	long pp, pg;
	snprintf(name, sizeof name, "%d/task/%d", (int)tgid, (int)tid);
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (procfd < 0)
		return 0;
	bool ok = sl_proc_stat(procfd, name, &state, &pp, &pg);
	close(procfd);
	return ok ? state : 0;
}

void sl_freeze_wait_stopped(pid_t tgid, pid_t tid)
{
	for (int round = 0; round < SL_FREEZE_LEFT_ROUNDS; round++) {
		char st = thread_state(tgid, tid);
		/* An exec by a non-leader thread takes the leader's pid. */
		if (!st && tid != tgid)
			st = thread_state(tgid, tgid);
		if (!st || st == 'T' || st == 't' || st == 'Z' || st == 'X')
			return;
		struct timespec t = { 0, 100000 };
		nanosleep(&t, NULL);
	}
}
