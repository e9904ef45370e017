/*
 * cowstore.c — owned directories of the COW staging storage, and the
 * sweep of those whose owner died.
 *
 * WHY: a caller SIGKILLed mid-run cannot remove what it staged: the
 * default storage ($TMPDIR/sandlock-cow-*) and the run's upper layer
 * (STORAGE/upper-*, also in a user's --fs-storage) stayed on disk for
 * ever, and nothing could tell such an orphan from a live layer of
 * another run or process.
 *
 * Each directory NAME has a lock file, flock()ed and held for the
 * directory's life (the fd stays open; flock locks belong to the open
 * file, so a fork of the owner holds it too: it errs on the side of
 * "live").  The kernel drops the lock when its last holder dies, however
 * it dies.  A sweep takes the lock with LOCK_NB: if it gets it, the
 * owner is gone and NAME is removed (an upper layer with NAME.trash,
 * cow.c's deleted files); a held lock means a live directory, never
 * touched.  Where the lock file lives:
 *  - SL_STORE_BESIDE: NAME.lock next to NAME, made (O_EXCL) and locked
 *    before NAME exists; for upper layers, in a storage directory the
 *    sandbox cannot reach (an upper layer's own entries are the staged
 *    tree, so no lock file can go inside);
 *  - SL_STORE_INSIDE: NAME/.owner.lock, for the default storage itself,
 *    whose parent ($TMPDIR) the sandbox may be able to write: a lock file
 *    there could be swapped for a free one, making the next sweep remove
 *    a live storage; inside NAME (denied to the sandbox) it cannot.
 * A lock file is made under a name no sweep looks at (NAME.lock.new,
 * NAME/.owner.lock.new), locked, and only then linked to its real name:
 * a sweep never sees a lock file that is not held yet (it would take it
 * and remove a directory being made: two runs starting together did).
 * A directory without its lock file is either kept on purpose (on_exit
 * "keep": the owner removes only the lock), from an older version, or
 * (INSIDE) its owner died between mkdir and the lock's creation: not ours
 * to judge, left alone.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cow/cowstore.h"
#include "launch/tmpdir.h"
#include "util.h"

#define LOCK_SUFFIX ".lock"
#define OWNER_LOCK ".owner.lock"
#define NEW_SUFFIX ".new" /* a lock file before it is locked: no sweep looks at it */

