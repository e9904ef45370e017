/*
 * builtin_procs.c — the max_processes builtin.
 *
 * fork, vfork and clone are trapped when cfg->max_processes > 0; before a
 * new process is created we count the live processes of the sandboxed
 * command and refuse with EAGAIN (what fork returns at RLIMIT_NPROC) once
 * the limit is reached.
 *
 * "The command's processes" are the descendants of the sandbox's init
 * (init.c), init itself excluded: the command and everything it started,
 * so max_processes N means what it always meant (the command counts as
 * one).  They are found through the ppid links in /proc/<pid>/stat.  Since
 * init is a child subreaper, every orphan of the sandbox is reparented to
 * it: a process that leaves the process group (setsid, setpgid) or whose
 * parent died stays in the count.
 *
 * The limit is still SOFT: the count can race with a concurrent fork (two
 * forks may both see N-1).  A hard limit needs cgroup v2 pids.max, which
 * this host does not offer (cgroup v1 only).  clone3 never reaches us:
 * the filter answers it with ENOSYS so libc falls back to clone, whose
 * flags are visible.
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

/* One process: its pid and its parent's. */
struct link {
	pid_t pid, ppid;
};

bool sl_proc_stat(int procfd, const char *pid, char *state, long *ppid, long *pgrp)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "%s/stat", pid);
	int fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* comm may contain spaces and ')': parse after the LAST ')'. */
	char *p = strrchr(buf, ')');
	return p && sscanf(p + 1, " %c %ld %ld", state, ppid, pgrp) == 3;
}

/* Every process's (pid, ppid), sorted by ppid.  -1 on error. */
static int read_links(struct link **out, size_t *nout)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	struct link *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d)) != NULL) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char state;
		long ppid, pgrp;
		if (!sl_proc_stat(dirfd(d), de->d_name, &state, &ppid, &pgrp))
			continue; /* exited meanwhile */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			struct link *nv = realloc(v, ncap * sizeof(*nv));
			if (!nv) {
				rc = -1;
				break;
			}
			v = nv;
			cap = ncap;
		}
		v[n++] = (struct link){ (pid_t)atol(de->d_name), (pid_t)ppid };
	}
	closedir(d);
	if (rc < 0) {
		free(v);
		return -1;
	}
	*out = v;
	*nout = n;
	return 0;
}

static int by_ppid(const void *a, const void *b)
{
	pid_t x = ((const struct link *)a)->ppid, y = ((const struct link *)b)->ppid;
	return (x > y) - (x < y);
}

/* Index of the first link whose ppid is ppid (== n if none). */
static size_t first_child(const struct link *v, size_t n, pid_t ppid)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].ppid < ppid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int sl_count_tree_processes(pid_t root)
{
	struct link *v;
	size_t n;
	if (read_links(&v, &n) < 0)
		return -1;
	qsort(v, n, sizeof(*v), by_ppid);
	/* Breadth-first from root; the queue holds pids found so far.  A
	 * process is listed once in /proc, so at most n are ever queued
	 * (a snapshot taken while pids are recycled cannot loop us). */
	pid_t *queue = malloc((n + 1) * sizeof(*queue));
	if (!queue) {
		free(v);
		return -1;
	}
	size_t head = 0, tail = 0;
	queue[tail++] = root;
	while (head < tail) {
		pid_t p = queue[head++];
		for (size_t i = first_child(v, n, p); i < n && v[i].ppid == p && tail <= n; i++)
			queue[tail++] = v[i].pid;
	}
	free(queue);
	free(v);
	return (int)(tail - 1);
}

int sl_procs_check(const struct sl_supervisor *s, const sandlock_notif_t *n)
{
	if (s->max_processes == 0 || !sl_procs_is_fork_like(n->syscall_nr))
		return 0;
	/* A thread is not a process: pthread_create uses clone(CLONE_THREAD). */
	if (n->syscall_nr == __NR_clone && (n->args[0] & CLONE_THREAD))
		return 0;
	int count = sl_count_tree_processes(s->pgid); /* s->pgid is init's pid */
	if (count < 0)
		return EAGAIN; /* cannot count: fail closed */
	return (uint32_t)count >= s->max_processes ? EAGAIN : 0;
}
