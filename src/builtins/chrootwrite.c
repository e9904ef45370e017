/*
 * chrootwrite.c — the write-side path calls under chroot (chrootwrite.h):
 * mkdir and mknod, unlink and rmdir, symlink, rename and link, chmod,
 * chown, utimensat and truncate, performed on the caller's behalf on the
 * parent (or the file) opened in the view, with our capabilities lowered
 * (the caller's DAC rights), only where the view is writable.  Apart from
 * chroot.c, which decides every call, because they are one mechanism of
 * their own: changing the view, where chroot.c's lookups only read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "compat.h"
#include "builtins/chrootcall.h"
#include "builtins/chrootwrite.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif

struct parent {
	int fd;              /* O_PATH directory in the view */
	char name[NAME_MAX + 1];
};

/* Split the guest path of (dirfd, addr) into its parent, opened in the
 * view and checked writable, and its last component.  0 or an errno. */
static int open_parent(const struct sl_view *v, const struct sl_call *call, int dirfd,
                       uint64_t addr, struct parent *p)
{
	char g[PATH_MAX];
	bool empty;
	p->fd = -1;
	/* The last name is never followed: it is the one made or removed. */
	int e = sl_chroot_guest_path(v, call, dirfd, addr, false, g, sizeof g, &empty);
	if (e)
		return e;
	if (empty)
		return ENOENT;
	sl_path_normalize(g);
	char *slash = strrchr(g, '/');
	if (strcmp(g, "/") == 0 || strlen(slash + 1) > NAME_MAX)
		return strcmp(g, "/") == 0 ? EBUSY : ENAMETOOLONG;
	snprintf(p->name, sizeof p->name, "%s", slash + 1);
	if (slash == g)
		slash[1] = '\0';
	else
		*slash = '\0';
	bool ro = false;
	p->fd = sl_view_open(v, g, O_PATH | O_DIRECTORY, &ro);
	if (p->fd < 0)
		return -p->fd;
	char host[PATH_MAX];
	if (ro)
		e = EROFS;
	else if (!sl_fd_path(p->fd, host, sizeof host) || !sl_view_writable(v, host))
		e = EACCES;
	if (e) {
		close(p->fd);
		p->fd = -1;
	}
	return e;
}

/* A name a call would create already exists in the view: EEXIST, which
 * the kernel answers before any permission or read-only check (mkdir -p
 * relies on it: "/" and the read-only rootfs's directories exist). */
