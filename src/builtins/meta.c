/*
 * meta.c — the metadata guard: chmod, chown, xattr and timestamp
 * changes, decided and performed by the supervisor.
 *
 * WHY: Landlock controls file contents and directory entries but not
 * metadata.  Without this guard a sandboxed program could chmod, chown,
 * setxattr or utimes any file it can name and owns — in trees granted
 * read-only or not granted at all (as root: `chmod 0777 /etc/shadow`).
 *
 * RULE: a metadata change is allowed only when its target lies inside one
 * of cfg->fs_write (component-wise: /tmp/ab is not inside /tmp/a) and not
 * inside one of cfg->fs_deny; otherwise EPERM.  The kernel's own rules
 * (owner, CAP_CHOWN, CAP_FOWNER, ...) still apply on top, as the child
 * would see them: see "credentials" below.
 *
 * TOCTOU: answering CONTINUE would let the kernel re-read the path after
 * the check (another thread can swap it), and an fd can be swapped by
 * dup2.  So the supervisor never continues these calls; it performs them:
 *   1. open /proc/TID (pins the caller's struct pid), check NOTIF_ID_VALID;
 *   2. read every pointer argument from child memory exactly once
 *      (each read is confirmed with NOTIF_ID_VALID by childmem.c);
 *   3. open the starting point (/proc/TID/cwd or /proc/TID/fd/N) and then
 *      the target with O_PATH (O_NOFOLLOW for l* and AT_SYMLINK_NOFOLLOW);
 *   4. take the canonical path of the opened object from /proc/self/fd/X
 *      and check it against the roots;
 *   5. apply the change to that very object (through its O_PATH fd) and
 *      answer with the result (RETURN_VALUE 0 or ERRNO).
 *
 * Credentials: the supervisor runs with the caller's credentials, which
 * may be root with every capability, while the child has dropped all of
 * them (caps.c).  So steps 3-5 run with the supervisor thread's
 * *effective* capabilities lowered (capset is per thread; the permitted
 * set is kept to restore them), and only when the child's euid/fsuid and
 * egid/fsgid equal ours.  The kernel then applies exactly the permission
 * checks it would apply to the child: chown to another uid fails, a
 * non-owner cannot chmod, trusted.* xattrs need CAP_SYS_ADMIN, ...
 *
 * Paths naming /proc/self, /proc/thread-self or /dev/fd mean the caller,
 * not the supervisor: those prefixes are rewritten to /proc/TID (glibc's
 * fchmodat(AT_SYMLINK_NOFOLLOW) fallback uses /proc/self/fd/N).  Other
 * spellings of them resolve in the supervisor; that is a wrong answer but
 * not a hole, since the target must still lie inside fs_write.
 *
 * setxattrat, removexattrat and file_setattr are answered ENOSYS by the
 * filter (filter.c) instead: glibc does not use them and callers fall back
 * to the guarded calls.  fchmodat2 is trapped by number even when
 * libseccomp does not know its name.
 *
 * These calls are decided here terminally: user handlers on them run
 * first and may deny or fake them, but "did not intervene" ends here, not
 * in a kernel CONTINUE.  Deferred handlers on them are refused at
 * registration (a worker's CONTINUE would bypass the guard).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "supervisor/childmem.h"
#include "syscalls.h"
#include "util.h"
#include "builtins/builtin.h"

#define XATTR_NAME_LEN 255     /* XATTR_NAME_MAX */
#define XATTR_VALUE_LEN 65536  /* XATTR_SIZE_MAX */

/*
 * The guarded syscalls (syscalls.h's classes): metadata changed by path
 * (the legacy forms only where the ABI has them), by fd, and the xattr
 * writes of every form.
 */
static const sl_sys_class k_meta_classes[] = {
	sl_sys_path_metadata,
	sl_sys_fd_metadata,
	sl_sys_xattr_write,
};

