/*
 * cow.c — the copy-on-write workdir (issue 10): every write-side path
 * call under cfg->workdir is performed by the supervisor inside the COW
 * layer (src/builtins/cow/cow.c), never by the kernel on the real tree.
 *
 * ON when workdir is set.  FIRST phase, so it runs before the /proc view
 * (LAST on the open family and getdents64) and the metadata guard (LAST
 * on chmod/chown/utimes): for a path outside workdir it passes and the
 * chain goes on unchanged; for a path inside it decides:
 *   - open/openat/creat for writing (or O_CREAT/O_TRUNC): the file is
 *     copied up (or created) in the upper layer, opened there and the fd
 *     injected; reading a file that the upper layer holds opens that copy;
 *     reading a real, untouched file passes (the kernel, or the /proc
 *     view's opener, opens it: Landlock grants workdir read-only);
 *   - unlink*, rmdir, mkdir*, rename* (NOREPLACE, EXCHANGE), link*,
 *     symlink*, mknod*, truncate, chmod/chown/utimensat by path: staged;
 *   - getdents64 on a workdir directory: the merged listing, whiteouts
 *     hidden, written into the caller's buffer (its fd's offset counts
 *     entries);
 *   - the stat family, access, readlink: answered from the upper copy when
 *     there is one, ENOENT for a deleted path, else passed on;
 *   - with max_disk, the fd calls that can grow a file (write family,
 *     fallocate, ftruncate, ...): performed and charged by cowwrite.c when
 *     the fd is a staged file, passed on otherwise.
 *
 * PATHS: the string is made absolute (dirfd, cwd; a dirfd in the upper
 * layer stands for the real directory it mirrors) and normalized
 * lexically ("dir/../x" is "x", as the caller wrote it), then walked in
 * the merged view (cowpath.c), so symlinks are followed as staged; every
 * operation gets the canonical rel path.  Under chroot the same happens
 * in guest paths: workdir is the rootfs or a mount (builder.c), the mount
 * points below it are left to the chroot builtin, which runs next.
 *
 * FAIL CLOSED: Landlock grants workdir read-only and the storage not at
 * all (builder.c), so a call this builtin misses (or a path spelled so
 * that it is not recognized as under workdir: /proc/self/fd/N, a symlink
 * outside workdir pointing in) is refused by the kernel instead of
 * writing the real tree.
 *
 * At the end of the run (finish) the change list is computed and, per
 * on_exit / on_error, committed, thrown away or kept.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "compat.h"
#include "cow/cow.h"
#include "opener/dirsort.h"
#include "cow/cowwrite.h"
#include "cow/cowpath.h"
#include "paths/execpath.h"
#include "syscalls.h"
#include "launch/landlock.h"
#include "paths/chroot.h"
#include "launch/caps.h"
#include "opener/opener.h"
#include "run/result.h"
#include "builtins/builtin.h"
#include "supervisor/services.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
#define MAX_DENTS (64 * 1024)
/* The path calls the layer answers (syscalls.h's classes; openat2 never
 * reaches it: the filter answers ENOSYS) ... */
static const sl_sys_class k_cow_classes[] = {
	sl_sys_open_family, sl_sys_path_lookup, sl_sys_path_change,
	sl_sys_path_xattr,  sl_sys_exec_like,   sl_sys_cwd,
};
/* ... getdents64, and the metadata calls it stages: fchmodat2 and the
 * utime family reach the metadata guard (meta.c) unstaged. */
static const int k_cow_nrs[] = {
	__NR_getdents64, SL_NR_chmod,  __NR_fchmodat, SL_NR_chown,
	SL_NR_lchown,    __NR_fchownat, __NR_utimensat,
};

struct cow_state {
	struct sl_cow *cow;
	int on_exit, on_error;
	struct sl_dirsort *sorted; /* deterministic_dirs: listings sorted, else NULL */
	/* Where paths live: host paths, or under chroot guest paths (the
	 * view (the run's, services.h), workdir's guest path, the fs_mount
	 * points inside it). */
	struct sl_view *view;
	char *root;
	sl_strvec holes;
	struct sl_cow_space space;
	struct sl_exec_undo undo; /* an exec by a vfork child (execpath.h) */
	bool policy;              /* policy_fn set: its exec events come first */
};

/* ---------------- paths ---------------- */

/*
 * The absolute path a call names, in the layer's space (cowpath.h): path
 * relative to dirfd (the caller's cwd for AT_FDCWD), lexically
 * normalized.  Under chroot an absolute path is a guest path and so is
 * the result.  false when it cannot be told (the call then passes: the
 * kernel, or the chroot builtin, answers it); empty paths pass too.
 *
 * The upper layer stands for the real tree it mirrors: a dirfd or cwd in
 * it (a directory that exists only there, opened by the guest) and an
 * absolute path into it (a staged program run from there sees its own
 * path as argv[0]/$0, execpath.h) name the same place under workdir.
 * *aliased then says the kernel would resolve the caller's string in the
 * upper layer, not the merged view: the caller must act on the result.
 * So does a ".." in the string (collapsed by name here, walked by the
 * kernel: "f/.." with f a staged directory over a real file).
 */
/* True if path has a ".." component: collapsed by name, it may name
 * something the kernel's walk of the string would not reach. */
static bool has_dotdot(const char *p)
{
	for (const char *q = p; (q = strstr(q, "..")) != NULL; q += 2)
		if ((q == p || q[-1] == '/') && (q[2] == '\0' || q[2] == '/'))
			return true;
	return false;
}

/* The path a call names, made absolute (in guest terms under chroot):
 * 1 with out filled; 0 when the kernel answers the call by itself (a NULL
 * or empty string, a starting fd that is no directory path); -errno when
 * we cannot look at the caller's memory, cwd or fd: never passed on, so
 * the real call cannot run in the caller's stead (fail closed). */
static int call_path(const struct cow_state *s, const struct sl_call *call, int dirfd,
                     uint64_t addr, char *out, size_t cap, bool *aliased)
{
	if (!addr)
		return 0; /* the kernel's EFAULT */
	char *p = sandlock_mem_read_string(call->mem, addr, PATH_MAX);
	if (!p) {
		char ch;
		return sandlock_mem_peek(call->mem, addr, &ch, 1) == 0 ? -ENAMETOOLONG : -EFAULT;
	}
	int ok = p[0] ? 1 : 0;
	char base[PATH_MAX], guest[PATH_MAX];
	const char *from = "";
	*aliased = ok && has_dotdot(p);
	if (ok && p[0] != '/') {
		int fd = sl_child_dirfd(call->listener, call->n, dirfd);
		ok = fd < 0 ? fd : sl_fd_path(fd, base, sizeof base);
		if (fd >= 0)
			close(fd);
		const char *rel = ok > 0 ? sl_cow_rel(s->cow, base) : NULL;
		char moved[PATH_MAX];
		/* A real directory the run moved is found at its new place. */
		if (rel && !sl_cow_upper_rel(s->cow, base) &&
		    sl_cow_real_view(s->cow, rel, moved, sizeof moved)) {
			rel = moved;
			*aliased = true;
		}
		if (rel)
			ok = snprintf(guest, sizeof guest, "%s/%s", s->space.root, rel) < (int)sizeof guest
			             ? 1 : -ENAMETOOLONG;
		else if (ok > 0 && s->view)
			ok = sl_view_guest(s->view, base, guest, sizeof guest);
		from = rel || s->view ? guest : base;
		*aliased |= ok > 0 && sl_path_under(base, sl_cow_upper_path(s->cow));
	}
	if (ok > 0 && snprintf(out, cap, "%s%s%s", from, from[0] ? "/" : "", p) >= (int)cap)
		ok = -ENAMETOOLONG;
	sandlock_string_free(p);
	if (ok > 0)
		sl_path_normalize(out);
	const char *up = ok > 0 ? sl_cow_upper_rel(s->cow, out) : NULL;
	if (up) {
		ok = snprintf(guest, sizeof guest, "%s/%s", s->space.root, up) < (int)sizeof guest
		             ? 1 : -ENAMETOOLONG;
		if (ok > 0) {
			memcpy(out, guest, strlen(guest) + 1);
			sl_path_normalize(out);
		}
		*aliased = ok > 0;
	}
	return ok;
}

