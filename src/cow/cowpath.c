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
 * "Shadowed" means the real tree alone would resolve the string to
 * something else: a staged entry that is not just a directory over a real
 * directory, or a real entry that is deleted in the view, was met.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cow/cowpath.h"

#define MAX_LINKS 40 /* the kernel's own limit */

bool sl_cow_space_rel(const struct sl_cow_space *sp, const char *p, char *rel, size_t cap)
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

/* The next component of s from *at (slashes skipped) into name; false at
 * the end.  *last: nothing but slashes follows it. */
static int next_name(const char *s, size_t *at, char *name, size_t cap, bool *last)
{
	while (s[*at] == '/')
		(*at)++;
	if (!s[*at])
		return 0;
	size_t n = strcspn(s + *at, "/");
	if (n >= cap)
		return -ENAMETOOLONG;
	memcpy(name, s + *at, n);
	name[n] = '\0';
	*at += n;
	size_t k = *at;
	while (s[k] == '/')
		k++;
	*last = s[k] == '\0';
	return 1;
}

/* dir + "/" + name (dir "/" gives "/name"); false when it does not fit. */
static bool join(char *out, size_t cap, const char *dir, const char *name)
{
	bool root = dir[0] == '/' && dir[1] == '\0';
	return snprintf(out, cap, "%s%s%s", root ? "" : dir, "/", name) < (int)cap;
}

static void to_parent(char *p)
{
	char *slash = strrchr(p, '/');
	if (slash == p)
		p[1] = '\0';
	else if (slash)
		*slash = '\0';
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

/* rest = target + "/" + what remains of rest after at. */
static int splice_link(char *rest, size_t cap, size_t at, const char *target)
{
	char tmp[2 * PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s/%s", target, rest + at) >= (int)sizeof tmp ||
	    strlen(tmp) >= cap)
		return -ENAMETOOLONG;
	memcpy(rest, tmp, strlen(tmp) + 1);
	return 0;
}

/* The walk stopped outside workdir at cand: the rest appended. */
static int leave(struct sl_cow_res *out, const char *cand, const char *rest)
{
	out->inside = false;
	if (snprintf(out->path, sizeof out->path, "%s/%s", cand, rest) >= (int)sizeof out->path)
		return -ENAMETOOLONG;
	sl_path_normalize(out->path);
	return 0;
}

int sl_cow_resolve(struct sl_cow *c, const struct sl_cow_space *sp, const char *p, bool follow,
                   struct sl_cow_res *out)
{
	char cur[PATH_MAX], cand[PATH_MAX], crel[PATH_MAX], name[NAME_MAX + 1];
	char rest[2 * PATH_MAX], target[PATH_MAX];
	out->shadowed = false;
	out->inside = sl_cow_space_rel(sp, p, out->path, sizeof out->path);
	if (!out->inside)
		return snprintf(out->path, sizeof out->path, "%s", p) < (int)sizeof out->path
		               ? 0 : -ENAMETOOLONG;
	if (snprintf(cur, sizeof cur, "%s", sp->root) >= (int)sizeof cur ||
	    snprintf(rest, sizeof rest, "%s", out->path) >= (int)sizeof rest)
		return -ENAMETOOLONG;
	size_t at = 0;
	int links = 0, r;
	bool last = false;
	while ((r = next_name(rest, &at, name, sizeof name, &last)) > 0) {
		if (strcmp(name, ".") == 0)
			continue;
		if (strcmp(name, "..") == 0) {
			to_parent(cur);
			continue;
		}
		if (!join(cand, sizeof cand, cur, name))
			return -ENAMETOOLONG;
		if (!sl_cow_space_rel(sp, cand, crel, sizeof crel)) {
			/* An ancestor of workdir (an absolute symlink on its way
			 * back in): a directory, since the root is canonical. */
			if (sl_path_under(sp->root, cand) && !last) {
				memcpy(cur, cand, strlen(cand) + 1);
				continue;
			}
			return leave(out, cand, rest + at);
		}
		bool found, upper;
		struct stat st;
		if ((r = look(c, crel, &found, &upper, &st, &out->shadowed)))
			return r;
		if (!found && !last)
			return -ENOENT;
		if (found && S_ISLNK(st.st_mode) && (!last || follow)) {
			if (++links > MAX_LINKS)
				return -ELOOP;
			ssize_t n = sl_cow_readlink(c, crel, upper, target, sizeof target);
			if (n <= 0)
				return n < 0 ? (int)n : -ENOENT;
			if ((r = splice_link(rest, sizeof rest, at, target)))
				return r;
			at = 0;
			if (target[0] == '/')
				strcpy(cur, "/");
			continue;
		}
		if (found && !last && !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		memcpy(cur, cand, strlen(cand) + 1);
	}
	if (r < 0)
		return r;
	out->inside = sl_cow_space_rel(sp, cur, out->path, sizeof out->path);
	if (!out->inside)
		snprintf(out->path, sizeof out->path, "%s", cur);
	return 0;
}
