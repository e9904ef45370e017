/*
 * cowops.c — the layer's write side: unlink, rmdir, mkdir, rename (with
 * NOREPLACE and EXCHANGE, whole trees copied up or whited out, the real
 * directories a rename moved tracked for cwds and dirfds in them), link,
 * symlink and mknod, each staged in the upper layer and never on the real
 * tree.  Split from cow.c along its sections.
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
		if ((e = sl_cw_merged_list(c, rel, &l)))
			return e;
		bool empty = l.n <= 2;
		sl_cw_ents_free(&l);
		if (!empty)
			return -ENOTEMPTY;
	}
	if ((e = sl_cw_remember(c, rel)))
		return e;
	if (w == SL_COW_UPPER && !dir && (e = sl_cw_discard_upper(c, rel)))
		return e;
	if (w == SL_COW_UPPER && unlinkat(c->upper_fd, rel, dir ? AT_REMOVEDIR : 0) < 0 &&
	    errno != ENOENT)
		return -errno;
	sl_cw_notes_drop(c, rel);
	struct stat lst;
	if (sl_cw_lower_visible(c, rel, &lst))
		return sl_cw_whiteout(c, rel);
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
	if ((e = sl_cw_parent_ok(c, rel)) || (e = sl_cw_remember(c, rel)) || (e = sl_cw_upper_parents(c, rel)))
		return e;
	if (sl_cw_over_quota(c, SL_COW_INODE_BYTES))
		return -ENOSPC;
	if (mkdirat(c->upper_fd, rel, mode) < 0)
		return -errno;
	sl_cw_unwhite(c, rel); /* its old children keep their own whiteouts */
	return 0;
}

/* Prepare to: the merged parent must exist, the upper one is made; the
 * new name (and the whiteout a rename may leave) is charged. */
static int prepare_target(struct sl_cow *c, const char *to)
{
	int e;
	if ((e = sl_cw_parent_ok(c, to)) || (e = sl_cw_remember(c, to)) || (e = sl_cw_upper_parents(c, to)))
		return e;
	return sl_cw_over_quota(c, SL_COW_INODE_BYTES) ? -ENOSPC : 0;
}

/* Make the whole merged tree at rel upper (real entries copied up). */
static int copy_up_tree(struct sl_cow *c, const char *rel)
{
	struct stat st;
	int e = sl_cw_make_upper(c, rel, &st);
	if (e || !S_ISDIR(st.st_mode))
		return e;
	struct ents l;
	if ((e = sl_cw_merged_list(c, rel, &l)))
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
	sl_cw_ents_free(&l);
	return e;
}

/* Hide every real name at and under rel, each by its own whiteout, so
 * that recreating rel later does not bring its old children back. */
static int whiteout_tree(struct sl_cow *c, const char *rel)
{
	struct stat st;
	if (!sl_cw_lower_visible(c, rel, &st))
		return 0;
	int e = 0;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = sl_fdopendir(sl_cw_open_beneath(c->lower_fd, rel,
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
	return e ? e : sl_cw_whiteout(c, rel);
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
	return !sl_cw_hidden(c, v) && sl_cw_layer_stat(c->lower_fd, v, false, &st) == 0 && S_ISDIR(st.st_mode);
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
		 * under it are sl_cw_hidden (the names themselves stay). */
		if ((e = copy_up_tree(c, from)) || (e = copy_up_tree(c, to)))
			return e;
		if (renameat2(c->upper_fd, from, c->upper_fd, to, RENAME_EXCHANGE) < 0)
			return -errno;
		if (dirs && (e = track_move(c, from, to, true)))
			return e;
		if ((e = sl_cw_notes_move(c, from, to, true)))
			return e;
		if (dirs && ((e = whiteout_tree(c, from)) || (e = whiteout_tree(c, to))))
			return e;
		sl_cw_unwhite(c, from);
		sl_cw_unwhite(c, to);
		return 0;
	}
	if (S_ISDIR(sf.st_mode)) {
		if (sl_path_under(to, from))
			return -EINVAL;
		if (wt != SL_COW_NONE) {
			if (!S_ISDIR(stt.st_mode))
				return -ENOTDIR;
			struct ents l;
			if ((e = sl_cw_merged_list(c, to, &l)))
				return e;
			bool empty = l.n <= 2;
			sl_cw_ents_free(&l);
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
	                        : (wf == SL_COW_LOWER && (e = sl_cw_copy_up(c, from, false))))
		return e;
	if (wt == SL_COW_UPPER && S_ISDIR(stt.st_mode) && unlinkat(c->upper_fd, to, AT_REMOVEDIR) < 0)
		return -errno;
	if (wt == SL_COW_UPPER && !S_ISDIR(stt.st_mode) && (e = sl_cw_discard_upper(c, to)))
		return e;
	if (renameat(c->upper_fd, from, c->upper_fd, to) < 0)
		return -errno;
	if (S_ISDIR(sf.st_mode) && (e = track_move(c, from, to, false)))
		return e;
	sl_cw_notes_drop(c, to);
	if ((e = sl_cw_notes_move(c, from, to, false)))
		return e;
	sl_cw_unwhite(c, to);
	if (S_ISDIR(sf.st_mode))
		return whiteout_tree(c, from);
	if (sl_cw_lower_visible(c, from, &lst))
		return sl_cw_whiteout(c, from);
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
	if ((e = prepare_target(c, to)) || (wf == SL_COW_LOWER && (e = sl_cw_copy_up(c, from, false))))
		return e;
	if (linkat(c->upper_fd, from, c->upper_fd, to, 0) < 0)
		return -errno;
	sl_cw_unwhite(c, to);
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
	sl_cw_unwhite(c, to);
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
	int fd = sl_cw_open_beneath(c->upper_fd, rel, O_WRONLY | O_CREAT | O_EXCL, mode & 07777);
	if (fd < 0)
		return fd;
	close(fd);
	sl_cw_unwhite(c, rel);
	return 0;
}

/*
 * A unix socket bound at rel: its file is made in the upper layer by the
 * bind itself (the caller binds in the returned directory), never in the
 * real tree, and never committed (cowcommit.c skips sockets).  A real
 * file the run deleted there stays whited out (the upper socket is found
 * first): its deletion is still a change.  As the kernel's bind, any
 * existing name, a dangling symlink included, is EADDRINUSE.
 */
int sl_cow_sock_dir(struct sl_cow *c, const char *rel, char *name, size_t cap)
{
	struct stat st;
	int e = 0;
	if (!rel[0] || sl_cow_lookup(c, rel, false, &st, &e) != SL_COW_NONE)
		return -EADDRINUSE;
	if (e != ENOENT)
		return -e;
	const char *slash = strrchr(rel, '/');
	const char *base = slash ? slash + 1 : rel;
	if (strlen(base) >= cap)
		return -ENAMETOOLONG;
	if ((e = prepare_target(c, rel)))
		return e;
	char parent[PATH_MAX];
	sl_cw_parent_of(rel, parent, sizeof parent);
	int fd = sl_cw_open_beneath(c->upper_fd, parent, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0);
	if (fd >= 0)
		memcpy(name, base, strlen(base) + 1);
	return fd;
}