/* Resolve the path a call names in the merged view (cowpath.h).  1 with
 * *res filled; 0: not ours, pass; -errno: the answer. */
static int resolve_arg(struct cow_state *s, const struct sl_call *call, int dirfd, uint64_t addr,
                       bool follow, struct sl_cow_res *res)
{
	char p[PATH_MAX];
	bool aliased;
	int k = call_path(s, call, dirfd, addr, p, sizeof p, &aliased);
	if (k <= 0)
		return k;
	int r = sl_cow_resolve(s->cow, &s->space, p, follow, res);
	if (r < 0)
		return r;
	res->shadowed |= aliased && res->inside;
	return res->inside || res->shadowed ? 1 : 0;
}

/* ---------------- deciding ---------------- */

static bool answer(sandlock_action_t *act, long r)
{
	if (r < 0)
		sandlock_action_set_errno(act, (int32_t)-r);
	else
		sandlock_action_set_return_value(act, r);
	return true;
}

/* Inject a read-only open of path (from base) made by the opener thread,
 * so Landlock decides on it as it would for the caller. */
static bool open_by_opener(const struct sl_call *call, int base, const char *path, int flags,
                           uint64_t resolve, sandlock_action_t *act)
{
	struct sl_opener *op = sl_opener_find(call->listener);
	int fd = -1;
	int e = op ? sl_opener_open_at(op, call->listener, call->n, base, path, (uint64_t)flags,
	                               resolve, &fd)
	           : ENOSYS;
	if (e)
		return answer(act, -e);
	sandlock_action_set_inject_fd_send(act, fd, (flags & O_CLOEXEC) ? O_CLOEXEC : 0);
	return true;
}

/* A read of the real rel reached through the merged view (a staged
 * symlink on the way, ...): the caller's own string would lead elsewhere,
 * so the canonical path is opened (no symlink left in it). */
static bool open_lower(struct cow_state *s, const struct sl_call *call, const char *rel, int flags,
                       sandlock_action_t *act)
{
	char host[PATH_MAX];
	if (!sl_cow_lower_path(s->cow, rel, host, sizeof host))
		return answer(act, -ENAMETOOLONG);
	return open_by_opener(call, AT_FDCWD, host, flags, RESOLVE_NO_SYMLINKS, act);
}

static bool path_args(int nr, const uint64_t *a, int *dirfd, uint64_t *path);

/* The host path of rel in the upper layer (upper) or the real tree. */
static bool host_of(const struct cow_state *s, const char *rel, bool upper, char *out, size_t cap)
{
	if (!upper)
		return sl_cow_lower_path(s->cow, rel, out, cap);
	return snprintf(out, cap, "%s/%s", sl_cow_upper_path(s->cow), rel) < (int)cap;
}

/* Swap the host path of rel in for the caller's path string until its
 * call is over (execpath.h): the kernel then does the call itself. */
static bool continue_at_host(struct cow_state *s, const struct sl_call *call, const char *rel,
                             bool upper, sandlock_action_t *act)
{
	char host[PATH_MAX];
	int dirfd;
	uint64_t addr;
	if (!host_of(s, rel, upper, host, sizeof host))
		return answer(act, -ENAMETOOLONG);
	if (!path_args(call->n->syscall_nr, call->n->args, &dirfd, &addr))
		return answer(act, -ENOSYS);
	int r = sl_path_swap(call, addr, host, &s->undo);
	if (r)
		return answer(act, r);
	sandlock_action_set_continue(act);
	return true;
}

/*
 * An O_PATH open of something the kernel's lookup would not reach (staged,
 * or real behind something staged).  An O_PATH file cannot be installed
 * in the caller (SECCOMP_IOCTL_NOTIF_ADDFD takes none: the call failed,
 * and coreutils cp/mv/ln open their target directory so), so a directory
 * or regular file is opened for reading instead (usable the same ways:
 * fstat, *at() calls, fchdir; the guest may read it anyway; a real one by
 * the confined opener), and anything else (a symlink with O_NOFOLLOW), or
 * what the caller may not read, gets its host path swapped in.
 */
