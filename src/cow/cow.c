/*
 * cow.c — the copy-on-write layer (see cow.h).
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

#include "cow/cow.h"
#include "launch/tmpdir.h"
#include "cow/cowjournal.h"
#include "cow/cowlinks.h"
#include "cow/cowstore.h"
#include "util.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

struct record {
	char *rel;
	bool existed; /* the real path existed when first shadowed */
	struct stat st;
};

struct sl_cow {
	char *lower, *upper; /* absolute paths */
	int lower_fd, upper_fd;
	uint64_t max_disk;   /* bytes; 0 = unlimited */
	/* With max_disk: upper files the guest deletes are moved here instead
	 * (a process may still hold them open and write), so they keep
	 * counting until the run ends.  NULL without a quota. */
	char *trash;
	int trash_fd;
	int lock_fd; /* the layer's owner lock (cowstore.h), held for its life */
	struct sl_commit_log log; /* a commit's lock and journal (cowjournal.h) */
	int test_delay_ms; /* SANDLOCK_TEST_COMMIT_DELAY_MS: see sl_cow_commit */
	uint64_t ntrash;
	uint64_t used; /* an upper bound of bytes_used(), see sl_cow_charge */
	dev_t upper_dev;
	sl_strvec whiteouts;
	struct record *rec;
	size_t nrec, caprec;
	struct sl_cowlinks *links; /* the real hard links, once asked (cowlinks.h) */
	int root_mode;             /* workdir's own mode as the guest set it, or -1 */
	/* Upper entries whose mode the run's end opened to ourselves (unlock_upper):
	 * the mode the guest gave them, restored or committed. */
	struct locked *locked;
	size_t nlocked;
	bool unlocked;
	/* Real directories the view moved (renamed, or an ancestor renamed):
	 * a process whose cwd or dirfd is one of them finds it at its new
	 * place, as it would after a real rename. */
	struct moved_dir *moved;
	size_t nmoved;
};

struct moved_dir {
	char *real, *view;
};

struct locked {
	char *rel;
	mode_t mode;
};

static void staged_mode(const struct sl_cow *c, const char *rel, struct stat *u);
static int lock_note(struct sl_cow *c, const char *rel, mode_t mode);
static void notes_drop(struct sl_cow *c, const char *rel);
static int notes_move(struct sl_cow *c, const char *from, const char *to, bool exchange);

/* ---------------- small helpers ---------------- */

void sl_changes_free(struct sl_changes *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

static int push_change(struct sl_changes *c, char kind, const char *path)
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

static int open_beneath(int root, const char *rel, int flags, mode_t mode)
{
	struct open_how how = { 0 };
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
	long fd = syscall(__NR_openat2, root, arg(rel), &how, sizeof how);
	return fd < 0 ? -errno : (int)fd;
}

/* lstat/stat of rel inside one layer; 0 or -errno. */
static int layer_stat(int root, const char *rel, bool follow, struct stat *st)
{
	int fd = open_beneath(root, rel, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
	if (fd < 0)
		return fd;
	int r = fstatat(fd, "", st, AT_EMPTY_PATH) == 0 ? 0 : -errno;
	close(fd);
	return r;
}

/* The parent of rel ("" for a top-level name) in buf. */
static void parent_of(const char *rel, char *buf, size_t cap)
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
static bool hidden(const struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->whiteouts.n; i++)
		if (sl_path_under(rel, c->whiteouts.v[i]) ||
		    (c->whiteouts.v[i][0] == '\0' && rel[0] != '\0'))
			return true;
	return false;
}

static void unwhite(struct sl_cow *c, const char *rel)
{
	ssize_t i = find_whiteout(c, rel);
	if (i < 0)
		return;
	free(c->whiteouts.v[i]);
	c->whiteouts.v[i] = c->whiteouts.v[--c->whiteouts.n];
}

static struct record *find_record(struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->nrec; i++)
		if (strcmp(c->rec[i].rel, rel) == 0)
			return &c->rec[i];
	return NULL;
}

/* Remember what the real rel looked like before we first shadow it. */
static int remember(struct sl_cow *c, const char *rel)
{
	if (find_record(c, rel))
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
	r->existed = layer_stat(c->lower_fd, rel, false, &r->st) == 0;
	c->nrec++;
	return 0;
}

static int whiteout(struct sl_cow *c, const char *rel)
{
	int e = remember(c, rel);
	if (e)
		return e;
	if (find_whiteout(c, rel) >= 0)
		return 0;
	return sl_strvec_push(&c->whiteouts, rel) == 0 ? 0 : -ENOMEM;
}

/* True if the real rel is visible (exists and not whited out). */
static bool lower_visible(struct sl_cow *c, const char *rel, struct stat *st)
{
	struct stat tmp;
	return !hidden(c, rel) && layer_stat(c->lower_fd, rel, false, st ? st : &tmp) == 0;
}

/* What one name in the layer costs max_disk at least: a block, whatever
 * it is (a directory, a symlink, an empty file, a whiteout).  So the
 * quota also bounds how many inodes the layer may hold. */
#define SL_COW_INODE_BYTES 4096u

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

static bool over_quota(struct sl_cow *c, uint64_t adding)
{
	return sl_cow_charge(c, adding) < 0;
}

/* Before the upper name rel goes away (unlink, rename over it): with a
 * quota, its last link is moved to the trash rather than freed, since an
 * fd the guest holds may keep writing to it (see sl_cow_charge). */
