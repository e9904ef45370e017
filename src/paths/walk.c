/*
 * walk.c — the path walk of walk.h, shared by the chroot view and the COW
 * layer so that both follow a guest's path by the same rules (they had
 * one copy each).  It knows no filesystem: every name is looked at, and
 * every symlink read, by the owner's callbacks.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "paths/walk.h"

#define MAX_LINKS 40 /* the kernel's own limit */

/* The next name of s from *at (slashes skipped) into name: 1, or 0 at
 * the end, or -ENAMETOOLONG.  *last: nothing but slashes follows it. */
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

/* A symlink met at cand: its target put in front of what remains of rest
 * (cur back at "/" for an absolute one).  0 or -errno. */
static int follow_link(const struct sl_walk_ops *ops, void *ud, const char *cand,
                       const char *name, char *rest, size_t cap, size_t *at, char *cur)
{
	char target[PATH_MAX];
	int r = ops->readlink(ud, cand, name, target, sizeof target);
	if (r)
		return r;
	if (!target[0])
		return -ENOENT; /* as the kernel says of an empty target */
	if ((r = splice_link(rest, cap, *at, target)))
		return r;
	*at = 0;
	if (target[0] == '/')
		strcpy(cur, "/");
	return 0;
}

int sl_path_walk(const char *start, const char *path, bool follow, const struct sl_walk_ops *ops,
                 void *ud, char *out, size_t cap)
{
	char cur[PATH_MAX], cand[PATH_MAX], name[NAME_MAX + 1], rest[2 * PATH_MAX];
	if (snprintf(cur, sizeof cur, "%s", start) >= (int)sizeof cur ||
	    snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest)
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
		struct stat st;
		bool found = true;
		int k = ops->look(ud, cand, last, &st, &found);
		if (k < 0)
			return k;
		if (k == SL_WALK_STOP)
			return snprintf(out, cap, "%s/%s", cand, rest + at) < (int)cap ? 1 : -ENAMETOOLONG;
		if (k == SL_WALK_ENTRY && !found && !last)
			return -ENOENT;
		if (k == SL_WALK_ENTRY && found && S_ISLNK(st.st_mode) && (!last || follow)) {
			if (++links > MAX_LINKS)
				return -ELOOP;
			if ((r = follow_link(ops, ud, cand, name, rest, sizeof rest, &at, cur)))
				return r;
			continue;
		}
		if (k == SL_WALK_ENTRY && found && !last && !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		memcpy(cur, cand, strlen(cand) + 1);
	}
	if (r < 0)
		return r;
	return snprintf(out, cap, "%s", cur) < (int)cap ? 0 : -ENAMETOOLONG;
}