static bool open_o_path(struct cow_state *s, const struct sl_call *call, const char *rel,
                        bool upper, const struct stat *st, int flags, sandlock_action_t *act)
{
	int rd = O_RDONLY | (flags & (O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	int fd = -1;
	if (S_ISDIR(st->st_mode) || S_ISREG(st->st_mode)) {
		char host[PATH_MAX];
		struct sl_opener *op = sl_opener_find(call->listener);
		if (upper)
			fd = sl_cow_open_upper(s->cow, rel, rd);
		else if (op && host_of(s, rel, false, host, sizeof host) &&
		         sl_opener_open_at(op, call->listener, call->n, AT_FDCWD, host, (uint64_t)rd,
		                           RESOLVE_NO_SYMLINKS, &fd) != 0)
			fd = -1;
	}
	if (fd < 0)
		return continue_at_host(s, call, rel, upper, act);
	sandlock_action_set_inject_fd_send(act, fd, (flags & O_CLOEXEC) ? O_CLOEXEC : 0);
	return true;
}

static bool do_open(struct cow_state *s, const struct sl_call *call, const char *rel,
                    bool shadowed, int flags, mode_t mode, sandlock_action_t *act)
{
	bool write = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) ||
	             (flags & O_TMPFILE) == O_TMPFILE;
	if (flags & O_PATH)
		write = false;
	if (!write) {
		struct stat st;
		int e = 0;
		bool follow = !(flags & O_NOFOLLOW);
		enum sl_cow_where w = sl_cow_lookup(s->cow, rel, follow, &st, &e);
		/* The real, untouched file: read it as usual (by the caller's
		 * string, unless the view resolved that string differently). */
		if (w == SL_COW_LOWER && shadowed && (flags & O_PATH))
			return open_o_path(s, call, rel, false, &st, flags, act);
		if (w == SL_COW_LOWER)
			return shadowed ? open_lower(s, call, rel, flags, act) : false;
		/* A directory the real tree has too is opened there, never in the
		 * upper layer: lookups relative to the guest's fd then name real
		 * paths, which this builtin resolves in the merged view (and
		 * getdents on it is merged). */
		struct stat lst;
		if (w == SL_COW_UPPER && S_ISDIR(st.st_mode) && sl_cow_lower_dir(s->cow, rel, &lst)) {
			if (shadowed && (flags & O_PATH))
				return open_o_path(s, call, rel, false, &lst, flags, act);
			return shadowed ? open_lower(s, call, rel, flags, act) : false;
		}
		if (w == SL_COW_NONE && e == ENOENT && !rel[0])
			return false;
		if (w == SL_COW_NONE)
			return answer(act, -e);
		if (flags & O_PATH)
			return open_o_path(s, call, rel, true, &st, flags, act);
		/* A read of a staged file: opened there at once (looked up above). */
		int fd = sl_cow_open_upper(s->cow, rel, flags);
		if (fd < 0)
			return answer(act, fd);
		sandlock_action_set_inject_fd_send(act, fd, (flags & O_CLOEXEC) ? O_CLOEXEC : 0);
		return true;
	}
	bool creates = (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
	/* open(2) ignores bits above 07777 (busybox cp passes st_mode); openat2 refuses them */
	mode_t m = creates ? mode & 07777 & ~sl_child_umask(call->listener, call->n) : 0;
	int fd = sl_cow_open(s->cow, rel, flags, m);
	if (fd < 0)
		return answer(act, fd);
	sandlock_action_set_inject_fd_send(act, fd, (flags & O_CLOEXEC) ? O_CLOEXEC : 0);
	return true;
}

/* One batch of the merged listing of rel from fd's offset (an index). */
struct merged {
	struct sl_cow *cow;
	const char *rel;
};

static long merged_batch(void *ud, int fd, char *buf, size_t cap)
{
	const struct merged *m = ud;
	off_t at = lseek(fd, 0, SEEK_CUR);
	if (at < 0)
		return -errno;
	uint64_t pos = (uint64_t)at;
	long r = sl_cow_getdents(m->cow, m->rel, &pos, buf, cap);
	if (r >= 0 && lseek(fd, (off_t)pos, SEEK_SET) < 0)
		r = -errno;
	return r;
}

static bool do_dents(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	int cfd = (int)(uint32_t)n->args[0];
	struct sl_child_file cf;
	int ge = sl_child_file(call->listener, n, cfd, &cf);
	if (ge == -EBADF || ge == -ENXIO)
		return false; /* the kernel's answer is the same */
	if (ge < 0)
		return answer(act, ge); /* never the real listing instead of the merged one */
	int fd = cf.fd;
	char real[PATH_MAX];
	const char *rel = NULL;
	char moved[PATH_MAX];
	if (sl_fd_path(fd, real, sizeof real)) {
		rel = sl_cow_rel(s->cow, real);
		if (rel && !sl_cow_upper_rel(s->cow, real) &&
		    sl_cow_real_view(s->cow, rel, moved, sizeof moved))
			rel = moved;
	}
	if (!rel) {
		sl_child_file_done(call->listener, n, &cf, false);
		return false;
	}
	size_t cap = (size_t)(uint32_t)n->args[2];
	if (cap > MAX_DENTS)
		cap = MAX_DENTS;
	char *buf = malloc(cap ? cap : 1);
	struct merged m = { s->cow, rel };
	/* deterministic_dirs: the sort wraps the merge (dirsort.h). */
	long r = !buf ? -ENOMEM
	         : s->sorted ? sl_dirsort_getdents(s->sorted, (pid_t)n->pid, cfd, fd, true,
	                                           merged_batch, &m, buf, cap)
	                     : merged_batch(&m, fd, buf, cap);
	if (r > 0 && sandlock_mem_poke(call->mem, n->args[1], buf, (size_t)r) != 0)
		r = -EFAULT;
	free(buf);
	int de = sl_child_file_done(call->listener, n, &cf, r >= 0);
	return answer(act, de < 0 && r >= 0 ? de : r);
}

/* getxattr/listxattr of a staged file (fd: its O_PATH fd): through the
 * magic link, which xattr calls follow; a symlink's own has none. */
static long do_xattr(int fd, const struct sl_call *call, bool follow)
{
	const sandlock_notif_t *n = call->n;
	bool list = n->syscall_nr == __NR_listxattr || n->syscall_nr == __NR_llistxattr;
	struct stat st;
	if (fstatat(fd, "", &st, AT_EMPTY_PATH) < 0)
		return -errno;
	if (!follow && S_ISLNK(st.st_mode))
		return list ? 0 : -ENODATA;
	char p[64], *name = NULL;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	size_t cap = (size_t)(list ? n->args[2] : n->args[3]);
	if (cap > 65536)
		cap = 65536;
	char *buf = malloc(cap ? cap : 1);
	if (!list)
		name = sandlock_mem_read_string(call->mem, n->args[1], 256);
	long r = !buf || (!list && !name) ? -EFAULT : 0;
	if (!r) {
		ssize_t len = list ? listxattr(p, buf, cap) : getxattr(p, name, buf, cap);
		r = len < 0 ? -errno : (long)len;
	}
	uint64_t dst = list ? n->args[1] : n->args[2];
	if (r > 0 && cap && sandlock_mem_poke(call->mem, dst, buf, (size_t)r) != 0)
		r = -EFAULT;
	free(buf);
	sandlock_string_free(name);
	return r;
}

/* What the merged view says differently of a staged directory or the
 * workdir: its link count (0: the file's own), its mode (-1: the file's). */
struct view_stat {
	nlink_t nlink;
	int mode;
};

static void view_apply(const struct view_stat *v, struct stat *st)
{
	if (v->nlink)
		st->st_nlink = v->nlink;
	if (v->mode >= 0)
		st->st_mode = (st->st_mode & S_IFMT) | (mode_t)v->mode;
}

/* The answer to a stat/statx/access/readlink/getxattr call, from fd (an
 * O_PATH fd of what the path names), as the view shows it (v). */
static long stat_fd(const struct sl_call *call, int fd, bool follow, const struct view_stat *v)
{
	const sandlock_notif_t *n = call->n;
	struct stat st;
	long r = 0;
	int nr = n->syscall_nr;
	if (nr == __NR_newfstatat || nr == SL_NR_stat || nr == SL_NR_lstat) {
		uint64_t buf = nr == __NR_newfstatat ? n->args[2] : n->args[1];
		r = fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 ? 0 : -errno;
		if (!r)
			view_apply(v, &st);
		if (!r && sandlock_mem_poke(call->mem, buf, &st, sizeof st) != 0)
			r = -EFAULT;
	} else if (nr == __NR_statx) {
		struct statx sx;
		unsigned flags = (unsigned)n->args[2] & ~(unsigned)AT_SYMLINK_NOFOLLOW;
		r = statx(fd, "", (int)(flags | AT_EMPTY_PATH), (unsigned)n->args[3], &sx) == 0 ? 0 : -errno;
		if (!r && v->nlink && (sx.stx_mask & STATX_NLINK))
			sx.stx_nlink = (uint32_t)v->nlink;
		if (!r && v->mode >= 0 && (sx.stx_mask & STATX_MODE))
			sx.stx_mode = (uint16_t)((sx.stx_mode & S_IFMT) | (unsigned)v->mode);
		if (!r && sandlock_mem_poke(call->mem, n->args[4], &sx, sizeof sx) != 0)
			r = -EFAULT;
	} else if (nr == SL_NR_readlink || nr == __NR_readlinkat) {
		char t[PATH_MAX];
		uint64_t buf = nr == SL_NR_readlink ? n->args[1] : n->args[2];
		size_t cap = (size_t)(nr == SL_NR_readlink ? n->args[2] : n->args[3]);
		/* readlinkat(fd, "") says ENOENT for a non-link; readlink, EINVAL. */
		ssize_t len = fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode) ? (errno = EINVAL, -1)
		              : readlinkat(fd, "", t, sizeof t);
		if (len < 0)
			r = -errno;
		else {
			if ((size_t)len > cap)
				len = (ssize_t)cap;
			r = sandlock_mem_poke(call->mem, buf, t, (size_t)len) == 0 ? len : -EFAULT;
		}
	} else if (nr == __NR_getxattr || nr == __NR_lgetxattr || nr == __NR_listxattr ||
	           nr == __NR_llistxattr) {
		r = do_xattr(fd, call, follow);
	} else { /* access family: the caller has no capabilities, check bits */
		int mode = (int)(nr == SL_NR_access ? n->args[1] : n->args[2]);
		r = fstatat(fd, "", &st, AT_EMPTY_PATH) == 0 ? 0 : -errno;
		if (!r && (mode & X_OK) && !S_ISDIR(st.st_mode) && !(st.st_mode & 0111))
			r = -EACCES;
	}
	return r;
}

/* stat/statx/access/readlink of rel in the merged view: answered here
 * unless the caller's own string finds the same real file. */
static bool do_stat(struct cow_state *s, const struct sl_call *call, const char *rel,
                    bool shadowed, bool follow, sandlock_action_t *act)
{
	struct stat st;
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(s->cow, rel, follow, &st, &e);
	/* The workdir itself is real, but its link count counts what was
	 * staged in it too (stat family only). */
	int nr = call->n->syscall_nr;
	bool root = !rel[0] && w == SL_COW_LOWER &&
	            (nr == __NR_newfstatat || nr == SL_NR_stat || nr == SL_NR_lstat || nr == __NR_statx);
	if (!shadowed && !root && (w == SL_COW_LOWER || (w == SL_COW_NONE && e != ENOENT)))
		return false;
	if (w == SL_COW_NONE)
		return answer(act, -e);
	/* A directory both layers have is opened in the real tree (do_open):
	 * its stat must name that inode too (fts compares them), with the
	 * view's mode and link count. */
	struct stat lst;
	bool both = w == SL_COW_UPPER && S_ISDIR(st.st_mode) && sl_cow_lower_dir(s->cow, rel, &lst);
	int oflags = O_PATH | (follow ? 0 : O_NOFOLLOW);
	int fd = both ? sl_cow_open_lower(s->cow, rel, oflags) : sl_cow_open(s->cow, rel, oflags, 0);
	if (fd < 0)
		return answer(act, fd);
	int vm = root ? sl_cow_root_mode(s->cow) : sl_cow_view_mode(s->cow, rel);
	struct view_stat v = { 0, vm >= 0 || !both ? vm : (int)(st.st_mode & 07777) };
	if ((w == SL_COW_UPPER || root) && S_ISDIR(st.st_mode))
		v.nlink = sl_cow_dir_nlink(s->cow, rel);
	long r = stat_fd(call, fd, follow, &v);
	close(fd);
	return answer(act, r);
}

/* setxattr/removexattr of the upper copy (fd, its magic link p) with the
 * caller's rights: our capabilities lowered, so trusted.* and security.*
 * stay out of its reach as they would.  User xattrs are not allowed on a
 * symlink (EPERM, as the kernel says). */
static long set_xattr(const struct sl_call *call, int fd, const char *p)
{
	const sandlock_notif_t *n = call->n;
	bool rm = n->syscall_nr == __NR_removexattr || n->syscall_nr == __NR_lremovexattr;
	struct stat st;
	if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))
		return -EPERM;
	size_t size = rm ? 0 : (size_t)n->args[3];
	if (size > 65536)
		return -E2BIG;
	char *name = sandlock_mem_read_string(call->mem, n->args[1], 256);
	void *val = size ? malloc(size) : NULL;
	long r = !name ? -ERANGE : size && !val ? -ENOMEM : 0;
	if (!r && size && sandlock_mem_peek(call->mem, n->args[2], val, size) != 0)
		r = -EFAULT;
	struct sl_caps_saved sv;
	if (!r && sl_caps_lower(&sv) < 0)
		r = -EPERM;
	else if (!r) {
		r = (rm ? removexattr(p, name) : setxattr(p, name, val, size, (int)n->args[4])) == 0
		    ? 0 : -errno;
		sl_caps_restore(&sv);
	}
	free(val);
	sandlock_string_free(name);
	return r;
}