static int discard_upper(struct sl_cow *c, const char *rel)
{
	struct stat st;
	if (c->trash_fd < 0 || layer_stat(c->upper_fd, rel, false, &st) != 0 ||
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

static void relock_upper(struct sl_cow *c);

void sl_cow_free(struct sl_cow *c, bool keep)
{
	if (!c)
		return;
	if (keep)
		relock_upper(c); /* the kept layer as the guest left it */
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

/* ---------------- the merged view ---------------- */

/* True if the parent of rel is a directory of the upper layer. */
static bool upper_parent_dir(struct sl_cow *c, const char *rel)
{
	char p[4096];
	struct stat st;
	parent_of(rel, p, sizeof p);
	return p[0] && layer_stat(c->upper_fd, p, true, &st) == 0 && S_ISDIR(st.st_mode);
}

enum sl_cow_where sl_cow_lookup(struct sl_cow *c, const char *rel, bool follow, struct stat *st,
                                int *e)
{
	/* workdir itself is the real directory (the upper root is ours). */
	int r = rel[0] ? layer_stat(c->upper_fd, rel, follow, st) : -ENOENT;
	if (r == 0)
		return SL_COW_UPPER;
	if (r != -ENOENT && r != -ENOTDIR) {
		*e = -r;
		return SL_COW_NONE;
	}
	if (hidden(c, rel)) {
		*e = ENOENT;
		return SL_COW_NONE;
	}
	r = layer_stat(c->lower_fd, rel, follow, st);
	if (r == 0)
		return SL_COW_LOWER;
	/* A real symlink on the way where the view has a directory (the
	 * guest replaced it): the real entries behind it are not shown.  A
	 * real file on the way where the view's parent is a staged directory
	 * (rm f; mkdir f): the name is simply not there yet. */
	*e = r == -ELOOP || (r == -ENOTDIR && upper_parent_dir(c, rel)) ? ENOENT : -r;
	return SL_COW_NONE;
}

bool sl_cow_untouched(const struct sl_cow *c)
{
	return c->nrec == 0; /* remember() runs before anything is shadowed */
}

bool sl_cow_lower_dir(struct sl_cow *c, const char *rel, struct stat *st)
{
	/* Not a real directory the run moved elsewhere, nor one inside it
	 * (the name now shows another directory: exchanged, or made anew). */
	for (size_t i = 0; i < c->nmoved; i++)
		if (sl_path_under(rel, c->moved[i].real) && strcmp(c->moved[i].real, c->moved[i].view))
			return false;
	return !hidden(c, rel) && layer_stat(c->lower_fd, rel, false, st) == 0 && S_ISDIR(st->st_mode);
}

int sl_cow_lower_lstat(struct sl_cow *c, const char *rel, struct stat *st)
{
	return layer_stat(c->lower_fd, rel, false, st);
}

ssize_t sl_cow_readlink(struct sl_cow *c, const char *rel, bool upper, char *buf, size_t cap)
{
	int fd = open_beneath(upper ? c->upper_fd : c->lower_fd, rel, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		return fd;
	ssize_t n = readlinkat(fd, "", buf, cap - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = '\0';
	return n;
}

bool sl_cow_lower_path(const struct sl_cow *c, const char *rel, char *buf, size_t cap)
{
	return snprintf(buf, cap, "%s%s%s", c->lower, rel[0] ? "/" : "", rel) < (int)cap;
}

/* The parent of rel must be a directory in the merged view. */
static int parent_ok(struct sl_cow *c, const char *rel)
{
	char p[4096];
	struct stat st;
	int e = 0;
	parent_of(rel, p, sizeof p);
	if (sl_cow_lookup(c, p, true, &st, &e) == SL_COW_NONE)
		return -e;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Create the upper directories that hold rel (each with its real mode). */
static int upper_parents(struct sl_cow *c, const char *rel)
{
	char p[4096];
	size_t len = strlen(rel);
	if (len >= sizeof p)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < len; i++) {
		if (rel[i] != '/')
			continue;
		memcpy(p, rel, i);
		p[i] = '\0';
		struct stat st;
		if (layer_stat(c->upper_fd, p, false, &st) == 0)
			continue;
		/* First shadowed here: its real state is what the commit will
		 * check it against (a chmod of it later is a change). */
		int e = remember(c, p);
		if (e)
			return e;
		mode_t mode = layer_stat(c->lower_fd, p, false, &st) == 0 ? (st.st_mode & 07777) : 0755;
		if (over_quota(c, SL_COW_INODE_BYTES))
			return -ENOSPC;
		if (mkdirat(c->upper_fd, p, mode) < 0 && errno != EEXIST)
			return -errno;
	}
	return 0;
}

/*
 * The user.* xattrs of in onto out: a copy-up and a commit keep them (a
 * file the guest changed would otherwise lose them), and setxattr in the
 * layer is committed.  Other namespaces are not copied (security.* and
 * trusted.* are not the guest's to carry over).  Best effort.
 */
static void copy_user_xattrs(int in, int out)
{
	char names[4096], val[4096];
	ssize_t n = flistxattr(in, names, sizeof names);
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(names + i) + 1) {
		if (strncmp(names + i, "user.", 5) != 0)
			continue;
		ssize_t v = fgetxattr(in, names + i, val, sizeof val);
		if (v >= 0)
			(void)fsetxattr(out, names + i, val, (size_t)v, 0);
	}
}

/* The user.* xattrs of a and b are the same. */
static bool same_user_xattrs(int a, int b)
{
	char na[4096], nb[4096], va[4096], vb[4096];
	ssize_t la = flistxattr(a, na, sizeof na), lb = flistxattr(b, nb, sizeof nb);
	if (la < 0 || lb < 0)
		return la < 0 && lb < 0;
	int count_a = 0, count_b = 0;
	for (ssize_t i = 0; i < lb; i += (ssize_t)strlen(nb + i) + 1)
		count_b += !strncmp(nb + i, "user.", 5);
	for (ssize_t i = 0; i < la; i += (ssize_t)strlen(na + i) + 1) {
		if (strncmp(na + i, "user.", 5) != 0)
			continue;
		count_a++;
		ssize_t x = fgetxattr(a, na + i, va, sizeof va), y = fgetxattr(b, na + i, vb, sizeof vb);
		if (x != y || x < 0 || memcmp(va, vb, (size_t)x) != 0)
			return false;
	}
	return count_a == count_b;
}

/*
 * Copy in's contents to out.  copy_file_range first: the kernel copies
 * (or shares extents, on filesystems that can) without the bytes passing
 * through us; EXDEV/EINVAL/ENOSYS (another filesystem, an old kernel) and
 * a first call that copies nothing (procfs and sysfs files report size 0)
 * fall back to read/write, which also finishes a partial copy.
 */
static int copy_data(int in, int out)
{
	for (bool first = true;; first = false) {
		ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			continue;
		if (n == 0 && !first)
			return 0;
		if (n < 0 && errno != EXDEV && errno != EINVAL && errno != ENOSYS &&
		    errno != EOPNOTSUPP && errno != EPERM)
			return -errno;
		break;
	}
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -errno;
			off += w;
		}
	}
}

/* Copy the real rel into the upper layer (contents unless empty_only). */
/*
 * rel, a real file with other names, was just copied up: those names that
 * the view still shows as that same real file become links of the copy,
 * so a write through one shows through all (and they commit as one
 * inode).  A name that cannot be linked stays its own (as before).
 */
static int link_real_siblings(struct sl_cow *c, const char *rel, const struct stat *st)
{
	if (!c->links && !(c->links = sl_cowlinks_build(c->lower_fd)))
		return -ENOMEM;
	const char *n;
	for (size_t i = 0; (n = sl_cowlinks_name(c->links, st->st_dev, st->st_ino, i)); i++) {
		struct stat u, x;
		if (!strcmp(n, rel) || hidden(c, n) || layer_stat(c->upper_fd, n, false, &u) == 0 ||
		    layer_stat(c->lower_fd, n, false, &x) != 0 || x.st_ino != st->st_ino ||
		    x.st_dev != st->st_dev)
			continue;
		int e = remember(c, n);
		if (!e)
			e = upper_parents(c, n);
		if (e == -ENOMEM)
			return e;
		if (!e)
			(void)linkat(c->upper_fd, rel, c->upper_fd, n, 0);
	}
	return 0;
}

static int copy_up(struct sl_cow *c, const char *rel, bool empty_only)
{
	struct stat st;
	int e = remember(c, rel);
	if (e || (e = upper_parents(c, rel)))
		return e;
	if ((e = layer_stat(c->lower_fd, rel, false, &st)))
		return e;
	uint64_t bytes = empty_only ? 0 : (uint64_t)st.st_size;
	if (over_quota(c, bytes > SL_COW_INODE_BYTES ? bytes : SL_COW_INODE_BYTES))
		return -ENOSPC;
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		int fd = open_beneath(c->lower_fd, rel, O_PATH | O_NOFOLLOW, 0);
		ssize_t n = fd >= 0 ? readlinkat(fd, "", target, sizeof target - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n < 0)
			return -errno;
		target[n] = '\0';
		return symlinkat(target, c->upper_fd, rel) == 0 ? 0 : -errno;
	}
	if (S_ISDIR(st.st_mode))
		return mkdirat(c->upper_fd, rel, st.st_mode & 07777) == 0 || errno == EEXIST ? 0 : -errno;
	if (!S_ISREG(st.st_mode))
		return -EPERM; /* devices, FIFOs, sockets are not staged */
	int out = open_beneath(c->upper_fd, rel, O_WRONLY | O_CREAT | O_EXCL, st.st_mode & 07777);
	if (out < 0)
		return out;
	int in = open_beneath(c->lower_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
	e = empty_only ? 0 : in < 0 ? in : copy_data(in, out);
	if (in >= 0) {
		copy_user_xattrs(in, out);
		close(in);
	}
	if (!e && fchmod(out, st.st_mode & 07777) < 0)
		e = -errno;
	close(out);
	if (e)
		unlinkat(c->upper_fd, rel, 0);
	else if (st.st_nlink > 1)
		e = link_real_siblings(c, rel, &st);
	return e;
}

int sl_cow_open_upper(struct sl_cow *c, const char *rel, int flags)
{
	return open_beneath(c->upper_fd, rel, flags, 0);
}

int sl_cow_open_lower(struct sl_cow *c, const char *rel, int flags)
{
	return open_beneath(c->lower_fd, rel, flags, 0);
}

int sl_cow_open(struct sl_cow *c, const char *rel, int flags, mode_t mode)
{
	int acc = flags & O_ACCMODE;
	bool write = acc != O_RDONLY || (flags & (O_CREAT | O_TRUNC)) || (flags & O_TMPFILE) == O_TMPFILE;
	if (flags & O_PATH)
		write = false;
	struct stat st;
	int e = 0;
	bool follow = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
	enum sl_cow_where w = sl_cow_lookup(c, rel, follow, &st, &e);
	if (!write) {
		if (w == SL_COW_NONE)
			return -e;
		if (w == SL_COW_LOWER)
			return open_beneath(c->lower_fd, rel, flags, 0);
		return open_beneath(c->upper_fd, rel, flags, 0);
	}
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return -EOPNOTSUPP; /* callers fall back to a named temporary file */
	if (w != SL_COW_NONE) {
		if ((flags & O_CREAT) && (flags & O_EXCL))
			return -EEXIST;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (w == SL_COW_LOWER && (e = copy_up(c, rel, (flags & O_TRUNC) != 0)))
			return e;
	} else {
		if (e != ENOENT || !(flags & O_CREAT))
			return -e;
		if ((e = parent_ok(c, rel)) || (e = remember(c, rel)) || (e = upper_parents(c, rel)))
			return e;
		if (over_quota(c, SL_COW_INODE_BYTES))
			return -ENOSPC;
		unwhite(c, rel);
	}
	return open_beneath(c->upper_fd, rel, flags, mode);
}

int sl_cow_copy_up_fd(struct sl_cow *c, const char *rel, bool follow)
{
	struct stat st;
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(c, rel, false, &st, &e);
	if (w == SL_COW_NONE)
		return -e;
	if (w == SL_COW_LOWER && (e = copy_up(c, rel, false)))
		return e;
	return open_beneath(c->upper_fd, rel, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
}

/* ---------------- listings ---------------- */

struct ent {
	char *name;
	uint64_t ino;
	unsigned char type;
};
struct ents {
	struct ent *v;
	size_t n;
};

static void ents_free(struct ents *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].name);
	free(l->v);
}

static bool ents_has(const struct ents *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].name, name) == 0)
			return true;
	return false;
}

