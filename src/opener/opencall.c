/*
 * opencall.c — one on-behalf open (opener.h; the thread that performs it
 * is opener.c).
 *
 * A REQUEST (sl_opener_open_call, on the supervisor thread or a deferred
 * worker):
 *   1. decode the call: flags and mode as the kernel would take them
 *      (open/openat mask unknown flags; openat2's struct open_how is read
 *      once and checked like copy_struct_from_user);
 *   2. read the path once; /proc/self, /proc/thread-self, /dev/fd,
 *      /dev/std{in,out,err}, /proc/mounts and /etc/mtab name the caller,
 *      not us: they are rewritten to /proc/TID, and a reopen of the caller's own fd (/proc/TID/fd/N) is
 *      done through our pidfd_getfd duplicate of it;
 *   3. for a create, or when our ids are not all equal (ids_fixed), read
 *      /proc/TID/status: the caller must act with our uid/gid (else EPERM:
 *      DAC would differ), and its umask applies to O_CREAT;
 *   4. the starting point: our duplicate of its cwd or dirfd (childfd.h),
 *      so a relative path resolves where the caller's would;
 *   5. the opener thread opens it, always with RESOLVE_NO_MAGICLINKS
 *      added: a magic link followed in *our* process would name our fds;
 *   6. confirm the notification is still pending, and refuse anything
 *      that landed in our own /proc/PID (a symlink to /proc/self resolves
 *      to the supervisor here): our memory, environment or fds must never
 *      reach the program;
 *   7. report the real path (/proc/self/fd/N) and device/inode.
 *
 * Blocking opens: the open is done with O_NONBLOCK (cleared afterwards
 * unless asked for), so a FIFO without a peer never stalls the opener
 * (and with it every trapped call).  The difference the program sees: a
 * FIFO opened for reading returns at once, for writing without a reader
 * it fails with ENXIO.  O_NOCTTY is always added: a terminal must never
 * become the supervisor's controlling terminal.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "launch/caps.h"
#include "launch/mechs.h"
#include "opener/openerint.h"
#include "opener/procpolicy.h"
#include "paths/chroot.h"
#include "supervisor/childfd.h"
#include "supervisor/childmem.h"
#include "syscalls.h"

#ifndef __O_TMPFILE
#define __O_TMPFILE 020000000
#endif

/* The kernel's VALID_OPEN_FLAGS (include/linux/fcntl.h): open/openat
 * silently drop anything else, openat2 refuses it. */
#define K_VALID_OPEN_FLAGS                                                              \
	(O_RDONLY | O_WRONLY | O_RDWR | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND |  \
	 O_NDELAY | O_DSYNC | FASYNC | O_DIRECT | O_LARGEFILE | O_DIRECTORY | O_NOFOLLOW | \
	 O_NOATIME | O_CLOEXEC | O_PATH | __O_TMPFILE | O_SYNC)
#define K_O_PATH_FLAGS (O_DIRECTORY | O_NOFOLLOW | O_PATH | O_CLOEXEC)
#define OPEN_HOW_SIZE_VER0 24
#define OPEN_HOW_SIZE_MAX 4096 /* the kernel refuses larger (PAGE_SIZE) */

/* ---------------- decoding the call ---------------- */

struct open_call {
	int dirfd;
	uint64_t path;
	struct open_how how;
};

/* open/openat/creat: what build_open_how makes of (flags, mode). */
static void legacy_how(struct open_how *how, uint64_t flags, uint64_t mode)
{
	how->flags = flags & K_VALID_OPEN_FLAGS;
	if (how->flags & O_PATH)
		how->flags &= K_O_PATH_FLAGS;
	how->mode = (how->flags & (O_CREAT | __O_TMPFILE)) ? (mode & 07777) : 0;
	how->resolve = 0;
}

/* openat2's struct open_how, read once, sized like copy_struct_from_user. */
static int read_how(sandlock_mem_t *m, uint64_t addr, uint64_t size, struct open_how *how)
{
	if (size < OPEN_HOW_SIZE_VER0)
		return EINVAL;
	if (size > OPEN_HOW_SIZE_MAX)
		return E2BIG;
	unsigned char buf[OPEN_HOW_SIZE_MAX];
	if (sandlock_mem_peek(m, addr, buf, (size_t)size) != 0)
		return EFAULT;
	memset(how, 0, sizeof(*how));
	size_t k = size < sizeof(*how) ? (size_t)size : sizeof(*how);
	memcpy(how, buf, k);
	for (size_t i = k; i < size; i++)
		if (buf[i])
			return E2BIG;
	return 0;
}

