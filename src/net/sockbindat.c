/*
 * sockbindat.c — bind(2) relative to a directory fd (sockbindat.h).
 *
 * bind resolves a relative sun_path against the calling thread's cwd and
 * masks the file's mode with its umask, both kept in its fs_struct,
 * which the supervisor's threads share.  So the bind runs on a
 * short-lived thread of its own that unshares its fs_struct
 * (CLONE_FS), takes the caller's umask, changes into the directory and
 * binds the bare name: any directory depth, the name's own length the
 * only limit (sun_path), nothing else of the process touched.  The
 * thread drops its effective capabilities first (caps.h): the kernel's
 * checks are the caller's, who has none.  Binds are rare (servers
 * starting): a thread per bind costs tens of microseconds.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "launch/caps.h"
#include "net/sockbindat.h"

struct bind_job {
	int sock, dirfd;
	mode_t umask;
	struct sockaddr_un addr;
	socklen_t len;
	int err;
};

static void *bind_thread(void *arg)
{
	struct bind_job *j = arg;
	struct sl_caps_saved sv; /* this thread's own: never restored, it ends */
	errno = 0;
	if (unshare(CLONE_FS) < 0 || fchdir(j->dirfd) < 0 || sl_caps_lower(&sv) < 0)
		j->err = errno ? errno : EPERM;
	else {
		umask(j->umask);
		j->err = bind(j->sock, (struct sockaddr *)&j->addr, j->len) < 0 ? errno : 0;
	}
	return NULL;
}

int sl_sock_bind_at(int sock, int dirfd, const char *name, mode_t umask)
{
	struct bind_job j = { .sock = sock, .dirfd = dirfd, .umask = umask & 0777, .err = EIO };
	size_t n = strlen(name);
	if (!n || strchr(name, '/'))
		return -EINVAL;
	if (n >= sizeof j.addr.sun_path)
		return -ENAMETOOLONG;
	j.addr.sun_family = AF_UNIX;
	memcpy(j.addr.sun_path, name, n + 1);
	j.len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	pthread_t t;
	int e = pthread_create(&t, NULL, bind_thread, &j);
	if (e)
		return -e;
	pthread_join(t, NULL);
	return -j.err;
}