/* Add the entries of layer dir rel (not those already listed, and, for
 * the real tree, not the whited-out ones). */
static int list_layer(struct sl_cow *c, int root, const char *rel, bool lower, struct ents *l)
{
	int fd = open_beneath(root, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0)
		return fd == -ENOENT || fd == -ENOTDIR || fd == -ELOOP ? 0 : fd;
	DIR *d = sl_fdopendir(fd);
	if (!d)
		return -errno;
	struct dirent *de;
	int e = 0;
	char child[4096];
	while ((de = readdir(d))) {
		if (ents_has(l, de->d_name))
			continue;
		bool dot = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
		snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name);
		if (lower && !dot && hidden(c, child))
			continue;
		struct ent *v = realloc(l->v, (l->n + 1) * sizeof(*v));
		if (!v || !(v[l->n].name = sl_strdup(de->d_name))) {
			if (v)
				l->v = v;
			e = -ENOMEM;
			break;
		}
		l->v = v;
		l->v[l->n].ino = de->d_ino;
		l->v[l->n].type = de->d_type;
		l->n++;
	}
	closedir(d);
	return e;
}

static int merged_list(struct sl_cow *c, const char *rel, struct ents *l)
{
	memset(l, 0, sizeof(*l));
	int e = list_layer(c, c->upper_fd, rel, false, l);
	if (!e && !hidden(c, rel))
		e = list_layer(c, c->lower_fd, rel, true, l);
	if (e)
		ents_free(l);
	return e;
}