/* A metadata change on rel, applied to its upper copy.  The workdir
 * itself has none: its mode is kept by the layer (sl_cow_chmod_root), its
 * owner and times cannot be staged (EPERM). */
static bool do_meta(struct cow_state *s, const struct sl_call *call, const char *rel,
                    bool follow, sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	int nr = n->syscall_nr;
	if (!rel[0] && (nr == SL_NR_chmod || nr == __NR_fchmodat))
		return answer(act, sl_cow_chmod_root(s->cow, (mode_t)n->args[nr == SL_NR_chmod ? 1 : 2]));
	if (!rel[0])
		return answer(act, -EPERM);
	int fd = sl_cow_copy_up_fd(s->cow, rel, follow);
	if (fd < 0)
		return answer(act, fd);
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	long r;
	if (nr == SL_NR_chmod || nr == __NR_fchmodat) {
		mode_t mode = (mode_t)(nr == SL_NR_chmod ? n->args[1] : n->args[2]) & 07777;
		/* A directory stays open to ourselves (cow.h, sl_cow_note_mode). */
		struct stat st;
		bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
		mode_t real = dir ? mode | S_IRWXU : mode;
		r = chmod(p, real) == 0 ? 0 : -errno;
		if (!r)
			r = sl_cow_note_mode(s->cow, rel, real != mode ? (int)mode : -1);
	} else if (nr == __NR_setxattr || nr == __NR_lsetxattr || nr == __NR_removexattr ||
	           nr == __NR_lremovexattr) {
		r = set_xattr(call, fd, p);
	} else if (nr == __NR_utimensat) {
		struct timespec ts[2];
		bool have = n->args[2] != 0;
		if (have && sandlock_mem_peek(call->mem, n->args[2], ts, sizeof ts) != 0)
			r = -EFAULT;
		else
			r = utimensat(AT_FDCWD, p, have ? ts : NULL, 0) == 0 ? 0 : -errno;
	} else {
		int a = nr == __NR_fchownat ? 2 : 1;
		r = fchownat(fd, "", (uid_t)n->args[a], (gid_t)n->args[a + 1], AT_EMPTY_PATH) == 0
		            ? 0 : -errno;
	}
	close(fd);
	return answer(act, r);
}

