/*
 * cowcommit.c — the end of a run: the change list (A/M/D, upper against
 * real) and the commit into the real tree.  Files are staged next to
 * their targets as temporaries (listed in the journal first, one syncfs
 * for all), then renamed into place under the DIR's commit lock, real
 * files changed by someone else during the run reported as conflicts and
 * left alone, hard links kept, directory modes set last.  Split from cow.c
 * along its sections.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cow/cowint.h"


/* True if the upper and real rel hold the same thing. */
static bool same_content(struct sl_cow *c, const char *rel, const struct stat *u,
                         const struct stat *l)
{
	if ((u->st_mode & (S_IFMT | 07777)) != (l->st_mode & (S_IFMT | 07777)))
		return false;
	if (S_ISLNK(u->st_mode)) {
		char a[4096], b[4096];
		ssize_t na = sl_cow_readlink(c, rel, true, a, sizeof a);
		ssize_t nb = sl_cow_readlink(c, rel, false, b, sizeof b);
		return na >= 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
	}
	if (!S_ISREG(u->st_mode) || u->st_size != l->st_size)
		return S_ISDIR(u->st_mode);
	int fa = sl_cw_open_beneath(c->upper_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
	int fb = sl_cw_open_beneath(c->lower_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
	bool same = fa >= 0 && fb >= 0;
	char x[16384], y[16384];
	if (same)
		same = sl_cw_same_user_xattrs(fa, fb);
	while (same) {
		ssize_t na = read(fa, x, sizeof x), nb = read(fb, y, sizeof y);
		if (na != nb || na < 0 || memcmp(x, y, (size_t)na) != 0)
			same = false;
		if (na <= 0)
			break;
	}
	if (fa >= 0)
		close(fa);
	if (fb >= 0)
		close(fb);
	return same;
}

/* A walk of the upper layer: the layer and what it collects. */
struct upper_walk {
	struct sl_cow *c;
	void *out;
	const struct sl_changes *ch; /* collect_linked: the changes it skips */
};

static int walk_upper(struct sl_cow *c, const char *rel, struct sl_changes *out);

/* An entry of the upper layer: added, or changed from the real one. */
static int change_entry(void *ud, int dir, const char *name, const char *child, struct stat *u)
{
	struct upper_walk *w = ud;
	struct stat l;
	(void)dir;
	(void)name;
	/* A socket the run bound is its own, gone with it: never a change
	 * (over a deleted real file, that file's 'D' still is one). */
	if (S_ISSOCK(u->st_mode))
		return 0;
	sl_cw_staged_mode(w->c, child, u);
	bool real = sl_cw_layer_stat(w->c->lower_fd, child, false, &l) == 0;
	int e = 0;
	if (!real)
		e = sl_cw_push_change(w->out, 'A', child);
	else if (!same_content(w->c, child, u, &l))
		e = sl_cw_push_change(w->out, 'M', child);
	if (!e && S_ISDIR(u->st_mode))
		e = walk_upper(w->c, child, w->out);
	return e;
}

static int walk_upper(struct sl_cow *c, const char *rel, struct sl_changes *out)
{
	struct upper_walk w = { c, out, NULL };
	int dir = sl_cw_open_beneath(c->upper_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	return sl_cw_each_entry(dir, rel, false, change_entry, &w);
}

static int cmp_change(const void *a, const void *b)
{
	return strcmp(((const struct sl_change *)a)->path, ((const struct sl_change *)b)->path);
}

int sl_cow_changes(struct sl_cow *c, struct sl_changes *out)
{
	memset(out, 0, sizeof(*out));
	int ue = sl_cw_unlock_upper(c);
	if (ue)
		return ue;
	int e = walk_upper(c, "", out);
	struct stat root;
	if (!e && c->root_mode >= 0 && fstat(c->lower_fd, &root) == 0 &&
	    (int)(root.st_mode & 07777) != c->root_mode)
		e = sl_cw_push_change(out, 'M', "."); /* workdir's own mode */
	for (size_t i = 0; !e && i < c->whiteouts.n; i++) {
		const char *w = c->whiteouts.v[i];
		struct stat st;
		if (sl_cw_layer_stat(c->lower_fd, w, false, &st) == 0 &&
		    (sl_cw_layer_stat(c->upper_fd, w, false, &st) != 0 || S_ISSOCK(st.st_mode)))
			e = sl_cw_push_change(out, 'D', w);
	}
	if (e) {
		sl_changes_free(out);
		return e;
	}
	if (out->n) /* v is NULL for a run that changed nothing: qsort's UB */
		qsort(out->v, out->n, sizeof(*out->v), cmp_change);
	return 0;
}

/* True if the real rel is no longer what it was when first shadowed. */
static bool moved_on(struct sl_cow *c, const char *rel)
{
	struct record *r = sl_cw_find_record(c, rel);
	struct stat now;
	bool exists = sl_cw_layer_stat(c->lower_fd, rel, false, &now) == 0;
	if (!r)
		return exists; /* created by someone else meanwhile */
	if (exists != r->existed)
		return true;
	if (!exists || S_ISDIR(now.st_mode))
		return false;
	/* The ctime of a file with other names also moves when this commit
	 * removes or replaces one of them: only contents count there. */
	bool ctime_counts = r->st.st_nlink < 2;
	return now.st_ino != r->st.st_ino || now.st_dev != r->st.st_dev ||
	       now.st_size != r->st.st_size || now.st_mtim.tv_sec != r->st.st_mtim.tv_sec ||
	       now.st_mtim.tv_nsec != r->st.st_mtim.tv_nsec ||
	       (ctime_counts && (now.st_ctim.tv_sec != r->st.st_ctim.tv_sec ||
	                         now.st_ctim.tv_nsec != r->st.st_ctim.tv_nsec));
}

/* The real parent directory of rel, as an fd, and the last name. */
static int real_parent(struct sl_cow *c, const char *rel, const char **name)
{
	char p[4096];
	sl_cw_parent_of(rel, p, sizeof p);
	const char *slash = strrchr(rel, '/');
	*name = slash ? slash + 1 : rel;
	return sl_cw_open_beneath(c->lower_fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
}

/* A file written next to its real target under a temporary name, waiting
 * for the rename that puts it in place (see sl_cow_commit). */
struct pending {
	const struct sl_change *x;
	char tmp[40];
	bool replace;
	bool was_dir; /* the real directory there was removed by this commit */
	dev_t dev; /* the staged inode (hard links share it) */
	ino_t ino;
};

/* Staged names of multiply linked files that are not changes (a real
 * file the guest only linked: its copy-up has the same content). */
struct linked {
	struct sl_change *v; /* kind unused; path = the name */
	dev_t *dev;
	ino_t *ino;
	size_t n, cap;
};

static void linked_free(struct linked *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
	free(l->dev);
	free(l->ino);
}

static bool is_change(const struct sl_changes *ch, const char *rel)
{
	struct sl_change key = { .path = (char *)rel };
	return bsearch(&key, ch->v, ch->n, sizeof *ch->v, cmp_change) != NULL;
}

static int linked_push(struct linked *l, const char *rel, const struct stat *u)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 8;
		struct sl_change *v = realloc(l->v, cap * sizeof *v);
		dev_t *d = v ? realloc(l->dev, cap * sizeof *d) : NULL;
		ino_t *i = d ? realloc(l->ino, cap * sizeof *i) : NULL;
		if (v)
			l->v = v;
		if (d)
			l->dev = d;
		if (!i)
			return -ENOMEM;
		l->ino = i;
		l->cap = cap;
	}
	if (!(l->v[l->n].path = sl_strdup(rel)))
		return -ENOMEM;
	l->dev[l->n] = u->st_dev;
	l->ino[l->n++] = u->st_ino;
	return 0;
}

static int collect_linked(struct sl_cow *c, const char *rel, const struct sl_changes *ch,
                          struct linked *out);

/* An entry of the upper layer: a linked, unchanged regular file is kept. */
static int linked_entry(void *ud, int dir, const char *name, const char *child, struct stat *u)
{
	struct upper_walk *w = ud;
	(void)dir;
	(void)name;
	if (S_ISDIR(u->st_mode))
		return collect_linked(w->c, child, w->ch, w->out);
	if (S_ISREG(u->st_mode) && u->st_nlink > 1 && !is_change(w->ch, child))
		return linked_push(w->out, child, u);
	return 0;
}

/* Walk the upper layer below rel for linked, unchanged regular files. */
static int collect_linked(struct sl_cow *c, const char *rel, const struct sl_changes *ch,
                          struct linked *out)
{
	struct upper_walk w = { c, out, ch };
	int dir = sl_cw_open_beneath(c->upper_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0);
	return sl_cw_each_entry(dir, rel, false, linked_entry, &w);
}

/* A fresh temporary name for p, next to its target, in the journal
 * before the temporary is made.  0 or -errno. */
static int tmp_name(struct sl_cow *c, struct pending *p)
{
	uint32_t rnd = 0;
	(void)!getrandom(&rnd, sizeof rnd, 0);
	snprintf(p->tmp, sizeof p->tmp, SL_COMMIT_PREFIX "%08x", rnd);
	char parent[4096];
	sl_cw_parent_of(p->x->path, parent, sizeof parent);
	return sl_commit_note(&c->log, parent, p->tmp);
}

/* Hard link (d1, n1) to p's temporary next to its target: 1, 0 when the
 * two are on different filesystems (copy instead), -errno. */
static int link_to_tmp(struct sl_cow *c, int d1, const char *n1, struct pending *p)
{
	const char *n2;
	int d2 = real_parent(c, p->x->path, &n2);
	int r = d2 < 0 ? d2 : tmp_name(c, p);
	if (!r)
		r = linkat(d1, n1, d2, p->tmp, 0) == 0 ? 1 : errno == EXDEV ? 0 : -errno;
	if (d2 >= 0)
		close(d2);
	return r;
}

/*
 * A staged file with more than one name commits as one inode, as the
 * guest linked it: its temporary is made a hard link of an earlier name's
 * temporary (pend[0..np)), or of the real file it shares the inode with
 * when that one is unchanged (lk) and still what it was.  1 when done; 0
 * to copy instead (the first name, or another filesystem); -errno.
 */
static int link_staged(struct sl_cow *c, const struct pending *pend, size_t np,
                       const struct linked *lk, const struct stat *u, struct pending *p)
{
	if (u->st_nlink < 2 || !S_ISREG(u->st_mode))
		return 0;
	const char *n1, *real = NULL;
	int d1 = -1, r = 0;
	for (size_t i = 0; i < np && d1 < 0; i++)
		if (pend[i].dev == u->st_dev && pend[i].ino == u->st_ino) {
			d1 = real_parent(c, pend[i].x->path, &n1);
			n1 = pend[i].tmp;
			if (d1 < 0)
				return d1;
		}
	for (size_t i = 0; d1 < 0 && !real && i < lk->n; i++)
		if (lk->dev[i] == u->st_dev && lk->ino[i] == u->st_ino && !moved_on(c, lk->v[i].path))
			real = lk->v[i].path;
	if (real && (d1 = real_parent(c, real, &n1)) < 0)
		return d1;
	if (d1 >= 0) {
		r = link_to_tmp(c, d1, n1, p);
		close(d1);
	}
	return r;
}

/* Write the upper rel next to its real target as p->tmp (not synced yet). */
static int stage_file(struct sl_cow *c, const char *rel, const struct stat *u, struct pending *p)
{
	const char *name;
	int dir = real_parent(c, rel, &name);
	if (dir < 0)
		return dir;
	char *tmp = p->tmp;
	int e = tmp_name(c, p);
	if (e) {
		close(dir);
		return e;
	}
	if (S_ISLNK(u->st_mode)) {
		char target[4096];
		ssize_t n = sl_cow_readlink(c, rel, true, target, sizeof target);
		e = n < 0 ? (int)n : symlinkat(target, dir, tmp) == 0 ? 0 : -errno;
	} else {
		int in = sl_cw_open_beneath(c->upper_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
		int out = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		                 u->st_mode & 07777);
		e = in < 0 ? in : out < 0 ? -errno : sl_cw_copy_data(in, out);
		if (!e)
			sl_cw_copy_user_xattrs(in, out);
		if (!e && fchmod(out, u->st_mode & 07777) < 0)
			e = -errno;
		if (in >= 0)
			close(in);
		if (out >= 0)
			close(out);
	}
	if (e)
		unlinkat(dir, tmp, 0);
	close(dir);
	return e;
}

/* A directory's mode, set after its contents are in (sl_cow_commit). */
struct dir_mode {
	const char *path;
	mode_t mode;
};

/* Rename a staged temporary into place (NOREPLACE for an added file),
 * unless the real file moved on since the check: then it is a conflict
 * (-EBUSY) and the temporary is removed. */
static int put_in_place(struct sl_cow *c, const struct pending *p)
{
	const char *name;
	int dir = real_parent(c, p->x->path, &name);
	if (dir < 0)
		return dir;
	/* A directory this commit removed is gone on purpose (NOREPLACE
	 * still refuses a name that appeared since). */
	int e = !p->was_dir && moved_on(c, p->x->path) ? -EBUSY : 0;
	if (c->test_delay_ms > 0) { /* the window the commit lock closes */
		struct timespec ts = { c->test_delay_ms / 1000, (c->test_delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (!e && renameat2(dir, p->tmp, dir, name, p->replace ? 0 : RENAME_NOREPLACE) < 0)
		e = -errno;
	if (e)
		unlinkat(dir, p->tmp, 0);
	close(dir);
	return e;
}

static int cmp_change_rev(const void *a, const void *b)
{
	return -cmp_change(a, b);
}

static int apply_delete(struct sl_cow *c, const char *rel)
{
	const char *name;
	struct stat st;
	int dir = real_parent(c, rel, &name);
	if (dir < 0)
		return dir;
	int e = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ? -errno : 0;
	if (!e && unlinkat(dir, name, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0) < 0)
		e = -errno;
	close(dir);
	return e == -ENOENT ? 0 : e;
}

static int commit_locked(struct sl_cow *c, const struct sl_changes *ch,
                         struct sl_changes *conflicts)
{
	struct sl_change *dels = calloc(ch->n + 1, sizeof(*dels));
	if (!dels)
		return -ENOMEM;
	size_t nd = 0;
	for (size_t i = 0; i < ch->n; i++)
		if (ch->v[i].kind == 'D')
			dels[nd++] = ch->v[i];
	/* Deepest first: children before the directories holding them. */
	qsort(dels, nd, sizeof(*dels), cmp_change_rev);
	int e = 0;
	for (size_t i = 0; !e && i < nd; i++) {
		int r = moved_on(c, dels[i].path) ? -EBUSY : apply_delete(c, dels[i].path);
		if (r == -EBUSY || r == -ENOTEMPTY)
			e = sl_cw_push_change(conflicts, 'D', dels[i].path);
		else
			e = r;
	}
	free(dels);
	/* Files are written as temporaries first, all synced at once (one
	 * syncfs instead of an fsync each), then renamed into place: each
	 * file is replaced atomically, and only by complete contents. */
	struct pending *pend = calloc(ch->n + 1, sizeof(*pend));
	struct dir_mode *dmode = calloc(ch->n + 1, sizeof(*dmode));
	size_t np = 0, nd2 = 0;
	struct linked lk = { 0 };
	if (!pend || !dmode) {
		free(pend);
		free(dmode);
		return -ENOMEM;
	}
	if (!e)
		e = collect_linked(c, "", ch, &lk);
	/* Sorted by path: a directory comes before what it holds. */
	for (size_t i = 0; !e && i < ch->n; i++) {
		const struct sl_change *x = &ch->v[i];
		if (x->kind == 'D')
			continue;
		if (!strcmp(x->path, ".")) { /* workdir's own mode: last of all */
			dmode[nd2++] = (struct dir_mode){ "", (mode_t)c->root_mode };
			continue;
		}
		struct stat u, l;
		if (sl_cw_layer_stat(c->upper_fd, x->path, false, &u) != 0)
			continue;
		sl_cw_staged_mode(c, x->path, &u);
		if (moved_on(c, x->path)) {
			e = sl_cw_push_change(conflicts, x->kind, x->path);
			continue;
		}
		bool real = sl_cw_layer_stat(c->lower_fd, x->path, false, &l) == 0;
		int r = 0;
		if (S_ISDIR(u.st_mode)) {
			if (real && !S_ISDIR(l.st_mode))
				r = apply_delete(c, x->path);
			/* Made open to ourselves; its mode is set once what
			 * it holds is in (a read-only directory of the guest's
			 * would refuse its own contents). */
			if (!r && (!real || !S_ISDIR(l.st_mode))) {
				const char *name;
				int dir = real_parent(c, x->path, &name);
				r = dir < 0 ? dir
				    : mkdirat(dir, name, (u.st_mode & 07777) | S_IRWXU) == 0 ? 0 : -errno;
				if (dir >= 0)
					close(dir);
			}
			if (!r)
				dmode[nd2++] = (struct dir_mode){ x->path, u.st_mode & 07777 };
		} else {
			if (real && S_ISDIR(l.st_mode))
				r = apply_delete(c, x->path);
			pend[np].was_dir = real && S_ISDIR(l.st_mode);
			pend[np].x = x;
			pend[np].replace = real && !S_ISDIR(l.st_mode);
			pend[np].dev = u.st_dev;
			pend[np].ino = u.st_ino;
			if (!r && (r = link_staged(c, pend, np, &lk, &u, &pend[np])) == 0)
				r = stage_file(c, x->path, &u, &pend[np]);
			if (r >= 0) {
				np++;
				r = 0;
			}
		}
		if (r == -EEXIST || r == -ENOTEMPTY)
			e = sl_cw_push_change(conflicts, x->kind, x->path);
		else
			e = r;
	}
	if (!e && np) { /* syncfs needs a real fd; lower_fd is O_PATH */
		int sfd = sl_cw_open_beneath(c->lower_fd, "", O_RDONLY | O_DIRECTORY, 0);
		e = sfd < 0 ? sfd : syncfs(sfd) < 0 ? -errno : 0;
		if (sfd >= 0)
			close(sfd);
	}
	for (size_t i = 0; i < np; i++) {
		int r = e ? -ECANCELED : put_in_place(c, &pend[i]);
		if (r == -ECANCELED) {
			const char *name;
			int dir = real_parent(c, pend[i].x->path, &name);
			if (dir >= 0) {
				unlinkat(dir, pend[i].tmp, 0);
				close(dir);
			}
		} else if (r == -EBUSY || r == -EEXIST) {
			e = sl_cw_push_change(conflicts, pend[i].x->kind, pend[i].x->path);
		} else if (r) {
			e = r;
		}
	}
	/* Directory modes last, deepest first (the list is in path order). */
	for (size_t i = nd2; i-- > 0;) {
		int fd = sl_cw_open_beneath(c->lower_fd, dmode[i].path, O_RDONLY | O_DIRECTORY, 0);
		int r = fd < 0 ? fd : fchmod(fd, dmode[i].mode) == 0 ? 0 : -errno;
		if (fd >= 0)
			close(fd);
		if (!e && r)
			e = r;
	}
	free(dmode);
	free(pend);
	linked_free(&lk);
	return e;
}

/*
 * The commit runs under the workdir's commit lock, with a journal of its
 * temporaries (cowjournal.c): another commit into the same directory
 * waits, so its "moved on?" checks see this one's files; a kill half-way
 * leaves a journal the next commit or run cleans up.
 * SANDLOCK_TEST_COMMIT_DELAY_MS (a test hook) holds each rename after its
 * check, so tests can overlap two commits and kill one half-way.
 */
int sl_cow_commit(struct sl_cow *c, const struct sl_changes *ch, struct sl_changes *conflicts)
{
	memset(conflicts, 0, sizeof(*conflicts));
	const char *d = getenv("SANDLOCK_TEST_COMMIT_DELAY_MS");
	c->test_delay_ms = d ? atoi(d) : 0;
	int e = sl_commit_begin(c->lower_fd, &c->log);
	if (e)
		return e;
	e = commit_locked(c, ch, conflicts);
	sl_commit_end(&c->log);
	return e;
}
