/*
 * served.h — serving a file in place of one the opener opened (the
 * builtins' serve hooks, builtin.h): a sealed memfd, so the guest reads
 * what we serve and can never change it.
 */
#ifndef SANDLOCK_SERVED_H
#define SANDLOCK_SERVED_H

#include <stdbool.h>
#include <sys/types.h>

#include "util.h"

/* Replace *fd (closed) by a sealed memfd named name holding text.  0 or
 * an errno (*fd untouched). */
int sl_serve_text(const char *name, const char *text, int *fd);
/* The whole of fd from its offset (at most 64 MiB) appended to b.  0 or
 * an errno. */
int sl_serve_read(int fd, sl_buf *b);

/* A file known by identity (device and inode), not by spelling: any
 * path, dirfd or link that reaches it counts. */
struct sl_file_id {
	dev_t dev;
	ino_t ino;
};
/* The identity of path now: 0, or -1 with errno. */
int sl_file_id_of(const char *path, struct sl_file_id *id);
/* Is our fd the file id? */
bool sl_file_id_is(const struct sl_file_id *id, int fd);

#endif /* SANDLOCK_SERVED_H */
