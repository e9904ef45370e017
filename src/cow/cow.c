/*
 * cow.c — the copy-on-write layer (see cow.h): its life (new, free), the
 * small helpers every part uses (lookups beneath a layer's root,
 * whiteouts, first-shadow records) and the max_disk charge.  The merged
 * view is cowview.c, the write side cowops.c, the end of a run
 * cowcommit.c and cowmodes.c; they share cowint.h.
 *
 * Layout: the upper directory mirrors workdir; a file present there hides
 * the real one.  Directories are created in the upper layer as needed to
 * hold a staged file (their existence alone is not a change).  Deletions
 * are whiteouts kept in memory: a rel path whose real entry (and all of
 * its descendants) the merged view no longer shows.  Deleting a directory
 * requires it to be empty in the merged view, so its real children were
 * whited out one by one first; recreating it lifts only its own whiteout
 * and the old children stay hidden (no "opaque" directories needed).
 *
 * Every lookup inside a layer goes through openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) from that layer's root fd.  Rel paths are
 * canonical in the merged view (cowpath.c resolved every symlink), so a
 * symlink met inside one layer is never to be followed there: the other
 * layer may shadow it.  A real symlink where the view has a directory
 * hides what lies behind it (ELOOP is taken as ENOENT).
 *
 * Conflicts: the first time a real path is shadowed (copied up, deleted,
 * renamed over, created) its lstat is remembered; at commit a real file
 * whose identity, size or times differ from that record was changed by
 * someone else during the run, and is left alone.
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

#include "launch/tmpdir.h"
#include "cow/cowlinks.h"
#include "cow/cowstore.h"
#include "cow/cowint.h"



/* ---------------- small helpers ---------------- */

void sl_changes_free(struct sl_changes *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

int sl_cw_push_change(struct sl_changes *c, char kind, const char *path)
{
	struct sl_change *v = realloc(c->v, (c->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->v = v;
	c->v[c->n].kind = kind;
	c->v[c->n].path = sl_strdup(path);
	if (!c->v[c->n].path)
		return -ENOMEM;
	c->n++;
	return 0;
}

/* rel as a path argument: "." for workdir itself. */
static const char *arg(const char *rel)
{
	return rel[0] ? rel : ".";
}

int sl_cw_open_beneath(int root, const char *rel, int flags, mode_t mode)
{
	struct open_how how = { 0 };
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
	long fd = syscall(__NR_openat2, root, arg(rel), &how, sizeof how);
	return fd < 0 ? -errno : (int)fd;
}

int sl_cw_each_entry(int dir, const char *rel, bool skip_long, sl_cw_entry_fn fn, void *ud)
{
	DIR *d = sl_fdopendir(dir);
	if (!d)
		return dir < 0 ? dir : -errno;
	int e = 0;
	struct dirent *de;
	char child[4096];
	while (!e && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
		    (int)sizeof child) {
			e = skip_long ? 0 : -ENAMETOOLONG;
			continue;
		}
		struct stat st;
		/* Gone since readdir: nothing to look at. */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
			e = fn(ud, dirfd(d), de->d_name, child, &st);
	}
	closedir(d);
	return e;
}

/* lstat/stat of rel inside one layer; 0 or -errno. */
int sl_cw_layer_stat(int root, const char *rel, bool follow, struct stat *st)
{
	int fd = sl_cw_open_beneath(root, rel, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
	if (fd < 0)
		return fd;
	int r = fstatat(fd, "", st, AT_EMPTY_PATH) == 0 ? 0 : -errno;
	close(fd);
	return r;
}

/* The parent of rel ("" for a top-level name) in buf. */
void sl_cw_parent_of(const char *rel, char *buf, size_t cap)
{
	const char *slash = strrchr(rel, '/');
	size_t n = slash ? (size_t)(slash - rel) : 0;
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, rel, n);
	buf[n] = '\0';
}

static ssize_t find_whiteout(const struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->whiteouts.n; i++)
		if (strcmp(c->whiteouts.v[i], rel) == 0)
			return (ssize_t)i;
	return -1;
}

/* True if rel or one of its ancestors is whited out. */
bool sl_cw_hidden(const struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->whiteouts.n; i++)
		if (sl_path_under(rel, c->whiteouts.v[i]) ||
		    (c->whiteouts.v[i][0] == '\0' && rel[0] != '\0'))
			return true;
	return false;
}

void sl_cw_unwhite(struct sl_cow *c, const char *rel)
{
	ssize_t i = find_whiteout(c, rel);
	if (i < 0)
		return;
	free(c->whiteouts.v[i]);
	c->whiteouts.v[i] = c->whiteouts.v[--c->whiteouts.n];
}

struct record *sl_cw_find_record(struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->nrec; i++)
		if (strcmp(c->rec[i].rel, rel) == 0)
			return &c->rec[i];
	return NULL;
}

