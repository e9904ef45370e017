/*
 * devmin.c — the minimal /dev (devmin.h).
 *
 * Without it, the README's own grants (-r /usr -r /lib -r /etc ...) made
 * `> /dev/null` fail, and with it every `&` job of a sh script (sh opens
 * /dev/null for a background job's stdin); git, Java and most build tools
 * need /dev/zero, /dev/urandom or /dev/tty.  These five devices read as
 * zeros, random bytes or nothing and swallow writes: they reveal nothing
 * about the host and reach no hardware, so every sandbox gets them.  The
 * rules are on the device files themselves (not /dev): `ls /dev` stays
 * denied and no other node (disks, /dev/mem, /dev/kvm, ...) is reachable.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "launch/devmin.h"
#include "launch/llrule.h"
#include "util.h"

#define FS(x) LANDLOCK_ACCESS_FS_##x

static const char *const g_devices[] = { SANDLOCK_DEFAULT_DEVICES };

/* A rule on the character device at path; absent or not a device: none. */
static int grant_chr(int ruleset, const char *path, uint64_t rights)
{
	int fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode))
		rc = sl_landlock_add_fd_rule(ruleset, fd, rights, false);
	close(fd);
	return rc;
}

int sl_devmin_grant(int ruleset, uint64_t handled, int *err, char **msg)
{
	for (size_t i = 0; i < sizeof g_devices / sizeof g_devices[0]; i++) {
		int rc = grant_chr(ruleset, g_devices[i], (FS(READ_FILE) | FS(WRITE_FILE)) & handled);
		if (rc < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_add_rule('%s'): %s",
			               g_devices[i], strerror(-rc));
	}
	return 0;
}

int sl_devmin_grant_tty(int ruleset, uint64_t handled)
{
	return grant_chr(ruleset, "/dev/tty",
	                 (FS(READ_FILE) | FS(WRITE_FILE) | FS(IOCTL_DEV)) & handled);
}

/* The file rights an open fd already carries. */
static uint64_t fd_rights(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return 0;
	int acc = fl & O_ACCMODE;
	uint64_t r = 0;
	if (acc == O_RDONLY || acc == O_RDWR)
		r |= FS(READ_FILE);
	if (acc == O_WRONLY || acc == O_RDWR)
		r |= FS(WRITE_FILE) | FS(TRUNCATE); /* ftruncate on the fd is allowed already */
	return r;
}

int sl_devmin_grant_stdio(int ruleset, uint64_t handled, int fd, bool *tty)
{
	struct stat st;
	struct termios t;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 0;
	uint64_t rights = fd_rights(fd);
	if (S_ISCHR(st.st_mode) && ioctl(fd, TCGETS, &t) == 0) {
		*tty = true;
		rights |= FS(IOCTL_DEV);
	} else if (!S_ISREG(st.st_mode)) {
		return 0;
	}
	int rc = sl_landlock_add_fd_rule(ruleset, fd, rights & handled, false);
	/* A file on an internal filesystem (memfd, ...) cannot have a rule
	 * and needs none: Landlock does not check those. */
	return rc == -EBADFD ? 0 : rc;
}
