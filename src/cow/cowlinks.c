/*
 * cowlinks.c — an index of the real tree's multiply linked files (see
 * cowlinks.h): one walk, then entries sorted by inode for lookups.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cow/cowlinks.h"
#include "util.h"

struct link_ent {
	dev_t dev;
	ino_t ino;
	char *rel;
};

struct sl_cowlinks {
	struct link_ent *v;
	size_t n, cap;
	size_t seen; /* entries looked at (the walk's bound) */
};

static int push(struct sl_cowlinks *l, const struct stat *st, const char *rel)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		struct link_ent *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	if (!(l->v[l->n].rel = sl_strdup(rel)))
		return -ENOMEM;
	l->v[l->n].dev = st->st_dev;
	l->v[l->n].ino = st->st_ino;
	l->n++;
	return 0;
}

/* Index the entries of directory fd dir (its path rel); dir is consumed. */
static int walk(struct sl_cowlinks *l, int dir, const char *rel, dev_t dev)
{
	DIR *d = sl_fdopendir(dir);
	if (!d)
		return 0; /* unreadable: its names stay unlinked, as before */
	int e = 0;
	struct dirent *de;
	char child[4096];
	while (!e && l->seen < SL_COWLINKS_MAX && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		l->seen++;
		if (snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
		    (int)sizeof child)
			continue;
		if (S_ISREG(st.st_mode) && st.st_nlink > 1) {
			e = push(l, &st, child);
		} else if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
			int sub = openat(dirfd(d), de->d_name,
			                 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				e = walk(l, sub, child, dev);
		}
	}
	closedir(d);
	return e;
}

static int by_inode(const void *a, const void *b)
{
	const struct link_ent *x = a, *y = b;
	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

struct sl_cowlinks *sl_cowlinks_build(int root)
{
	struct sl_cowlinks *l = calloc(1, sizeof *l);
	struct stat st;
	if (!l)
		return NULL;
	int dir = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir >= 0 && fstat(dir, &st) == 0) {
		if (walk(l, dir, "", st.st_dev) < 0) {
			sl_cowlinks_free(l);
			return NULL;
		}
	} else if (dir >= 0) {
		close(dir);
	}
	if (l->n)
		qsort(l->v, l->n, sizeof *l->v, by_inode);
	return l;
}

void sl_cowlinks_free(struct sl_cowlinks *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].rel);
	free(l->v);
	free(l);
}

const char *sl_cowlinks_name(const struct sl_cowlinks *l, dev_t dev, ino_t ino, size_t i)
{
	/* The first entry of the inode (binary search), then the i-th. */
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct link_ent *m = &l->v[mid];
		if (m->dev < dev || (m->dev == dev && m->ino < ino))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo + i >= l->n || l->v[lo + i].dev != dev || l->v[lo + i].ino != ino)
		return NULL;
	return l->v[lo + i].rel;
}
