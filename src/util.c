/*
 * util.c — small helpers shared by every mechanism: error reporting,
 * string duplication, growable string vectors and byte buffers.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "util.h"

/* vasprintf wrapper that returns NULL instead of leaving garbage on OOM. */
static char *sl_vasprintf(const char *fmt, va_list ap)
{
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		return NULL;
	return s;
}

int sl_fail(int *err, char **msg, int code, const char *fmt, ...)
{
	if (err)
		*err = code;
	if (msg) {
		va_list ap;
		va_start(ap, fmt);
		*msg = sl_vasprintf(fmt, ap);
		va_end(ap);
	}
	return -1;
}

int sl_opts_copy(void *dst, size_t dst_size, size_t min_size, const void *src, size_t src_size,
                 const char *what, int *err, char **msg)
{
	if (src_size < min_size)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "%s.size is %zu, at least %zu expected",
		               what, src_size, min_size);
	for (size_t i = dst_size; i < src_size; i++)
		if (((const unsigned char *)src)[i])
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
			               "%s sets fields this library (%s) does not know", what,
			               SANDLOCK_VERSION);
	memset(dst, 0, dst_size);
	memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
	return 0;
}

char *sl_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

char *sl_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = sl_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

void sl_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("sandlock: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* Keep v NULL-terminated at all times so it can be handed to execve. */
int sl_strvec_push(sl_strvec *sv, const char *s)
{
	if (sv->n + 2 > sv->cap) {
		size_t cap = sv->cap ? sv->cap * 2 : 8;
		char **v = realloc(sv->v, cap * sizeof(*v));
		if (!v)
			return -1;
		sv->v = v;
		sv->cap = cap;
	}
	char *c = strdup(s);
	if (!c)
		return -1;
	sv->v[sv->n++] = c;
	sv->v[sv->n] = NULL;
	return 0;
}

void sl_strvec_free(sl_strvec *sv)
{
	for (size_t i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

int sl_fd_high(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int e = errno;
	close(fd);
	errno = e;
	return high;
}

int sl_buf_append(sl_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		uint8_t *d = realloc(b->data, cap);
		if (!d)
			return -1;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = 0; /* always NUL-terminated for cheap string copies */
	return 0;
}

void sl_buf_free(sl_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

int64_t sl_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

ssize_t sl_read_small_at(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || cap == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return n;
}

bool sl_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);
	while (n > 1 && root[n - 1] == '/')
		n--;
	if (n == 1 && root[0] == '/')
		return path[0] == '/';
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void sl_path_normalize(char *p)
{
	char *out = p, *in = p;
	while (*in) {
		while (*in == '/')
			in++;
		char *seg = in;
		while (*in && *in != '/')
			in++;
		size_t n = (size_t)(in - seg);
		if (n == 0 || (n == 1 && seg[0] == '.'))
			continue;
		if (n == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > p && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, n);
		out += n;
	}
	if (out == p)
		*out++ = '/';
	*out = '\0';
}

DIR *sl_fdopendir(int fd)
{
	if (fd < 0)
		return NULL;
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return d;
}

bool sl_fd_path(int fd, char *out, size_t cap)
{
	char link[64];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = fd >= 0 ? readlink(link, out, cap - 1) : -1;
	if (n <= 0 || out[0] != '/')
		return false;
	out[n] = '\0';
	return true;
}
