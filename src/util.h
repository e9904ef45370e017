/*
 * util.h — helpers every mechanism may use: error reporting, strings,
 * growable string vectors and byte buffers, the monotonic clock.
 * Depends on nothing else of libsandlock.
 */
#ifndef SANDLOCK_UTIL_H
#define SANDLOCK_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "compat.h"
#include "sandlock.h"

/* Marks the functions of the public ABI (everything else is hidden). */
#define SL_EXPORT __attribute__((visibility("default")))

/* Set *err = code and *msg = formatted heap string (each may be NULL). Returns -1. */
int sl_fail(int *err, char **msg, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * Copy a caller's versioned options struct of src_size bytes (its size
 * field) into dst (dst_size bytes), zero-filled.  The ABI only appends
 * fields: a caller built against an older, smaller struct (at least
 * min_size, the first version's) gets defaults for the fields it lacks;
 * one built against a newer, larger struct is accepted when every byte we
 * do not know is zero (a set field we would ignore is refused, never
 * dropped).  0, or -1 with *err, *msg naming what.
 */
int sl_opts_copy(void *dst, size_t dst_size, size_t min_size, const void *src, size_t src_size,
                 const char *what, int *err, char **msg);
char *sl_strdup(const char *s);              /* NULL on NULL or OOM */
char *sl_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in milliseconds: deadlines and timeouts. */
int64_t sl_now_ms(void);
void sl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* "sandlock: warning: ..." on stderr */

/*
 * fd moved above 2 (close-on-exec), or fd itself if it already is (or is
 * negative).  Every long-lived fd of the library goes through this: with
 * the caller's 0, 1 or 2 closed, the kernel hands out those numbers, and
 * the child's dup2 onto its stdio would clobber them (or they would leak
 * into the command as its stdio).  -1 (fd closed) if no fd is free above 2.
 */
int sl_fd_high(int fd);

/* The start of file name (relative to dirfd) in buf, NUL-terminated: at
 * most cap - 1 bytes, one read (enough for /proc and cgroup files, which
 * the kernel hands over whole).  The length, or -1 when it cannot be
 * opened or read, or is empty. */
ssize_t sl_read_small_at(int dirfd, const char *name, char *buf, size_t cap);

/* The path our fd names (its /proc/self/fd link) into out: false when it
 * cannot be read or is not an absolute path (a pipe, a socket). */
bool sl_fd_path(int fd, char *out, size_t cap);

/* fdopendir(fd) that owns fd: closed when the stream cannot be made.  An
 * fd < 0 (a failed open) gives NULL too, errno kept from that open. */
#include <dirent.h>
DIR *sl_fdopendir(int fd);

/* True if the canonical path is root or lies below it, compared
 * component-wise (/tmp/ab is not below /tmp/a). */
bool sl_path_under(const char *path, const char *root);
/* Collapse "//", "." and ".." of an absolute path in place, lexically
 * (".." of "/" is "/"). */
void sl_path_normalize(char *p);

typedef struct sl_strvec {
	char **v;
	size_t n, cap;
} sl_strvec;
int sl_strvec_push(sl_strvec *sv, const char *s); /* copies s; 0 or -1 (OOM) */
void sl_strvec_free(sl_strvec *sv);

/* Growable byte buffer (captured output). */
typedef struct sl_buf {
	uint8_t *data;
	size_t len, cap;
} sl_buf;
int sl_buf_append(sl_buf *b, const void *p, size_t n);
void sl_buf_free(sl_buf *b);

#endif /* SANDLOCK_UTIL_H */