/* Where metadata may change: copied from cfg (the run keeps no cfg pointer). */
struct meta_state {
	sl_strvec write; /* fs_write roots */
	sl_strvec deny;  /* fs_deny paths: never */
	/* The COW workdir's storage: its staged files are the guest's own
	 * (tar's fchmod/futimens on a file it just extracted), even though
	 * Landlock (and fs_deny) keep the guest from naming them by path. */
	sl_strvec staged;
};

/* ---------------- decoding a call ---------------- */

enum { OP_CHMOD, OP_CHOWN, OP_SETXATTR, OP_REMOVEXATTR, OP_UTIMES };

struct meta_call {
	int op;
	int dirfd;          /* AT_FDCWD or a child fd */
	bool fd_only;       /* the target is dirfd itself (fchmod, ...) */
	uint64_t path;      /* child address of the path (unless fd_only) */
	bool nofollow;      /* l* variants, AT_SYMLINK_NOFOLLOW */
	bool empty_ok;      /* AT_EMPTY_PATH */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	uint64_t name, value; /* xattr name and value addresses */
	size_t size;
	int xflags;
	struct timespec ts[2];
	bool now;           /* NULL times: both set to the current time */
};

/* An fd argument: the kernel reads an int. */
static int arg_fd(uint64_t a)
{
	return (int)(uint32_t)a;
}

/* Read n bytes at addr; a failed read is the kernel's EFAULT. */
static int read_mem(sandlock_mem_t *m, uint64_t addr, void *buf, size_t n)
{
	return sandlock_mem_peek(m, addr, buf, n) == 0 ? 0 : EFAULT;
}

#ifdef __NR_utime
/* utime(): struct utimbuf { time_t actime, modtime; }. */
static int read_utimbuf(sandlock_mem_t *m, uint64_t addr, struct meta_call *c)
{
	if (!addr) {
		c->now = true;
		return 0;
	}
	struct utimbuf u;
	if (read_mem(m, addr, &u, sizeof u))
		return EFAULT;
	c->ts[0] = (struct timespec){ u.actime, 0 };
	c->ts[1] = (struct timespec){ u.modtime, 0 };
	return 0;
}
#endif

#if defined(__NR_utimes) || defined(__NR_futimesat)
/* utimes()/futimesat(): struct timeval[2], usec checked like the kernel. */
static int read_timevals(sandlock_mem_t *m, uint64_t addr, struct meta_call *c)
{
	if (!addr) {
		c->now = true;
		return 0;
	}
	struct timeval tv[2];
	if (read_mem(m, addr, tv, sizeof tv))
		return EFAULT;
	for (int i = 0; i < 2; i++) {
		if (tv[i].tv_usec < 0 || tv[i].tv_usec >= 1000000)
			return EINVAL;
		c->ts[i] = (struct timespec){ tv[i].tv_sec, tv[i].tv_usec * 1000 };
	}
	return 0;
}
#endif

/* utimensat(): struct timespec[2].  -1 means "nothing to do" (both OMIT),
 * which the kernel answers with success before looking at the path. */
static int read_timespecs(sandlock_mem_t *m, uint64_t addr, struct meta_call *c)
{
	if (!addr) {
		c->now = true;
		return 0;
	}
	if (read_mem(m, addr, c->ts, sizeof c->ts))
		return EFAULT;
	for (int i = 0; i < 2; i++) {
		long ns = c->ts[i].tv_nsec;
		if (ns != UTIME_NOW && ns != UTIME_OMIT && (ns < 0 || ns >= 1000000000L))
			return EINVAL;
	}
	if (c->ts[0].tv_nsec == UTIME_OMIT && c->ts[1].tv_nsec == UTIME_OMIT)
		return -1;
	return 0;
}

/* The *at flags a call may carry; anything else is the kernel's EINVAL. */
static int at_flags(struct meta_call *c, uint64_t flags)
{
	if (flags & ~(uint64_t)(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH))
		return EINVAL;
	c->nofollow = flags & AT_SYMLINK_NOFOLLOW;
	c->empty_ok = flags & AT_EMPTY_PATH;
	return 0;
}