/* A call that only reads (lookups, listings, opens without write flags). */
static bool reads_only(int nr, const uint64_t *a)
{
	if (nr == SL_NR_open || nr == __NR_openat) {
		int flags = (int)a[nr == SL_NR_open ? 1 : 2];
		return ((flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC)) &&
		        (flags & O_TMPFILE) != O_TMPFILE) || (flags & O_PATH);
	}
	switch (nr) {
	case __NR_getdents64: case __NR_newfstatat: case SL_NR_stat: case SL_NR_lstat: case __NR_statx:
	case SL_NR_access: case __NR_faccessat: case __NR_faccessat2: case SL_NR_readlink:
	case __NR_readlinkat: case __NR_getxattr: case __NR_lgetxattr: case __NR_listxattr:
	case __NR_llistxattr: case __NR_chdir: case __NR_getcwd:
		return true;
	default:
		return false;
	}
}

/* True if a fs_mount point (a hole of the space) lies strictly under rel:
 * the rootfs entries there are not what the guest sees, so rel is not
 * moved as a whole. */
static bool holds_hole(const struct cow_state *s, const char *rel)
{
	for (size_t i = 0; i < s->holes.n; i++)
		if (strcmp(s->holes.v[i], rel) != 0 && (!rel[0] || sl_path_under(s->holes.v[i], rel)))
			return true;
	return false;
}

/* Two-path calls: both under workdir, or EXDEV when only one is (or one
 * leaves it through a staged symlink). */
static bool do_pair(struct cow_state *s, const struct sl_call *call, int d1, uint64_t p1, int d2,
                    uint64_t p2, sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	int nr = n->syscall_nr;
	bool link = nr == SL_NR_link || nr == __NR_linkat;
	bool follow1 = nr == __NR_linkat && (n->args[4] & AT_SYMLINK_FOLLOW);
	struct sl_cow_res *r = malloc(2 * sizeof(*r));
	if (!r)
		return answer(act, -ENOMEM);
	int ka = resolve_arg(s, call, d1, p1, follow1, &r[0]);
	int kb = ka < 0 ? 0 : resolve_arg(s, call, d2, p2, false, &r[1]);
	long ret;
	bool decided = true;
	if (ka < 0 || kb < 0)
		ret = ka < 0 ? ka : kb;
	else if (!ka && !kb)
		decided = false;
	else if (!ka || !kb || !r[0].inside || !r[1].inside)
		ret = -EXDEV;
	else if (link)
		ret = sl_cow_link(s->cow, r[0].path, r[1].path);
	else if (holds_hole(s, r[0].path) || holds_hole(s, r[1].path))
		ret = -EBUSY;
	else
		ret = sl_cow_rename(s->cow, r[0].path, r[1].path,
		                    nr == __NR_renameat2 ? (unsigned)n->args[4] : 0);
	free(r);
	return decided ? answer(act, ret) : false;
}

/* An O_PATH fd of an absolute path outside workdir (a guest path under
 * chroot), with the caller's rights; -errno.  /proc is refused: its
 * "self" would be the supervisor. */
static int outside_fd(const struct cow_state *s, const char *path, bool follow)
{
	int flags = O_PATH | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW);
	bool ro;
	int fd;
	if (s->view) {
		fd = sl_view_open(s->view, path, flags, &ro);
	} else {
		struct sl_caps_saved sv;
		if (sl_caps_lower(&sv) < 0)
			return -EPERM;
		fd = open(path, flags);
		fd = fd < 0 ? -errno : fd;
		sl_caps_restore(&sv);
	}
	struct statfs sf;
	if (fd >= 0 && (fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC)) {
		close(fd);
		return -EACCES;
	}
	return fd;
}

/*
 * A path that leaves workdir through something staged (a symlink the
 * guest made pointing outside): neither the kernel nor the chroot builtin
 * can follow the caller's string there.  Reads are performed (opens by
 * the confined opener, lookups with the caller's rights); anything that
 * would change the outside tree is refused (EACCES).
 */
static bool do_outside(struct cow_state *s, const struct sl_call *call, const char *path,
                       bool follow, sandlock_action_t *act)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	if (nr == SL_NR_open || nr == __NR_openat) {
		int flags = (int)a[nr == SL_NR_open ? 1 : 2];
		if (!s->view)
			return open_by_opener(call, AT_FDCWD, path, flags, 0, act);
		char rel[PATH_MAX];
		int base;
		bool ro;
		int e = sl_view_map(s->view, path, !(flags & O_NOFOLLOW), &base, rel, sizeof rel, &ro);
		return e ? answer(act, -e) : open_by_opener(call, base, rel, flags, RESOLVE_IN_ROOT, act);
	}
	if (nr == SL_NR_creat || !reads_only(nr, a))
		return answer(act, -EACCES);
	int fd = outside_fd(s, path, follow);
	if (fd < 0)
		return answer(act, fd);
	struct view_stat none = { 0, -1 };
	long r = stat_fd(call, fd, follow, &none);
	close(fd);
	return answer(act, r);
}

/* The host path the kernel must exec for res (resolved in the merged
 * view, following): into host.  0, 1 when the caller's own string already
 * leads there (pass), or -errno. */
static int exec_target(struct cow_state *s, const struct sl_cow_res *res, char *host, size_t cap)
{
	if (!res->inside) {
		/* Left workdir through something staged: the outside file, by
		 * its host path (under chroot, the guest path opened in the view). */
		if (!s->view)
			return snprintf(host, cap, "%s", res->path) < (int)cap ? 0 : -ENAMETOOLONG;
		bool ro;
		int fd = sl_view_open(s->view, res->path, O_PATH | O_CLOEXEC, &ro);
		if (fd < 0)
			return fd;
		bool ok = sl_fd_path(fd, host, cap);
		close(fd);
		return ok ? 0 : -ENOENT;
	}
	struct stat st;
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(s->cow, res->path, true, &st, &e);
	if (w == SL_COW_NONE)
		return -e;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (w == SL_COW_LOWER && !res->shadowed)
		return 1;
	if (w == SL_COW_UPPER)
		return snprintf(host, cap, "%s/%s", sl_cow_upper_path(s->cow), res->path) < (int)cap
		               ? 0 : -ENAMETOOLONG;
	return sl_cow_lower_path(s->cow, res->path, host, cap) ? 0 : -ENAMETOOLONG;
}

