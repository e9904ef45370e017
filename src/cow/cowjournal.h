/*
 * cowjournal.h — a commit into the real workdir as one unit against
 * other commits (a lock on the directory) and against being killed
 * half-way (a journal of its temporaries); cowjournal.c says why.
 */
#ifndef SANDLOCK_COWJOURNAL_H
#define SANDLOCK_COWJOURNAL_H

/* The name of the journal in the workdir, and the prefix every commit
 * temporary's name starts with (the journal's own included). */
#define SL_COMMIT_PREFIX ".sandlock-commit-"
#define SL_COMMIT_JOURNAL SL_COMMIT_PREFIX "journal"

struct sl_commit_log {
	int dir;     /* the workdir, opened for flock(); -1 = not begun */
	int journal; /* the journal, appended to; -1 = none */
};

/* Lock the workdir (root: an fd of it) against other commits, waiting at
 * most SL_COMMIT_LOCK_WAIT_MS, clean what a killed commit left, and start
 * a journal.  0 or -errno (-EBUSY: another commit held the lock). */
int sl_commit_begin(int root, struct sl_commit_log *log);
/* Record a temporary (its path relative to the workdir) before it is
 * made.  0 or -errno (then the temporary must not be made). */
int sl_commit_note(struct sl_commit_log *log, const char *parent, const char *name);
/* Every temporary is renamed or removed: drop the journal, unlock. */
void sl_commit_end(struct sl_commit_log *log);
/* A run starting on the workdir: clean what a killed commit left, unless
 * a commit is in progress (its lock held). */
void sl_commit_recover(int root);

#endif /* SANDLOCK_COWJOURNAL_H */
