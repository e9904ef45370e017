/*
 * proxyio.h — one side of a proxied connection as a byte stream: a
 * socket, or TLS over it (OpenSSL), read and written with deadlines.
 * Every socket of the proxy is non-blocking; a call waits in poll(2)
 * until its deadline, so a client that sends one byte a minute
 * (slowloris) costs one sleeping thread, never a stuck one.
 */
#ifndef SANDLOCK_PROXYIO_H
#define SANDLOCK_PROXYIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct ssl_st SSL;

struct px_io {
	int fd;   /* -1 = closed */
	SSL *ssl; /* NULL = plain */
};

/* Read at most n bytes before deadline_ms (sl_now_ms clock): > 0 bytes, 0
 * at end of stream, -1 on error or timeout (errno ETIMEDOUT). */
ssize_t px_read(struct px_io *io, void *buf, size_t n, int64_t deadline_ms);
/* Write all n bytes before deadline_ms: 0, or -1. */
int px_write_all(struct px_io *io, const void *buf, size_t n, int64_t deadline_ms);
/* Wait until a or b (either may have fd -1) has something to read, or
 * the deadline: bit 0 = a, bit 1 = b; 0 on timeout, -1 on error. */
int px_wait2(const struct px_io *a, const struct px_io *b, int64_t deadline_ms);
/* Shut the TLS session down (best effort), free it, close the fd. */
void px_close(struct px_io *io);
/* Make fd non-blocking: 0 or -1. */
int px_nonblock(int fd);

#endif /* SANDLOCK_PROXYIO_H */