int sl_cow_chmod_root(struct sl_cow *c, mode_t mode)
{
	int e = remember(c, "");
	if (!e)
		c->root_mode = (int)(mode & 07777);
	return e;
}

int sl_cow_root_mode(const struct sl_cow *c)
{
	return c->root_mode;
}

nlink_t sl_cow_dir_nlink(struct sl_cow *c, const char *rel)
{
	struct ents l;
	if (merged_list(c, rel, &l))
		return 1; /* unknown: what btrfs says, and find(1) then looks */
	nlink_t n = 2;
	for (size_t i = 0; i < l.n && n > 1; i++)
		if (l.v[i].type == DT_UNKNOWN)
			n = 1;
		else if (l.v[i].type == DT_DIR && strcmp(l.v[i].name, ".") && strcmp(l.v[i].name, ".."))
			n++;
	ents_free(&l);
	return n;
}

long sl_cow_getdents(struct sl_cow *c, const char *rel, uint64_t *pos, char *buf, size_t cap)
{
	struct ents l;
	int e = merged_list(c, rel, &l);
	if (e)
		return e;
	size_t off = 0;
	uint64_t i = *pos;
	for (; i < l.n; i++) {
		size_t nlen = strlen(l.v[i].name);
		size_t reclen = (19 + nlen + 1 + 7) & ~(size_t)7;
		if (off + reclen > cap)
			break;
		char *p = buf + off;
		memset(p, 0, reclen);
		uint64_t ino = l.v[i].ino, next = i + 1;
		unsigned short rl = (unsigned short)reclen;
		memcpy(p, &ino, 8);
		memcpy(p + 8, &next, 8);
		memcpy(p + 16, &rl, 2);
		p[18] = (char)l.v[i].type;
		memcpy(p + 19, l.v[i].name, nlen);
		off += reclen;
	}
	bool too_small = off == 0 && i < l.n;
	ents_free(&l);
	if (too_small)
		return -EINVAL;
	*pos = i;
	return (long)off;
}

/* ---------------- the write side ---------------- */