static int decode(const sandlock_notif_t *n, sandlock_mem_t *m, struct open_call *c)
{
	const uint64_t *a = n->args;
	memset(c, 0, sizeof(*c));
	switch (n->syscall_nr) {
#ifdef __NR_open
	case __NR_open:
		c->dirfd = AT_FDCWD;
		c->path = a[0];
		legacy_how(&c->how, a[1], a[2]);
		return 0;
	case __NR_creat:
		c->dirfd = AT_FDCWD;
		c->path = a[0];
		legacy_how(&c->how, O_CREAT | O_WRONLY | O_TRUNC, a[1]);
		return 0;
#endif
	case __NR_openat:
		c->dirfd = (int)(uint32_t)a[0];
		c->path = a[1];
		legacy_how(&c->how, a[2], a[3]);
		return 0;
	case __NR_openat2:
		c->dirfd = (int)(uint32_t)a[0];
		c->path = a[1];
		return read_how(m, a[2], a[3], &c->how);
	default:
		return EINVAL;
	}
}

/* ---------------- the path ---------------- */

/* /etc/mtab is normally a link to the mount table of "self": followed
 * here it would name the supervisor, so it is spelled /proc/self/mounts
 * (when it is such a link; the guest's own table, filtered, is opened). */
static bool rewrite_mtab(char *p)
{
	char t[64];
	ssize_t n = strcmp(p, "/etc/mtab") == 0 ? readlink(p, t, sizeof t - 1) : -1;
	if (n <= 0)
		return false;
	t[n] = '\0';
	if (strcmp(t, "/proc/mounts") != 0 && strcmp(t, "../proc/mounts") != 0 &&
	    strcmp(t, "/proc/self/mounts") != 0 && strcmp(t, "../proc/self/mounts") != 0)
		return false;
	strcpy(p, "/proc/self/mounts");
	return true;
}

/* The path argument, read once and rewritten (childfd.h; /etc/mtab
 * first).  NULL with *e on failure. */
static char *read_path(sandlock_mem_t *m, uint64_t addr, const sandlock_notif_t *n, int *e)
{
	char *q = sl_child_read_path(m, addr, n, true, e);
	if (q && rewrite_mtab(q)) {
		int r = sl_child_self_path(q, SL_CHILD_PATH_CAP, n);
		if (r < 0) {
			free(q);
			*e = -r;
			return NULL;
		}
	}
	return q;
}

