/*
 * cowpath.h — resolving a guest's path in the COW layer's merged view.
 *
 * The kernel resolves a path on the real tree only: a symlink the guest
 * staged, a directory it deleted or a symlink it replaced by a directory
 * are invisible to it.  builtins/cow/ therefore walks every path it
 * decides component by component here, following symlinks as the merged
 * view shows them, and works on the canonical rel path that comes out.
 *
 * Paths live in a "space": host paths for a plain workdir, guest paths
 * under a virtual chroot (where an absolute symlink means the guest's
 * "/").  The space says where workdir sits in it (root) and which names
 * under workdir belong to something else (holes: the fs_mount points
 * inside a chroot's rootfs); both are walked through but not into.
 */
#ifndef SANDLOCK_COWPATH_H
#define SANDLOCK_COWPATH_H

#include <limits.h>
#include <stdbool.h>

#include "cow/cow.h"
#include "util.h"

struct sl_cow_space {
	const char *root;       /* workdir's absolute path in this space */
	const sl_strvec *holes; /* rel paths under workdir that are not ours; NULL: none */
};

struct sl_cow_res {
	/* true: path is the canonical rel path under workdir (no symlink
	 * in it; the last component may be missing, or a symlink when not
	 * followed).  false: path is an absolute path of the space outside
	 * workdir (or in a hole), what remains of the walk appended. */
	bool inside;
	/* The walk met a staged entry or a deletion, so the real tree alone
	 * (the kernel, or the chroot builtin) would resolve the same string
	 * differently: the caller must act on path itself. */
	bool shadowed;
	/* The walk's last lookup was of path itself and found it in the real
	 * tree only (neither staged nor deleted): with !shadowed, a call that
	 * only reads finds there what the kernel would, so it passes without
	 * a second lookup (builtins/cow/cow.c). */
	bool real;
	char path[PATH_MAX];
};

/* Resolve p (absolute, lexically normalized, in the space); follow: the
 * last component's symlink too.  0 with *out filled, or -errno as the
 * lookup would fail: ENOENT / ENOTDIR for an intermediate component,
 * ELOOP past 40 symlinks, ENAMETOOLONG. */
int sl_cow_resolve(struct sl_cow *c, const struct sl_cow_space *sp, const char *p, bool follow,
                   struct sl_cow_res *out);

#endif /* SANDLOCK_COWPATH_H */
