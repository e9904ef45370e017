/*
 * proctree.c — the process tree from /proc: one /proc/<pid>/stat parser
 * and the count of a process's descendants.
 *
 * Used by the process-count builtin (builtins/procs.c), the fork keeper's
 * kill sweep (fork_child.c) and by the end-of-run sweep (run.c).  The
 * count walks down the children files; the lists scan every
 * /proc/<pid>/stat for ppid links.  Since the sandbox's init is a child
 * subreaper, every orphan of the sandbox is reparented to it and stays
 * counted.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/proctree.h"

/* One process: its pid and its parent's. */
struct link {
	pid_t pid, ppid;
	char state;
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
		v[n++] = (struct link){ (pid_t)atol(de->d_name), (pid_t)ppid, state };
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

/*
 * Breadth-first from root over links sorted by ppid: indexes into v of
 * root's descendants, in *out (malloc'd).  A process is listed once in
 * /proc, so at most n are ever queued (a snapshot taken while pids are
 * recycled cannot loop us).  -1 on OOM.
 */
static int descendants(const struct link *v, size_t n, pid_t root, size_t **out, size_t *nout)
{
	size_t *queue = malloc((n + 1) * sizeof(*queue));
	if (!queue)
		return -1;
	size_t tail = 0;
	for (size_t i = first_child(v, n, root); i < n && v[i].ppid == root; i++)
		queue[tail++] = i;
	for (size_t head = 0; head < tail; head++) {
		pid_t p = v[queue[head]].pid;
		for (size_t i = first_child(v, n, p); i < n && v[i].ppid == p && tail < n; i++)
			queue[tail++] = i;
	}
	*out = queue;
	*nout = tail;
	return 0;
}

int sl_pidvec_push(struct sl_pidvec *pv, pid_t p)
{
	if (pv->n == pv->cap) {
		size_t cap = pv->cap ? pv->cap * 2 : 64;
		pid_t *v = realloc(pv->v, cap * sizeof(*v));
		if (!v)
			return -1;
		pv->v = v;
		pv->cap = cap;
	}
	pv->v[pv->n++] = p;
	return 0;
}

/* Parse the pids of one children file (space-separated) onto out. */
static int push_children(int fd, struct sl_pidvec *out)
{
	char buf[4096];
	size_t have = 0;
	for (;;) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		/* Every complete number (followed by a space) is taken; a partial
		 * one at the end of the buffer waits for the next read. */
		char *p = buf, *end;
		for (long v; (v = strtol(p, &end, 10)), end != p && (*end == ' ' || n == 0);) {
			if (v > 0 && sl_pidvec_push(out, (pid_t)v) < 0)
				return -1;
			p = end;
		}
		if (n == 0)
			return 0;
		have = strlen(p);
		memmove(buf, p, have);
		if (have == sizeof(buf) - 1)
			return -1; /* no number is that long */
	}
}

int sl_proc_children(pid_t pid, struct sl_pidvec *out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT || errno == ESRCH ? 0 : -1; /* gone: no children */
	int rc = 0;
	for (struct dirent *e; rc == 0 && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%.16s/children", e->d_name);
		int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* the thread exited meanwhile */
		rc = push_children(fd, out);
		close(fd);
	}
	closedir(d);
	return rc;
}

/*
 * Walked down from root through /proc/PID/task/TID/children, so the cost
 * is the sandbox's processes, not the host's (a scan of every
 * /proc/PID/stat cost ~2 ms per fork on a host of 100 processes, paid
 * by every fork of a build).  Bounded: a pid recycled during the walk
 * cannot make it loop.
 */
int sl_count_tree_processes(pid_t root)
{
	enum { BOUND = 1 << 16 };
	struct sl_pidvec todo = { 0 };
	int count = 0, rc = sl_proc_children(root, &todo);
	while (rc == 0 && todo.n && count < BOUND) {
		pid_t p = todo.v[--todo.n];
		count++;
		rc = sl_proc_children(p, &todo);
	}
	free(todo.v);
	return rc < 0 ? -1 : count;
}

int sl_tree_list(pid_t root, struct sl_proc *out, size_t max)
{
	struct link *v;
	size_t n, *idx, k;
	if (read_links(&v, &n) < 0)
		return -1;
	qsort(v, n, sizeof(*v), by_ppid);
	if (descendants(v, n, root, &idx, &k) < 0) {
		free(v);
		return -1;
	}
	size_t m = k < max ? k : max;
	for (size_t i = 0; i < m; i++)
		out[i] = (struct sl_proc){ v[idx[i]].pid, v[idx[i]].ppid, v[idx[i]].state };
	free(idx);
	free(v);
	return (int)k;
}

/* Does process pid have an fd whose link is want ("socket:[ino]")? */
static bool pid_holds(pid_t pid, const char *want)
{
	char path[48];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool found = false;
	size_t wl = strlen(want);
	for (struct dirent *e; !found && (e = readdir(d));) {
		char link[64];
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof link);
		found = n == (ssize_t)wl && memcmp(link, want, wl) == 0;
	}
	closedir(d);
	return found;
}

bool sl_pid_holds_socket(pid_t pid, unsigned long ino)
{
	char want[40];
	snprintf(want, sizeof want, "socket:[%lu]", ino);
	return pid_holds(pid, want);
}

bool sl_tree_holds_socket(pid_t root, unsigned long ino)
{
	enum { MAX = 4096 };
	struct sl_proc *v = malloc(MAX * sizeof(*v));
	if (!v)
		return false;
	int n = sl_tree_list(root, v, MAX);
	char want[40];
	snprintf(want, sizeof want, "socket:[%lu]", ino);
	bool found = false;
	for (int i = 0; !found && i < n && i < MAX; i++)
		found = pid_holds(v[i].pid, want);
	free(v);
	return found;
}