/* N if p is exactly /proc/TID/fd/N (a reopen of the caller's own fd), else -1. */
static int own_fd_reopen(const char *p, unsigned tid)
{
	char pre[40];
	int k = snprintf(pre, sizeof pre, "/proc/%u/fd/", tid);
	if (strncmp(p, pre, (size_t)k) != 0 || !p[k])
		return -1;
	long v = 0;
	for (const char *s = p + k; *s; s++) {
		if (*s < '0' || *s > '9' || v > INT_MAX / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= INT_MAX ? (int)v : -1;
}

/* ---------------- after the open ---------------- */

/* True if fd is a file of our own /proc/PID (or /proc/PID/task/TID). */
static bool in_our_proc(const struct sl_opener *op, int fd, const char *real)
{
	struct statfs sf;
	if (fstatfs(fd, &sf) < 0)
		return true; /* cannot tell: refuse */
	if (sf.f_type != PROC_SUPER_MAGIC)
		return false;
	if (strncmp(real, "/proc/", 6) != 0)
		return false; /* /proc mounted elsewhere would need its own check */
	char num[16];
	size_t i = 0;
	for (const char *s = real + 6; *s >= '0' && *s <= '9'; s++)
		if (i < sizeof num - 1)
			num[i++] = *s;
	num[i] = 0;
	return i > 0 && faccessat(op->taskdir, num, F_OK, 0) == 0;
}

/* Real path, device and inode of our fd; the checks of step 6. */
static int describe(const struct sl_opener *op, int fd, sandlock_opened_t *out)
{
	char link[32], real[PATH_MAX + 1];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, real, sizeof real - 1);
	if (len < 0)
		return EPERM;
	real[len] = 0;
	if (in_our_proc(op, fd, real))
		return EACCES; /* the supervisor's own /proc is never the caller's */
	if (op->proc_guard && sl_on_procfs(fd)) {
		int e = op->procfd >= 0 ? sl_proc_policy(op->procfd, op->init, real) : EACCES;
		if (e)
			return e;
	}
	struct stat st;
	if (fstat(fd, &st) < 0)
		return EPERM;
	out->path = sl_strdup(real);
	if (!out->path)
		return ENOMEM;
	out->dev = (uint64_t)st.st_dev;
	out->ino = (uint64_t)st.st_ino;
	return 0;
}

/* ---------------- the caller's own /proc/TID ---------------- */

/*
 * The opener thread lives in a Landlock domain of its own, so the kernel
 * refuses it the caller's ptrace-guarded /proc files (maps, mem, environ,
 * pagemap, ...), which the caller may always open itself.  With /proc
 * readable and nothing denied beneath it, a read-only open of
 * /proc/PID/REST (PID the caller's tid or its process id, spelled so or
 * via /proc/self) is done
 * by the calling supervisor thread instead: from the caller's pinned
 * /proc/TID, RESOLVE_BENEATH (no way out of it) and no magic links, with
 * our effective capabilities lowered so the file is opened (and keeps
 * f_cred) with the caller's rights, not ours.
 */
static const char *own_proc_rest(const char *p, long *pid)
{
	if (strncmp(p, "/proc/", 6) != 0)
		return NULL;
	char *end;
	long v = strtol(p + 6, &end, 10);
	if (end == p + 6 || v <= 0 || (*end != '/' && *end != '\0') || p[6] < '0' || p[6] > '9')
		return NULL;
	*pid = v;
	while (*end == '/')
		end++;
	return *end ? end : ".";
}

/* The caller's /proc/PID as an O_PATH fd, pid being its tid or its
 * thread group's id (then /proc/PID/task/TID exists), confirmed; -errno,
 * or -ENOENT for any other pid. */
static int own_proc_dir(int listener, const sandlock_notif_t *n, long pid)
{
	if (pid == (long)n->pid)
		return sl_child_procdir(listener, n);
	char p[64];
	snprintf(p, sizeof p, "/proc/%ld", pid);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	snprintf(p, sizeof p, "task/%u", n->pid);
	if (faccessat(fd, p, F_OK, 0) != 0 || !sl_notif_valid(listener, n->id)) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static bool read_only(uint64_t f)
{
	return (f & O_ACCMODE) == O_RDONLY && !(f & (O_CREAT | O_TRUNC | __O_TMPFILE | O_APPEND));
}

static void perform_local(struct sl_open_req *r)
{
	r->set_umask = false; /* never: this thread shares the process's umask */
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) < 0) {
		r->fd = -1;
		r->err = EPERM; /* never with more rights than the caller */
		return;
	}
	sl_opener_perform(r);
	sl_caps_restore(&sv);
}

/* ---------------- one on-behalf open ---------------- */

static bool op_fast(const struct sl_opener *op)
{
	return op->proc_guard && op->proc_fast;
}

/* Our flags and starting point for the request.  0 or an errno. */
static bool wants_write(uint64_t f)
{
	return (f & O_ACCMODE) != O_RDONLY || (f & (O_CREAT | O_TRUNC)) || (f & O_TMPFILE) == O_TMPFILE;
}

/*
 * Under a virtual chroot: the guest path becomes (view directory, path
 * inside it) resolved with RESOLVE_IN_ROOT.  A caller's own
 * RESOLVE_BENEATH / RESOLVE_IN_ROOT is relative to its dirfd, which must
 * lie inside the view; the kernel then keeps the lookup beneath it.
 */
