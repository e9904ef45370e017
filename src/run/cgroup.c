/*
 * cgroup.c — one cgroup v2 directory per run, used only as a kill switch.
 *
 * WHY: init (init.c) ends the sandbox's whole subtree, but a process that
 * kills init first (or a SIGKILL from outside) leaves its orphans to the
 * host's init, out of every process-group sweep once they called
 * setsid().  A cgroup contains every descendant whatever it does (the
 * sandbox cannot write cgroup files: Landlock grants no /sys/fs/cgroup
 * unless the caller does), and cgroup.kill (Linux 5.14) SIGKILLs all of
 * them at once.  No controller is needed, so a bare cgroup2 mount with no
 * delegation of controllers is enough, as long as the caller may create a
 * directory below its own cgroup (root, or a delegated subtree).
 *
 * Everything here fails silently: without a cgroup the run still has init
 * and the process-group sweep (README: "The sandbox's init").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "run/cgroup.h"
#include "run/proctree.h"
#include "util.h"

bool sl_cgroup_disabled;

/* Waiting for a killed cgroup to empty: attempts x 1 ms. */
#define SL_CG_EMPTY_ATTEMPTS 2000
/* A freeze waits at most this many ms for "frozen 1". */
#define SL_CG_FREEZE_ATTEMPTS 2000

/* The cgroup2 mount point and its root, from /proc/self/mountinfo. */
static bool find_mount(char *mnt, size_t mntsz, char *root, size_t rootsz)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		/* id parent maj:min root mountpoint opts... - fstype source opts */
		char r[1024], m[1024];
		const char *dash = strstr(line, " - ");
		if (!dash || strncmp(dash + 3, "cgroup2 ", 8) != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", r, m) != 2)
			continue;
		/* Paths with escaped characters (\040) are not ours to guess. */
		if (strchr(r, '\\') || strchr(m, '\\'))
			continue;
		found = snprintf(mnt, mntsz, "%s", m) < (int)mntsz &&
		        snprintf(root, rootsz, "%s", r) < (int)rootsz;
	}
	fclose(f);
	return found;
}

