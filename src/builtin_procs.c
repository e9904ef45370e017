/*
 * builtin_procs.c — the max_processes builtin.
 *
 * fork, vfork and clone are trapped when cfg->max_processes > 0; before a
 * new process is created we count the live processes in the sandbox's
 * process group and refuse with EAGAIN (what fork returns at RLIMIT_NPROC)
 * once the limit is reached.
 *
 * This limit is SOFT: a process that leaves the group (setpgid/setsid)
 * is no longer counted, and the count can race with a concurrent fork.
 * A hard limit needs cgroup v2 pids.max, which this host does not offer
 * (cgroup v1 only), so the supervisor count is all we have here.
 * clone3 never reaches us: the filter answers it with ENOSYS so libc falls
 * back to clone, whose flags are visible.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "supervisor.h"

bool sl_procs_is_fork_like(int nr)
{
	return nr == __NR_fork || nr == __NR_vfork || nr == __NR_clone;
}

/* The pgrp field of /proc/<pid>/stat, or -1.  The comm field may contain
 * spaces and ')' so parsing starts after the LAST ')'. */
static long stat_pgrp(int dirfd, const char *pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "%s/stat", pid);
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* ") S ppid pgrp ..." */
	char state;
	long ppid, pgrp;
	if (sscanf(p + 1, " %c %ld %ld", &state, &ppid, &pgrp) != 3)
		return -1;
	return pgrp;
}

int sl_count_group_processes(pid_t pgid)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int count = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (stat_pgrp(dirfd(d), de->d_name) == (long)pgid)
			count++;
	}
	closedir(d);
	return count;
}

int sl_procs_check(const struct sl_supervisor *s, const sandlock_notif_t *n)
{
	if (s->max_processes == 0 || !sl_procs_is_fork_like(n->syscall_nr))
		return 0;
	/* A thread is not a process: pthread_create uses clone(CLONE_THREAD). */
	if (n->syscall_nr == __NR_clone && (n->args[0] & CLONE_THREAD))
		return 0;
	int count = sl_count_group_processes(s->pgid);
	if (count < 0)
		return EAGAIN; /* cannot count: fail closed */
	return (uint32_t)count >= s->max_processes ? EAGAIN : 0;
}