/* Remember what the real rel looked like before we first shadow it. */
int sl_cw_remember(struct sl_cow *c, const char *rel)
{
	if (sl_cw_find_record(c, rel))
		return 0;
	if (c->nrec == c->caprec) {
		size_t cap = c->caprec ? c->caprec * 2 : 16;
		struct record *v = realloc(c->rec, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		c->rec = v;
		c->caprec = cap;
	}
	struct record *r = &c->rec[c->nrec];
	memset(r, 0, sizeof(*r));
	r->rel = sl_strdup(rel);
	if (!r->rel)
		return -ENOMEM;
	r->existed = sl_cw_layer_stat(c->lower_fd, rel, false, &r->st) == 0;
	c->nrec++;
	return 0;
}

int sl_cw_whiteout(struct sl_cow *c, const char *rel)
{
	int e = sl_cw_remember(c, rel);
	if (e)
		return e;
	if (find_whiteout(c, rel) >= 0)
		return 0;
	return sl_strvec_push(&c->whiteouts, rel) == 0 ? 0 : -ENOMEM;
}

/* True if the real rel is visible (exists and not whited out). */
bool sl_cw_lower_visible(struct sl_cow *c, const char *rel, struct stat *st)
{
	struct stat tmp;
	return !sl_cw_hidden(c, rel) && sl_cw_layer_stat(c->lower_fd, rel, false, st ? st : &tmp) == 0;
}

/* The user-visible xattr values of the entry name of dirfd, in bytes. */
static uint64_t xattr_bytes(int dirfd, const char *name)
{
	char path[64 + NAME_MAX], names[4096];
	snprintf(path, sizeof path, "/proc/self/fd/%d/%s", dirfd, name);
	ssize_t n = llistxattr(path, names, sizeof names);
	uint64_t sum = n > 0 ? (uint64_t)n : 0;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		ssize_t v = lgetxattr(path, names + i, NULL, 0);
		sum += v > 0 ? (uint64_t)v : 0;
	}
	return sum;
}

/* Bytes the entries of a tree hold (for max_disk): each counts its size
 * (not a directory's) or its allocated blocks, whichever is larger, so
 * neither a sparse file nor a preallocation escapes, and at least one
 * block (SL_COW_INODE_BYTES), plus its xattrs. */
static uint64_t tree_bytes(int root)
{
	DIR *d = sl_fdopendir(openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!d)
		return 0;
	uint64_t sum = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		struct stat st;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		uint64_t blocks = (uint64_t)st.st_blocks * 512;
		uint64_t size = S_ISDIR(st.st_mode) ? 0 : (uint64_t)st.st_size;
		uint64_t one = blocks > size ? blocks : size;
		sum += (one > SL_COW_INODE_BYTES ? one : SL_COW_INODE_BYTES) +
		       xattr_bytes(dirfd(d), de->d_name);
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (sub >= 0) {
				sum += tree_bytes(sub);
				close(sub);
			}
		}
	}
	closedir(d);
	return sum;
}

/*
 * The quota.  Every way a staged file can grow goes through here first
 * (copy-up, and the guest's writes, which builtins/cowwrite.c performs
 * itself), and c->used only ever adds what was charged, so it is an upper
 * bound of what the layer holds.  Only when it would pass max_disk is the
 * layer measured (upper + trash: shrinking and truncation give space
 * back, deletion does not until the run ends).  The supervisor is one
 * thread and performs the growth itself, so no growth is in flight while
 * it measures.
 */
int sl_cow_charge(struct sl_cow *c, uint64_t bytes)
{
	if (!c->max_disk)
		return 0;
	if (c->used + bytes > c->max_disk) {
		c->used = tree_bytes(c->upper_fd) + (c->trash_fd >= 0 ? tree_bytes(c->trash_fd) : 0);
		if (c->used + bytes > c->max_disk || c->used + bytes < c->used)
			return -ENOSPC;
	}
	c->used += bytes;
	return 0;
}

uint64_t sl_cow_room(struct sl_cow *c)
{
	if (!c->max_disk)
		return UINT64_MAX;
	if (sl_cow_charge(c, 0) < 0)
		return 0;
	c->used = tree_bytes(c->upper_fd) + (c->trash_fd >= 0 ? tree_bytes(c->trash_fd) : 0);
	return c->used >= c->max_disk ? 0 : c->max_disk - c->used;
}

bool sl_cow_owns(const struct sl_cow *c, const char *path, const struct stat *st)
{
	if (st->st_dev != c->upper_dev)
		return false;
	return sl_path_under(path, c->upper) || (c->trash && sl_path_under(path, c->trash));
}

bool sl_cw_over_quota(struct sl_cow *c, uint64_t adding)
{
	return sl_cow_charge(c, adding) < 0;
}

/* Before the upper name rel goes away (unlink, rename over it): with a
 * quota, its last link is moved to the trash rather than freed, since an
 * fd the guest holds may keep writing to it (see sl_cow_charge). */