static void set_path(struct meta_call *c, int dirfd, uint64_t path)
{
	c->dirfd = dirfd;
	c->path = path;
}

static void set_fd(struct meta_call *c, uint64_t fd)
{
	c->dirfd = arg_fd(fd);
	c->fd_only = true;
}

static int decode_chmod(const sandlock_notif_t *n, struct meta_call *c)
{
	const uint64_t *a = n->args;
	c->op = OP_CHMOD;
	switch (n->syscall_nr) {
#ifdef __NR_chmod
	case __NR_chmod:
		set_path(c, AT_FDCWD, a[0]);
		c->mode = (mode_t)(uint16_t)a[1];
		return 0;
#endif
	case __NR_fchmod:
		set_fd(c, a[0]);
		c->mode = (mode_t)(uint16_t)a[1];
		return 0;
	case __NR_fchmodat:
		set_path(c, arg_fd(a[0]), a[1]);
		c->mode = (mode_t)(uint16_t)a[2];
		return 0;
	default: /* fchmodat2 */
		set_path(c, arg_fd(a[0]), a[1]);
		c->mode = (mode_t)(uint16_t)a[2];
		return at_flags(c, a[3]);
	}
}

static int decode_chown(const sandlock_notif_t *n, struct meta_call *c)
{
	const uint64_t *a = n->args;
	c->op = OP_CHOWN;
	switch (n->syscall_nr) {
#ifdef __NR_chown
	case __NR_chown:
	case __NR_lchown:
		set_path(c, AT_FDCWD, a[0]);
		c->nofollow = n->syscall_nr == __NR_lchown;
		c->uid = (uid_t)(uint32_t)a[1];
		c->gid = (gid_t)(uint32_t)a[2];
		return 0;
#endif
	case __NR_fchown:
		set_fd(c, a[0]);
		c->uid = (uid_t)(uint32_t)a[1];
		c->gid = (gid_t)(uint32_t)a[2];
		return 0;
	default: /* fchownat */
		set_path(c, arg_fd(a[0]), a[1]);
		c->uid = (uid_t)(uint32_t)a[2];
		c->gid = (gid_t)(uint32_t)a[3];
		return at_flags(c, a[4]);
	}
}

static int decode_xattr(const sandlock_notif_t *n, struct meta_call *c)
{
	const uint64_t *a = n->args;
	struct sl_xattr_call x = sl_sys_xattr(n->syscall_nr);
	bool set = x.op == SL_XATTR_SET;
	c->op = set ? OP_SETXATTR : OP_REMOVEXATTR;
	if (!x.by_path)
		set_fd(c, a[0]);
	else
		set_path(c, AT_FDCWD, a[0]);
	c->nofollow = x.by_path && !x.follow;
	c->name = a[1];
	if (set) {
		c->value = a[2];
		c->size = (size_t)a[3];
		c->xflags = (int)(uint32_t)a[4];
		if (c->size > XATTR_VALUE_LEN)
			return E2BIG;
	}
	return 0;
}

/* A NULL path on a real dirfd means "the fd itself" (futimesat, utimensat). */
static int decode_times_target(struct meta_call *c, int dirfd, uint64_t path)
{
	if (path == 0 && dirfd != AT_FDCWD) {
		c->dirfd = dirfd;
		c->fd_only = true;
		return 0;
	}
	set_path(c, dirfd, path);
	return 0;
}

