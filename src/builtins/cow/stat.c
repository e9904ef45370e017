/*
 * stat.c — what the merged view answers to lookups: the stat family,
 * access, readlink and the xattr reads of a staged file (with the link
 * count and mode the view shows), and every read-only call on a path
 * that left workdir through something staged.  Split from cow.c along
 * its sections.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscalls.h"
#include "launch/caps.h"
#include "builtins/cow/callargs.h"
#include "builtins/cow/open.h"
#include "builtins/cow/stat.h"

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
bool sl_cowb_stat(struct cow_state *s, const struct sl_call *call, const char *rel,
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
	/* A directory both layers have is opened in the real tree (open.c):
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
bool sl_cowb_outside(struct cow_state *s, const struct sl_call *call, const char *path,
                     bool follow, sandlock_action_t *act)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	if (nr == SL_NR_open || nr == __NR_openat) {
		int flags = (int)a[nr == SL_NR_open ? 1 : 2];
		if (!s->view)
			return sl_cowb_open_by_opener(call, AT_FDCWD, path, flags, 0, act);
		char rel[PATH_MAX];
		int base;
		bool ro;
		int e = sl_view_map(s->view, path, !(flags & O_NOFOLLOW), &base, rel, sizeof rel, &ro);
		return e ? answer(act, -e) : sl_cowb_open_by_opener(call, base, rel, flags, RESOLVE_IN_ROOT, act);
	}
	if (nr == SL_NR_creat || !sl_cowb_reads_only(nr, a))
		return answer(act, -EACCES);
	int fd = outside_fd(s, path, follow);
	if (fd < 0)
		return answer(act, fd);
	struct view_stat none = { 0, -1 };
	long r = stat_fd(call, fd, follow, &none);
	close(fd);
	return answer(act, r);
}
