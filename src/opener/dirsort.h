/*
 * dirsort.h — deterministic_dirs: a directory's entries served sorted.
 *
 * A listing is produced whole (by whoever lists the directory: the kernel,
 * the /proc filter, ...), sorted by name (byte order, "." and ".." first)
 * and served from an index kept in the caller's file offset: each entry's
 * d_off is its index + 1, so telldir/seekdir/rewinddir keep working and a
 * directory larger than the caller's buffer comes out complete over
 * several calls.  The last sorted listing is kept (for the same thread,
 * fd, directory and index) so a sequential read sorts once.
 */
#ifndef SANDLOCK_DIRSORT_H
#define SANDLOCK_DIRSORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct sl_dirsort;

/* One batch of linux_dirent64 records of the directory fd (from its
 * current offset) into buf: the byte count, 0 at the end, or -errno. */
typedef long (*sl_dents_fn)(void *ud, int fd, char *buf, size_t cap);

struct sl_dirsort *sl_dirsort_new(void); /* NULL on OOM */
void sl_dirsort_free(struct sl_dirsort *d);
/*
 * getdents64 (is64) or getdents for the caller (its tid, its fd number) on
 * our duplicate fd of its directory (sharing its offset): the entries
 * produce() lists, sorted, from the index in the offset, written into
 * out[0..cap).  The byte count, or -errno (-EINVAL: out too small for
 * the next entry, as the kernel).
 */
long sl_dirsort_getdents(struct sl_dirsort *d, pid_t tgid, int callerfd, int fd, bool is64,
                         sl_dents_fn produce, void *ud, char *out, size_t cap);

#endif /* SANDLOCK_DIRSORT_H */
