/*
 * chrootcall.c — a trapped call's path in the chroot view (chrootcall.h):
 * read once from the caller's memory, made a guest path (its dirfd and
 * cwd mapped back), and opened in the view.  A leaf that chroot.c (the
 * lookups, chdir, exec) and chrootwrite.c (the write-side calls) share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>

#include "builtins/chrootcall.h"

/* The guest path of the call's (dirfd, addr), read once.  0 or an errno;
 * *empty when the path is "" (an fd-based form). */
int sl_chroot_guest_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                          uint64_t addr, char *out, size_t cap, bool *empty)
{
	*empty = false;
	if (!addr)
		return EFAULT;
	char *p = sandlock_mem_read_string(call->mem, addr, PATH_MAX);
	if (!p)
		return ENAMETOOLONG; /* unreadable or unterminated */
	if (!p[0]) {
		*empty = true;
		sandlock_string_free(p);
		return 0;
	}
	int e = sl_view_call_path(v, call->listener, call->n, dirfd, p, out, cap);
	sandlock_string_free(p);
	return e;
}

/* Open (dirfd, addr) in the view as O_PATH (| extra).  fd or -errno;
 * -ENOTEMPTY marks an empty path (for the caller to pass). */
int sl_chroot_open_call_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                              uint64_t addr, int extra, bool *ro)
{
	char g[PATH_MAX];
	bool empty;
	int e = sl_chroot_guest_path(v, call, dirfd, addr, g, sizeof g, &empty);
	if (e)
		return -e;
	if (empty)
		return -ENOTEMPTY;
	return sl_view_open(v, g, O_PATH | extra, ro);
}

long sl_chroot_rc(int r)
{
	return r == 0 ? 0 : -errno;
}