int sl_cow_unlink(struct sl_cow *c, const char *rel, bool dir)
{
	struct stat st;
	int e = 0;
	if (!rel[0])
		return dir ? -EBUSY : -EISDIR;
	enum sl_cow_where w = sl_cow_lookup(c, rel, false, &st, &e);
	if (w == SL_COW_NONE)
		return -e;
	if (dir && !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (!dir && S_ISDIR(st.st_mode))
		return -EISDIR;
	if (dir) {
		struct ents l;
		if ((e = merged_list(c, rel, &l)))
			return e;
		bool empty = l.n <= 2;
		ents_free(&l);
		if (!empty)
			return -ENOTEMPTY;
	}
	if ((e = remember(c, rel)))
		return e;
	if (w == SL_COW_UPPER && !dir && (e = discard_upper(c, rel)))
		return e;
	if (w == SL_COW_UPPER && unlinkat(c->upper_fd, rel, dir ? AT_REMOVEDIR : 0) < 0 &&
	    errno != ENOENT)
		return -errno;
	notes_drop(c, rel);
	struct stat lst;
	if (lower_visible(c, rel, &lst))
		return whiteout(c, rel);
	return 0;
}

int sl_cow_mkdir(struct sl_cow *c, const char *rel, mode_t mode)
{
	struct stat st;
	int e = 0;
	if (!rel[0] || sl_cow_lookup(c, rel, false, &st, &e) != SL_COW_NONE)
		return -EEXIST;
	if (e != ENOENT)
		return -e;
	if ((e = parent_ok(c, rel)) || (e = remember(c, rel)) || (e = upper_parents(c, rel)))
		return e;
	if (over_quota(c, SL_COW_INODE_BYTES))
		return -ENOSPC;
	if (mkdirat(c->upper_fd, rel, mode) < 0)
		return -errno;
	unwhite(c, rel); /* its old children keep their own whiteouts */
	return 0;
}

/* Prepare to: the merged parent must exist, the upper one is made; the
 * new name (and the whiteout a rename may leave) is charged. */
static int prepare_target(struct sl_cow *c, const char *to)
{
	int e;
	if ((e = parent_ok(c, to)) || (e = remember(c, to)) || (e = upper_parents(c, to)))
		return e;
	return over_quota(c, SL_COW_INODE_BYTES) ? -ENOSPC : 0;
}

/* Make the whole merged tree at rel upper (real entries copied up). */
static int copy_up_tree(struct sl_cow *c, const char *rel)
{
	struct stat st;
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(c, rel, false, &st, &e);
	if (w == SL_COW_NONE)
		return -e;
	if (w == SL_COW_LOWER && (e = copy_up(c, rel, false)))
		return e;
	if (!S_ISDIR(st.st_mode))
		return 0;
	struct ents l;
	if ((e = merged_list(c, rel, &l)))
		return e;
	char child[4096];
	for (size_t i = 0; !e && i < l.n; i++) {
		const char *name = l.v[i].name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		if (snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", name) >=
		    (int)sizeof child)
			e = -ENAMETOOLONG;
		else
			e = copy_up_tree(c, child);
	}
	ents_free(&l);
	return e;
}

/* Hide every real name at and under rel, each by its own whiteout, so
 * that recreating rel later does not bring its old children back. */
static int whiteout_tree(struct sl_cow *c, const char *rel)
{
	struct stat st;
	if (!lower_visible(c, rel, &st))
		return 0;
	int e = 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = sl_fdopendir(open_beneath(c->lower_fd, rel,
		                                   O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0));
		if (!d)
			return -errno;
		struct dirent *de;
		char child[4096];
		while (!e && (de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			if (snprintf(child, sizeof child, "%s/%s", rel, de->d_name) >= (int)sizeof child)
				e = -ENAMETOOLONG;
			else
				e = whiteout_tree(c, child);
		}
		closedir(d);
	}
	return e ? e : whiteout(c, rel);
}

/* Replace the prefix old of *p by new (p under old). */
static int swap_prefix(char **p, const char *old, const char *new)
{
	char *n = sl_asprintf("%s%s", new, *p + strlen(old));
	if (!n)
		return -ENOMEM;
	free(*p);
	*p = n;
	return 0;
}

/* The real directory the view shows at view path v, into real: a moved
 * one, or the real v itself when it was neither moved away nor hidden. */
static bool real_at(struct sl_cow *c, const char *v, const char **real)
{
	for (size_t i = 0; i < c->nmoved; i++)
		if (!strcmp(c->moved[i].view, v)) {
			*real = c->moved[i].real;
			return true;
		}
	for (size_t i = 0; i < c->nmoved; i++)
		if (!strcmp(c->moved[i].real, v))
			return false; /* the real v went elsewhere */
	struct stat st;
	*real = v;
	return !hidden(c, v) && layer_stat(c->lower_fd, v, false, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The view moved directory from to to (and to to from, exchanged):
 * before the layer's own bookkeeping hides the old names. */
static int track_move(struct sl_cow *c, const char *from, const char *to, bool exchange)
{
	const char *rf = NULL, *rt = NULL;
	bool hf = real_at(c, from, &rf), ht = exchange && real_at(c, to, &rt);
	char *nf = hf ? sl_strdup(rf) : NULL, *nt = ht ? sl_strdup(rt) : NULL;
	int e = (hf && !nf) || (ht && !nt) ? -ENOMEM : 0;
	/* Entries already under the moved names follow them. */
	for (size_t i = 0; !e && i < c->nmoved; i++) {
		char **v = &c->moved[i].view;
		if (sl_path_under(*v, from))
			e = swap_prefix(v, from, to);
		else if (exchange && sl_path_under(*v, to))
			e = swap_prefix(v, to, from);
	}
	for (int k = 0; !e && k < 2; k++) {
		char *r = k ? nt : nf;
		if (!r)
			continue;
		bool known = false;
		for (size_t i = 0; i < c->nmoved && !known; i++)
			known = !strcmp(c->moved[i].real, r);
		if (known)
			continue;
		struct moved_dir *m = realloc(c->moved, (c->nmoved + 1) * sizeof *m);
		if (!m) {
			e = -ENOMEM;
			break;
		}
		c->moved = m;
		m[c->nmoved].real = r;
		if (!(m[c->nmoved].view = sl_strdup(k ? from : to))) {
			e = -ENOMEM;
			break;
		}
		c->nmoved++;
		if (k)
			nt = NULL;
		else
			nf = NULL;
	}
	free(nf);
	free(nt);
	return e;
}

bool sl_cow_real_view(const struct sl_cow *c, const char *real, char *out, size_t cap)
{
	const struct moved_dir *best = NULL;
	for (size_t i = 0; i < c->nmoved; i++)
		if (sl_path_under(real, c->moved[i].real) &&
		    (!best || strlen(c->moved[i].real) > strlen(best->real)))
			best = &c->moved[i];
	if (!best)
		return snprintf(out, cap, "%s", real) < (int)cap && false;
	const char *rest = real + strlen(best->real);
	return snprintf(out, cap, "%s%s", best->view, rest) < (int)cap;
}

int sl_cow_rename(struct sl_cow *c, const char *from, const char *to, unsigned flags)
{
	struct stat sf, stt;
	int e = 0, et = 0;
	if (!from[0] || !to[0])
		return -EBUSY;
	if (flags & ~(unsigned)(RENAME_NOREPLACE | RENAME_EXCHANGE))
		return -EINVAL;
	enum sl_cow_where wf = sl_cow_lookup(c, from, false, &sf, &e);
	if (wf == SL_COW_NONE)
		return -e;
	enum sl_cow_where wt = sl_cow_lookup(c, to, false, &stt, &et);
	if (wt == SL_COW_NONE && et != ENOENT)
		return -et;
	if (strcmp(from, to) == 0)
		return (flags & RENAME_NOREPLACE) ? -EEXIST : 0;
	if ((flags & RENAME_NOREPLACE) && wt != SL_COW_NONE)
		return -EEXIST;
	struct stat lst;
	if (flags & RENAME_EXCHANGE) {
		if (wt == SL_COW_NONE)
			return -ENOENT;
		bool dirs = S_ISDIR(sf.st_mode) || S_ISDIR(stt.st_mode);
		if (dirs && (sl_path_under(to, from) || sl_path_under(from, to)))
			return -EINVAL;
		/* Both trees complete in the upper layer, swapped there; each
		 * name then holds the other's whole tree, so the real names
		 * under it are hidden (the names themselves stay). */
		if ((e = copy_up_tree(c, from)) || (e = copy_up_tree(c, to)))
			return e;
		if (renameat2(c->upper_fd, from, c->upper_fd, to, RENAME_EXCHANGE) < 0)
			return -errno;
		if (dirs && (e = track_move(c, from, to, true)))
			return e;
		if ((e = notes_move(c, from, to, true)))
			return e;
		if (dirs && ((e = whiteout_tree(c, from)) || (e = whiteout_tree(c, to))))
			return e;
		unwhite(c, from);
		unwhite(c, to);
		return 0;
	}
	if (S_ISDIR(sf.st_mode)) {
		if (sl_path_under(to, from))
			return -EINVAL;
		if (wt != SL_COW_NONE) {
			if (!S_ISDIR(stt.st_mode))
				return -ENOTDIR;
			struct ents l;
			if ((e = merged_list(c, to, &l)))
				return e;
			bool empty = l.n <= 2;
			ents_free(&l);
			if (!empty)
				return -ENOTEMPTY;
		}
	} else if (wt != SL_COW_NONE && S_ISDIR(stt.st_mode)) {
		return -EISDIR;
	}
	if ((e = prepare_target(c, to)))
		return e;
	/* A directory moves with its merged contents: what the real tree
	 * holds under it is staged first, then every real name under the old
	 * path is whited out (children first, see whiteout_tree). */
	if (S_ISDIR(sf.st_mode) ? (e = copy_up_tree(c, from))
	                        : (wf == SL_COW_LOWER && (e = copy_up(c, from, false))))
		return e;
	if (wt == SL_COW_UPPER && S_ISDIR(stt.st_mode) && unlinkat(c->upper_fd, to, AT_REMOVEDIR) < 0)
		return -errno;
	if (wt == SL_COW_UPPER && !S_ISDIR(stt.st_mode) && (e = discard_upper(c, to)))
		return e;
	if (renameat(c->upper_fd, from, c->upper_fd, to) < 0)
		return -errno;
	if (S_ISDIR(sf.st_mode) && (e = track_move(c, from, to, false)))
		return e;
	notes_drop(c, to);
	if ((e = notes_move(c, from, to, false)))
		return e;
	unwhite(c, to);
	if (S_ISDIR(sf.st_mode))
		return whiteout_tree(c, from);
	if (lower_visible(c, from, &lst))
		return whiteout(c, from);
	return 0;
}

int sl_cow_link(struct sl_cow *c, const char *from, const char *to)
{
	struct stat sf, stt;
	int e = 0, et = 0;
	enum sl_cow_where wf = sl_cow_lookup(c, from, false, &sf, &e);
	if (wf == SL_COW_NONE)
		return -e;
	if (S_ISDIR(sf.st_mode))
		return -EPERM;
	if (sl_cow_lookup(c, to, false, &stt, &et) != SL_COW_NONE)
		return -EEXIST;
	if (et != ENOENT)
		return -et;
	/* A real file is copied up first: the two names are one staged inode,
	 * a new one (a caller comparing the link with the inode it saw before,
	 * as git's local clone does, finds another file: docs/cow-chroot.md). */
	if ((e = prepare_target(c, to)) || (wf == SL_COW_LOWER && (e = copy_up(c, from, false))))
		return e;
	if (linkat(c->upper_fd, from, c->upper_fd, to, 0) < 0)
		return -errno;
	unwhite(c, to);
	return 0;
}

int sl_cow_symlink(struct sl_cow *c, const char *target, const char *to)
{
	struct stat st;
	int e = 0;
	if (sl_cow_lookup(c, to, false, &st, &e) != SL_COW_NONE)
		return -EEXIST;
	if (e != ENOENT)
		return -e;
	if ((e = prepare_target(c, to)))
		return e;
	if (symlinkat(target, c->upper_fd, to) < 0)
		return -errno;
	unwhite(c, to);
	return 0;
}

int sl_cow_mknod(struct sl_cow *c, const char *rel, mode_t mode, dev_t dev)
{
	struct stat st;
	int e = 0;
	if (!S_ISREG(mode) && (mode & S_IFMT) != 0)
		return -EPERM; /* only regular files are staged */
	(void)dev;
	if (sl_cow_lookup(c, rel, false, &st, &e) != SL_COW_NONE)
		return -EEXIST;
	if (e != ENOENT)
		return -e;
	if ((e = prepare_target(c, rel)))
		return e;
	int fd = open_beneath(c->upper_fd, rel, O_WRONLY | O_CREAT | O_EXCL, mode & 07777);
	if (fd < 0)
		return fd;
	close(fd);
	unwhite(c, rel);
	return 0;
}

/* ---------------- changes and commit ---------------- */

/* True if the upper and real rel hold the same thing. */
static bool same_content(struct sl_cow *c, const char *rel, const struct stat *u,
                         const struct stat *l)
{
	if ((u->st_mode & (S_IFMT | 07777)) != (l->st_mode & (S_IFMT | 07777)))
		return false;
	if (S_ISLNK(u->st_mode)) {
		char a[4096], b[4096];
		int fa = open_beneath(c->upper_fd, rel, O_PATH | O_NOFOLLOW, 0);
		int fb = open_beneath(c->lower_fd, rel, O_PATH | O_NOFOLLOW, 0);
		ssize_t na = fa >= 0 ? readlinkat(fa, "", a, sizeof a) : -1;
		ssize_t nb = fb >= 0 ? readlinkat(fb, "", b, sizeof b) : -1;
		if (fa >= 0)
			close(fa);
		if (fb >= 0)
			close(fb);
		return na >= 0 && na == nb && memcmp(a, b, (size_t)na) == 0;
	}
	if (!S_ISREG(u->st_mode) || u->st_size != l->st_size)
		return S_ISDIR(u->st_mode);
	int fa = open_beneath(c->upper_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
	int fb = open_beneath(c->lower_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
	bool same = fa >= 0 && fb >= 0;
	char x[16384], y[16384];
	if (same)
		same = same_user_xattrs(fa, fb);
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

static int walk_upper(struct sl_cow *c, const char *rel, struct sl_changes *out)
{
	DIR *d = sl_fdopendir(open_beneath(c->upper_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0));
	if (!d)
		return -errno;
	int e = 0;
	struct dirent *de;
	char child[4096];
	while (!e && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
		    (int)sizeof child) {
			e = -ENAMETOOLONG;
			break;
		}
		struct stat u, l;
		if (fstatat(dirfd(d), de->d_name, &u, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		staged_mode(c, child, &u);
		bool real = layer_stat(c->lower_fd, child, false, &l) == 0;
		if (!real)
			e = push_change(out, 'A', child);
		else if (!same_content(c, child, &u, &l))
			e = push_change(out, 'M', child);
		if (!e && S_ISDIR(u.st_mode))
			e = walk_upper(c, child, out);
	}
	closedir(d);
	return e;
}

static int cmp_change(const void *a, const void *b)
{
	return strcmp(((const struct sl_change *)a)->path, ((const struct sl_change *)b)->path);
}

/*
 * The run is over; the listing and the commit read every staged entry,
 * with our own rights: where the guest took the owner's rights away
 * (chmod 000 f, chmod 500 d), an unprivileged supervisor could not read
 * the file or walk the directory, and the entry was left out (or the
 * commit failed).  So the owner's rights are given back to ourselves
 * first, and the guest's mode is remembered here for the listing, the
 * commit and a kept layer (relock_upper).
 */
static int lock_note(struct sl_cow *c, const char *rel, mode_t mode)
{
	struct locked *v = realloc(c->locked, (c->nlocked + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	c->locked = v;
	if (!(v[c->nlocked].rel = sl_strdup(rel)))
		return -ENOMEM;
	v[c->nlocked++].mode = mode & 07777;
	return 0;
}

/* Forget the notes at and under rel (it is gone). */
static void notes_drop(struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->nlocked;) {
		if (sl_path_under(c->locked[i].rel, rel)) {
			free(c->locked[i].rel);
			c->locked[i] = c->locked[--c->nlocked];
			continue;
		}
		i++;
	}
}

/* The notes under from now live under to (and, exchanged, the other way). */
static int notes_move(struct sl_cow *c, const char *from, const char *to, bool exchange)
{
	for (size_t i = 0; i < c->nlocked; i++) {
		const char *r = c->locked[i].rel, *a = NULL, *b = NULL;
		if (sl_path_under(r, from))
			a = from, b = to;
		else if (exchange && sl_path_under(r, to))
			a = to, b = from;
		if (!a)
			continue;
		char *n = sl_asprintf("%s%s", b, r + strlen(a));
		if (!n)
			return -ENOMEM;
		free(c->locked[i].rel);
		c->locked[i].rel = n;
	}
	return 0;
}

int sl_cow_note_mode(struct sl_cow *c, const char *rel, int mode)
{
	for (size_t i = 0; i < c->nlocked; i++)
		if (!strcmp(c->locked[i].rel, rel)) {
			free(c->locked[i].rel);
			c->locked[i] = c->locked[--c->nlocked];
			break;
		}
	return mode < 0 ? 0 : lock_note(c, rel, (mode_t)mode);
}

int sl_cow_view_mode(const struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->nlocked; i++)
		if (!strcmp(c->locked[i].rel, rel))
			return (int)c->locked[i].mode;
	return -1;
}

static int unlock_tree(struct sl_cow *c, int dir, const char *rel)
{
	DIR *d = sl_fdopendir(dir);
	if (!d)
		return -errno;
	int e = 0;
	struct dirent *de;
	char child[4096];
	while (!e && (de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
		    (int)sizeof child)
			continue;
		mode_t need = S_ISDIR(st.st_mode) ? S_IRWXU : S_ISREG(st.st_mode) ? S_IRUSR : 0;
		if ((st.st_mode & need) != need) {
			if ((e = lock_note(c, child, st.st_mode)))
				break;
			(void)fchmodat(dirfd(d), de->d_name, (st.st_mode & 07777) | need, 0);
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0)
				e = unlock_tree(c, sub, child);
		}
	}
	closedir(d);
	return e;
}

static int unlock_upper(struct sl_cow *c)
{
	if (c->unlocked)
		return 0;
	c->unlocked = true;
	int fd = open_beneath(c->upper_fd, "", O_RDONLY | O_DIRECTORY, 0);
	return fd < 0 ? fd : unlock_tree(c, fd, "");
}

/* Deepest first, so a directory is closed again after what it holds. */
static void relock_upper(struct sl_cow *c)
{
	for (size_t i = c->nlocked; i-- > 0;)
		(void)fchmodat(c->upper_fd, c->locked[i].rel, c->locked[i].mode, 0);
	c->unlocked = false;
}

/* The mode the guest gave the staged rel (u: what the upper layer has). */
static void staged_mode(const struct sl_cow *c, const char *rel, struct stat *u)
{
	for (size_t i = 0; i < c->nlocked; i++)
		if (!strcmp(c->locked[i].rel, rel)) {
			u->st_mode = (u->st_mode & S_IFMT) | c->locked[i].mode;
			return;
		}
}

int sl_cow_changes(struct sl_cow *c, struct sl_changes *out)
{
	memset(out, 0, sizeof(*out));
	int ue = unlock_upper(c);
	if (ue)
		return ue;
	int e = walk_upper(c, "", out);
	struct stat root;
	if (!e && c->root_mode >= 0 && fstat(c->lower_fd, &root) == 0 &&
	    (int)(root.st_mode & 07777) != c->root_mode)
		e = push_change(out, 'M', "."); /* workdir's own mode */
	for (size_t i = 0; !e && i < c->whiteouts.n; i++) {
		const char *w = c->whiteouts.v[i];
		struct stat st;
		if (layer_stat(c->lower_fd, w, false, &st) == 0 &&
		    layer_stat(c->upper_fd, w, false, &st) != 0)
			e = push_change(out, 'D', w);
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
	struct record *r = find_record(c, rel);
	struct stat now;
	bool exists = layer_stat(c->lower_fd, rel, false, &now) == 0;
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
	parent_of(rel, p, sizeof p);
	const char *slash = strrchr(rel, '/');
	*name = slash ? slash + 1 : rel;
	return open_beneath(c->lower_fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
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

/* Walk the upper layer below rel for linked, unchanged regular files. */
static int collect_linked(struct sl_cow *c, const char *rel, const struct sl_changes *ch,
                          struct linked *out)
{
	DIR *d = sl_fdopendir(open_beneath(c->upper_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0));
	if (!d)
		return -errno;
	int e = 0;
	struct dirent *de;
	char child[4096];
	while (!e && (de = readdir(d))) {
		struct stat u;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    fstatat(dirfd(d), de->d_name, &u, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		if (snprintf(child, sizeof child, "%s%s%s", rel, rel[0] ? "/" : "", de->d_name) >=
		    (int)sizeof child)
			e = -ENAMETOOLONG;
		else if (S_ISDIR(u.st_mode))
			e = collect_linked(c, child, ch, out);
		else if (S_ISREG(u.st_mode) && u.st_nlink > 1 && !is_change(ch, child))
			e = linked_push(out, child, &u);
	}
	closedir(d);
	return e;
}

/* A fresh temporary name for p, next to its target, in the journal
 * before the temporary is made.  0 or -errno. */
static int tmp_name(struct sl_cow *c, struct pending *p)
{
	uint32_t rnd = 0;
	(void)!getrandom(&rnd, sizeof rnd, 0);
	snprintf(p->tmp, sizeof p->tmp, SL_COMMIT_PREFIX "%08x", rnd);
	char parent[4096];
	parent_of(p->x->path, parent, sizeof parent);
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
		int fd = open_beneath(c->upper_fd, rel, O_PATH | O_NOFOLLOW, 0);
		ssize_t n = fd >= 0 ? readlinkat(fd, "", target, sizeof target - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n < 0)
			e = -errno;
		else {
			target[n] = '\0';
			e = symlinkat(target, dir, tmp) == 0 ? 0 : -errno;
		}
	} else {
		int in = open_beneath(c->upper_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
		int out = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		                 u->st_mode & 07777);
		e = in < 0 ? in : out < 0 ? -errno : copy_data(in, out);
		if (!e)
			copy_user_xattrs(in, out);
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
			e = push_change(conflicts, 'D', dels[i].path);
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
		if (layer_stat(c->upper_fd, x->path, false, &u) != 0)
			continue;
		staged_mode(c, x->path, &u);
		if (moved_on(c, x->path)) {
			e = push_change(conflicts, x->kind, x->path);
			continue;
		}
		bool real = layer_stat(c->lower_fd, x->path, false, &l) == 0;
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
			e = push_change(conflicts, x->kind, x->path);
		else
			e = r;
	}
	if (!e && np) { /* syncfs needs a real fd; lower_fd is O_PATH */
		int sfd = open_beneath(c->lower_fd, "", O_RDONLY | O_DIRECTORY, 0);
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
			e = push_change(conflicts, pend[i].x->kind, pend[i].x->path);
		} else if (r) {
			e = r;
		}
	}
	/* Directory modes last, deepest first (the list is in path order). */
	for (size_t i = nd2; i-- > 0;) {
		int fd = open_beneath(c->lower_fd, dmode[i].path, O_RDONLY | O_DIRECTORY, 0);
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