/*
 * execve/execveat of a path in the merged view.  The kernel runs only
 * what its own lookup finds, on the real tree: a staged program (built in
 * this run) or a real one reached through something staged must be given
 * to it by host path.  The caller's string is replaced (execpath.h: argv
 * stays what the program sees) after the checks the kernel cannot make
 * the same way (under chroot, the interpreter's, chroot.h); Landlock
 * grants the upper layer read + execute (cow_ruleset), never write.  An
 * untouched real file passes (the kernel, or the chroot builtin).
 */
static bool do_exec(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	/* policy_fn must see every exec (builtins/policy.c, after us): a
	 * staged program then cannot run (the kernel does not find it). */
	if (s->policy)
		return false;
	const sandlock_notif_t *n = call->n;
	struct sl_exec_args x;
	sl_sys_exec_args(n->syscall_nr, n->args, &x);
	bool follow = !(x.flags & AT_SYMLINK_NOFOLLOW);
	struct sl_cow_res *res = malloc(sizeof(*res));
	char *host = malloc(PATH_MAX);
	int k = res && host ? resolve_arg(s, call, x.dirfd, x.path, follow, res) : -ENOMEM;
	k = k > 0 ? exec_target(s, res, host, PATH_MAX) : k == 0 ? 1 : k;
	if (k == 0) {
		struct sl_caps_saved sv;
		int fd = -EPERM;
		if (sl_caps_lower(&sv) == 0) {
			fd = open(host, O_PATH | O_CLOEXEC);
			fd = fd < 0 ? -errno : fd;
			sl_caps_restore(&sv);
		}
		k = fd < 0 ? fd : -sl_view_exec_check(s->view, fd);
		if (!k)
			k = sl_exec_set_path(call, host, res->inside, &s->undo);
		if (fd >= 0)
			close(fd);
		if (!k)
			sandlock_action_set_continue(act);
	}
	free(res);
	free(host);
	return k < 0 ? answer(act, k) : k == 0;
}

/*
 * chdir into a directory of the merged view that the kernel's lookup
 * would not reach (one that exists only in the layer, or a real one
 * reached through something staged): the kernel must chdir, on the
 * caller's string, so that string is swapped for the directory's host
 * path and put back before the caller runs again (execpath.h,
 * sl_path_swap).  The cwd may then lie in the upper layer: relative paths
 * from it name the merged view (call_path), and getcwd maps it back.
 */
static bool do_chdir(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	uint64_t addr = call->n->args[0];
	struct sl_cow_res *res = malloc(sizeof(*res));
	char *host = malloc(PATH_MAX);
	int k = res && host ? resolve_arg(s, call, AT_FDCWD, addr, true, res) : -ENOMEM;
	if (k > 0 && !res->inside)
		k = 0; /* leaves workdir: its string reaches the same place, or Landlock decides */
	struct stat st, lst;
	int e = 0;
	enum sl_cow_where w = k > 0 ? sl_cow_lookup(s->cow, res->path, true, &st, &e) : SL_COW_NONE;
	bool real = w == SL_COW_LOWER || (w == SL_COW_UPPER && sl_cow_lower_dir(s->cow, res->path, &lst));
	if (k <= 0)
		;
	else if (w == SL_COW_NONE)
		k = -e;
	else if (!S_ISDIR(st.st_mode))
		k = -ENOTDIR;
	else if (real && !res->shadowed)
		k = 0; /* the real directory, as the caller's string says */
	else if (real ? !sl_cow_lower_path(s->cow, res->path, host, PATH_MAX)
	              : snprintf(host, PATH_MAX, "%s/%s", sl_cow_upper_path(s->cow), res->path) >= PATH_MAX)
		k = -ENAMETOOLONG;
	else if ((k = sl_path_swap(call, addr, host, &s->undo)) == 0)
		k = 1;
	free(res);
	free(host);
	if (k > 0)
		sandlock_action_set_continue(act);
	return k < 0 ? answer(act, k) : k > 0;
}

/* getcwd in the upper layer: the path of the place it mirrors (under
 * chroot, the guest's); anywhere else the call passes. */
static bool do_getcwd(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	int fd = sl_child_dirfd(call->listener, call->n, AT_FDCWD);
	if (fd < 0) /* the real getcwd would name the layer's host path */
		return answer(act, fd);
	char cwd[PATH_MAX], out[PATH_MAX];
	bool ok = sl_fd_path(fd, cwd, sizeof cwd);
	close(fd);
	if (!ok)
		return false;
	const char *rel = sl_cow_upper_rel(s->cow, cwd), *real = rel ? NULL : sl_cow_rel(s->cow, cwd);
	char moved[PATH_MAX];
	if (real && sl_cow_real_view(s->cow, real, moved, sizeof moved))
		rel = moved; /* a real directory the run moved */
	if (!rel)
		return false;
	if (snprintf(out, sizeof out, "%s%s%s", s->space.root, rel[0] ? "/" : "", rel) >= (int)sizeof out)
		return answer(act, -ENAMETOOLONG);
	sl_path_normalize(out);
	size_t len = strlen(out) + 1;
	if (len > (size_t)call->n->args[1])
		return answer(act, -ERANGE);
	return answer(act, sandlock_mem_poke(call->mem, call->n->args[0], out, len) == 0
	                           ? (long)len : -EFAULT);
}

/* The (dirfd, path) argument pair of a single-path call. */
static bool path_args(int nr, const uint64_t *a, int *dirfd, uint64_t *path)
{
	switch (nr) {
	case SL_NR_open: case SL_NR_creat: case SL_NR_unlink: case SL_NR_rmdir: case SL_NR_mkdir:
	case SL_NR_mknod: case __NR_truncate: case SL_NR_stat: case SL_NR_lstat: case SL_NR_access:
	case SL_NR_readlink: case SL_NR_chmod: case SL_NR_chown: case SL_NR_lchown:
	case __NR_getxattr: case __NR_lgetxattr: case __NR_listxattr: case __NR_llistxattr:
	case __NR_setxattr: case __NR_lsetxattr: case __NR_removexattr: case __NR_lremovexattr:
		*dirfd = AT_FDCWD;
		*path = a[0];
		return true;
	case __NR_openat: case __NR_unlinkat: case __NR_mkdirat: case __NR_mknodat:
	case __NR_newfstatat: case __NR_statx: case __NR_faccessat: case __NR_faccessat2:
	case __NR_readlinkat: case __NR_fchmodat: case __NR_fchownat: case __NR_utimensat:
		*dirfd = (int)(int32_t)a[0];
		*path = a[1];
		return true;
	case __NR_symlinkat:
		*dirfd = (int)(int32_t)a[1];
		*path = a[2];
		return true;
	case SL_NR_symlink:
		*dirfd = AT_FDCWD;
		*path = a[1];
		return true;
	default:
		return false;
	}
}

