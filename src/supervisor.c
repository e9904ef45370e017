/*
 * supervisor.c — the notification thread.
 *
 * One thread per run: poll() on the listener and an eventfd (stop), with
 * the poll timeout set to the nearest deferred-call deadline.  Each
 * notification is decided and answered by the dispatcher (dispatch.c) on
 * this thread, so the /proc/PID/mem cache is used by this thread only;
 * deferred handlers run on workers (deferred.c).
 */
#include <errno.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dispatch.h"
#include "supervisor.h"
#include "util.h"

_Static_assert(sizeof(struct seccomp_notif) == sizeof(sandlock_notif_t),
               "sandlock_notif_t must mirror struct seccomp_notif");

struct sl_supervisor {
	struct sl_dispatch *d;
	int listener; /* not owned */
	int stop_fd;  /* eventfd: wakes the loop to stop */
	pthread_t thread;
	bool started, stopped;
	size_t notif_size; /* from SECCOMP_GET_NOTIF_SIZES */
};

struct sl_supervisor *sl_supervisor_new(const struct sandlock_sandbox *cfg,
                                        const struct sl_handlers *hs, int *err, char **msg)
{
	struct sl_supervisor *s = calloc(1, sizeof(*s));
	if (!s) {
		sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		return NULL;
	}
	s->listener = s->stop_fd = -1;
	s->d = sl_dispatch_new(cfg, hs, err, msg);
	if (!s->d) {
		free(s);
		return NULL;
	}
	return s;
}

size_t sl_supervisor_trapped(const struct sl_supervisor *s, const int **nrs)
{
	return sl_dispatch_trapped(s->d, nrs);
}

/* ---------------- the notification thread ---------------- */

static void recv_one(struct sl_supervisor *s, void *buf)
{
	memset(buf, 0, s->notif_size); /* RECV insists on a zeroed buffer */
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, buf) < 0)
		return; /* EINTR, or ENOENT: the caller died before we got it */
	sandlock_notif_t n;
	memcpy(&n, buf, sizeof(n));
	sl_dispatch_one(s->d, &n);
}

static void *supervisor_main(void *arg)
{
	struct sl_supervisor *s = arg;
	void *buf = calloc(1, s->notif_size);
	if (!buf) {
		sl_warn("supervisor: out of memory; trapped calls will hang until the run ends");
		return NULL;
	}
	/*
	 * Plain poll(), not epoll: with SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP the
	 * kernel wakes waiters on the listener's queue on the trapping task's
	 * CPU, and poll() waits on that queue directly, so the flag reaches
	 * this thread.  epoll's own wake-up in between drops it, which costs a
	 * cross-CPU hand-off (~20 us measured) on every notification.
	 */
	struct pollfd pf[2] = { { s->listener, POLLIN, 0 }, { s->stop_fd, POLLIN, 0 } };
	for (;;) {
		int timeout = sl_dispatch_expire(s->d);
		int n = poll(pf, 2, timeout);
		if (n < 0 && errno != EINTR)
			break;
		if (n <= 0)
			continue;
		if (pf[1].revents)
			goto out;
		if (pf[0].revents & POLLIN)
			recv_one(s, buf);
		else if (pf[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			/* Every filtered task is gone: nothing more will come;
			 * keep waiting for stop without spinning. */
			pf[0].fd = -1;
	}
out:
	free(buf);
	return NULL;
}

static void setup_listener(struct sl_supervisor *s)
{
	/* Same-CPU hand-off between the trapped task and this thread
	 * (~1.75 us instead of ~30 us); older kernels lack it: ignore. */
	uint64_t flag = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flag) < 0 && errno != EINVAL &&
	    errno != ENOTTY)
		sl_warn("SECCOMP_IOCTL_NOTIF_SET_FLAGS: %s", strerror(errno));

	/* RECV writes the kernel's struct size, which may grow past ours. */
	struct seccomp_notif_sizes sz;
	memset(&sz, 0, sizeof(sz));
	s->notif_size = sizeof(struct seccomp_notif);
	if (syscall(__NR_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) == 0 &&
	    sz.seccomp_notif > s->notif_size)
		s->notif_size = sz.seccomp_notif;
}

int sl_supervisor_use_ruleset(struct sl_supervisor *s, int ruleset_fd, int *err, char **msg)
{
	return sl_dispatch_use_ruleset(s->d, ruleset_fd, err, msg);
}

int sl_supervisor_start(struct sl_supervisor *s, int listener, pid_t init, int *err,
                        char **msg)
{
	if (!s || listener < 0 || s->started)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "bad supervisor start");
	s->listener = listener;
	sl_dispatch_bind(s->d, listener, init);
	setup_listener(s);
	s->stop_fd = sl_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (s->stop_fd < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "supervisor: %s", strerror(errno));

	/* The caller's signal handlers must not run on our thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, supervisor_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "supervisor thread: %s",
		               strerror(rc));
	s->started = true;
	return 0;
}

int sl_supervisor_killed(struct sl_supervisor *s, int *sig)
{
	if (!s) {
		if (sig)
			*sig = 0;
		return 0;
	}
	return sl_dispatch_killed(s->d, sig);
}

void sl_supervisor_stop(struct sl_supervisor *s)
{
	if (!s || s->stopped)
		return;
	s->stopped = true;
	if (s->started) {
		uint64_t one = 1;
		while (write(s->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
		pthread_join(s->thread, NULL);
	}
	/* Workers answer through the listener, which the caller closes after
	 * us: wait for them here. */
	sl_dispatch_quiesce(s->d);
}

void sl_supervisor_free(struct sl_supervisor *s)
{
	if (!s)
		return;
	sl_supervisor_stop(s);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	sl_dispatch_free(s->d);
	free(s);
}
