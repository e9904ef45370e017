/*
 * chrootxattr.c — getxattr, setxattr, listxattr, removexattr (and the l*
 * forms) by path under chroot: the path is resolved in the view by
 * chroot.c (never a host path outside the rootfs and mounts), and the call
 * is performed here on the file it found, through /proc/self/fd/N, with
 * the supervisor's capabilities lowered (so trusted.* and security.*
 * stay the caller's privileges, not ours).  Writes obey the view: EROFS
 * under a read-only mount, EACCES where neither fs_write nor a mount
 * grants writing; nothing under fs_deny is read or written; no file
 * capabilities (security.capability: EPERM, as the metadata guard).
 *
 * The l* forms on a symlink itself: Linux keeps no user.* xattrs on
 * symlinks, and the /proc/self/fd/N route would act on the target, so
 * get answers ENODATA, list an empty list, set and remove EPERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>

#include "launch/caps.h"
#include "syscalls.h"
#include "util.h"
#include "builtins/chrootxattr.h"

#define NAME_CAP 256       /* XATTR_NAME_MAX + NUL */
#define VALUE_CAP 65536    /* XATTR_SIZE_MAX (and XATTR_LIST_MAX) */

bool sl_chroot_is_xattr(int nr, bool *follow)
{
	struct sl_xattr_call x = sl_sys_xattr(nr);
	*follow = x.follow;
	return x.op != SL_XATTR_NONE && x.by_path;
}

static long rcl(ssize_t r)
{
	return r < 0 ? -errno : (long)r;
}

/* get or list into a buffer of ours, then the caller's (size 0: the size). */
static long read_side(const struct sl_call *call, const char *p, const char *name)
{
	const uint64_t *a = call->n->args;
	uint64_t dst = name ? a[2] : a[1];
	size_t size = (size_t)(name ? a[3] : a[2]);
	if (size > VALUE_CAP)
		size = VALUE_CAP; /* as the kernel: more is never returned */
	char *buf = size ? malloc(size) : NULL;
	if (size && !buf)
		return -ENOMEM;
	long r = name ? rcl(getxattr(p, name, buf, size)) : rcl(listxattr(p, buf, size));
	if (r > 0 && size && sandlock_mem_poke(call->mem, dst, buf, (size_t)r) != 0)
		r = -EFAULT;
	free(buf);
	return r;
}

static long set_side(const struct sl_call *call, const char *p, const char *name)
{
	const uint64_t *a = call->n->args;
	size_t size = (size_t)a[3];
	if (size > VALUE_CAP)
		return -E2BIG;
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	long r = size && sandlock_mem_peek(call->mem, a[2], buf, size) != 0
	             ? -EFAULT
	             : rcl(setxattr(p, name, buf, size, (int)a[4]));
	free(buf);
	return r;
}

static bool is_set(int nr)
{
	return sl_sys_xattr(nr).op == SL_XATTR_SET;
}

static bool is_remove(int nr)
{
	return sl_sys_xattr(nr).op == SL_XATTR_REMOVE;
}

static bool is_list(int nr)
{
	return sl_sys_xattr(nr).op == SL_XATTR_LIST;
}

/* What the l* forms say about a symlink itself (see the top). */
static long on_symlink(int nr)
{
	return is_list(nr) ? 0 : is_set(nr) || is_remove(nr) ? -EPERM : -ENODATA;
}

long sl_chroot_xattr(const struct sl_view *v, const struct sl_call *call, int fd, bool ro)
{
	int nr = call->n->syscall_nr;
	bool writes = is_set(nr) || is_remove(nr);
	char host[PATH_MAX], p[64];
	if (!sl_fd_path(fd, host, sizeof host) || sl_view_denied(v, host))
		return -EACCES;
	if (writes && ro)
		return -EROFS;
	if (writes && !sl_view_writable(v, host))
		return -EACCES;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (S_ISLNK(st.st_mode))
		return on_symlink(nr);
	char *name = NULL;
	if (!is_list(nr)) {
		name = sandlock_mem_read_string(call->mem, call->n->args[1], NAME_CAP);
		if (!name)
			return -ERANGE; /* unreadable, or longer than XATTR_NAME_MAX */
	}
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	struct sl_caps_saved sv;
	long r;
	if (is_set(nr) && strcmp(name, "security.capability") == 0) {
		r = -EPERM;
	} else if (sl_caps_lower(&sv) < 0) {
		r = -EPERM;
	} else {
		r = is_set(nr)      ? set_side(call, p, name)
		    : is_remove(nr) ? rcl(removexattr(p, name))
		                    : read_side(call, p, name);
		sl_caps_restore(&sv);
	}
	sandlock_string_free(name);
	return r;
}
