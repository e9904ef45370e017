/*
 * proctree.c — the process tree from /proc: one /proc/<pid>/stat parser
 * and the count of a process's descendants.
 *
 * Used by the process-count builtin (builtins/procs.c) and by the
 * end-of-run sweep (run.c).  Descendants are found through the ppid links
 * in /proc/<pid>/stat; since the sandbox's init is a child subreaper,
 * every orphan of the sandbox is reparented to it and stays counted.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proctree.h"

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

int sl_count_tree_processes(pid_t root)
{
	struct link *v;
	size_t n, *idx, k;
	if (read_links(&v, &n) < 0)
		return -1;
	qsort(v, n, sizeof(*v), by_ppid);
	int rc = descendants(v, n, root, &idx, &k) < 0 ? -1 : (int)k;
	if (rc >= 0)
		free(idx);
	free(v);
	return rc;
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
