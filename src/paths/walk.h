/*
 * walk.h — the one path walk that sandlock performs for a guest (the
 * chroot view, paths/chroot.c; the COW layer's merged view,
 * cow/cowpath.c): the kernel walks only the real tree, so where the guest
 * sees another one, its path is walked here, one name at a time, with the
 * kernel's rules.  What a name is and what a symlink says come from the
 * walk's owner (struct sl_walk_ops); the rules are the same for both.
 */
#ifndef SANDLOCK_PATHS_WALK_H
#define SANDLOCK_PATHS_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

enum sl_walk_look {
	SL_WALK_ENTRY,   /* *st is what the name is (or *found false: missing) */
	SL_WALK_THROUGH, /* a directory the owner vouches for: walked into unlooked */
	SL_WALK_STOP,    /* the walk ends here: the owner takes over (sl_path_walk's 1) */
};

struct sl_walk_ops {
	/* What cand (absolute: the canonical directory reached, then one
	 * name) is, its last symlink not followed; last: no name follows it.
	 * An sl_walk_look, or -errno. */
	int (*look)(void *ud, const char *cand, bool last, struct stat *st, bool *found);
	/* The target of the symlink cand (just looked at) into t, cap bytes;
	 * name: its last name.  0 or -errno. */
	int (*readlink)(void *ud, const char *cand, const char *name, char *t, size_t cap);
};

/*
 * Walk path from the directory start (both absolute; an absolute symlink
 * target restarts at "/"): "." stays, ".." goes to the parent of what was
 * reached (stopping at "/"), symlinks are followed (the last name only
 * when follow; 40 at most), a missing last name is fine (a name to
 * create).  0 with out the canonical path reached; 1 when ops->look said
 * SL_WALK_STOP, out then the name it stopped at and what remained of the
 * path after it ("cand/rest", not normalized); or -errno as the kernel's
 * walk fails (ENOENT, ENOTDIR, ELOOP, ENAMETOOLONG).
 */
int sl_path_walk(const char *start, const char *path, bool follow, const struct sl_walk_ops *ops,
                 void *ud, char *out, size_t cap);

#endif