static bool exists_in_view(const struct sl_view *v, const struct sl_call *call, int dirfd,
                           uint64_t addr)
{
	bool ro;
	int fd = sl_chroot_open_call_path(v, call, dirfd, addr, O_NOFOLLOW, &ro);
	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/* mkdir (dir) or mknod in a writable part of the view; mknod makes
 * fifos, sockets and regular files (a device node needs CAP_MKNOD, which
 * the caller lacks: EPERM). */
long sl_chroot_create(const struct sl_view *v, const struct sl_call *call, int dirfd,
                      uint64_t addr, mode_t mode, dev_t dev, bool dir)
{
	if (exists_in_view(v, call, dirfd, addr))
		return -EEXIST;
	struct parent p;
	int e = open_parent(v, call, dirfd, addr, &p);
	if (e)
		return -e;
	mode_t perm = mode & 07777 & ~sl_child_umask(call->listener, call->n);
	struct sl_caps_saved sv;
	long r = -EPERM;
	if (sl_caps_lower(&sv) == 0) {
		r = sl_chroot_rc(dir ? mkdirat(p.fd, p.name, perm)
		           : mknodat(p.fd, p.name, (mode & S_IFMT) | perm, dev));
		sl_caps_restore(&sv);
	}
	close(p.fd);
	return r;
}

long sl_chroot_unlink(const struct sl_view *v, const struct sl_call *call, int dirfd,
                      uint64_t addr, int flags)
{
	struct parent p;
	int e = open_parent(v, call, dirfd, addr, &p);
	if (e)
		return -e;
	struct sl_caps_saved sv;
	long r = -EPERM;
	if (sl_view_busy(v, p.fd, p.name))
		r = -EBUSY;
	else if (sl_caps_lower(&sv) == 0) {
		r = sl_chroot_rc(unlinkat(p.fd, p.name, flags & AT_REMOVEDIR));
		sl_caps_restore(&sv);
	}
	close(p.fd);
	return r;
}

long sl_chroot_symlink(const struct sl_view *v, const struct sl_call *call,
                       uint64_t target, int dirfd, uint64_t addr)
{
	char *t = sandlock_mem_read_string(call->mem, target, PATH_MAX);
	if (!t)
		return -EFAULT;
	if (exists_in_view(v, call, dirfd, addr)) {
		sandlock_string_free(t);
		return -EEXIST;
	}
	struct parent p;
	int e = open_parent(v, call, dirfd, addr, &p);
	long r = -e;
	struct sl_caps_saved sv;
	if (!e && sl_caps_lower(&sv) == 0) {
		r = sl_chroot_rc(symlinkat(t, p.fd, p.name)); /* the target stays a guest path */
		sl_caps_restore(&sv);
	} else if (!e) {
		r = -EPERM;
	}
	if (p.fd >= 0)
		close(p.fd);
	sandlock_string_free(t);
	return r;
}

/* rename* and link*: both parents in the view and writable. */
long sl_chroot_pair(const struct sl_view *v, const struct sl_call *call, int d1,
                    uint64_t p1, int d2, uint64_t p2, unsigned flags, bool link)
{
	if (link && exists_in_view(v, call, d2, p2))
		return -EEXIST;
	struct parent a, b;
	int e = open_parent(v, call, d1, p1, &a);
	if (e)
		return -e;
	e = open_parent(v, call, d2, p2, &b);
	if (e) {
		close(a.fd);
		return -e;
	}
	struct sl_caps_saved sv;
	long r = -EPERM;
	/* A mount point (or a directory holding one) is never moved, removed
	 * or linked: what lies under it in the rootfs would get a name the
	 * mount does not cover. */
	if (sl_view_busy(v, a.fd, a.name) || (!link && sl_view_busy(v, b.fd, b.name)))
		r = link ? -EXDEV : -EBUSY;
	else if (sl_caps_lower(&sv) == 0) {
		r = link ? sl_chroot_rc(linkat(a.fd, a.name, b.fd, b.name, 0))
		         : (syscall(SYS_renameat2, a.fd, a.name, b.fd, b.name, flags) == 0 ? 0 : -errno);
		sl_caps_restore(&sv);
	}
	close(a.fd);
	close(b.fd);
	return r;
}

/* chmod/chown/utimensat/truncate on the file itself, where writable. */
long sl_chroot_meta(const struct sl_view *v, const struct sl_call *call, int dirfd,
                    uint64_t addr, bool follow)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	bool ro = false;
	int fd = sl_chroot_open_call_path(v, call, dirfd, addr, follow ? 0 : O_NOFOLLOW, &ro);
	if (fd < 0)
		return fd;
	char host[PATH_MAX], p[64];
	long r = 0;
	if (ro)
		r = -EROFS;
	else if (!sl_fd_path(fd, host, sizeof host) || !sl_view_writable(v, host))
		r = -EACCES;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	struct sl_caps_saved sv;
	if (!r && sl_caps_lower(&sv) < 0)
		r = -EPERM;
	else if (!r) {
		if (nr == SL_NR_chmod || nr == __NR_fchmodat || nr == __NR_fchmodat2) {
			mode_t m = (mode_t)(nr == SL_NR_chmod ? a[1] : a[2]);
			r = sl_chroot_rc(chmod(p, m & 07777));
		} else if (nr == SL_NR_chown || nr == SL_NR_lchown || nr == __NR_fchownat) {
			int i = nr == __NR_fchownat ? 2 : 1;
			r = sl_chroot_rc(fchownat(fd, "", (uid_t)a[i], (gid_t)a[i + 1], AT_EMPTY_PATH));
		} else if (nr == __NR_utimensat) {
			struct timespec ts[2];
			if (a[2] && sandlock_mem_peek(call->mem, a[2], ts, sizeof ts) != 0)
				r = -EFAULT;
			else
				r = sl_chroot_rc(utimensat(AT_FDCWD, p, a[2] ? ts : NULL, 0));
		} else { /* truncate */
			int w = open(p, O_WRONLY | O_CLOEXEC);
			r = w < 0 ? -errno : sl_chroot_rc(ftruncate(w, (off_t)a[1]));
			if (w >= 0)
				close(w);
		}
		sl_caps_restore(&sv);
	}
	close(fd);
	return r;
}