/* Whether a single-path call follows a symlink in its last component. */
static bool follows(int nr, const uint64_t *a)
{
	switch (nr) {
	case SL_NR_open: case __NR_openat: {
		int flags = (int)a[nr == SL_NR_open ? 1 : 2];
		return !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
	}
	case SL_NR_creat: case __NR_truncate: case SL_NR_stat: case SL_NR_access: case __NR_faccessat:
	case SL_NR_chmod: case __NR_fchmodat: case SL_NR_chown: case __NR_getxattr:
	case __NR_listxattr: case __NR_setxattr: case __NR_removexattr:
		return true;
	case __NR_newfstatat: case __NR_faccessat2:
		return !(a[3] & AT_SYMLINK_NOFOLLOW);
	case __NR_statx:
		return !(a[2] & AT_SYMLINK_NOFOLLOW);
	case __NR_fchownat:
		return !(a[4] & AT_SYMLINK_NOFOLLOW);
	case __NR_utimensat:
		return !(a[3] & AT_SYMLINK_NOFOLLOW);
	default: /* unlink*, rmdir, mkdir*, mknod*, symlink*, readlink*, lstat, lchown, l*xattr */
		return false;
	}
}

/* truncate(2) of rel: the staged copy, charged when it grows. */
static long do_truncate(struct cow_state *s, const char *rel, uint64_t len)
{
	if ((int64_t)len < 0)
		return -EINVAL;
	int fd = sl_cow_open(s->cow, rel, O_WRONLY, 0);
	long r = fd;
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0)
		r = -errno;
	else if (fd >= 0 && len > (uint64_t)st.st_size &&
	         sl_cow_charge(s->cow, len - (uint64_t)st.st_size) < 0)
		r = -ENOSPC;
	else if (fd >= 0)
		r = ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	return r;
}

/* A single-path call on the canonical rel (follow: as follows() said). */
static bool decide_rel(struct cow_state *s, const struct sl_call *call, const char *rel,
                       bool shadowed, bool follow, sandlock_action_t *act)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	mode_t um = 0;
	switch (nr) {
	case SL_NR_open:
		return do_open(s, call, rel, shadowed, (int)a[1], (mode_t)a[2], act);
	case __NR_openat:
		return do_open(s, call, rel, shadowed, (int)a[2], (mode_t)a[3], act);
	case SL_NR_creat:
		return do_open(s, call, rel, shadowed, O_CREAT | O_WRONLY | O_TRUNC, (mode_t)a[1], act);
	case SL_NR_unlink:
		return answer(act, sl_cow_unlink(s->cow, rel, false));
	case SL_NR_rmdir:
		return answer(act, sl_cow_unlink(s->cow, rel, true));
	case __NR_unlinkat:
		return answer(act, sl_cow_unlink(s->cow, rel, (a[2] & AT_REMOVEDIR) != 0));
	case SL_NR_mkdir:
	case __NR_mkdirat:
		um = sl_child_umask(call->listener, call->n);
		return answer(act, sl_cow_mkdir(s->cow, rel, (mode_t)a[nr == SL_NR_mkdir ? 1 : 2] & 07777 & ~um));
	case SL_NR_mknod:
	case __NR_mknodat: {
		int i = nr == SL_NR_mknod ? 1 : 2;
		mode_t m = (mode_t)a[i];
		um = sl_child_umask(call->listener, call->n);
		return answer(act, sl_cow_mknod(s->cow, rel, (m & S_IFMT) | (m & 07777 & ~um), (dev_t)a[i + 1]));
	}
	case SL_NR_symlink:
	case __NR_symlinkat: {
		char *t = sandlock_mem_read_string(call->mem, a[0], PATH_MAX);
		long r = t ? sl_cow_symlink(s->cow, t, rel) : -EFAULT;
		sandlock_string_free(t);
		return answer(act, r);
	}
	case __NR_truncate:
		return answer(act, do_truncate(s, rel, a[1]));
	case SL_NR_chmod: case SL_NR_chown: case SL_NR_lchown: case __NR_fchmodat: case __NR_fchownat:
	case __NR_utimensat: case __NR_setxattr: case __NR_lsetxattr: case __NR_removexattr:
	case __NR_lremovexattr:
		return do_meta(s, call, rel, follow, act);
	default: /* the stat family, access, readlink, getxattr, listxattr */
		return do_stat(s, call, rel, shadowed, follow, act);
	}
}

/* 1 if the string at addr ends in a "." component, 2 for "..", else 0
 * (trailing slashes ignored). */
static int last_dot(const struct sl_call *call, uint64_t addr)
{
	char *p = addr ? sandlock_mem_read_string(call->mem, addr, PATH_MAX) : NULL;
	int r = 0;
	if (p) {
		size_t n = strlen(p);
		while (n > 1 && p[n - 1] == '/')
			n--;
		size_t b = n;
		while (b > 0 && p[b - 1] != '/')
			b--;
		if (n - b == 1 && p[b] == '.')
			r = 1;
		else if (n - b == 2 && p[b] == '.' && p[b + 1] == '.')
			r = 2;
	}
	sandlock_string_free(p);
	return r;
}

/*
 * The kernel refuses to name "." or ".." as what a call creates, removes
 * or renames (it is not a name in its parent); collapsed, the path would
 * name a real entry.  The kernel's errno, or 0 for a call it takes.
 */
static int dot_refusal(const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	switch (nr) {
	case SL_NR_rename:
		return last_dot(call, a[0]) || last_dot(call, a[1]) ? EBUSY : 0;
	case __NR_renameat: case __NR_renameat2:
		return last_dot(call, a[1]) || last_dot(call, a[3]) ? EBUSY : 0;
	case SL_NR_link:
		return last_dot(call, a[1]) ? EEXIST : 0;
	case __NR_linkat:
		return last_dot(call, a[3]) ? EEXIST : 0;
	case SL_NR_unlink:
		return last_dot(call, a[0]) ? EISDIR : 0;
	case SL_NR_rmdir: {
		int d = last_dot(call, a[0]);
		return d == 1 ? EINVAL : d == 2 ? ENOTEMPTY : 0;
	}
	case __NR_unlinkat: {
		int d = last_dot(call, a[1]);
		if (!(a[2] & AT_REMOVEDIR))
			return d ? EISDIR : 0;
		return d == 1 ? EINVAL : d == 2 ? ENOTEMPTY : 0;
	}
	case SL_NR_mkdir: case SL_NR_mknod:
		return last_dot(call, a[0]) ? EEXIST : 0;
	case __NR_mkdirat: case __NR_mknodat:
		return last_dot(call, a[1]) ? EEXIST : 0;
	case SL_NR_symlink:
		return last_dot(call, a[1]) ? EEXIST : 0;
	case __NR_symlinkat:
		return last_dot(call, a[2]) ? EEXIST : 0;
	default:
		return 0;
	}
}