static int decode_utimes(const sandlock_notif_t *n, sandlock_mem_t *m, struct meta_call *c)
{
	const uint64_t *a = n->args;
	c->op = OP_UTIMES;
	switch (n->syscall_nr) {
#ifdef __NR_utime
	case __NR_utime:
		set_path(c, AT_FDCWD, a[0]);
		return read_utimbuf(m, a[1], c);
#endif
#ifdef __NR_utimes
	case __NR_utimes:
		set_path(c, AT_FDCWD, a[0]);
		return read_timevals(m, a[1], c);
#endif
#ifdef __NR_futimesat
	case __NR_futimesat:
		decode_times_target(c, arg_fd(a[0]), a[1]);
		return read_timevals(m, a[2], c);
#endif
	default: { /* utimensat */
		int e = read_timespecs(m, a[2], c);
		if (e)
			return e;
		decode_times_target(c, arg_fd(a[0]), a[1]);
		if (c->fd_only) /* the kernel takes no flags for the fd form */
			return a[3] ? EINVAL : 0;
		return at_flags(c, a[3]);
	}
	}
}

/* 0, an errno, or -1 when the call is a no-op the kernel answers with 0. */
static int decode(const sandlock_notif_t *n, sandlock_mem_t *m, struct meta_call *c)
{
	memset(c, 0, sizeof(*c));
	switch (n->syscall_nr) {
#ifdef __NR_chmod
	case __NR_chmod:
#endif
	case __NR_fchmod:
	case __NR_fchmodat:
	case __NR_fchmodat2:
		return decode_chmod(n, c);
#ifdef __NR_chown
	case __NR_chown:
	case __NR_lchown:
#endif
	case __NR_fchown:
	case __NR_fchownat:
		return decode_chown(n, c);
#ifdef __NR_utime
	case __NR_utime:
#endif
#ifdef __NR_utimes
	case __NR_utimes:
#endif
#ifdef __NR_futimesat
	case __NR_futimesat:
#endif
	case __NR_utimensat:
		return decode_utimes(n, m, c);
	default:
		return decode_xattr(n, c);
	}
}

/* ---------------- the caller's process ---------------- */

/* True if the caller's fd N was opened with O_PATH (the fd-based calls
 * then fail with EBADF in the kernel). */
static bool fd_is_opath(int piddir, int fdnum)
{
	char p[32], buf[256];
	snprintf(p, sizeof p, "fdinfo/%d", fdnum);
	int fd = openat(piddir, p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return false;
	buf[len] = 0;
	const char *f = strstr(buf, "flags:");
	return f && (strtoul(f + 6, NULL, 8) & O_PATH);
}

/* The caller's fd N (or its cwd for AT_FDCWD) as our own O_PATH fd. */
static int open_child_fd(int piddir, int fdnum, int *out)
{
	char p[32];
	if (fdnum == AT_FDCWD)
		snprintf(p, sizeof p, "cwd");
	else if (fdnum >= 0)
		snprintf(p, sizeof p, "fd/%d", fdnum);
	else
		return EBADF;
	*out = openat(piddir, p, O_PATH | O_CLOEXEC);
	if (*out >= 0)
		return 0;
	return errno == ENOENT && fdnum != AT_FDCWD ? EBADF : (errno ? errno : EPERM);
}

/* ---------------- paths ---------------- */

/* Inside some fs_write root and no fs_deny path. */
static bool path_allowed(const struct meta_state *s, const char *path)
{
	for (size_t i = 0; i < s->staged.n; i++)
		if (sl_path_under(path, s->staged.v[i]))
			return true;
	for (size_t i = 0; i < s->deny.n; i++)
		if (sl_path_under(path, s->deny.v[i]))
			return false;
	for (size_t i = 0; i < s->write.n; i++)
		if (sl_path_under(path, s->write.v[i]))
			return true;
	return false;
}

/* The canonical path of an fd we hold, from its /proc/self/fd link. */
static bool fd_path(int fd, char *buf, size_t cap)
{
	char link[32];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, buf, cap);
	if (len <= 0 || (size_t)len >= cap)
		return false;
	buf[len] = 0;
	return buf[0] == '/'; /* pipes, sockets, anon inodes are in no tree */
}

/* ---------------- performing the change ---------------- */

struct xattr_args {
	char *name;
	void *value;
};

