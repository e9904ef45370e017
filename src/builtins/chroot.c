/*
 * chroot.c — the virtual chroot (issue 10): the guest sees cfg->chroot as
 * "/" (with cfg->mounts' host directories at their virtual paths) for
 * every path syscall and exec.  No mount, namespace or privilege: each
 * call naming a path is performed here, on the caller's behalf, on the
 * file the guest path names inside the view (src/builtins/chroot.c: resolved with
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
 *     utimensat, truncate: performed by chrootwrite.c with our
 *     capabilities lowered (the caller's DAC rights) on the parent
 *     directory opened in the view, only where the view is writable
 *     (chroot.h, sl_view_writable: a read-write mount or an fs_write tree;
 *     EROFS in a read-only mount, EACCES elsewhere); a mount point, or a
 *     directory holding one, is never unlinked, renamed (EBUSY) or linked
 *     (EXDEV) (sl_view_busy);
 *   - getcwd: the host cwd mapped back to its guest path;
 *   - chdir and exec: the kernel must do them, so the call continues.
 *     chdir continues unchanged when the kernel's own lookup reaches the
 *     same directory; otherwise the host path is swapped in for the
 *     caller's string until the call is over (execpath.h, sl_path_swap:
 *     the caller is held stopped until its bytes are back, so its $PWD
 *     stays the guest's).  exec: the file is resolved in the view
 *     and checked (regular, executable, a #! or ELF interpreter that the
 *     kernel will find at the same host path, see interp_same), then the
 *     caller's path string is replaced by the host path (execpath.h: argv
 *     and envp strings in the way are moved, the program sees its argv).
 *
 * FAIL CLOSED: Landlock grants only the rootfs (read, exec), the mounts
 * and the configured host trees, so a call this builtin misses, or a
 * racing thread that rewrites a path after our check, reaches nothing
 * else.  mknod makes fifos and sockets where the view is writable.
 * xattrs by path: resolved in the view, performed by chrootxattr.c.
 * Refused outright: utime/utimes/futimesat,
 * inotify_add_watch, name_to_handle_at (not supported under chroot yet).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "paths/chroot.h"
#include "compat.h"
#include "paths/execpath.h"
#include "opener/opener.h"
#include "syscalls.h"
#include "builtins/builtin.h"
#include "builtins/chrootcall.h"
#include "builtins/chrootwrite.h"
#include "builtins/chrootxattr.h"
#include "builtins/proc.h" /* sl_open_on_behalf */
#include "supervisor/services.h"

#ifndef AT_EMPTY_PATH
#define AT_EMPTY_PATH 0x1000
#endif
/* Every call that names a path (syscalls.h's classes). */
static const sl_sys_class k_classes[] = {
	sl_sys_open_family,  sl_sys_path_lookup,   sl_sys_cwd,        sl_sys_exec_like,
	sl_sys_path_change,  sl_sys_path_metadata, sl_sys_path_xattr, sl_sys_path_other,
};

struct chroot_state {
	struct sl_view *view;
	struct sl_exec_undo undo; /* an exec by a vfork child (execpath.h) */
};

static bool answer(sandlock_action_t *act, long r)
{
	if (r < 0)
		sandlock_action_set_errno(act, (int32_t)-r);
	else
		sandlock_action_set_return_value(act, r);
	return true;
}

/* ---------------- xattrs ---------------- */

/* get/set/list/removexattr by path: the file found in the view. */
static long do_xattr(const struct chroot_state *s, const struct sl_call *call, bool follow)
{
	bool ro = false;
	int fd = sl_chroot_open_call_path(s->view, call, AT_FDCWD, call->n->args[0],
	                                  follow ? 0 : O_NOFOLLOW, &ro);
	if (fd < 0)
		return fd == -ENOTEMPTY ? -ENOENT : fd; /* "": the kernel's ENOENT */
	long r = sl_chroot_xattr(s->view, call, fd, ro);
	close(fd);
	return r;
}

/* ---------------- lookups ---------------- */

/* access/faccessat*: as the caller (effective ids), EROFS/EACCES for a
 * write check where the view is not writable. */