static int prepare_in_view(const struct sl_view *v, int listener, const sandlock_notif_t *n,
                           const struct open_call *c, const char *path, struct sl_open_req *r,
                           char *rel, size_t relcap)
{
	uint64_t caller_resolve = r->how.resolve;
	r->how.resolve |= RESOLVE_NO_MAGICLINKS;
	if (caller_resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT)) {
		if (path[0] == '/' && (caller_resolve & RESOLVE_BENEATH))
			return EXDEV;
		int base = sl_child_dirfd(listener, n, c->dirfd);
		if (base < 0)
			return -base;
		if (!sl_view_fd_guest(v, base, rel, relcap)) {
			close(base);
			return EACCES;
		}
		r->base = base;
		r->path = path;
		return 0;
	}
	char guest[PATH_MAX];
	int e = sl_view_call_path(v, listener, n, c->dirfd, path, guest, sizeof guest);
	bool ro = false;
	int base = -1;
	if (!e)
		e = sl_view_map(v, guest, !(r->how.flags & O_NOFOLLOW) &&
		                          !((r->how.flags & O_CREAT) && (r->how.flags & O_EXCL)),
		                &base, rel, relcap, &ro);
	if (e)
		return e;
	if (ro && wants_write(r->how.flags) && !(r->how.flags & O_PATH))
		return EROFS;
	r->base = fcntl(base, F_DUPFD_CLOEXEC, 3); /* closed by the caller of prepare */
	if (r->base < 0)
		return EMFILE;
	r->path = rel;
	r->how.resolve |= RESOLVE_IN_ROOT;
	return 0;
}

static int prepare(const struct sl_opener *op, int listener, const sandlock_notif_t *n,
                   const struct open_call *c, const char *path, struct sl_open_req *r, char *reopen,
                   size_t cap, char *rel, size_t relcap)
{
	uint64_t caller_resolve = r->how.resolve;
	int own = caller_resolve ? -1 : own_fd_reopen(path, n->pid);
	if (own >= 0) {
		/* The caller's own fd: reopen our duplicate through our /proc
		 * (the magic link is ours now; Landlock still checks the file).
		 * Without pidfd_getfd (mechs.h) the duplicate is an O_PATH open
		 * of the same file through the caller's /proc: the same reopen. */
		int dup = sl_mech_getfd() ? sl_child_getfd(listener, n, own)
		                          : sl_child_dirfd(listener, n, own);
		if (dup < 0)
			return dup == -EBADF ? ENOENT : -dup;
		snprintf(reopen, cap, "/proc/self/fd/%d", dup);
		r->base = dup; /* closed by the caller of prepare */
		r->path = reopen;
		return 0;
	}
	if (op->view)
		return prepare_in_view(op->view, listener, n, c, path, r, rel, relcap);
	long pid = 0;
	const char *rest = own < 0 && !caller_resolve && op_fast(op) && read_only(r->how.flags)
	                           ? own_proc_rest(path, &pid) : NULL;
	int base = rest ? own_proc_dir(listener, n, pid) : -ENOENT; /* pinned, confirmed */
	if (rest && base == -ESRCH)
		return ESRCH;
	if (rest && base >= 0) {
		r->base = base;
		r->path = rest;
		r->how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		r->local = true;
		return 0;
	}
	r->how.resolve |= RESOLVE_NO_MAGICLINKS;
	r->path = path;
	bool absolute = path[0] == '/' && !(caller_resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT));
	if (absolute) {
		r->base = AT_FDCWD;
		return 0;
	}
	base = sl_child_dirfd(listener, n, c->dirfd);
	if (base < 0)
		return -base;
	r->base = base;
	return 0;
}

/* Open as asked, plus O_NONBLOCK/O_NOCTTY (header); undo O_NONBLOCK. */
static int run_request(struct sl_opener *op, struct sl_open_req *r, bool *clear_nonblock)
{
	uint64_t f = r->how.flags;
	*clear_nonblock = false;
	if (!(f & O_PATH)) {
		*clear_nonblock = !(f & O_NONBLOCK);
		r->how.flags |= O_NONBLOCK | O_NOCTTY;
	}
	r->how.flags |= O_CLOEXEC; /* ours; the caller's copy is set by ADDFD */
	if (r->local)
		perform_local(r);
	else
		sl_opener_submit(op, r);
	return r->err;
}

/* One open of the prepared request with these flags and mode. */
static int attempt(struct sl_opener *op, const struct sl_open_req *tmpl, uint64_t flags, uint64_t mode,
                   int *fd, bool *clear_nb)
{
	struct sl_open_req r = *tmpl;
	r.how.flags = flags;
	r.how.mode = mode;
	r.set_umask = tmpl->set_umask && (flags & (O_CREAT | __O_TMPFILE));
	int e = run_request(op, &r, clear_nb);
	*fd = r.fd;
	return e;
}

/*
 * The open itself.  With a check, the side effects that cannot be undone
 * wait for its verdict: O_TRUNC is left out (the file is truncated after
 * the check allowed it), and O_CREAT first looks for an existing file; a
 * file it had to create is removed again if the check refuses it.
 */
