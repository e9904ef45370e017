/*
 * console.c — the pty of a terminal container.
 */
#include "console.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

/* One message, payload the pty's name, the master as its SCM_RIGHTS fd:
 * the form runc's utils.SendFds uses and conmon expects. */
static int send_master(const char *socket_path, int master, const char *name)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if (strlen(socket_path) >= sizeof a.sun_path) {
		oci_error("--console-socket %s: path too long", socket_path);
		return -1;
	}
	strcpy(a.sun_path, socket_path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		oci_error("--console-socket %s: %s", socket_path, strerror(errno));
		if (s >= 0)
			close(s);
		return -1;
	}
	char cbuf[CMSG_SPACE(sizeof(int))];
	memset(cbuf, 0, sizeof cbuf);
	struct iovec iov = { .iov_base = (void *)name, .iov_len = strlen(name) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
		              .msg_controllen = sizeof cbuf };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &master, sizeof(int));
	int rc = sendmsg(s, &msg, MSG_NOSIGNAL) < 0 ? -1 : 0;
	if (rc < 0)
		oci_error("--console-socket %s: sending the pty: %s", socket_path, strerror(errno));
	close(s);
	return rc;
}

int oci_console_setup(const char *socket_path, unsigned rows, unsigned cols)
{
	if (!socket_path) {
		oci_error("process.terminal is true but no --console-socket was given");
		return -1;
	}
	int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	char name[64];
	if (master < 0 || grantpt(master) < 0 || unlockpt(master) < 0 ||
	    ptsname_r(master, name, sizeof name) != 0) {
		oci_error("process.terminal: cannot make a pty: %s", strerror(errno));
		if (master >= 0)
			close(master);
		return -1;
	}
	int slave = open(name, O_RDWR | O_CLOEXEC);
	if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0) {
		oci_error("process.terminal: %s: %s", name, strerror(errno));
		close(master);
		if (slave >= 0)
			close(slave);
		return -1;
	}
	if (rows && cols) {
		struct winsize ws = { .ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols };
		ioctl(slave, TIOCSWINSZ, &ws);
	}
	for (int fd = 0; fd < 3; fd++)
		dup2(slave, fd);
	close(slave);
	int rc = send_master(socket_path, master, name);
	close(master);
	return rc;
}