static long access_fd(const struct chroot_state *s, int fd, int mode, bool ro)
{
	char host[PATH_MAX], p[64];
	if ((mode & W_OK) && ro)
		return -EROFS;
	if ((mode & W_OK) && (!sl_fd_path(fd, host, sizeof host) || !sl_view_writable(s->view, host)))
		return -EACCES;
	if (mode == F_OK)
		return 0;
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) < 0)
		return -EPERM;
	long r = sl_chroot_rc(faccessat(AT_FDCWD, p, mode, AT_EACCESS));
	sl_caps_restore(&sv);
	return r;
}

/* readlink: a link of the guest's /proc (a mount of the host's) names a
 * host path: shown as its guest path when it lies in the view; its "self"
 * and "thread-self", read by us, would name the supervisor: the caller's
 * (sl_view_proc_self). */
static long readlink_fd(const struct chroot_state *s, const struct sl_call *call, int fd,
                        uint64_t buf, size_t cap)
{
	char t[PATH_MAX];
	struct stat st;
	/* readlinkat(fd, "") says ENOENT for a non-link; readlink, EINVAL
	 * (realpath(3) tells links from the rest by it). */
	if (fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode))
		return -EINVAL;
	ssize_t len = readlinkat(fd, "", t, sizeof t - 1);
	if (len < 0)
		return -errno;
	t[len] = '\0';
	struct statfs sf;
	char g[PATH_MAX];
	bool proc = fstatfs(fd, &sf) == 0 && sf.f_type == 0x9fa0; /* PROC_SUPER_MAGIC */
	if (proc && t[0] == '/' && sl_view_guest(s->view, t, g, sizeof g))
		snprintf(t, sizeof t, "%s", g);
	else if (proc && t[0] != '/' && sl_fd_path(fd, g, sizeof g)) {
		int e = sl_view_proc_self(strrchr(g, '/') + 1, t, sizeof t);
		if (e)
			return e;
	}
	len = (ssize_t)strlen(t);
	if ((size_t)len > cap)
		len = (ssize_t)cap;
	return sandlock_mem_poke(call->mem, buf, t, (size_t)len) == 0 ? len : -EFAULT;
}

static long do_lookup(const struct chroot_state *s, const struct sl_call *call, int dirfd,
                      uint64_t addr, bool follow, bool *pass)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	bool ro = false;
	int fd = sl_chroot_open_call_path(s->view, call, dirfd, addr, follow ? 0 : O_NOFOLLOW, &ro);
	if (fd == -ENOTEMPTY) {
		*pass = true; /* "" with AT_EMPTY_PATH: the caller's own fd */
		return 0;
	}
	if (fd < 0)
		return fd;
	long r;
	struct stat st;
	if (nr == __NR_newfstatat || nr == SL_NR_stat || nr == SL_NR_lstat) {
		r = sl_chroot_rc(fstatat(fd, "", &st, AT_EMPTY_PATH));
		if (!r && sandlock_mem_poke(call->mem, nr == __NR_newfstatat ? a[2] : a[1], &st,
		                             sizeof st) != 0)
			r = -EFAULT;
	} else if (nr == __NR_statx) {
		struct statx sx;
		int fl = ((int)a[2] & ~AT_SYMLINK_NOFOLLOW) | AT_EMPTY_PATH;
		r = sl_chroot_rc(statx(fd, "", fl, (unsigned)a[3], &sx));
		if (!r && sandlock_mem_poke(call->mem, a[4], &sx, sizeof sx) != 0)
			r = -EFAULT;
	} else if (nr == __NR_statfs) {
		struct statfs sf;
		r = sl_chroot_rc(fstatfs(fd, &sf));
		if (!r && sandlock_mem_poke(call->mem, a[1], &sf, sizeof sf) != 0)
			r = -EFAULT;
	} else if (nr == SL_NR_readlink) {
		r = readlink_fd(s, call, fd, a[1], (size_t)a[2]);
	} else if (nr == __NR_readlinkat) {
		r = readlink_fd(s, call, fd, a[2], (size_t)a[3]);
	} else { /* access family */
		r = access_fd(s, fd, (int)(nr == SL_NR_access ? a[1] : a[2]), ro);
	}
	close(fd);
	return r;
}

