/*
 * dirsort.c — sorted directory listings (see dirsort.h).
 *
 * WHY the index in the offset: the caller's file offset is shared with
 * our duplicate, survives between calls without any table of ours, and
 * is what lseek/telldir report, so every way of resuming a listing
 * resumes ours.  Directory offsets of any filesystem accept small values
 * (lseek on a directory only checks the range).
 */
#include "opener/dirsort.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH (64u * 1024)
#define MAX_ENTRIES (4u << 20) /* a larger directory is refused (ENOMEM) */

struct ent {
	uint64_t ino;
	unsigned char type;
	char *name;
};

struct sl_dirsort {
	/* the last sorted listing, and whose it is */
	struct ent *v;
	size_t n;
	pid_t tgid;
	int callerfd;
	dev_t dev;
	ino_t ino;
	uint64_t next; /* the index it was left at */
};

struct sl_dirsort *sl_dirsort_new(void)
{
	return calloc(1, sizeof(struct sl_dirsort));
}

static void drop(struct sl_dirsort *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].name);
	free(d->v);
	d->v = NULL;
	d->n = 0;
	d->tgid = 0;
}

void sl_dirsort_free(struct sl_dirsort *d)
{
	if (!d)
		return;
	drop(d);
	free(d);
}

/* The order of the listing: "." then ".." then strcmp. */
static int dirsort_cmp(const char *a, const char *b)
{
	int ra = strcmp(a, ".") == 0 ? 0 : strcmp(a, "..") == 0 ? 1 : 2;
	int rb = strcmp(b, ".") == 0 ? 0 : strcmp(b, "..") == 0 ? 1 : 2;
	return ra != rb ? ra - rb : strcmp(a, b);
}

static int ent_cmp(const void *x, const void *y)
{
	return dirsort_cmp(((const struct ent *)x)->name, ((const struct ent *)y)->name);
}

/* Read the whole directory from offset 0 into d (sorted).  0 or -errno. */
static long collect(struct sl_dirsort *d, int fd, sl_dents_fn produce, void *ud)
{
	drop(d);
	if (lseek(fd, 0, SEEK_SET) < 0)
		return -errno;
	char *buf = malloc(BATCH);
	size_t cap = 0;
	long r = buf ? 1 : -ENOMEM;
	while (r > 0) {
		r = produce(ud, fd, buf, BATCH);
		for (long off = 0; r > 0 && off + 19 < r;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			if (reclen < 20 || off + reclen > r)
				break; /* malformed: the rest of this batch is dropped */
			if (d->n == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct ent *nv = nc <= MAX_ENTRIES ? realloc(d->v, nc * sizeof(*nv)) : NULL;
				if (!nv) {
					r = -ENOMEM;
					break;
				}
				d->v = nv;
				cap = nc;
			}
			struct ent *e = &d->v[d->n];
			memcpy(&e->ino, buf + off, 8);
			e->type = (unsigned char)buf[off + 18];
			e->name = strndup(buf + off + 19, reclen - 19u);
			if (!e->name) {
				r = -ENOMEM;
				break;
			}
			d->n++;
			off += reclen;
		}
	}
	free(buf);
	if (r < 0) {
		drop(d);
		return r;
	}
	if (d->n)
		qsort(d->v, d->n, sizeof(*d->v), ent_cmp);
	return 0;
}

/* Entries from index *i that fit in out[0..cap), in the caller's format. */
static size_t serve(const struct sl_dirsort *d, uint64_t *i, bool is64, char *out, size_t cap)
{
	size_t off = 0;
	for (; *i < d->n; (*i)++) {
		const struct ent *e = &d->v[*i];
		size_t nlen = strlen(e->name);
		/* getdents64: ino off reclen type name; getdents: ino off
		 * reclen name NUL ... type (the record's last byte). */
		size_t reclen = is64 ? (19 + nlen + 1 + 7) & ~(size_t)7
		                     : (18 + nlen + 2 + 7) & ~(size_t)7;
		if (off + reclen > cap)
			break;
		char *p = out + off;
		memset(p, 0, reclen);
		uint64_t next = *i + 1;
		unsigned short rl = (unsigned short)reclen;
		memcpy(p, &e->ino, 8);
		memcpy(p + 8, &next, 8);
		memcpy(p + 16, &rl, 2);
		if (is64) {
			p[18] = (char)e->type;
			memcpy(p + 19, e->name, nlen);
		} else {
			memcpy(p + 18, e->name, nlen);
			p[reclen - 1] = (char)e->type;
		}
		off += reclen;
	}
	return off;
}

long sl_dirsort_getdents(struct sl_dirsort *d, pid_t tgid, int callerfd, int fd, bool is64,
                         sl_dents_fn produce, void *ud, char *out, size_t cap)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return produce(ud, fd, out, cap); /* the kernel's answer (ENOTDIR) */
	off_t at = lseek(fd, 0, SEEK_CUR);
	if (at < 0)
		return -errno;
	uint64_t i = (uint64_t)at;
	bool same = d->tgid == tgid && d->callerfd == callerfd && d->dev == st.st_dev &&
	            d->ino == st.st_ino && d->next == i && i > 0;
	if (!same) {
		long r = collect(d, fd, produce, ud);
		if (r < 0)
			return r;
		d->tgid = tgid;
		d->callerfd = callerfd;
		d->dev = st.st_dev;
		d->ino = st.st_ino;
	}
	size_t got = serve(d, &i, is64, out, cap);
	if (got == 0 && i < d->n)
		return -EINVAL;
	if (lseek(fd, (off_t)i, SEEK_SET) < 0)
		return -errno;
	d->next = i;
	return (long)got;
}
