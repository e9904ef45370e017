/*
 * cowstore.h — directories of the COW staging storage that carry their
 * owner (a lock file held for their life), and the sweep that removes
 * those whose owner died (cowstore.c says why and how).
 */
#ifndef SANDLOCK_COWSTORE_H
#define SANDLOCK_COWSTORE_H

#include <stddef.h>

/* Where a directory's lock file is (cowstore.c says why each). */
enum sl_store_lock { SL_STORE_BESIDE, SL_STORE_INSIDE };

/* A new directory dir/PREFIXxxxxxx (mode 0700, its path in out) with its
 * lock file, locked: the lock fd (keep it open while the directory is in
 * use), or -errno. */
int sl_store_make(const char *dir, const char *prefix, enum sl_store_lock where, char *out,
                  size_t cap);
/* The directory at path is done with: its lock file is removed, then
 * lockfd closed (-1 is ignored).  Call it before removing an INSIDE
 * directory, after removing a BESIDE one (or to keep it on purpose). */
void sl_store_release(int lockfd, const char *path, enum sl_store_lock where);
/* Remove the PREFIX* directories of dir whose owner is gone. */
void sl_store_sweep(const char *dir, const char *prefix, enum sl_store_lock where);

#endif /* SANDLOCK_COWSTORE_H */