static bool cow_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	struct cow_state *s = state;
	if (!s)
		return false;
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	/* Nothing staged yet: a read sees the real tree, no need to look. */
	if (sl_cow_untouched(s->cow) && reads_only(nr, a))
		return false;
	if (nr == __NR_getdents64)
		return do_dents(s, call, act);
	if (sl_sys_is_exec_like(nr))
		return do_exec(s, call, act);
	if (nr == __NR_chdir)
		return do_chdir(s, call, act);
	if (nr == __NR_getcwd)
		return do_getcwd(s, call, act);
	long ret;
	if (sl_cowwrite_is(nr))
		return sl_cowwrite(s->cow, call->listener, call->n, call->mem, &ret) &&
		       answer(act, ret);
	int dot = dot_refusal(call);
	if (dot)
		return answer(act, -dot);
	if (nr == SL_NR_rename)
		return do_pair(s, call, AT_FDCWD, a[0], AT_FDCWD, a[1], act);
	if (nr == __NR_renameat || nr == __NR_renameat2)
		return do_pair(s, call, (int)(int32_t)a[0], a[1], (int)(int32_t)a[2], a[3], act);
	if (nr == SL_NR_link)
		return do_pair(s, call, AT_FDCWD, a[0], AT_FDCWD, a[1], act);
	if (nr == __NR_linkat)
		return do_pair(s, call, (int)(int32_t)a[0], a[1], (int)(int32_t)a[2], a[3], act);
	int dirfd;
	uint64_t path;
	if (!path_args(nr, a, &dirfd, &path))
		return false;
	if (nr == __NR_utimensat && path == 0)
		return false; /* futimens: on the fd itself */
	bool follow = follows(nr, a);
	struct sl_cow_res *res = malloc(sizeof(*res));
	if (!res)
		return answer(act, -ENOMEM);
	int k = resolve_arg(s, call, dirfd, path, follow, res);
	bool r = k < 0 ? answer(act, k)
	         : !k ? false
	         : !res->inside ? do_outside(s, call, res->path, follow, act)
	         : decide_rel(s, call, res->path, res->shadowed, follow, act);
	free(res);
	return r;
}

/* ---------------- lifecycle ---------------- */

static int cow_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (!cfg->workdir)
		return 0;
	size_t ncls = sizeof k_cow_classes / sizeof k_cow_classes[0];
	if (sl_traps_add_classes(out, k_cow_classes, ncls) < 0 ||
	    sl_traps_add_all(out, k_cow_nrs, sizeof k_cow_nrs / sizeof k_cow_nrs[0]) < 0)
		return -1;
	if (cfg->max_disk && sl_traps_add_all(out, sl_cowwrite_nrs, sl_cowwrite_nrs_count) < 0)
		return -1;
	return 0;
}

static void cow_free(void *state)
{
	struct cow_state *s = state;
	if (!s)
		return;
	sl_exec_undo_release(&s->undo);
	sl_cow_free(s->cow, false);
	sl_dirsort_free(s->sorted);
	sl_strvec_free(&s->holes);
	free(s->root);
	free(s);
}

/*
 * Under chroot, paths are guest paths: workdir's place in the view (the
 * builder made sure it has one: the rootfs, or a directory of it or of a
 * mount) and the mount points below it, which belong to their mounts.
 */
static int chroot_space(struct cow_state *s, const struct sandlock_sandbox *cfg,
                        struct sl_view *view, char **msg)
{
	char g[PATH_MAX];
	s->view = view; /* the run's one view (services.h) */
	if (!sl_view_guest(s->view, cfg->workdir, g, sizeof g)) {
		*msg = sl_asprintf("workdir '%s' is not in the chroot's view", cfg->workdir);
		return -1;
	}
	if (!(s->root = sl_strdup(g)))
		goto oom;
	for (size_t i = 0; i < cfg->n_mounts; i++) {
		const char *v = cfg->mounts[i].virt;
		if (!sl_path_under(v, g) || strcmp(v, g) == 0)
			continue;
		const char *rel = v + strlen(g);
		while (*rel == '/')
			rel++;
		if (sl_strvec_push(&s->holes, rel) < 0)
			goto oom;
	}
	return 0;
oom:
	*msg = sl_strdup("out of memory");
	return -1;
}

static int cow_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                    char **msg)
{
	if (!cfg->workdir)
		return 0;
	struct cow_state *s = calloc(1, sizeof(*s));
	if (!s) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	s->cow = sl_cow_new(cfg->workdir, cfg->fs_storage, cfg->max_disk, msg);
	if (!s->cow) {
		free(s);
		return -1;
	}
	s->on_exit = cfg->on_exit;
	s->policy = cfg->policy_fn != NULL;
	s->on_error = cfg->on_error;
	int e = cfg->chroot ? chroot_space(s, cfg, sv->view, msg)
	        : (s->root = sl_strdup(cfg->workdir)) ? 0 : -1;
	if (!e && cfg->deterministic_dirs && !(s->sorted = sl_dirsort_new()))
		e = -1;
	if (e) {
		if (!*msg)
			*msg = sl_strdup("out of memory");
		cow_free(s);
		return -1;
	}
	s->space.root = s->root;
	s->space.holes = &s->holes;
	*state = s;
	return 0;
}

/* The run is over: list the changes, then commit, abort or keep. */
static void cow_finish(void *state, struct sandlock_result *r)
{
	struct cow_state *s = state;
	if (!s || !s->cow)
		return;
	bool ok = r->reason == SANDLOCK_EXIT_EXITED && r->exit_code == 0;
	int action = ok ? s->on_exit : s->on_error;
	int e = sl_cow_changes(s->cow, &r->changes);
	bool keep = action == SANDLOCK_BRANCH_KEEP;
	if (e) {
		r->cow_error = sl_asprintf("cannot list the changes: %s", strerror(-e));
		keep = true;
	} else if (action == SANDLOCK_BRANCH_COMMIT) {
		e = sl_cow_commit(s->cow, &r->changes, &r->conflicts);
		if (e == -EBUSY) /* cowjournal.c: the workdir's commit lock */
			r->cow_error = sl_strdup("commit failed: another commit into the workdir "
			                         "held its lock for a minute");
		else if (e)
			r->cow_error = sl_asprintf("commit failed: %s", strerror(-e));
		keep = e || r->conflicts.n > 0; /* never lose staged work */
	}
	if (keep)
		r->cow_kept = sl_strdup(sl_cow_upper_path(s->cow));
	sl_cow_free(s->cow, keep);
	s->cow = NULL;
}

static void cow_answered(void *state, const sandlock_notif_t *n)
{
	struct cow_state *s = state;
	if (s)
		sl_exec_answered(&s->undo, n);
}

/* The upper layer is readable and executable by the guest (a program it
 * built runs from there, do_exec), never writable: writes go through
 * the fds this builtin hands out, so max_disk and commit stay ours. */
static int cow_ruleset(void *state, const struct sandlock_sandbox *cfg, int ruleset_fd, char **msg)
{
	struct cow_state *s = state;
	return s && s->cow ? sl_landlock_grant_read(ruleset_fd, cfg, sl_cow_upper_path(s->cow), msg)
	                   : 0;
}

const struct sl_builtin sl_builtin_cow = {
	.name = "copy-on-write workdir",
	.setting = "workdir (the copy-on-write layer needs the supervisor)",
	.phase = SL_PHASE_FIRST,
	.syscalls = cow_syscalls,
	.init = cow_init,
	.free = cow_free,
	.ruleset = cow_ruleset,
	.decide = cow_decide,
	.answered = cow_answered,
	.finish = cow_finish,
	.needs_opener = true, /* reads reached through the merged view */
};
