/*
 * pause.c — pause/resume of a whole sandbox by signals.
 *
 * The sandbox's processes are exactly init's descendants: init is a child
 * subreaper, so an orphan is reparented to it and stays in the tree.  A
 * signal goes through a pidfd opened before the process's parent is
 * checked again, so a pid recycled between the /proc scan and the signal
 * is never hit: once the pidfd is open it names one process for good, and
 * that process's parent is still the one the scan saw.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pause.h"
#include "proctree.h"

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
