/*
 * sockadopt.c — the sockets we keep for the guest (sockadopt.h):
 * a small table of (inode, our fd), looked up by the inode the caller's
 * fd links to, swept against the sockets the sandbox's processes hold.
 * Used under the dispatcher's builtin lock (netdest), so unlocked here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/sockadopt.h"
#include "net/sockremake.h"
#include "run/proctree.h"
#include "util.h"

#define MIN_SWEEP 16    /* no sweep below this many sockets */
#define MAX_PROCS 4096  /* processes of the sandbox a sweep looks at */
/* Sockets kept at most: each is an fd of the supervisor, whose own limit
 * may be a container's 1024.  Past it a socket is not kept (its later
 * calls are refused, fail closed). */
#define MAX_KEPT 512
/* While a stream socket is kept, a sweep this long after its keeping,
 * then at twice the gap each time one drops nothing (up to MAX_GAP_MS):
 * the port of one the guest closed before its listen is free again
 * soon, and a socket kept a long while costs a sweep a second or so. */
#define MIN_GAP_MS 100
#define MAX_GAP_MS 1600

struct kept {
	unsigned long ino;
	int fd;
	bool held;   /* a sweep's mark */
	bool stream; /* kept only until its listen or connect */
};

struct sl_adopted {
	struct kept *v;
	size_t n, cap;
	size_t sweep_at; /* sweep when n reaches this */
	size_t nstream;  /* stream sockets among them */
	int64_t due_ms;  /* while nstream: the next timed sweep (sl_now_ms) */
	int64_t gap_ms;
};

struct sl_adopted *sl_adopted_new(void)
{
	struct sl_adopted *t = calloc(1, sizeof(*t));
	if (t)
		t->sweep_at = MIN_SWEEP;
	return t;
}

void sl_adopted_free(struct sl_adopted *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++)
		close(t->v[i].fd);
	free(t->v);
	free(t);
}

bool sl_adopted_kind(const struct sl_sockinfo *si)
{
	return si->type == SOCK_DGRAM || si->domain == AF_NETLINK; /* netlink: SOCK_RAW too */
}

static struct kept *find(struct sl_adopted *t, unsigned long ino)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].ino == ino)
			return &t->v[i];
	return NULL;
}

int sl_adopted_get(struct sl_adopted *t, int listener, const sandlock_notif_t *n, int num)
{
	if (!t->n)
		return -ENOENT;
	unsigned long ino = 0;
	int e = sl_sock_inode(listener, n, num, &ino);
	if (e)
		return e == ENOTSOCK ? -ENOTSOCK : -e;
	struct kept *k = find(t, ino);
	if (!k)
		return -ENOENT;
	int fd = fcntl(k->fd, F_DUPFD_CLOEXEC, 3);
	return fd < 0 ? -errno : fd;
}

/* Mark the kept sockets process pid holds (its /proc/PID/fd links). */
static void mark_held(struct sl_adopted *t, pid_t pid)
{
	char path[40];
	snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		char link[64];
		ssize_t len = readlinkat(dirfd(d), de->d_name, link, sizeof link - 1);
		unsigned long ino;
		if (len <= 0)
			continue;
		link[len] = '\0';
		struct kept *k = sscanf(link, "socket:[%lu]", &ino) == 1 ? find(t, ino) : NULL;
		if (k)
			k->held = true;
	}
	closedir(d);
}

size_t sl_adopted_sweep(struct sl_adopted *t, pid_t init)
{
	struct sl_proc *procs = malloc(MAX_PROCS * sizeof(*procs));
	if (!procs)
		return 0; /* nothing dropped: kept a while longer */
	int np = sl_tree_list(init, procs, MAX_PROCS);
	for (size_t i = 0; i < t->n; i++)
		t->v[i].held = np < 0; /* cannot tell: keep them all */
	for (int i = 0; i < np && i < MAX_PROCS; i++)
		mark_held(t, procs[i].pid);
	free(procs);
	size_t kept = 0, dropped = 0;
	for (size_t i = 0; i < t->n; i++) {
		if (t->v[i].held) {
			t->v[kept++] = t->v[i];
		} else {
			close(t->v[i].fd);
			t->nstream -= t->v[i].stream;
			dropped++;
		}
	}
	t->n = kept;
	t->sweep_at = kept * 2 > MIN_SWEEP ? kept * 2 : MIN_SWEEP;
	return dropped;
}

void sl_adopted_forget(struct sl_adopted *t, int fd)
{
	struct stat st;
	struct kept *k = fstat(fd, &st) == 0 ? find(t, (unsigned long)st.st_ino) : NULL;
	if (!k)
		return;
	close(k->fd);
	t->nstream -= k->stream;
	*k = t->v[--t->n];
}

int sl_adopted_expire(struct sl_adopted *t, pid_t init)
{
	if (!t || !t->nstream)
		return -1;
	int64_t now = sl_now_ms();
	if (now >= t->due_ms) {
		size_t dropped = sl_adopted_sweep(t, init);
		int64_t twice = t->gap_ms * 2;
		t->gap_ms = dropped ? MIN_GAP_MS : twice < MAX_GAP_MS ? twice : MAX_GAP_MS;
		t->due_ms = now + t->gap_ms;
		if (!t->nstream)
			return -1;
	}
	return (int)(t->due_ms - now);
}

int sl_adopted_add(struct sl_adopted *t, int fd, pid_t init)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (t->n >= t->sweep_at || t->n >= MAX_KEPT)
		sl_adopted_sweep(t, init);
	if (t->n >= MAX_KEPT)
		return -EMFILE;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct kept *v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	struct sl_sockinfo si;
	int e = sl_sd_sockinfo(fd, &si);
	if (e)
		return -e;
	int dup = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (dup < 0)
		return -errno;
	bool stream = !sl_adopted_kind(&si);
	t->v[t->n++] = (struct kept){ (unsigned long)st.st_ino, dup, false, stream };
	if (stream) { /* swept soon, should the guest close it before its listen */
		t->nstream++;
		t->gap_ms = MIN_GAP_MS;
		t->due_ms = sl_now_ms() + MIN_GAP_MS;
	}
	return 0;
}
