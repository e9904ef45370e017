/*
 * childfd.c — a trapped process's pidfd, fds, cwd and /proc directory.
 *
 * The order is always: open the object (which pins the task or file),
 * then confirm with NOTIF_ID_VALID that the notification is still
 * pending — only then does the pid certainly still name the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "childfd.h"
#include "childmem.h"
#include "compat.h"

/* Close fd and fail with ESRCH unless n is still pending. */
static int confirmed(int listener, const sandlock_notif_t *n, int fd)
{
	if (fd < 0)
		return fd;
	if (!sl_notif_valid(listener, n->id)) {
		close(fd);
		return -ESRCH;
	}
	return fd;
}

static int neg_errno(void)
{
	return errno ? -errno : -EIO;
}

int sl_child_pidfd(int listener, const sandlock_notif_t *n)
{
	int pfd = (int)syscall(__NR_pidfd_open, (pid_t)n->pid, 0);
	/* n->pid is a non-leader thread: kernels before 6.9 said EINVAL,
	 * later ones ENOENT.  A thread pidfd reaches the same fd table and
	 * memory, and its signals are aimed at that thread. */
	if (pfd < 0 && (errno == EINVAL || errno == ENOENT))
		pfd = (int)syscall(__NR_pidfd_open, (pid_t)n->pid, PIDFD_THREAD);
	return confirmed(listener, n, pfd < 0 ? neg_errno() : pfd);
}

int sl_child_getfd(int listener, const sandlock_notif_t *n, int fd)
{
	if (fd < 0)
		return -EBADF;
	int pfd = sl_child_pidfd(listener, n);
	if (pfd < 0)
		return pfd;
	/* pidfd_getfd sets close-on-exec on the duplicate. */
	int dup = (int)syscall(__NR_pidfd_getfd, pfd, fd, 0);
	int e = dup < 0 ? neg_errno() : dup;
	close(pfd);
	return confirmed(listener, n, e);
}

int sl_child_procdir(int listener, const sandlock_notif_t *n)
{
	char p[32];
	snprintf(p, sizeof p, "/proc/%u", n->pid);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return confirmed(listener, n, fd < 0 ? neg_errno() : fd);
}

int sl_child_dirfd(int listener, const sandlock_notif_t *n, int dirfd)
{
	char p[48];
	if (dirfd == AT_FDCWD)
		snprintf(p, sizeof p, "/proc/%u/cwd", n->pid);
	else if (dirfd >= 0)
		snprintf(p, sizeof p, "/proc/%u/fd/%d", n->pid, dirfd);
	else
		return -EBADF;
	int fd = open(p, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT && dirfd != AT_FDCWD ? -EBADF : neg_errno();
	return confirmed(listener, n, fd);
}

mode_t sl_child_umask(int listener, const sandlock_notif_t *n)
{
	int dir = sl_child_procdir(listener, n);
	if (dir < 0)
		return 022;
	int fd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
	close(dir);
	if (fd < 0)
		return 022;
	char buf[4096];
	ssize_t len = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (len <= 0)
		return 022;
	buf[len] = '\0';
	char *u = strstr(buf, "Umask:");
	return u ? (mode_t)strtoul(u + 6, NULL, 8) & 0777 : 022;
}
