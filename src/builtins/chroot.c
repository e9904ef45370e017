/*
 * chroot.c — the virtual chroot (issue 10): the guest sees cfg->chroot as
 * "/" (with cfg->mounts' host directories at their virtual paths) for
 * every path syscall and exec.  No mount, namespace or privilege: each
 * call naming a path is performed here, on the caller's behalf, on the
 * file the guest path names inside the view (src/chroot.c: resolved with
 * openat2(RESOLVE_IN_ROOT) from the rootfs or mount fd, so ".." and
 * absolute or climbing symlinks cannot leave it).
 *
 * ON when chroot is set.  FIRST phase: it decides every call it traps
 * (the /proc view and the metadata guard, LAST, never see them: they
 * would read the guest path as a host path).  User handlers after it see
 * only the calls it passes (fd-based forms: AT_EMPTY_PATH, futimens).
 *
 *   - open family: through the opener, which maps the path in the view
 *     (opener.c, prepare_in_view) and opens it under the run's Landlock
 *     domain; the fd is injected;
 *   - stat family, access, readlink, statfs: on an O_PATH fd opened in the
 *     view, results written to the caller;
 *   - mkdir, unlink, rmdir, rename, link, symlink, chmod, chown,
 *     utimensat, truncate: performed here with our capabilities lowered
 *     (the caller's DAC rights) on the parent directory opened in the
 *     view, only where the view is writable (chroot.h, sl_view_writable:
 *     a read-write mount or an fs_write tree; EROFS in a read-only mount,
 *     EACCES elsewhere);
 *   - getcwd: the host cwd mapped back to its guest path;
 *   - chdir and exec: the kernel must do them, so the call continues.
 *     chdir continues unchanged when the kernel's own lookup reaches the
 *     same directory; otherwise the caller's path string is overwritten
 *     in place by a relative path from its cwd that reaches it, when that
 *     fits (else ENAMETOOLONG).  exec: the file is resolved in the view
 *     and checked (regular, executable, a #! or ELF interpreter that the
 *     kernel will find at the same host path, see exec_interp), then the
 *     caller's path string is replaced by the host path.  The guest's
 *     memory beyond its string is overwritten for a longer host path:
 *     harmless when exec succeeds (the image is replaced), and every
 *     failure we can foresee is answered before the rewrite.
 *
 * FAIL CLOSED: Landlock grants only the rootfs (read, exec), the mounts
 * and the configured host trees, so a call this builtin misses, or a
 * racing thread that rewrites a path after our check, reaches nothing
 * else.  Refused outright: mknod, xattr by path, utime/utimes/futimesat,
 * inotify_add_watch, name_to_handle_at (not supported under chroot yet).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../caps.h"
#include "../childfd.h"
#include "../chroot.h"
#include "../compat.h"
#include "../opener.h"
#include "builtin.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
/* Legacy path syscalls exist on x86_64, not on aarch64: a negative
 * number there (never trapped, never matched). */
#define LEG(name, k) (k)
#ifdef __NR_open
#define C_open __NR_open
#define C_creat __NR_creat
#define C_stat __NR_stat
#define C_lstat __NR_lstat
#define C_access __NR_access
#define C_readlink __NR_readlink
#define C_mkdir __NR_mkdir
#define C_rmdir __NR_rmdir
#define C_unlink __NR_unlink
#define C_rename __NR_rename
#define C_link __NR_link
#define C_symlink __NR_symlink
#define C_chmod __NR_chmod
#define C_chown __NR_chown
#define C_lchown __NR_lchown
#define C_mknod __NR_mknod
#define C_utime __NR_utime
#define C_utimes __NR_utimes
#define C_futimesat __NR_futimesat
#else
enum { C_open = -1, C_creat = -2, C_stat = -3, C_lstat = -4, C_access = -5, C_readlink = -6,
       C_mkdir = -7, C_rmdir = -8, C_unlink = -9, C_rename = -10, C_link = -11,
       C_symlink = -12, C_chmod = -13, C_chown = -14, C_lchown = -15, C_mknod = -16,
       C_utime = -17, C_utimes = -18, C_futimesat = -19 };
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif

