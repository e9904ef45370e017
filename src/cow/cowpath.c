/*
 * cowpath.c — the merged-view path walk (see cowpath.h).
 *
 * One component at a time, from workdir's position in the space: each
 * name is looked up in the merged view without following (the staged
 * entry first, a deletion hides the real one), a symlink met before the
 * last component (or at it, when following) is read from the layer that
 * holds it and its target put in front of what remains; an absolute
 * target restarts at the space's "/".  ".." goes to the parent of the
 * resolved directory (as the kernel does), so it can leave workdir: the
 * walk then stops and hands back the outside path, which the caller
 * passes to the kernel or the chroot builtin.
 *
 * The walk's rules are the shared ones (paths/walk.c, also the chroot
 * view's); what a name is and what a symlink says come from here.
 *
 * "Shadowed" means the real tree alone would resolve the string to
 * something else: a staged entry that is not just a directory over a real
 * directory, or a real entry that is deleted in the view, was met.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cow/cowpath.h"
#include "paths/walk.h"

/* The rel path of p (absolute, normalized, in the space) when it lies
 * under workdir outside any hole: into rel (cap bytes), true. */
static bool space_rel(const struct sl_cow_space *sp, const char *p, char *rel, size_t cap)
{
	if (!sl_path_under(p, sp->root))
		return false;
	const char *r = p + strlen(sp->root);
	while (*r == '/')
		r++;
	for (size_t i = 0; sp->holes && i < sp->holes->n; i++)
		if (sl_path_under(r, sp->holes->v[i]))
			return false;
	return snprintf(rel, cap, "%s", r) < (int)cap;
}

/* The merged entry rel (not followed): *found, *upper, *st; sets
 * *shadowed when the real tree shows something else there.  0 or -errno. */
static int look(struct sl_cow *c, const char *rel, bool *found, bool *upper, struct stat *st,
                bool *shadowed)
{
	int e = 0;
	struct stat lst;
	enum sl_cow_where w = sl_cow_lookup(c, rel, false, st, &e);
	*found = w != SL_COW_NONE;
	*upper = w == SL_COW_UPPER;
	if (w == SL_COW_NONE) {
		if (e != ENOENT && e != ENOTDIR)
			return -e;
		if (sl_cow_lower_lstat(c, rel, &lst) == 0)
			*shadowed = true; /* deleted in the view */
		return 0;
	}
	/* A staged directory over a real one walks the same way; anything
	 * else staged differs from what the real tree holds. */
	if (w == SL_COW_UPPER && !(S_ISDIR(st->st_mode) && sl_cow_lower_dir(c, rel, &lst)))
		*shadowed = true;
	return 0;
}

/* One walk in the merged view: what the walk's callbacks share. */
struct cow_walk {
	struct sl_cow *c;
	const struct sl_cow_space *sp;
	bool *shadowed;
	bool upper;          /* the entry last looked at is staged */
	bool real;           /* it was found in the real tree only */
	char crel[PATH_MAX]; /* and its rel path */
};

static int walk_look(void *ud, const char *cand, bool last, struct stat *st, bool *found)
{
	struct cow_walk *w = ud;
	w->real = false;
	if (!space_rel(w->sp, cand, w->crel, sizeof w->crel)) {
		/* An ancestor of workdir (an absolute symlink on its way back
		 * in): a directory, since the root is canonical.  Anything
		 * else is outside: the walk leaves. */
		return sl_path_under(w->sp->root, cand) && !last ? SL_WALK_THROUGH : SL_WALK_STOP;
	}
	int r = look(w->c, w->crel, found, &w->upper, st, w->shadowed);
	w->real = !r && *found && !w->upper;
	return r ? r : SL_WALK_ENTRY;
}

/* A symlink is read from the layer that holds it. */
static int walk_readlink(void *ud, const char *cand, const char *name, char *t, size_t cap)
{
	struct cow_walk *w = ud;
	(void)cand;
	(void)name;
	ssize_t n = sl_cow_readlink(w->c, w->crel, w->upper, t, cap);
	return n < 0 ? (int)n : 0;
}

static const struct sl_walk_ops k_cow_walk = { walk_look, walk_readlink };

int sl_cow_resolve(struct sl_cow *c, const struct sl_cow_space *sp, const char *p, bool follow,
                   struct sl_cow_res *out)
{
	char rel[PATH_MAX], cur[PATH_MAX];
	out->shadowed = false;
	out->real = false;
	out->inside = space_rel(sp, p, rel, sizeof rel);
	if (!out->inside)
		return snprintf(out->path, sizeof out->path, "%s", p) < (int)sizeof out->path
		               ? 0 : -ENAMETOOLONG;
	struct cow_walk *w = malloc(sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = (struct cow_walk){ .c = c, .sp = sp, .shadowed = &out->shadowed };
	int r = sl_path_walk(sp->root, rel, follow, &k_cow_walk, w, cur, sizeof cur);
	if (r == 0) {
		out->inside = space_rel(sp, cur, out->path, sizeof out->path);
		if (!out->inside)
			snprintf(out->path, sizeof out->path, "%s", cur);
		out->real = out->inside && w->real && strcmp(w->crel, out->path) == 0;
	} else if (r == 1) { /* the walk left workdir at cur: what remained appended */
		out->inside = false;
		memcpy(out->path, cur, strlen(cur) + 1);
		sl_path_normalize(out->path);
	}
	free(w);
	return r < 0 ? r : 0;
}
