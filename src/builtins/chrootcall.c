/*
 * chrootcall.c — a trapped call's path in the chroot view (chrootcall.h):
 * read once from the caller's memory by the one caller-path reader
 * (childfd.h: a name of the caller's own /proc spelled with its pid, as
 * the opener, COW and the metadata guard see it), made a guest path (its
 * dirfd and cwd mapped back), and opened in the view.  A leaf that
 * chroot.c (the lookups, chdir, exec) and chrootwrite.c (the write-side
 * calls) share.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>

#include "builtins/chrootcall.h"
#include "supervisor/childfd.h"

char *sl_chroot_read(const struct sl_call *call, uint64_t addr, bool follow, int *e)
{
	return sl_child_read_path(call->mem, addr, call->n, follow, e);
}

/* The guest path of path (read from the caller), relative to dirfd.  0 or
 * an errno; *empty when the path is "" (an fd-based form). */
static int guest_of(const struct sl_view *v, const struct sl_call *call, int dirfd,
                    const char *path, char *out, size_t cap, bool *empty)
{
	*empty = !path[0];
	return *empty ? 0 : sl_view_call_path(v, call->listener, call->n, dirfd, path, out, cap);
}

int sl_chroot_guest_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                         uint64_t addr, bool follow, char *out, size_t cap, bool *empty)
{
	*empty = false;
	int e = 0;
	char *p = sl_chroot_read(call, addr, follow, &e);
	if (!p)
		return e;
	e = guest_of(v, call, dirfd, p, out, cap, empty);
	free(p);
	return e;
}

int sl_chroot_open_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                        const char *path, int extra, bool *ro)
{
	char g[PATH_MAX];
	bool empty;
	int e = guest_of(v, call, dirfd, path, g, sizeof g, &empty);
	if (e)
		return -e;
	if (empty)
		return -ENOTEMPTY;
	return sl_view_open(v, g, O_PATH | extra, ro);
}

int sl_chroot_open_call_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                             uint64_t addr, int extra, bool *ro)
{
	int e = 0;
	char *p = sl_chroot_read(call, addr, !(extra & O_NOFOLLOW), &e);
	if (!p)
		return -e;
	int fd = sl_chroot_open_path(v, call, dirfd, p, extra, ro);
	free(p);
	return fd;
}

long sl_chroot_rc(int r)
{
	return r == 0 ? 0 : -errno;
}
