/*
 * cowjournal.c — the commit's lock and journal.
 *
 * WHY a lock: a commit checks that each real file is still what the run
 * first saw ("moved on?"), then renames the staged copy over it.  Two
 * sandboxes committing into one directory interleaved those two steps
 * and both overwrote a file and both reported it committed (a silent
 * lost update).  A commit holds flock() on the workdir itself for its
 * whole check-and-rename pass, so sandlock's commits into one directory
 * run one after the other and the second sees the first's files as
 * moved on: a conflict, always reported.  (flock on the directory needs
 * no file in or near the user's tree.  A guest that can open the real
 * directory could hold it: commits then wait SL_COMMIT_LOCK_WAIT_MS and
 * fail, keeping the staged layer; nothing is overwritten.)
 *
 * WHY a journal: a commit writes every file as a temporary next to its
 * target (SL_COMMIT_PREFIX...), syncs, and renames: each name is fully
 * old or fully new, but a commit killed half-way left up to thousands of
 * temporaries in the user's directories.  Before a temporary is made its
 * path is appended to SL_COMMIT_JOURNAL in the workdir (a write(2) is in
 * the page cache before the temporary exists: a killed process cannot
 * lose it).  The next commit into the directory, or the next run on it,
 * removes what the journal lists, then the journal.  Renamed names stay
 * new, the rest stay old.  Only names starting with SL_COMMIT_PREFIX are
 * removed, each reached beneath the workdir without following symlinks,
 * so a journal written by someone else can remove nothing else.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cow/cowjournal.h"
#include "util.h"

/* How long a commit waits for another commit into the same directory. */
#define SL_COMMIT_LOCK_WAIT_MS 60000
/* A journal larger than this is not read (nothing we wrote is). */
#define SL_COMMIT_JOURNAL_MAX (64u << 20)

static int beneath(int root, const char *rel, int flags)
{
	struct open_how how = { 0 };
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	/* The journal is a file of the user's, in their DIR: theirs to read
	 * (openat2 refuses a mode without O_CREAT). */
	how.mode = (flags & O_CREAT) ? 0600 : 0;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
	long fd = syscall(__NR_openat2, root, rel[0] ? rel : ".", &how, sizeof how);
	return fd < 0 ? -errno : (int)fd;
}

/* Remove one journal entry "parent/name" if its name is a temporary's. */
static void remove_entry(int root, char *line)
{
	char *slash = strrchr(line, '/');
	const char *name = slash ? slash + 1 : line;
	if (strncmp(name, SL_COMMIT_PREFIX, strlen(SL_COMMIT_PREFIX)) != 0 || strchr(name, '\n'))
		return;
	if (slash)
		*slash = '\0';
	int dir = beneath(root, slash ? line : "", O_PATH | O_DIRECTORY);
	if (dir >= 0) {
		(void)unlinkat(dir, name, 0);
		close(dir);
	}
}

/* The lock is ours: remove what a killed commit's journal lists. */
static void clean(int root)
{
	int fd = beneath(root, SL_COMMIT_JOURNAL, O_RDONLY | O_NOFOLLOW);
	if (fd < 0)
		return;
	size_t cap = 0, len = 0;
	char *buf = NULL;
	for (;;) {
		if (len + 4096 + 1 > cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb = ncap <= SL_COMMIT_JOURNAL_MAX ? realloc(buf, ncap) : NULL;
			if (!nb)
				break;
			buf = nb;
			cap = ncap;
		}
		ssize_t r = read(fd, buf + len, cap - len - 1);
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (buf) {
		buf[len] = '\0';
		for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l;
		     l = strtok_r(NULL, "\n", &save))
			remove_entry(root, l);
		free(buf);
	}
	(void)unlinkat(root, SL_COMMIT_JOURNAL, 0);
}

/* The workdir as a real fd (root may be O_PATH: flock needs more). */
static int open_dir(int root)
{
	return beneath(root, "", O_RDONLY | O_DIRECTORY);
}

int sl_commit_begin(int root, struct sl_commit_log *log)
{
	log->journal = -1;
	log->dir = open_dir(root);
	if (log->dir < 0)
		return log->dir;
	int waited = 0;
	while (flock(log->dir, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK || waited >= SL_COMMIT_LOCK_WAIT_MS) {
			int e = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(log->dir);
			log->dir = -1;
			return e;
		}
		struct timespec ts = { 0, 5 * 1000000L };
		nanosleep(&ts, NULL);
		waited += 5;
	}
	clean(log->dir);
	log->journal = beneath(log->dir, SL_COMMIT_JOURNAL,
	                       O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW);
	if (log->journal < 0) {
		int e = log->journal;
		sl_commit_end(log);
		return e;
	}
	return 0;
}

int sl_commit_note(struct sl_commit_log *log, const char *parent, const char *name)
{
	char line[PATH_MAX + 64];
	int n = snprintf(line, sizeof line, "%s%s%s\n", parent, parent[0] ? "/" : "", name);
	if (n < 0 || n >= (int)sizeof line || strchr(parent, '\n'))
		return -ENAMETOOLONG; /* a name with a newline is never journaled */
	return write(log->journal, line, (size_t)n) == n ? 0 : -EIO;
}

void sl_commit_end(struct sl_commit_log *log)
{
	if (log->journal >= 0) {
		(void)unlinkat(log->dir, SL_COMMIT_JOURNAL, 0);
		close(log->journal);
		log->journal = -1;
	}
	if (log->dir >= 0) {
		close(log->dir); /* drops the lock */
		log->dir = -1;
	}
}

void sl_commit_recover(int root)
{
	struct stat st;
	if (fstatat(root, SL_COMMIT_JOURNAL, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return; /* the common case: one stat */
	int dir = open_dir(root);
	if (dir < 0)
		return;
	if (flock(dir, LOCK_EX | LOCK_NB) == 0)
		clean(dir);
	close(dir);
}