int sl_cw_discard_upper(struct sl_cow *c, const char *rel)
{
	struct stat st;
	if (c->trash_fd < 0 || sl_cw_layer_stat(c->upper_fd, rel, false, &st) != 0 ||
	    !S_ISREG(st.st_mode) || st.st_nlink != 1)
		return 0;
	char name[32];
	snprintf(name, sizeof name, "%llu", (unsigned long long)c->ntrash++);
	return renameat(c->upper_fd, rel, c->trash_fd, name) == 0 ? 0 : -errno;
}

/* ---------------- lifecycle ---------------- */

struct sl_cow *sl_cow_new(const char *workdir, const char *storage, uint64_t max_disk,
                          char **msg)
{
	struct sl_cow *c = calloc(1, sizeof(*c));
	char tmpl[4096];
	if (!c || snprintf(tmpl, sizeof tmpl, "%s/upper-XXXXXX", storage) >= (int)sizeof tmpl) {
		free(c);
		*msg = sl_strdup("out of memory or storage path too long");
		return NULL;
	}
	c->lower_fd = c->upper_fd = c->trash_fd = c->lock_fd = -1;
	c->root_mode = -1;
	c->max_disk = max_disk;
	c->lower = sl_strdup(workdir);
	sl_store_sweep(storage, "upper-", SL_STORE_BESIDE); /* layers of runs whose caller was killed */
	c->lock_fd = sl_store_make(storage, "upper-", SL_STORE_BESIDE, tmpl, sizeof tmpl);
	if (c->lock_fd < 0) {
		sl_fail(NULL, msg, 0, "workdir storage '%s': %s", storage, strerror(-c->lock_fd));
		goto fail;
	}
	c->upper = sl_strdup(tmpl);
	c->lower_fd = open(workdir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	c->upper_fd = open(tmpl, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (c->lower_fd < 0 || c->upper_fd < 0 || !c->lower || !c->upper) {
		sl_fail(NULL, msg, 0, "workdir '%s': %s", workdir, strerror(errno));
		goto fail;
	}
	sl_commit_recover(c->lower_fd); /* what a killed commit left in workdir */
	struct stat st;
	if (fstat(c->upper_fd, &st) < 0) {
		sl_fail(NULL, msg, 0, "workdir storage '%s': %s", tmpl, strerror(errno));
		goto fail;
	}
	c->upper_dev = st.st_dev;
	if (max_disk) {
		c->trash = sl_asprintf("%s.trash", tmpl);
		if (!c->trash || mkdir(c->trash, 0700) < 0 ||
		    (c->trash_fd = open(c->trash, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			sl_fail(NULL, msg, 0, "workdir storage '%s': %s", storage, strerror(errno));
			goto fail;
		}
	}
	return c;
fail:
	sl_cow_free(c, false);
	return NULL;
}

/* A kept layer as the guest left it: the modes cowmodes.c noted and
 * opened, given back deepest first, so a directory is closed again after
 * what it holds. */
static void relock_upper(struct sl_cow *c)
{
	for (size_t i = c->nlocked; i-- > 0;)
		(void)fchmodat(c->upper_fd, c->locked[i].rel, c->locked[i].mode, 0);
	c->unlocked = false;
}

void sl_cow_free(struct sl_cow *c, bool keep)
{
	if (!c)
		return;
	if (keep)
		relock_upper(c);
	if (!keep && c->upper_fd >= 0) {
		sl_remove_tree(c->upper_fd);
		rmdir(c->upper);
	}
	if (c->trash_fd >= 0) { /* what the guest deleted: never kept */
		sl_remove_tree(c->trash_fd);
		rmdir(c->trash);
		close(c->trash_fd);
	}
	free(c->trash);
	sl_store_release(c->lock_fd, c->upper, SL_STORE_BESIDE); /* removed, or kept on purpose */
	if (c->lower_fd >= 0)
		close(c->lower_fd);
	if (c->upper_fd >= 0)
		close(c->upper_fd);
	for (size_t i = 0; i < c->nrec; i++)
		free(c->rec[i].rel);
	free(c->rec);
	sl_cowlinks_free(c->links);
	for (size_t i = 0; i < c->nmoved; i++) {
		free(c->moved[i].real);
		free(c->moved[i].view);
	}
	free(c->moved);
	for (size_t i = 0; i < c->nlocked; i++)
		free(c->locked[i].rel);
	free(c->locked);
	sl_strvec_free(&c->whiteouts);
	free(c->lower);
	free(c->upper);
	free(c);
}

const char *sl_cow_upper_path(const struct sl_cow *c)
{
	return c->upper;
}

const char *sl_cow_rel(const struct sl_cow *c, const char *abs)
{
	const char *roots[2] = { c->lower, c->upper };
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(roots[i]);
		if (sl_path_under(abs, roots[i]))
			return abs[n] == '/' ? abs + n + 1 : abs + n;
	}
	return NULL;
}

const char *sl_cow_upper_rel(const struct sl_cow *c, const char *abs)
{
	size_t n = strlen(c->upper);
	if (!sl_path_under(abs, c->upper))
		return NULL;
	return abs[n] == '/' ? abs + n + 1 : abs + n;
}