/*
 * Never set-id programs or file capabilities: a guest running as root would
 * leave setuid-root files behind in its -w trees for anyone to run.  The
 * setgid bit stays allowed on directories (it only makes new entries
 * inherit the group).  The filter (filter.c) refuses the same modes at
 * creation.
 */
static bool grants_privilege(const struct meta_call *c, const struct stat *st,
                             const struct xattr_args *x)
{
	if (c->op == OP_CHMOD)
		return (c->mode & S_ISUID) || ((c->mode & S_ISGID) && !S_ISDIR(st->st_mode));
	return c->op == OP_SETXATTR && strcmp(x->name, "security.capability") == 0;
}

/* The call on our O_PATH fd to the target.  0 or an errno. */
static int perform(const struct meta_call *c, int fd, const struct xattr_args *x)
{
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0)
		return errno;
	char p[32];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	bool lnk = S_ISLNK(st.st_mode); /* only reachable with nofollow */
	if (grants_privilege(c, &st, x))
		return EPERM;
	int rc;
	switch (c->op) {
	case OP_CHMOD:
		if (lnk) /* Linux symlinks have no mode of their own */
			return EOPNOTSUPP;
		rc = chmod(p, c->mode);
		break;
	case OP_CHOWN:
		rc = fchownat(fd, "", c->uid, c->gid, AT_EMPTY_PATH);
		break;
	case OP_SETXATTR:
		if (lnk) /* user.* is refused on symlinks; others need capabilities */
			return EPERM;
		rc = setxattr(p, x->name, x->value, c->size, c->xflags);
		break;
	case OP_REMOVEXATTR:
		if (lnk)
			return EPERM;
		rc = removexattr(p, x->name);
		break;
	default: /* OP_UTIMES */
		rc = lnk ? utimensat(fd, "", c->now ? NULL : c->ts,
		                     AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW)
		         : utimensat(AT_FDCWD, p, c->now ? NULL : c->ts, 0);
		break;
	}
	return rc < 0 ? errno : 0;
}

/* Open the target (caps already lowered).  base is ours to consume. */
static int open_target(const struct meta_call *c, const char *path, int base, int *out)
{
	if (c->fd_only || (path[0] == '\0' && c->empty_ok)) {
		*out = base;
		return 0;
	}
	if (path[0] == '\0') {
		if (base >= 0)
			close(base);
		return ENOENT;
	}
	*out = openat(base, path, O_PATH | O_CLOEXEC | (c->nofollow ? O_NOFOLLOW : 0));
	int e = *out < 0 ? errno : 0;
	if (base >= 0)
		close(base);
	return e;
}

/* Resolve, check and perform, with the supervisor thread's capabilities
 * lowered to the caller's (none).  base: our fd for the starting point. */
static int resolve_and_perform(const struct meta_state *s, const struct meta_call *c,
                               const char *path, int base, const struct xattr_args *x)
{
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) < 0) {
		if (base >= 0)
			close(base);
		return EPERM; /* fail closed: never act with more rights than the caller */
	}
	int fd = -1;
	int e = open_target(c, path, base, &fd);
	if (e == 0) {
		char canon[PATH_MAX + 1];
		if (!fd_path(fd, canon, sizeof canon) || !path_allowed(s, canon))
			e = EPERM;
		else
			e = perform(c, fd, x);
		close(fd);
	}
	sl_caps_restore(&sv);
	return e;
}

/* The xattr name (and value) from child memory, with the kernel's limits. */
static int read_xattr(sandlock_mem_t *m, const struct meta_call *c, struct xattr_args *x)
{
	x->name = sandlock_mem_read_string(m, c->name, XATTR_NAME_LEN + 1);
	if (!x->name) {
		char ch;
		return c->name && sandlock_mem_peek(m, c->name, &ch, 1) == 0 ? ERANGE : EFAULT;
	}
	if (x->name[0] == '\0')
		return ERANGE;
	if (c->op != OP_SETXATTR || c->size == 0)
		return 0;
	x->value = malloc(c->size);
	if (!x->value)
		return ENOMEM;
	return read_mem(m, c->value, x->value, c->size);
}

