/*
 * open.c — the open family and getdents64 in the merged view: a write
 * open stages (copy-up or create), a read of a staged file opens the
 * copy, a read of a real file reached another way than the caller's
 * string is made by the opener, an O_PATH open that cannot be injected
 * gets a host path swapped in; a listing is the merged one.  Split from
 * cow.c along its sections.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "opener/opener.h"
#include "builtins/cow/callargs.h"
#include "builtins/cow/open.h"
#include "supervisor/services.h"

#define MAX_DENTS (64 * 1024)

/* Inject a read-only open of path (from base) made by the opener thread,
 * so Landlock decides on it as it would for the caller. */
bool sl_cowb_open_by_opener(const struct sl_call *call, int base, const char *path, int flags,
                            uint64_t resolve, sandlock_action_t *act)
{
	struct sl_opener *op = call->sv->opener; /* the run's (services.h) */
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
	return sl_cowb_open_by_opener(call, AT_FDCWD, host, flags, RESOLVE_NO_SYMLINKS, act);
}

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
	if (!sl_sys_path_arg(call->n->syscall_nr, call->n->args, &dirfd, &addr))
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
		struct sl_opener *op = call->sv->opener; /* the run's (services.h) */
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

bool sl_cowb_open(struct cow_state *s, const struct sl_call *call, const char *rel,
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

bool sl_cowb_dents(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
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