/* The cgroup v2 path of pid, 0: ours ("0::/path" in /proc/PID/cgroup). */
static bool pid_cgroup(pid_t pid, char *path, size_t sz)
{
	char file[64];
	if (pid)
		snprintf(file, sizeof file, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(pid ? file : "/proc/self/cgroup", "re");
	if (!f)
		return false;
	char line[4096];
	bool found = false;
	while (!found && fgets(line, sizeof line, f)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		found = snprintf(path, sz, "%s", line + 3) < (int)sz;
	}
	fclose(f);
	return found;
}

/* The directory of pid's cgroup (0: our own), opened. -1 if unknown. */
static int open_group_of(pid_t pid)
{
	char mnt[1024], root[1024], own[2048], dir[4096];
	if (!find_mount(mnt, sizeof mnt, root, sizeof root) || !pid_cgroup(pid, own, sizeof own))
		return -1;
	const char *rel = own;
	size_t rl = strlen(root);
	if (strcmp(root, "/") != 0) {
		/* A bind mount of a subtree: our path must lie inside it. */
		if (strncmp(own, root, rl) != 0 || (own[rl] != '/' && own[rl] != '\0'))
			return -1;
		rel = own + rl;
	}
	if (snprintf(dir, sizeof dir, "%s%s", mnt, rel) >= (int)sizeof dir)
		return -1;
	return sl_fd_high(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

static int write_str(int dirfd, const char *file, const char *s)
{
	int fd = openat(dirfd, file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	errno = e;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/*
 * Our own cgroup's directory, found once per process (parsing mountinfo
 * costs more than the mkdir): one fd kept open for the process's life.
 * -1 while unknown or when there is none.  "No permission to create" is
 * remembered too, so an unprivileged caller pays for the check once.
 */
static atomic_int parent_fd = -1;
static atomic_bool no_cgroup;

static int parent_dir(void)
{
	int fd = atomic_load(&parent_fd);
	if (fd >= 0)
		return fd;
	fd = open_group_of(0);
	if (fd < 0)
		return -1;
	int expected = -1;
	if (!atomic_compare_exchange_strong(&parent_fd, &expected, fd)) {
		close(fd); /* another thread was first */
		fd = expected;
	}
	return fd;
}

/* mkdir below our cgroup; re-resolves it once if it is gone (we moved). */
static int make_dir(const char *name)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int parent = parent_dir();
		if (parent < 0)
			return -1;
		if (mkdirat(parent, name, 0755) == 0)
			return parent;
		if (errno == EACCES || errno == EPERM || errno == EROFS) {
			atomic_store(&no_cgroup, true);
			return -1;
		}
		if (errno != ENOENT)
			return -1;
		int stale = parent;
		if (atomic_compare_exchange_strong(&parent_fd, &stale, -1))
			close(parent); /* runs in flight keep a valid dirfd of their own */
	}
	return -1;
}

/*
 * Groups left by a caller that was SIGKILLed (its sandbox died with it,
 * but nobody was left to remove the empty group): removed at the end of
 * every run of the same parent group (a long-lived caller, a Python
 * supervisor, keeps sweeping), after the run's own group is gone: off
 * the start-up path, and one listing of a directory that holds only the
 * runs in flight.  Only ours by name ("sandlock-PID-N"), only when PID
 * is gone, and rmdir refuses a group that still holds a process.
 */
static void sweep_stale(int parent)
{
	DIR *d = sl_fdopendir(openat(parent, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		int pid;
		unsigned n;
		char tail;
		if (sscanf(de->d_name, "sandlock-%d-%u%c", &pid, &n, &tail) != 2 || pid <= 0 ||
		    pid == (int)getpid())
			continue;
		if (kill(pid, 0) < 0 && errno == ESRCH)
			(void)unlinkat(parent, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int sl_cgroup_open_of(pid_t pid)
{
	return open_group_of(pid);
}

bool sl_cgroup_create(struct sl_cgroup *cg, pid_t below)
{
	static atomic_uint seq;
	cg->dirfd = cg->parentfd = cg->procs = -1;
	cg->name[0] = '\0';
	if (sl_cgroup_disabled || (!below && atomic_load(&no_cgroup)))
		return false;
	snprintf(cg->name, sizeof cg->name, "sandlock-%d-%u", (int)getpid(),
	         atomic_fetch_add(&seq, 1));
	int other = below ? open_group_of(below) : -1;
	int parent = !below ? make_dir(cg->name)
	             : other >= 0 && mkdirat(other, cg->name, 0755) == 0 ? other : -1;
	if (parent < 0) {
		if (other >= 0)
			close(other);
		cg->name[0] = '\0';
		return false;
	}
	cg->dirfd = sl_fd_high(openat(parent, cg->name, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	/* Our own handle on the parent: the shared one may be replaced. */
	cg->parentfd = sl_fd_high(fcntl(parent, F_DUPFD_CLOEXEC, 3));
	if (other >= 0)
		close(other);
	if (cg->parentfd < 0) {
		(void)unlinkat(parent, cg->name, AT_REMOVEDIR);
		cg->name[0] = '\0';
	}
	/* Without cgroup.kill (Linux < 5.14) the cgroup is of no use. */
	if (cg->dirfd >= 0)
		cg->procs = sl_fd_high(openat(cg->dirfd, "cgroup.procs", O_WRONLY | O_CLOEXEC));
	if (cg->procs < 0 || faccessat(cg->dirfd, "cgroup.kill", W_OK, 0) < 0) {
		sl_cgroup_destroy(cg);
		return false;
	}
	return true;
}

/* "populated 0" in cgroup.events: no live process left. */
static bool empty(int dirfd)
{
	int fd = openat(dirfd, "cgroup.events", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* gone or unreadable: nothing more we can do */
	char buf[256];
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = '\0';
	return strstr(buf, "populated 0") != NULL;
}

bool sl_cgroup_adopt(struct sl_cgroup *cg, const char *path)
{
	cg->dirfd = cg->parentfd = cg->procs = -1;
	cg->name[0] = '\0';
	if (!path)
		return false;
	cg->dirfd = sl_fd_high(open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (cg->dirfd >= 0 && faccessat(cg->dirfd, "cgroup.kill", W_OK, 0) == 0)
		return true; /* v1 groups have no cgroup.kill */
	sl_cgroup_destroy(cg);
	return false;
}

bool sl_cgroup_confirm(struct sl_cgroup *cg)
{
	if (cg->dirfd < 0)
		return false;
	if (!empty(cg->dirfd))
		return true;
	sl_cgroup_destroy(cg);
	return false;
}

void sl_cgroup_kill(struct sl_cgroup *cg)
{
	if (cg->dirfd < 0)
		return;
	if (empty(cg->dirfd))
		return;
	(void)write_str(cg->dirfd, "cgroup.kill", "1");
	const struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < SL_CG_EMPTY_ATTEMPTS && !empty(cg->dirfd); i++)
		nanosleep(&ms, NULL);
}

void sl_cgroup_destroy(struct sl_cgroup *cg)
{
	if (cg->procs >= 0) {
		close(cg->procs);
		cg->procs = -1;
	}
	if (cg->dirfd >= 0) {
		sl_cgroup_kill(cg);
		close(cg->dirfd);
		cg->dirfd = -1;
	}
	if (cg->parentfd >= 0) {
		/* EBUSY only if a process would not die: then it is left behind. */
		if (cg->name[0]) {
			(void)unlinkat(cg->parentfd, cg->name, AT_REMOVEDIR);
			sweep_stale(cg->parentfd);
		}
		close(cg->parentfd);
		cg->parentfd = -1;
	}
	cg->name[0] = '\0';
}

/*
 * The v2 freezer (pause.c's first choice).  WHY a freezer rather than
 * SIGSTOP: a frozen task cannot notice it (no SIGCHLD to its parent, no
 * job-control state a guest can see or undo with SIGCONT), and the whole
 * group stops at once, however fast it forks.  cgroup.freeze exists in
 * every non-root v2 group, controllers or not.
 */
static bool cgroup_frozen(int dirfd)
{
	char buf[256];
	return sl_read_small_at(dirfd, "cgroup.events", buf, sizeof buf) > 0 &&
	       strstr(buf, "frozen 1") != NULL;
}

int sl_cgroup_freeze(const struct sl_cgroup *cg, bool freeze)
{
	if (cg->dirfd < 0 || faccessat(cg->dirfd, "cgroup.freeze", W_OK, 0) < 0) {
		errno = ENOTSUP;
		return -1;
	}
	if (write_str(cg->dirfd, "cgroup.freeze", freeze ? "1" : "0") < 0)
		return -1;
	if (!freeze)
		return 0;
	/* Frozen only once every task has left the kernel (cgroup.events). */
	const struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < SL_CG_FREEZE_ATTEMPTS; i++) {
		if (cgroup_frozen(cg->dirfd))
			return 0;
		nanosleep(&ms, NULL);
	}
	(void)write_str(cg->dirfd, "cgroup.freeze", "0");
	errno = ETIMEDOUT;
	return -1;
}

/* ---- share_budget: the processes of a group and of the groups below ---- */

struct pidset {
	pid_t *v;
	size_t n, cap;
};

/* Add the pids of dirfd's cgroup.procs and, depth first, of its
 * sub-groups.  0 or -1. */
static int collect(int dirfd, struct pidset *s, int depth)
{
	if (depth > 16)
		return -1;
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "re") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	long pid;
	int rc = 0;
	while (rc == 0 && fscanf(f, "%ld", &pid) == 1) {
		if (s->n == s->cap) {
			size_t cap = s->cap ? 2 * s->cap : 64;
			pid_t *v = cap < (1u << 20) ? realloc(s->v, cap * sizeof *v) : NULL;
			if (!v) {
				rc = -1;
				break;
			}
			s->v = v;
			s->cap = cap;
		}
		s->v[s->n++] = (pid_t)pid;
	}
	fclose(f);
	DIR *d = rc ? NULL : sl_fdopendir(openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *de;
	while (d && rc == 0 && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		/* A group removed meanwhile is simply empty. */
		rc = sub < 0 ? 0 : collect(sub, s, depth + 1);
		if (sub >= 0)
			close(sub);
	}
	if (d)
		closedir(d);
	return rc;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

int sl_cgroup_count_processes(int dirfd)
{
	struct pidset s = { 0 };
	if (collect(dirfd, &s, 0) < 0) {
		free(s.v);
		return -1;
	}
	qsort(s.v, s.n, sizeof *s.v, cmp_pid);
	int count = 0;
	for (size_t i = 0; i < s.n; i++) {
		char name[32], state;
		long ppid, pgrp;
		snprintf(name, sizeof name, "/proc/%d", (int)s.v[i]);
		if (!sl_proc_stat(AT_FDCWD, name, &state, &ppid, &pgrp))
			continue; /* gone meanwhile */
		/* An init's parent (its supervisor) lies outside: not counted. */
		pid_t pp = (pid_t)ppid;
		if (bsearch(&pp, s.v, s.n, sizeof *s.v, cmp_pid))
			count++;
	}
	free(s.v);
	return count;
}

bool sl_cgroup_has_children(int dirfd)
{
	/* kernfs keeps a directory's link count at 2 + its sub-groups: one
	 * fstat per fork (procs.c asks on every fork of a run with a group). */
	struct stat st;
	if (fstat(dirfd, &st) == 0 && st.st_nlink >= 2)
		return st.st_nlink > 2;
	DIR *d = sl_fdopendir(openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	struct dirent *de;
	bool any = false;
	while (d && !any && (de = readdir(d)))
		any = de->d_type == DT_DIR && de->d_name[0] != '.';
	if (d)
		closedir(d);
	return any;
}