/* Everything after decoding: 0 or an errno. */
static int guard(const struct meta_state *s, int listener, const sandlock_notif_t *n,
                 sandlock_mem_t *m,
                 const struct meta_call *c)
{
	int piddir = sl_child_procdir(listener, n); /* pins the caller */
	if (piddir < 0)
		return ESRCH; /* the caller is gone; nobody reads this answer */
	/* Our ids, else EPERM (an unreadable status too, as before). */
	int e = sl_child_same_ids(piddir, NULL) ? EPERM : 0;
	char *path = NULL;
	struct xattr_args x = { NULL, NULL };
	if (!e && !c->fd_only)
		path = sl_child_read_path(m, c->path, n, true, &e);
	if (!e && (c->op == OP_SETXATTR || c->op == OP_REMOVEXATTR))
		e = read_xattr(m, c, &x);
	if (!e && c->fd_only && c->dirfd >= 0 && fd_is_opath(piddir, c->dirfd))
		e = EBADF;
	int base = -1;
	if (!e && c->fd_only && c->dirfd < 0) /* fchmod(AT_FDCWD, ...) */
		e = EBADF;
	if (!e && (c->fd_only || path[0] != '/')) /* an absolute path ignores dirfd */
		e = open_child_fd(piddir, c->dirfd, &base);
	else if (!e)
		base = AT_FDCWD;
	/* The starting point is pinned now: the caller may be gone, but no
	 * other process's cwd or fd can have been opened. */
	if (!e && !sl_notif_valid(listener, n->id))
		e = ESRCH;
	if (!e)
		e = resolve_and_perform(s, c, path ? path : "", base, &x);
	else if (base >= 0)
		close(base);
	free(path);
	sandlock_string_free(x.name);
	free(x.value);
	close(piddir);
	return e;
}

static bool meta_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	struct meta_call c;
	int e = decode(call->n, call->mem, &c);
	if (e == -1) {
		sandlock_action_set_return_value(act, 0);
		return true;
	}
	if (!e)
		e = guard(state, call->listener, call->n, call->mem, &c);
	if (e)
		sandlock_action_set_errno(act, e);
	else
		sandlock_action_set_return_value(act, 0);
	return true;
}

static int meta_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	(void)cfg; /* always on: Landlock does not cover metadata */
	return sl_traps_add_classes(out, k_meta_classes,
	                            sizeof k_meta_classes / sizeof k_meta_classes[0]);
}

static void meta_free(void *state)
{
	struct meta_state *s = state;
	if (!s)
		return;
	sl_strvec_free(&s->write);
	sl_strvec_free(&s->deny);
	sl_strvec_free(&s->staged);
	free(s);
}

static int meta_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                     char **msg)
{
	(void)sv;
	struct meta_state *s = calloc(1, sizeof(*s));
	bool ok = s != NULL;
	for (size_t i = 0; ok && i < cfg->fs_write.n; i++)
		ok = sl_strvec_push(&s->write, cfg->fs_write.v[i]) == 0;
	for (size_t i = 0; ok && i < cfg->fs_deny.n; i++)
		ok = sl_strvec_push(&s->deny, cfg->fs_deny.v[i]) == 0;
	if (ok && cfg->workdir && cfg->fs_storage)
		ok = sl_strvec_push(&s->staged, cfg->fs_storage) == 0;
	if (!ok) {
		meta_free(s);
		*msg = sl_strdup("out of memory");
		return -1;
	}
	*state = s;
	return 0;
}

const struct sl_builtin sl_builtin_meta = {
	.name = "metadata guard",
	.phase = SL_PHASE_LAST,
	.syscalls = meta_syscalls,
	.init = meta_init,
	.free = meta_free,
	.decide = meta_decide,
};
