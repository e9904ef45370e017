/*
 * cowview.c — the layer's merged view: where a rel path is (upper, real,
 * hidden), copy-up of a real file into the upper layer (data, user
 * xattrs, its hard-link siblings), opens in either layer, and merged
 * directory listings (the place to sort them).  Split from cow.c along
 * its sections; the layout it reads is described there.
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

#include "cow/cowlinks.h"
#include "cow/cowint.h"


/* True if the parent of rel is a directory of the upper layer. */
static bool upper_parent_dir(struct sl_cow *c, const char *rel)
{
	char p[4096];
	struct stat st;
	sl_cw_parent_of(rel, p, sizeof p);
	return p[0] && sl_cw_layer_stat(c->upper_fd, p, true, &st) == 0 && S_ISDIR(st.st_mode);
}

enum sl_cow_where sl_cow_lookup(struct sl_cow *c, const char *rel, bool follow, struct stat *st,
                                int *e)
{
	/* workdir itself is the real directory (the upper root is ours). */
	int r = rel[0] ? sl_cw_layer_stat(c->upper_fd, rel, follow, st) : -ENOENT;
	if (r == 0)
		return SL_COW_UPPER;
	if (r != -ENOENT && r != -ENOTDIR) {
		*e = -r;
		return SL_COW_NONE;
	}
	if (sl_cw_hidden(c, rel)) {
		*e = ENOENT;
		return SL_COW_NONE;
	}
	r = sl_cw_layer_stat(c->lower_fd, rel, follow, st);
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
	return c->nrec == 0; /* sl_cw_remember() runs before anything is shadowed */
}

bool sl_cow_lower_dir(struct sl_cow *c, const char *rel, struct stat *st)
{
	/* Not a real directory the run moved elsewhere, nor one inside it
	 * (the name now shows another directory: exchanged, or made anew). */
	for (size_t i = 0; i < c->nmoved; i++)
		if (sl_path_under(rel, c->moved[i].real) && strcmp(c->moved[i].real, c->moved[i].view))
			return false;
	return !sl_cw_hidden(c, rel) && sl_cw_layer_stat(c->lower_fd, rel, false, st) == 0 && S_ISDIR(st->st_mode);
}

int sl_cow_lower_lstat(struct sl_cow *c, const char *rel, struct stat *st)
{
	return sl_cw_layer_stat(c->lower_fd, rel, false, st);
}

ssize_t sl_cow_readlink(struct sl_cow *c, const char *rel, bool upper, char *buf, size_t cap)
{
	int fd = sl_cw_open_beneath(upper ? c->upper_fd : c->lower_fd, rel, O_PATH | O_NOFOLLOW, 0);
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
int sl_cw_parent_ok(struct sl_cow *c, const char *rel)
{
	char p[4096];
	struct stat st;
	int e = 0;
	sl_cw_parent_of(rel, p, sizeof p);
	if (sl_cow_lookup(c, p, true, &st, &e) == SL_COW_NONE)
		return -e;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* Create the upper directories that hold rel (each with its real mode). */
int sl_cw_upper_parents(struct sl_cow *c, const char *rel)
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
		if (sl_cw_layer_stat(c->upper_fd, p, false, &st) == 0)
			continue;
		/* First shadowed here: its real state is what the commit will
		 * check it against (a chmod of it later is a change). */
		int e = sl_cw_remember(c, p);
		if (e)
			return e;
		mode_t mode = sl_cw_layer_stat(c->lower_fd, p, false, &st) == 0 ? (st.st_mode & 07777) : 0755;
		if (sl_cw_over_quota(c, SL_COW_INODE_BYTES))
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
void sl_cw_copy_user_xattrs(int in, int out)
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
bool sl_cw_same_user_xattrs(int a, int b)
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
int sl_cw_copy_data(int in, int out)
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
		if (!strcmp(n, rel) || sl_cw_hidden(c, n) || sl_cw_layer_stat(c->upper_fd, n, false, &u) == 0 ||
		    sl_cw_layer_stat(c->lower_fd, n, false, &x) != 0 || x.st_ino != st->st_ino ||
		    x.st_dev != st->st_dev)
			continue;
		int e = sl_cw_remember(c, n);
		if (!e)
			e = sl_cw_upper_parents(c, n);
		if (e == -ENOMEM)
			return e;
		if (!e)
			(void)linkat(c->upper_fd, rel, c->upper_fd, n, 0);
	}
	return 0;
}

