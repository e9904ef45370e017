/*
 * tmpdir.h — private directories made for a sandbox: where they go (the
 * COW storage and the per-run private /tmp share the candidates), the
 * private /tmp of a run (tmp=True, --tmp), and their removal.
 */
#ifndef SANDLOCK_TMPDIR_H
#define SANDLOCK_TMPDIR_H

#include <stdbool.h>
#include <stddef.h>

/* The i-th place a private directory may be made: $TMPDIR (or /tmp),
 * /var/tmp, /dev/shm; NULL past the last. */
const char *sl_tmp_candidate(size_t i);
/* Whether programs can run from dir (not mounted noexec): staged and
 * freshly built programs run from these directories. */
bool sl_dir_exec_allowed(const char *dir);
/*
 * A new empty 0700 directory "sandlock-tmp-XXXXXX" for a sandbox, in the
 * first candidate where programs may be executed (a configure script runs
 * what it compiled there), else the first where one can be made.  Heap
 * canonical path, or NULL with *err, *msg set.
 */
char *sl_private_tmp_make(int *err, char **msg);
/* A new empty 0700 directory "run-XXXXXX" in root, for one run. */
char *sl_private_tmp_run(const char *root, int *err, char **msg);
/* rm -rf dir (what a guest left there: symlinks are not followed,
 * directories it made unreadable are opened up first), then free it. */
void sl_private_tmp_remove(char *dir);
/* rm -rf of the entries of the directory dirfd (any fd of it, O_PATH too). */
void sl_remove_tree(int dirfd);

#endif /* SANDLOCK_TMPDIR_H */
