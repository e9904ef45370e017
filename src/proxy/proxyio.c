/*
 * proxyio.c — deadline-bound reads and writes of a plain or TLS stream
 * (proxyio.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "proxy/proxyio.h"
#include "util.h"

int px_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Wait for events on fd until the deadline: 1 ready, 0 timeout, -1 error. */
static int wait_fd(int fd, short events, int64_t deadline_ms)
{
	for (;;) {
		int64_t left = deadline_ms - sl_now_ms();
		if (left <= 0) {
			errno = ETIMEDOUT;
			return 0;
		}
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* What an SSL_* call's failure asks for: POLLIN/POLLOUT, or 0 (an error). */
static short ssl_wants(SSL *ssl, int r)
{
	switch (SSL_get_error(ssl, r)) {
	case SSL_ERROR_WANT_READ:
		return POLLIN;
	case SSL_ERROR_WANT_WRITE:
		return POLLOUT;
	default:
		ERR_clear_error();
		return 0;
	}
}

ssize_t px_read(struct px_io *io, void *buf, size_t n, int64_t deadline_ms)
{
	for (;;) {
		short want = POLLIN;
		if (io->ssl) {
			size_t got = 0;
			int r = SSL_read_ex(io->ssl, buf, n, &got);
			if (r > 0)
				return (ssize_t)got;
			int e = SSL_get_error(io->ssl, r);
			if (e == SSL_ERROR_ZERO_RETURN)
				return 0;
			if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0) {
				ERR_clear_error();
				return 0; /* EOF without close_notify: the end, as curl sees it */
			}
			if (!(want = ssl_wants(io->ssl, r))) {
				errno = EPROTO;
				return -1;
			}
		} else {
			ssize_t r = read(io->fd, buf, n);
			if (r >= 0)
				return r;
			if (errno != EAGAIN && errno != EINTR)
				return -1;
		}
		if (wait_fd(io->fd, want, deadline_ms) <= 0)
			return -1;
	}
}

int px_write_all(struct px_io *io, const void *buf, size_t n, int64_t deadline_ms)
{
	const char *p = buf;
	while (n) {
		short want = POLLOUT;
		if (io->ssl) {
			size_t put = 0;
			int r = SSL_write_ex(io->ssl, p, n, &put);
			if (r > 0) {
				p += put;
				n -= put;
				continue;
			}
			if (!(want = ssl_wants(io->ssl, r))) {
				errno = EPIPE;
				return -1;
			}
		} else {
			ssize_t r = send(io->fd, p, n, MSG_NOSIGNAL);
			if (r >= 0) {
				p += r;
				n -= (size_t)r;
				continue;
			}
			if (errno != EAGAIN && errno != EINTR)
				return -1;
		}
		if (wait_fd(io->fd, want, deadline_ms) <= 0)
			return -1;
	}
	return 0;
}

/* Bytes already decrypted and waiting (a poll on the fd would not see them). */
static bool io_pending(const struct px_io *io)
{
	return io->ssl && SSL_pending(io->ssl) > 0;
}

int px_wait2(const struct px_io *a, const struct px_io *b, int64_t deadline_ms)
{
	int ready = (a->fd >= 0 && io_pending(a) ? 1 : 0) | (b->fd >= 0 && io_pending(b) ? 2 : 0);
	if (ready)
		return ready;
	for (;;) {
		int64_t left = deadline_ms - sl_now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p[2] = { { .fd = a->fd, .events = POLLIN },
			                   { .fd = b->fd, .events = POLLIN } };
		int r = poll(p, 2, left > 60000 ? 60000 : (int)left);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0)
			return (p[0].revents ? 1 : 0) | (p[1].revents ? 2 : 0);
	}
}

void px_close(struct px_io *io)
{
	if (io->ssl) {
		SSL_shutdown(io->ssl); /* non-blocking: sends close_notify if it can */
		SSL_free(io->ssl);
		ERR_clear_error();
		io->ssl = NULL;
	}
	if (io->fd >= 0)
		close(io->fd);
	io->fd = -1;
}