static long do_getcwd(const struct chroot_state *s, const struct sl_call *call)
{
	int fd = sl_child_dirfd(call->listener, call->n, AT_FDCWD);
	if (fd < 0)
		return fd;
	char g[PATH_MAX];
	bool in = sl_view_fd_guest(s->view, fd, g, sizeof g);
	close(fd);
	if (!in)
		return -ENOENT; /* a cwd outside the guest's tree has no guest name */
	size_t len = strlen(g) + 1;
	if (len > (size_t)call->n->args[1])
		return -ERANGE;
	return sandlock_mem_poke(call->mem, call->n->args[0], g, len) == 0 ? (long)len : -EFAULT;
}

/* ---------------- chdir ---------------- */

/* The relative path from canonical directory from to canonical to. */
static bool relpath(const char *from, const char *to, char *out, size_t cap)
{
	size_t common = 0, i = 0;
	for (; from[i] && from[i] == to[i]; i++)
		if (from[i] == '/')
			common = i;
	if ((!from[i] || from[i] == '/') && (!to[i] || to[i] == '/'))
		common = i;
	if (strcmp(from, "/") == 0)
		common = 0;
	size_t o = 0;
	out[0] = '\0';
	for (const char *q = from + common; *q; q++)
		if (*q == '/' && (o += (size_t)snprintf(out + o, cap - o, o ? "/.." : "..")) >= cap)
			return false;
	const char *rest = to + common;
	while (*rest == '/')
		rest++;
	if (*rest && (o += (size_t)snprintf(out + o, cap - o, "%s%s", o ? "/" : "", rest)) >= cap)
		return false;
	if (!o)
		snprintf(out, cap, ".");
	return true;
}

static bool same_file(int a, int b)
{
	struct stat x, y;
	return fstat(a, &x) == 0 && fstat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

static bool do_chdir(struct chroot_state *s, const struct sl_call *call,
                     sandlock_action_t *act)
{
	uint64_t addr = call->n->args[0];
	int e = 0;
	char *orig = sl_chroot_read(call, addr, true, &e);
	if (!orig)
		return answer(act, -e);
	bool ro;
	int want = sl_chroot_open_path(s->view, call, AT_FDCWD, orig, O_DIRECTORY, &ro);
	if (want == -ENOTEMPTY)
		want = -ENOENT;
	if (want < 0) {
		free(orig);
		return answer(act, want);
	}
	int cwd = sl_child_dirfd(call->listener, call->n, AT_FDCWD);
	int kern = cwd < 0 ? -1 : openat(cwd, orig, O_PATH | O_DIRECTORY | O_CLOEXEC);
	bool same = kern >= 0 && same_file(kern, want);
	char to[PATH_MAX];
	long r = 0;
	/* The kernel would land elsewhere: it chdirs to the host path,
	 * swapped in for the caller's string until the call is over. */
	if (!same)
		r = !sl_fd_path(want, to, sizeof to) ? -ENOENT : sl_path_swap(call, addr, to, &s->undo);
	if (kern >= 0)
		close(kern);
	if (cwd >= 0)
		close(cwd);
	close(want);
	free(orig);
	if (r)
		return answer(act, r);
	sandlock_action_set_continue(act);
	return true;
}

/* ---------------- exec ---------------- */

/*
 * execve/execveat(AT_FDCWD or a dirfd, path): resolved in the view, then
 * the caller's string is replaced (execpath.h) by a path the kernel
 * resolves to the same file: the host path, or the shorter relative one
 * from the caller's cwd.  Every failure we can foresee is answered before
 * the write.
 * A racing rewrite of the string reaches only what Landlock grants.
 * The fd form (AT_EMPTY_PATH) continues: the fd was opened in the view.
 */
static bool do_exec(struct chroot_state *s, const struct sl_call *call,
                    sandlock_action_t *act)
{
	struct sl_exec_args x;
	sl_sys_exec_args(call->n->syscall_nr, call->n->args, &x);
	int dirfd = x.dirfd;
	int e = 0;
	char *orig = sl_chroot_read(call, x.path, true, &e);
	if (!orig)
		return answer(act, -e);
	if (!orig[0]) {
		free(orig);
		if (x.flags & AT_EMPTY_PATH) {
			sandlock_action_set_continue(act);
			return true;
		}
		return answer(act, -ENOENT);
	}
	bool ro;
	int fd = sl_chroot_open_path(s->view, call, dirfd, orig, 0, &ro);
	long r = 0;
	char host[PATH_MAX], from[PATH_MAX], rel[PATH_MAX];
	const char *use = host;
	if (fd < 0) {
		r = fd;
	} else {
		r = -sl_view_exec_check(s->view, fd);
		if (!r && !sl_fd_path(fd, host, sizeof host))
			r = -ENOENT;
	}
	int cwd = r ? -1 : sl_child_dirfd(call->listener, call->n, AT_FDCWD);
	/* The relative form is the kernel's only from the cwd (not a dirfd). */
	if (cwd >= 0 && dirfd == AT_FDCWD && sl_fd_path(cwd, from, sizeof from) &&
	    relpath(from, host, rel, sizeof rel) &&
	    strlen(rel) < strlen(host))
		use = rel;
	if (cwd >= 0)
		close(cwd);
	/* argv[0] is often the path string itself: execpath.c moves it. */
	if (!r)
		r = sl_exec_set_path(call, use, true, &s->undo);
	if (fd >= 0)
		close(fd);
	free(orig);
	if (r)
		return answer(act, r);
	sandlock_action_set_continue(act);
	return true;
}

/* ---------------- deciding ---------------- */

static bool lookup(const struct chroot_state *s, const struct sl_call *call, int dirfd,
                   uint64_t addr, bool follow, sandlock_action_t *act)
{
	bool pass = false;
	long r = do_lookup(s, call, dirfd, addr, follow, &pass);
	return pass ? false : answer(act, r);
}

static bool chroot_decide_for(struct chroot_state *st, const struct sl_call *call,
                              sandlock_action_t *act);

/* Every walk of a call is for its caller (chroot.h: /proc/self, the
 * /proc policy). */
static bool chroot_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	sl_view_for(call->n, call->init);
	bool r = chroot_decide_for(state, call, act);
	sl_view_for(NULL, 0);
	return r;
}

