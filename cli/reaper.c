/*
 * reaper.c — no process of the sandbox outlives `sandlock run`.
 *
 * The sandbox's init ends its whole subtree, and where the library can
 * make a cgroup, cgroup.kill sweeps whatever init missed.  Without a
 * cgroup (an unprivileged caller, no delegation) an init that died early
 * (an outside SIGKILL, a limit) orphans the sandbox's processes, and one
 * that called setsid() is out of reach of the process-group sweep.  So
 * the command makes itself a child subreaper: those orphans are
 * reparented to it instead of the host's init, and after the run it kills
 * and reaps every process still below it.  The library cannot do this
 * for its callers: turning an arbitrary program into a subreaper changes
 * what its own children's orphans do, so only this command, which has no
 * other children, does it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "reaper.h"

/* Rounds of "kill our children, reap, wait 1 ms": each round ends at least
 * one level of the tree (a SIGKILLed process cannot fork). */
#define REAP_ROUNDS 5000

int cli_reaper_install(void)
{
	return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

/* SIGKILL the children listed in one /proc/self/task/TID/children file. */
static void kill_listed(int dirfd, const char *tid)
{
	char path[300]; /* a d_name is at most 255 bytes */
	snprintf(path, sizeof path, "%s/children", tid);
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	FILE *f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return;
	}
	long pid;
	/* Our unreaped children: their pids cannot have been reused. */
	while (fscanf(f, "%ld", &pid) == 1)
		if (pid > 1)
			kill((pid_t)pid, SIGKILL);
	fclose(f);
}

/* SIGKILL every child of every thread of ours (orphans are reparented to
 * a thread of the subreaper).  False if /proc cannot be read. */
static bool kill_children(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return false;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			kill_listed(dirfd(d), e->d_name);
	closedir(d);
	return true;
}

/* Reap what has exited.  True while children remain. */
static bool reap_exited(void)
{
	for (;;) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);
		if (pid > 0)
			continue;
		if (pid < 0 && errno == EINTR)
			continue;
		return !(pid < 0 && errno == ECHILD);
	}
}

void cli_reaper_sweep(void)
{
	const struct timespec ms = { 0, 1000000 };
	for (int round = 0; round < REAP_ROUNDS && reap_exited(); round++) {
		if (!kill_children())
			return; /* no /proc: nothing to name them by */
		nanosleep(&ms, NULL);
	}
}