/* Remove dir/name (a directory tree, never through a symlink). */
static void remove_dir(int dir, const char *name)
{
	int fd = openat(dir, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	sl_remove_tree(fd);
	close(fd);
	(void)unlinkat(dir, name, AT_REMOVEDIR);
}

/*
 * The lock file tmp (just made, O_EXCL: its fd) locked, then given its
 * real name without replacing anything.  A sweep looks only at real names,
 * so it never meets a lock file that is not locked yet: had it met one
 * between the creation and the flock, it would have taken the lock, found
 * the owner "gone" and removed a directory being made.  fd (locked) or
 * -errno; tmp is removed either way.
 */
static int lock_into_place(int dir, const char *tmp, const char *name, int fd)
{
	int e = 0;
	if (flock(fd, LOCK_EX | LOCK_NB) < 0 || linkat(dir, tmp, dir, name, 0) < 0)
		e = -errno;
	(void)unlinkat(dir, tmp, 0);
	if (e) {
		close(fd);
		return e;
	}
	return sl_fd_high(fd);
}

/* BESIDE: NAME.lock first, locked, then NAME. */
static int make_beside(const char *dir, const char *prefix, char *out, size_t cap)
{
	char tmp[4096], lock[4096];
	if (snprintf(tmp, sizeof tmp, "%s/%sXXXXXX" LOCK_SUFFIX NEW_SUFFIX, dir, prefix) >=
	    (int)sizeof tmp)
		return -ENAMETOOLONG;
	int fd = mkostemps(tmp, (int)strlen(LOCK_SUFFIX NEW_SUFFIX), O_CLOEXEC);
	if (fd < 0)
		return -errno;
	size_t len = strlen(tmp) - strlen(NEW_SUFFIX);
	memcpy(lock, tmp, len);
	lock[len] = '\0';
	fd = lock_into_place(AT_FDCWD, tmp, lock, fd);
	if (fd < 0)
		return fd; /* EEXIST: sl_store_make tries another name */
	len -= strlen(LOCK_SUFFIX);
	int e = len < cap ? 0 : -ENAMETOOLONG;
	if (!e) {
		memcpy(out, lock, len);
		out[len] = '\0';
		if (mkdir(out, 0700) < 0)
			e = -errno;
	}
	if (e) {
		unlink(lock);
		close(fd);
	}
	return e ? e : fd;
}

/* INSIDE: NAME first (mkdtemp), then NAME/.owner.lock. */
static int make_inside(const char *dir, const char *prefix, char *out, size_t cap)
{
	if (snprintf(out, cap, "%s/%sXXXXXX", dir, prefix) >= (int)cap)
		return -ENAMETOOLONG;
	if (!mkdtemp(out))
		return -errno;
	int d = open(out, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int fd = d < 0 ? -errno
	               : openat(d, OWNER_LOCK NEW_SUFFIX,
	                        O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (d >= 0 && fd < 0)
		fd = -errno;
	if (fd >= 0)
		fd = lock_into_place(d, OWNER_LOCK NEW_SUFFIX, OWNER_LOCK, fd);
	if (d >= 0)
		close(d);
	if (fd < 0)
		rmdir(out);
	return fd;
}

int sl_store_make(const char *dir, const char *prefix, enum sl_store_lock where, char *out,
                  size_t cap)
{
	int r = -EEXIST;
	for (int attempt = 0; attempt < 8 && r == -EEXIST; attempt++)
		r = where == SL_STORE_INSIDE ? make_inside(dir, prefix, out, cap)
		                             : make_beside(dir, prefix, out, cap);
	return r;
}

void sl_store_release(int lockfd, const char *path, enum sl_store_lock where)
{
	if (lockfd < 0)
		return;
	char lock[4096];
	int w = where == SL_STORE_INSIDE ? snprintf(lock, sizeof lock, "%s/" OWNER_LOCK, path)
	                                 : snprintf(lock, sizeof lock, "%s" LOCK_SUFFIX, path);
	if (path && w < (int)sizeof lock)
		(void)unlink(lock); /* before the close: a sweep never finds it free */
	close(lockfd);
}

/* The lock file name (at dirfd at) is free and still the one we locked:
 * its owner is gone.  *fd: the locked fd, to close after the removal. */
static bool orphaned(int at, const char *name, int *fd)
{
	*fd = openat(at, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (*fd < 0)
		return false;
	struct stat held, now;
	/* A sweep that opened the file before another removed it finds it
	 * unlinked (or replaced) and does nothing. */
	return flock(*fd, LOCK_EX | LOCK_NB) == 0 && fstat(*fd, &held) == 0 &&
	       fstatat(at, name, &now, AT_SYMLINK_NOFOLLOW) == 0 && held.st_ino == now.st_ino &&
	       held.st_dev == now.st_dev && S_ISREG(now.st_mode);
}

/* BESIDE: entry is NAME.lock. */
static void sweep_beside(int dir, const char *entry)
{
	size_t len = strlen(entry) - strlen(LOCK_SUFFIX);
	char name[NAME_MAX + 1], trash[NAME_MAX + 8];
	memcpy(name, entry, len);
	name[len] = '\0';
	snprintf(trash, sizeof trash, "%s.trash", name);
	int fd;
	if (orphaned(dir, entry, &fd)) {
		remove_dir(dir, name);
		remove_dir(dir, trash);
		(void)unlinkat(dir, entry, 0);
	}
	if (fd >= 0)
		close(fd);
}

/* INSIDE: entry is NAME, its lock NAME/.owner.lock. */
static void sweep_inside(int dir, const char *entry)
{
	int sub = openat(dir, entry, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return;
	int fd;
	if (orphaned(sub, OWNER_LOCK, &fd)) {
		sl_remove_tree(sub);
		(void)unlinkat(dir, entry, AT_REMOVEDIR);
	}
	if (fd >= 0)
		close(fd);
	close(sub);
}

void sl_store_sweep(const char *dir, const char *prefix, enum sl_store_lock where)
{
	DIR *d = sl_fdopendir(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	if (!d)
		return;
	size_t plen = strlen(prefix), slen = strlen(LOCK_SUFFIX);
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len <= plen || strncmp(de->d_name, prefix, plen) != 0)
			continue;
		bool lock = len > slen && strcmp(de->d_name + len - slen, LOCK_SUFFIX) == 0;
		if (where == SL_STORE_BESIDE && lock)
			sweep_beside(dirfd(d), de->d_name);
		else if (where == SL_STORE_INSIDE && !lock && de->d_type == DT_DIR)
			sweep_inside(dirfd(d), de->d_name);
	}
	closedir(d);
}