static bool chroot_decide_for(struct chroot_state *st, const struct sl_call *call,
                              sandlock_action_t *act)
{
	const struct chroot_state *s = st;
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	int d0 = (int)a[0];
	if (sl_sys_is_open_family(nr))
		return sl_open_on_behalf(call, NULL, NULL, act); /* the opener maps it in the view */
	int dirfd;
	uint64_t path;
	if (sl_sys_is_path_lookup(nr) && sl_sys_path_arg(nr, a, &dirfd, &path))
		return lookup(s, call, dirfd, path, sl_sys_path_follows(nr, a), act);
	if (nr == __NR_statfs)
		return lookup(s, call, AT_FDCWD, a[0], true, act);
	if (nr == __NR_getcwd)
		return answer(act, do_getcwd(s, call));
	if (nr == __NR_chdir)
		return do_chdir(st, call, act);
	if (sl_sys_is_exec_like(nr))
		return do_exec(st, call, act);
	if (nr == SL_NR_mkdir)
		return answer(act, sl_chroot_create(s->view, call, AT_FDCWD, a[0], (mode_t)a[1], 0, true));
	if (nr == __NR_mkdirat)
		return answer(act, sl_chroot_create(s->view, call, d0, a[1], (mode_t)a[2], 0, true));
	if (nr == SL_NR_rmdir)
		return answer(act, sl_chroot_unlink(s->view, call, AT_FDCWD, a[0], AT_REMOVEDIR));
	if (nr == SL_NR_unlink)
		return answer(act, sl_chroot_unlink(s->view, call, AT_FDCWD, a[0], 0));
	if (nr == __NR_unlinkat)
		return answer(act, sl_chroot_unlink(s->view, call, d0, a[1], (int)a[2]));
	if (nr == SL_NR_symlink)
		return answer(act, sl_chroot_symlink(s->view, call, a[0], AT_FDCWD, a[1]));
	if (nr == __NR_symlinkat)
		return answer(act, sl_chroot_symlink(s->view, call, a[0], (int)a[1], a[2]));
	if (nr == SL_NR_rename)
		return answer(act, sl_chroot_pair(s->view, call, AT_FDCWD, a[0], AT_FDCWD, a[1], 0, false));
	if (nr == __NR_renameat)
		return answer(act, sl_chroot_pair(s->view, call, d0, a[1], (int)a[2], a[3], 0, false));
	if (nr == __NR_renameat2)
		return answer(act, sl_chroot_pair(s->view, call, d0, a[1], (int)a[2], a[3],
		                                  (unsigned)a[4], false));
	if (nr == SL_NR_link)
		return answer(act, sl_chroot_pair(s->view, call, AT_FDCWD, a[0], AT_FDCWD, a[1], 0, true));
	if (nr == __NR_linkat) {
		if ((int)a[4] & ~AT_SYMLINK_FOLLOW)
			return answer(act, -EINVAL); /* AT_EMPTY_PATH: not supported under chroot yet */
		return answer(act, sl_chroot_pair(s->view, call, d0, a[1], (int)a[2], a[3], 0, true));
	}
	if (nr == SL_NR_chmod || nr == SL_NR_chown || nr == __NR_truncate)
		return answer(act, sl_chroot_meta(s->view, call, AT_FDCWD, a[0], true));
	if (nr == SL_NR_lchown)
		return answer(act, sl_chroot_meta(s->view, call, AT_FDCWD, a[0], false));
	if (nr == __NR_fchmodat || nr == __NR_fchmodat2 || nr == __NR_fchownat ||
	    nr == __NR_utimensat) {
		int fl = (int)(nr == __NR_fchmodat ? 0 : nr == __NR_fchownat ? a[4] : a[3]);
		if (nr == __NR_utimensat && !a[1])
			return false; /* futimens: the caller's own fd */
		if ((fl & AT_EMPTY_PATH) && nr == __NR_fchownat)
			return false;
		return answer(act, sl_chroot_meta(s->view, call, d0, a[1], !(fl & AT_SYMLINK_NOFOLLOW)));
	}
	if (nr == SL_NR_mknod)
		return answer(act, sl_chroot_create(s->view, call, AT_FDCWD, a[0], (mode_t)a[1],
		                                    (dev_t)a[2], false));
	if (nr == __NR_mknodat)
		return answer(act, sl_chroot_create(s->view, call, d0, a[1], (mode_t)a[2], (dev_t)a[3], false));
	bool follow;
	if (sl_chroot_is_xattr(nr, &follow))
		return answer(act, do_xattr(s, call, follow));
	/* utime(s), inotify, handles, chroot: not supported under chroot
	 * yet (they would name host paths). */
	return answer(act, -ENOSYS);
}

static int chroot_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (!cfg->chroot)
		return 0;
	return sl_traps_add_classes(out, k_classes, sizeof k_classes / sizeof k_classes[0]);
}

static int chroot_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                       char **msg)
{
	*state = NULL;
	if (!cfg->chroot)
		return 0; /* off: traps nothing, never decides */
	struct chroot_state *s = calloc(1, sizeof *s);
	if (!s) {
		*msg = strdup("out of memory");
		return -1;
	}
	s->view = sv->view; /* the run's one view (services.h) */
	*state = s;
	return 0;
}

static void chroot_free(void *state)
{
	struct chroot_state *s = state;
	if (!s)
		return;
	sl_exec_undo_release(&s->undo);
	free(s);
}

static void chroot_answered(void *state, const sandlock_notif_t *n)
{
	struct chroot_state *s = state;
	sl_exec_answered(&s->undo, n);
}

const struct sl_builtin sl_builtin_chroot = {
	.name = "chroot",
	.setting = "chroot (paths are resolved by the supervisor)",
	.phase = SL_PHASE_FIRST,
	.needs_opener = true,
	.syscalls = chroot_syscalls,
	.init = chroot_init,
	.free = chroot_free,
	.decide = chroot_decide,
	.answered = chroot_answered,
};
