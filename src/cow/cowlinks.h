/*
 * cowlinks.h — the real workdir's hard links, for the COW layer (cow.c).
 *
 * A real file with several names is one inode: a write through one name
 * shows through the others.  The layer copies a file up name by name, so
 * on the first copy-up of such a file it links the other names to the
 * copy (cow.c, link_real_siblings), and for that it needs to know them:
 * this index of every regular file under workdir with more than one
 * link, built once per run, the first time it is asked.
 */
#ifndef SANDLOCK_COWLINKS_H
#define SANDLOCK_COWLINKS_H

#include <stddef.h>
#include <sys/types.h>

struct sl_cowlinks;

/* Walk the tree below the directory fd root (not following symlinks,
 * staying on root's filesystem, at most SL_COWLINKS_MAX entries looked
 * at).  NULL when out of memory. */
struct sl_cowlinks *sl_cowlinks_build(int root);
void sl_cowlinks_free(struct sl_cowlinks *l);

/* The i-th name (a path relative to root) of the inode dev/ino, or NULL
 * past the last one. */
const char *sl_cowlinks_name(const struct sl_cowlinks *l, dev_t dev, ino_t ino, size_t i);

#define SL_COWLINKS_MAX 1000000

#endif /* SANDLOCK_COWLINKS_H */