static int open_deferred(struct sl_opener *op, const struct sl_open_req *r, bool deferred,
                         int *fd, bool *created, bool *clear_nb)
{
	uint64_t f = r->how.flags;
	*created = false;
	if (!deferred)
		return attempt(op, r, f, r->how.mode, fd, clear_nb);
	uint64_t probe = f & ~(uint64_t)(O_TRUNC | O_CREAT | O_EXCL);
	int e = ENOENT;
	for (int tries = 0; tries < 3; tries++) {
		e = attempt(op, r, probe, 0, fd, clear_nb);
		if (e == 0) {
			if ((f & O_CREAT) && (f & O_EXCL)) {
				close(*fd);
				*fd = -1;
				e = EEXIST;
			}
			return e;
		}
		if (e != ENOENT || !(f & O_CREAT))
			return e;
		e = attempt(op, r, (f & ~(uint64_t)O_TRUNC) | O_EXCL, r->how.mode, fd, clear_nb);
		if (e == 0) {
			*created = true;
			return 0;
		}
		if (e != EEXIST || (f & O_EXCL))
			return e;
		/* It appeared meanwhile, or the name is a dangling symlink
		 * (O_EXCL does not follow it): look again, then give up. */
	}
	return e;
}

/* Undo a creation the check refused: remove the entry if it is still the
 * file we made (same device and inode), with our capabilities lowered. */
static void remove_created(const sandlock_opened_t *o)
{
	struct sl_caps_saved sv;
	struct stat st;
	if (sl_caps_lower(&sv) < 0)
		return;
	if (fstatat(AT_FDCWD, o->path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (uint64_t)st.st_dev == o->dev && (uint64_t)st.st_ino == o->ino)
		unlink(o->path);
	sl_caps_restore(&sv);
}

/* After the open: still pending, what it is, the check, the deferred
 * truncation, the caller's O_NONBLOCK.  0 or an errno. */
static int finish(struct sl_opener *op, int listener, const sandlock_notif_t *n, int *fdp,
                  bool trunc, bool created, bool clear_nb, sl_opener_check_fn check, void *ud,
                  sandlock_opened_t *out)
{
	if (!sl_notif_valid(listener, n->id))
		return ESRCH; /* pinned objects only so far: nobody waits for it */
	int fd = *fdp;
	int e = describe(op, fd, out);
	out->fd = fd; /* the check may look at it (fstat); still ours */
	if (!e && check) {
		int32_t v = check(ud, out);
		e = v == 0 ? 0 : v > 0 ? v : EPERM;
		if (e && created)
			remove_created(out);
	}
	struct stat st;
	if (!e && trunc && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ftruncate(fd, 0) < 0)
		e = errno == EINVAL ? EACCES : errno;
	if (!e && clear_nb) {
		int fl = fcntl(fd, F_GETFL);
		if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0)
			e = EIO;
	}
	int acc = fcntl(fd, F_GETFL);
	bool reading = acc >= 0 && (acc & O_ACCMODE) == O_RDONLY && !(acc & O_PATH);
	if (!e && reading && op->serve) {
		int served = op->serve(op->serve_ud, out->path, (pid_t)n->pid, fdp);
		e = served > 0 ? served : 0;
	}
	return e;
}