static const int k_nrs[] = {
	C_open, __NR_openat, __NR_openat2, C_creat, C_stat, C_lstat, __NR_newfstatat, __NR_statx,
	C_access, __NR_faccessat, __NR_faccessat2, C_readlink, __NR_readlinkat, __NR_statfs,
	__NR_getcwd, __NR_chdir, __NR_execve, __NR_execveat, C_mkdir, __NR_mkdirat, C_rmdir,
	C_unlink, __NR_unlinkat, C_rename, __NR_renameat, __NR_renameat2, C_link, __NR_linkat,
	C_symlink, __NR_symlinkat, C_chmod, __NR_fchmodat, __NR_fchmodat2, C_chown, C_lchown,
	__NR_fchownat, __NR_utimensat, __NR_truncate, C_mknod, __NR_mknodat, C_utime, C_utimes,
	C_futimesat, __NR_setxattr, __NR_lsetxattr, __NR_getxattr, __NR_lgetxattr,
	__NR_listxattr, __NR_llistxattr, __NR_removexattr, __NR_lremovexattr,
	__NR_inotify_add_watch, __NR_name_to_handle_at, __NR_chroot,
};

struct chroot_state {
	struct sl_view *view;
};

static bool answer(sandlock_action_t *act, long r)
{
	if (r < 0)
		sandlock_action_set_errno(act, (int32_t)-r);
	else
		sandlock_action_set_return_value(act, r);
	return true;
}

/* ---------------- paths ---------------- */

/* The guest path of the call's (dirfd, addr), read once.  0 or an errno;
 * *empty when the path is "" (an fd-based form). */
static int guest_path(const struct chroot_state *s, const struct sl_call *call, int dirfd,
                      uint64_t addr, char *out, size_t cap, bool *empty)
{
	*empty = false;
	if (!addr)
		return EFAULT;
	char *p = sandlock_mem_read_cstr(call->mem, addr, PATH_MAX);
	if (!p)
		return ENAMETOOLONG; /* unreadable or unterminated */
	if (!p[0]) {
		*empty = true;
		sandlock_string_free(p);
		return 0;
	}
	int e = sl_view_call_path(s->view, call->listener, call->n, dirfd, p, out, cap);
	sandlock_string_free(p);
	return e;
}

/* Open (dirfd, addr) in the view as O_PATH (| extra).  fd or -errno;
 * -ENOTEMPTY marks an empty path (for the caller to pass). */
static int open_call_path(const struct chroot_state *s, const struct sl_call *call, int dirfd,
                          uint64_t addr, int extra, bool *ro)
{
	char g[PATH_MAX];
	bool empty;
	int e = guest_path(s, call, dirfd, addr, g, sizeof g, &empty);
	if (e)
		return -e;
	if (empty)
		return -ENOTEMPTY;
	return sl_view_open(s->view, g, O_PATH | extra, ro);
}

/* Our fd's canonical host path (its /proc/self/fd link). */
static bool fd_host(int fd, char *out, size_t cap)
{
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, out, cap - 1);
	if (n <= 0)
		return false;
	out[n] = '\0';
	return true;
}

/* ---------------- the parent of a path (write-side calls) ---------------- */

struct parent {
	int fd;              /* O_PATH directory in the view */
	char name[NAME_MAX + 1];
};

/* Split the guest path of (dirfd, addr) into its parent, opened in the
 * view and checked writable, and its last component.  0 or an errno. */
static int open_parent(const struct chroot_state *s, const struct sl_call *call, int dirfd,
                       uint64_t addr, struct parent *p)
{
	char g[PATH_MAX];
	bool empty;
	p->fd = -1;
	int e = guest_path(s, call, dirfd, addr, g, sizeof g, &empty);
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
	p->fd = sl_view_open(s->view, g, O_PATH | O_DIRECTORY, &ro);
	if (p->fd < 0)
		return -p->fd;
	char host[PATH_MAX];
	if (ro)
		e = EROFS;
	else if (!fd_host(p->fd, host, sizeof host) || !sl_view_writable(s->view, host))
		e = EACCES;
	if (e) {
		close(p->fd);
		p->fd = -1;
	}
	return e;
}

/* Run f with our capabilities lowered: the caller's DAC rights. */
#define AS_CALLER(expr)                                                    \
	({                                                                 \
		struct sl_caps_saved sv_;                                  \
		long r_ = -EPERM;                                          \
		if (sl_caps_lower(&sv_) == 0) {                            \
			r_ = (expr) == 0 ? 0 : -errno;                     \
			sl_caps_restore(&sv_);                             \
		}                                                          \
		r_;                                                        \
	})