int sl_cw_copy_up(struct sl_cow *c, const char *rel, bool empty_only)
{
	struct stat st;
	int e = sl_cw_remember(c, rel);
	if (e || (e = sl_cw_upper_parents(c, rel)))
		return e;
	if ((e = sl_cw_layer_stat(c->lower_fd, rel, false, &st)))
		return e;
	uint64_t bytes = empty_only ? 0 : (uint64_t)st.st_size;
	if (sl_cw_over_quota(c, bytes > SL_COW_INODE_BYTES ? bytes : SL_COW_INODE_BYTES))
		return -ENOSPC;
	if (S_ISLNK(st.st_mode)) {
		char target[4096];
		ssize_t n = sl_cow_readlink(c, rel, false, target, sizeof target);
		if (n < 0)
			return (int)n;
		return symlinkat(target, c->upper_fd, rel) == 0 ? 0 : -errno;
	}
	if (S_ISDIR(st.st_mode))
		return mkdirat(c->upper_fd, rel, st.st_mode & 07777) == 0 || errno == EEXIST ? 0 : -errno;
	if (!S_ISREG(st.st_mode))
		return -EPERM; /* devices, FIFOs, sockets are not staged */
	int out = sl_cw_open_beneath(c->upper_fd, rel, O_WRONLY | O_CREAT | O_EXCL, st.st_mode & 07777);
	if (out < 0)
		return out;
	int in = sl_cw_open_beneath(c->lower_fd, rel, O_RDONLY | O_NOFOLLOW, 0);
	e = empty_only ? 0 : in < 0 ? in : sl_cw_copy_data(in, out);
	if (in >= 0) {
		sl_cw_copy_user_xattrs(in, out);
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
	return sl_cw_open_beneath(c->upper_fd, rel, flags, 0);
}

int sl_cow_open_lower(struct sl_cow *c, const char *rel, int flags)
{
	return sl_cw_open_beneath(c->lower_fd, rel, flags, 0);
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
			return sl_cw_open_beneath(c->lower_fd, rel, flags, 0);
		return sl_cw_open_beneath(c->upper_fd, rel, flags, 0);
	}
	if ((flags & O_TMPFILE) == O_TMPFILE)
		return -EOPNOTSUPP; /* callers fall back to a named temporary file */
	if (w != SL_COW_NONE) {
		if ((flags & O_CREAT) && (flags & O_EXCL))
			return -EEXIST;
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		if (w == SL_COW_LOWER && (e = sl_cw_copy_up(c, rel, (flags & O_TRUNC) != 0)))
			return e;
	} else {
		if (e != ENOENT || !(flags & O_CREAT))
			return -e;
		if ((e = sl_cw_parent_ok(c, rel)) || (e = sl_cw_remember(c, rel)) || (e = sl_cw_upper_parents(c, rel)))
			return e;
		if (sl_cw_over_quota(c, SL_COW_INODE_BYTES))
			return -ENOSPC;
		sl_cw_unwhite(c, rel);
	}
	return sl_cw_open_beneath(c->upper_fd, rel, flags, mode);
}

int sl_cw_make_upper(struct sl_cow *c, const char *rel, struct stat *st)
{
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(c, rel, false, st, &e);
	if (w == SL_COW_NONE)
		return -e;
	return w == SL_COW_LOWER ? sl_cw_copy_up(c, rel, false) : 0;
}

int sl_cow_copy_up_fd(struct sl_cow *c, const char *rel, bool follow)
{
	struct stat st;
	int e = sl_cw_make_upper(c, rel, &st);
	if (e)
		return e;
	return sl_cw_open_beneath(c->upper_fd, rel, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
}

/* ---------------- listings ---------------- */

void sl_cw_ents_free(struct ents *l)
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
	int fd = sl_cw_open_beneath(root, rel, O_RDONLY | O_DIRECTORY, 0);
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
		if (lower && !dot && sl_cw_hidden(c, child))
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

int sl_cw_merged_list(struct sl_cow *c, const char *rel, struct ents *l)
{
	memset(l, 0, sizeof(*l));
	int e = list_layer(c, c->upper_fd, rel, false, l);
	if (!e && !sl_cw_hidden(c, rel))
		e = list_layer(c, c->lower_fd, rel, true, l);
	if (e)
		sl_cw_ents_free(l);
	return e;
}

int sl_cow_chmod_root(struct sl_cow *c, mode_t mode)
{
	int e = sl_cw_remember(c, "");
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
	if (sl_cw_merged_list(c, rel, &l))
		return 1; /* unknown: what btrfs says, and find(1) then looks */
	nlink_t n = 2;
	for (size_t i = 0; i < l.n && n > 1; i++)
		if (l.v[i].type == DT_UNKNOWN)
			n = 1;
		else if (l.v[i].type == DT_DIR && strcmp(l.v[i].name, ".") && strcmp(l.v[i].name, ".."))
			n++;
	sl_cw_ents_free(&l);
	return n;
}

long sl_cow_getdents(struct sl_cow *c, const char *rel, uint64_t *pos, char *buf, size_t cap)
{
	struct ents l;
	int e = sl_cw_merged_list(c, rel, &l);
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
	sl_cw_ents_free(&l);
	if (too_small)
		return -EINVAL;
	*pos = i;
	return (long)off;
}