int sl_opener_open_call(struct sl_opener *op, int listener, const sandlock_notif_t *n,
                        sandlock_mem_t *m, sl_opener_check_fn check, void *ud,
                        sandlock_opened_t *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	struct open_call c;
	int e = decode(n, m, &c);
	if (e)
		return e;
	char *path = read_path(m, c.path, n, &e);
	if (!path)
		return e;
	struct sl_open_req r = { .base = AT_FDCWD, .how = c.how, .fd = -1 };
	out->newfd_flags = (c.how.flags & O_CLOEXEC) ? O_CLOEXEC : 0;
	r.set_umask = c.how.flags & (O_CREAT | __O_TMPFILE);
	if (r.set_umask || !op->fixed_ids) {
		/* /proc/TID/status is costly: only for a create or shifting ids. */
		int piddir = sl_child_procdir(listener, n); /* pins the caller */
		if (piddir < 0) {
			free(path);
			return ESRCH;
		}
		e = sl_child_same_ids(piddir, &r.umask);
		close(piddir);
	}
	char reopen[48];
	char *rel = op->view ? malloc(PATH_MAX) : NULL;
	if (!e && op->view && !rel)
		e = ENOMEM;
	if (!e)
		e = prepare(op, listener, n, &c, path, &r, reopen, sizeof reopen, rel, PATH_MAX);
	uint64_t f = c.how.flags;
	/* O_RDONLY|O_TRUNC truncates in the kernel but not through ftruncate:
	 * left to the open itself. */
	bool trunc = check && (f & O_TRUNC) && !(f & O_PATH) && (f & O_ACCMODE) != O_RDONLY;
	bool deferred = trunc || (check && (f & O_CREAT));
	bool clear_nb = false, created = false;
	int fd = -1;
	if (!e)
		e = open_deferred(op, &r, deferred, &fd, &created, &clear_nb);
	if (r.base >= 0)
		close(r.base);
	free(path);
	free(rel);
	if (e)
		return e;
	e = finish(op, listener, n, &fd, trunc, created, clear_nb, check, ud, out);
	if (e) {
		close(fd);
		sandlock_string_free(out->path);
		memset(out, 0, sizeof(*out));
		out->fd = -1;
		return e;
	}
	out->fd = fd;
	return 0;
}

/*
 * A read-only open of a path the supervisor resolved itself (the COW
 * layer's merged view, builtins/cow/), by the confined thread: Landlock
 * still decides, as for the caller.  No /proc files (their "self" would
 * be ours) and none of the served views.
 */
int sl_opener_open_at(struct sl_opener *op, int listener, const sandlock_notif_t *n, int base,
                      const char *path, uint64_t flags, uint64_t resolve, int *fd)
{
	*fd = -1;
	if (wants_write(flags) && !(flags & O_PATH))
		return EACCES;
	if (!op->fixed_ids) {
		mode_t um;
		int piddir = sl_child_procdir(listener, n);
		if (piddir < 0)
			return ESRCH;
		int e = sl_child_same_ids(piddir, &um);
		close(piddir);
		if (e)
			return e;
	}
	struct sl_open_req r = { .base = base, .path = path, .fd = -1 };
	r.how.flags = flags & ((flags & O_PATH) ? K_O_PATH_FLAGS : K_VALID_OPEN_FLAGS);
	r.how.resolve = resolve | RESOLVE_NO_MAGICLINKS;
	bool clear_nb = false;
	int e = run_request(op, &r, &clear_nb);
	if (e)
		return e;
	int fl = clear_nb ? fcntl(r.fd, F_GETFL) : 0;
	if (sl_on_procfs(r.fd) || fl < 0 || (clear_nb && fcntl(r.fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		close(r.fd);
		return EACCES;
	}
	*fd = r.fd;
	return 0;
}

int sl_opener_bind_socket(struct sl_opener *op, int listener, const sandlock_notif_t *n,
                          int sock, const struct sockaddr *addr, socklen_t len)
{
	int piddir = sl_child_procdir(listener, n); /* pins the caller */
	if (piddir < 0)
		return ESRCH;
	struct sl_open_req r = { .bind = true, .sock = sock, .addr = addr, .alen = len, .fd = -1 };
	int e = sl_child_same_ids(piddir, &r.umask); /* its ids (DAC) and umask (the file's mode) */
	r.cwd = e ? -1 : openat(piddir, "cwd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (!e && r.cwd < 0)
		e = errno == ENOENT ? ESRCH : errno;
	close(piddir);
	if (!e) {
		sl_opener_submit(op, &r);
		e = r.err;
	}
	if (r.cwd >= 0)
		close(r.cwd);
	return e;
}

/* ---------------- the C ABI ---------------- */

SL_EXPORT int32_t sandlock_open_on_behalf(sandlock_mem_t *m, const sandlock_notif_t *n,
                                          sandlock_open_check_fn check, void *ud,
                                          sandlock_opened_t *out)
{
	if (!out)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (!m || !n || n->id != m->id || (pid_t)n->pid != m->pid ||
	    !sl_sys_is_open_family(n->syscall_nr))
		return EINVAL;
	struct sl_opener *op = sl_opener_find(m->listener);
	if (!op)
		return ENOSYS; /* this run has no opener (no handlers) */
	return sl_opener_open_call(op, m->listener, n, m, check, ud, out);
}
