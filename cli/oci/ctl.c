/*
 * ctl.c — the control socket.  The path is named through an open fd of
 * the state directory (/proc/self/fd/N/ctl.sock) so a long --root or id
 * never overflows sun_path.
 */
#include "ctl.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* addr for DIR/ctl.sock through dirfd; the fd must stay open meanwhile. */
static int ctl_addr(const char *dir, struct sockaddr_un *a, int *dirfd)
{
	*dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dirfd < 0)
		return -1;
	memset(a, 0, sizeof *a);
	a->sun_family = AF_UNIX;
	snprintf(a->sun_path, sizeof a->sun_path, "/proc/self/fd/%d/ctl.sock", *dirfd);
	return 0;
}

int oci_ctl_listen(const char *dir)
{
	struct sockaddr_un a;
	int dfd;
	if (ctl_addr(dir, &a, &dfd) < 0) {
		oci_error("state directory %s: %s", dir, strerror(errno));
		return -1;
	}
	unlinkat(dfd, "ctl.sock", 0);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 16) < 0) {
		oci_error("control socket in %s: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		close(dfd);
		return -1;
	}
	close(dfd);
	return fd;
}

int oci_ctl_connect(const char *dir)
{
	struct sockaddr_un a;
	int dfd;
	if (ctl_addr(dir, &a, &dfd) < 0)
		return -1;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = errno;
		close(fd);
		fd = -1;
		errno = e;
	}
	close(dfd);
	return fd;
}

int oci_ctl_read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t n = 0;
	while (n + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int r = poll(&p, 1, timeout_ms);
		if (r <= 0) {
			if (r < 0 && errno == EINTR)
				continue;
			return -1;
		}
		ssize_t got = read(fd, buf + n, 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return (int)n;
}

int oci_ctl_write_line(int fd, const char *line)
{
	char buf[1024];
	int n = snprintf(buf, sizeof buf, "%s\n", line);
	if (n < 0 || (size_t)n >= sizeof buf)
		return -1;
	/* MSG_NOSIGNAL: a client that went away must not kill the supervisor. */
	return send(fd, buf, (size_t)n, MSG_NOSIGNAL) == n ? 0 : -1;
}

int oci_ctl_request(const char *dir, const char *req, char *reply, size_t cap)
{
	int fd = oci_ctl_connect(dir);
	if (fd < 0)
		return -1;
	int rc = oci_ctl_write_line(fd, req) == 0 &&
	         oci_ctl_read_line(fd, reply, cap, 10000) > 0 ? 0 : -1;
	close(fd);
	return rc;
}

int oci_ctl_peer_ok(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof cr;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return 0;
	return cr.uid == 0 || cr.uid == getuid() || cr.uid == geteuid();
}
