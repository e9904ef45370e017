/*
 * childfd.c — a trapped process's pidfd, fds, cwd and /proc directory.
 *
 * The order is always: open the object (which pins the task or file),
 * then confirm with NOTIF_ID_VALID that the notification is still
 * pending — only then does the pid certainly still name the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "supervisor/childmem.h"
#include "compat.h"
#include "launch/mechs.h"
#include "util.h"

/* Close fd and fail with ESRCH unless n is still pending. */
static int confirmed(int listener, const sandlock_notif_t *n, int fd)
{
	if (fd < 0)
		return fd;
	if (!sl_notif_valid(listener, n->id)) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

static int neg_errno(void)
{
	return errno ? -errno : -EIO;
}

int sl_child_pidfd(int listener, const sandlock_notif_t *n)
{
	int pfd = (int)syscall(__NR_pidfd_open, (pid_t)n->pid, 0);
	/* n->pid is a non-leader thread: kernels before 6.9 said EINVAL,
	 * later ones ENOENT.  A thread pidfd reaches the same fd table and
	 * memory, and its signals are aimed at that thread. */
	if (pfd < 0 && (errno == EINVAL || errno == ENOENT))
		pfd = (int)syscall(__NR_pidfd_open, (pid_t)n->pid, PIDFD_THREAD);
	return confirmed(listener, n, pfd < 0 ? neg_errno() : pfd);
}

int sl_child_getfd(int listener, const sandlock_notif_t *n, int fd)
{
	if (fd < 0)
		return -EBADF;
	/* Refused by this process's seccomp profile or Yama (mechs.h): the
	 * calls that need the caller's very object (its sockets) are refused
	 * as the kernel refuses an unpermitted call, whatever errno the
	 * profile would give. */
	if (!sl_mech_getfd())
		return -EPERM;
	int pfd = sl_child_pidfd(listener, n);
	if (pfd < 0)
		return pfd;
	/* pidfd_getfd sets close-on-exec on the duplicate. */
	int dup = (int)syscall(__NR_pidfd_getfd, pfd, fd, 0);
	int e = dup < 0 ? neg_errno() : dup;
	close(pfd);
	return confirmed(listener, n, e);
}

int sl_child_fdinfo(pid_t pid, int num, int64_t *pos, int *flags)
{
	char p[48], buf[512];
	snprintf(p, sizeof p, "/proc/%d/fdinfo/%d", (int)pid, num);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -EBADF : neg_errno();
	ssize_t len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return -EBADF;
	buf[len] = '\0';
	unsigned fl = 0;
	if (sscanf(buf, "pos: %" SCNd64 " flags: %o", pos, &fl) != 2)
		return -EIO;
	*flags = (int)fl;
	return 0;
}

/*
 * The reopen of sl_child_file: the file is pinned with O_PATH first
 * (sl_child_dirfd: confirmed the caller's), its type checked on that
 * very file, and reopened through our own /proc/self/fd link with the
 * caller's access mode and status flags.
 */
static int reopen(int listener, const sandlock_notif_t *n, int num, struct sl_child_file *f)
{
	int64_t pos = 0;
	int flags = 0;
	int e = sl_child_fdinfo((pid_t)n->pid, num, &pos, &flags);
	if (e < 0)
		return e;
	if (flags & O_PATH)
		return -EBADF; /* no getdents, no write on an O_PATH fd */
	int path = sl_child_dirfd(listener, n, num);
	if (path < 0)
		return path;
	struct stat st;
	if (fstat(path, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
		close(path); /* a pipe or device: reopening is not the same file */
		return -ENXIO;
	}
	char self[32];
	snprintf(self, sizeof self, "/proc/self/fd/%d", path);
	int keep = O_ACCMODE | O_APPEND | O_NONBLOCK | O_DIRECT | O_DSYNC | O_SYNC | O_DIRECTORY;
	int fd = open(self, (flags & keep) | O_CLOEXEC | O_NOCTTY);
	e = fd < 0 ? neg_errno() : 0;
	close(path);
	if (e)
		return e;
	if (lseek(fd, (off_t)pos, SEEK_SET) < 0) {
		e = neg_errno();
		close(fd);
		return e;
	}
	f->fd = fd;
	f->install = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	return 0;
}

int sl_child_file(int listener, const sandlock_notif_t *n, int num, struct sl_child_file *f)
{
	f->fd = -1;
	f->num = num;
	f->install = -1;
	if (num < 0)
		return -EBADF;
	if (sl_mech_getfd()) {
		f->fd = sl_child_getfd(listener, n, num);
		return f->fd < 0 ? f->fd : 0;
	}
	return reopen(listener, n, num, f);
}

int sl_child_file_done(int listener, const sandlock_notif_t *n, struct sl_child_file *f,
                       bool ok)
{
	int e = 0;
	if (ok && f->fd >= 0 && f->install >= 0) {
		struct seccomp_notif_addfd a = { .id = n->id,
			                             .flags = SECCOMP_ADDFD_FLAG_SETFD,
			                             .srcfd = (uint32_t)f->fd,
			                             .newfd = (uint32_t)f->num,
			                             .newfd_flags = (uint32_t)f->install };
		if (ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0)
			e = neg_errno();
	}
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	return e;
}

int sl_child_procdir(int listener, const sandlock_notif_t *n)
{
	char p[32];
	snprintf(p, sizeof p, "/proc/%u", n->pid);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return confirmed(listener, n, fd < 0 ? neg_errno() : fd);
}

/* The caller's /proc link for dirfd (its cwd for AT_FDCWD) into link;
 * false for a negative fd other than AT_FDCWD (EBADF). */
static bool dir_link(const sandlock_notif_t *n, int dirfd, char *link, size_t cap)
{
	if (dirfd == AT_FDCWD)
		snprintf(link, cap, "/proc/%u/cwd", n->pid);
	else if (dirfd >= 0)
		snprintf(link, cap, "/proc/%u/fd/%d", n->pid, dirfd);
	return dirfd == AT_FDCWD || dirfd >= 0;
}

/* The errno of a failed look at that link: a closed fd is EBADF. */
static int dir_link_errno(int dirfd)
{
	return errno == ENOENT && dirfd != AT_FDCWD ? -EBADF : neg_errno();
}

int sl_child_dirfd(int listener, const sandlock_notif_t *n, int dirfd)
{
	char p[48];
	if (!dir_link(n, dirfd, p, sizeof p))
		return -EBADF;
	int fd = open(p, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return dir_link_errno(dirfd);
	return confirmed(listener, n, fd);
}

int sl_child_dir_path(const sandlock_notif_t *n, int dirfd, char *out, size_t cap)
{
	char link[48];
	if (!dir_link(n, dirfd, link, sizeof link))
		return -EBADF;
	ssize_t len = readlink(link, out, cap);
	if (len < 0)
		return dir_link_errno(dirfd);
	if ((size_t)len >= cap)
		return -ENAMETOOLONG;
	out[len] = '\0';
	return len > 0 && out[0] == '/';
}

/* "Key: a b c d" of /proc/TID/status: the eff and fs ids (2nd and 4th). */
static bool parse_ids(const char *st, const char *key, unsigned long *eff, unsigned long *fs)
{
	const char *l = strstr(st, key);
	unsigned long r, s;
	return l && sscanf(l + strlen(key), "%lu %lu %lu %lu", &r, eff, &s, fs) == 4;
}

int sl_child_same_ids(int piddir, mode_t *umask_out)
{
	char buf[4096];
	if (sl_read_small_at(piddir, "status", buf, sizeof buf) < 0)
		return ESRCH;
	unsigned long eu, fu, eg, fg;
	if (!parse_ids(buf, "\nUid:", &eu, &fu) || !parse_ids(buf, "\nGid:", &eg, &fg))
		return EPERM;
	unsigned long me = geteuid(), mg = getegid();
	if (eu != me || fu != me || eg != mg || fg != mg)
		return EPERM; /* fail closed: we cannot act as another user */
	if (!umask_out)
		return 0;
	const char *u = strstr(buf, "\nUmask:");
	unsigned long um;
	if (!u || sscanf(u + 7, "%lo", &um) != 1)
		return EPERM;
	*umask_out = (mode_t)(um & 0777);
	return 0;
}

mode_t sl_child_umask(int listener, const sandlock_notif_t *n)
{
	int dir = sl_child_procdir(listener, n);
	if (dir < 0)
		return 022;
	int fd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return 022;
	char buf[4096];
	ssize_t len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return 022;
	buf[len] = '\0';
	char *u = strstr(buf, "Umask:");
	return u ? (mode_t)strtoul(u + 6, NULL, 8) & 0777 : 022;
}

long sl_child_tgid(const sandlock_notif_t *n)
{
	char p[48], buf[512];
	snprintf(p, sizeof p, "/proc/%u/status", n->pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ESRCH;
	ssize_t len = read(fd, buf, sizeof buf - 1); /* Tgid: is the 4th line */
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	char *t = strstr(buf, "\nTgid:");
	long v = t ? strtol(t + 6, NULL, 10) : 0;
	return v > 0 ? v : -ESRCH;
}

/* As sl_child_self_path; !follow: a path that is one of the names itself
 * (nothing after it) stays, as the call looks at the link, not where it
 * leads (lstat, readlink). */
static int self_path(char *p, size_t cap, const sandlock_notif_t *n, bool follow)
{
	/* to: a printf format; "self" kinds take (tgid, tid), the others tid.
	 * /proc/self is the thread GROUP (its status names the process, its
	 * fd and task lists are the process's), /proc/thread-self the thread:
	 * for a worker thread the two differ.  /dev/fd and the links to
	 * self/mounts and self/net are the same for every thread sharing the
	 * process's files and namespaces, so the tid serves (no lookup). */
	enum { TID, GROUP, THREAD };
	static const struct {
		const char *from, *to;
		int kind;
	} map[] = {
		{ "/proc/self", "/proc/%ld", GROUP },
		{ "/proc/thread-self", "/proc/%ld/task/%u", THREAD },
		{ "/dev/fd", "/proc/%u/fd", TID },        { "/dev/stdin", "/proc/%u/fd/0", TID },
		{ "/dev/stdout", "/proc/%u/fd/1", TID },  { "/dev/stderr", "/proc/%u/fd/2", TID },
		{ "/proc/mounts", "/proc/%u/mounts", TID }, /* a link to self/mounts */
		{ "/proc/net", "/proc/%u/net", TID },       /* a link to self/net: the caller's */
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		size_t k = strlen(map[i].from);
		if (strncmp(p, map[i].from, k) != 0 || (p[k] != '/' && p[k] != '\0'))
			continue;
		if (!follow && p[k] == '\0')
			return 0;
		long tgid = map[i].kind == TID ? 0 : sl_child_tgid(n);
		if (tgid < 0)
			return (int)tgid;
		char head[64];
		int h = map[i].kind == TID ? snprintf(head, sizeof head, map[i].to, n->pid)
		                           : snprintf(head, sizeof head, map[i].to, tgid, n->pid);
		size_t rest = strlen(p + k);
		if ((size_t)h + rest + 1 > cap)
			return -ENAMETOOLONG;
		memmove(p + h, p + k, rest + 1);
		memcpy(p, head, (size_t)h);
		return 0;
	}
	return 0;
}

int sl_child_self_path(char *p, size_t cap, const sandlock_notif_t *n)
{
	return self_path(p, cap, n, true);
}

static char *read_path(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n, bool follow,
                       bool verify, int *e)
{
	char *p = !addr ? NULL
	          : verify ? sandlock_mem_read_string(m, addr, PATH_MAX)
	                   : sl_mem_read_string_unverified(m, addr, PATH_MAX);
	if (!p) {
		char ch;
		/* Readable but unterminated within PATH_MAX: too long. */
		*e = addr && sandlock_mem_peek(m, addr, &ch, 1) == 0 ? ENAMETOOLONG : EFAULT;
		return NULL;
	}
	char *q = realloc(p, SL_CHILD_PATH_CAP);
	if (!q) {
		sandlock_string_free(p);
		*e = ENOMEM;
		return NULL;
	}
	int r = self_path(q, SL_CHILD_PATH_CAP, n, follow);
	if (r == 0 && strlen(q) >= PATH_MAX)
		r = -ENAMETOOLONG;
	if (r < 0) {
		free(q);
		*e = -r;
		return NULL;
	}
	return q;
}

char *sl_child_read_path(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n, bool follow,
                         int *e)
{
	return read_path(m, addr, n, follow, true, e);
}

char *sl_child_read_path_unverified(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n,
                                    bool follow, int *e)
{
	return read_path(m, addr, n, follow, false, e);
}
