/*
 * supervisor.c — the notification thread.
 *
 * One thread per run: poll() on the listener and an eventfd (stop), with
 * the poll timeout set to the nearest deferred-call deadline.  Each
 * notification is decided and answered by the dispatcher (dispatch.c) on
 * this thread, so the /proc/PID/mem cache is used by this thread only;
 * deferred handlers run on workers (deferred.c).
 *
 * The thread needs nothing of struct sl_supervisor: it has its own
 * reference to the dispatcher (which owns a duplicate of the listener)
 * and its own duplicate of the stop eventfd.  So when a handler does not
 * return, sl_supervisor_stop can give up on the thread (detach it) and
 * the run can free everything of its own: the thread keeps what it uses
 * alive until it exits, after its handler returns.
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
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "supervisor/dispatch.h"
#include "supervisor/supervisor.h"
#include "util.h"

_Static_assert(sizeof(struct seccomp_notif) == sizeof(sandlock_notif_t),
               "sandlock_notif_t must mirror struct seccomp_notif");

struct sl_supervisor {
	struct sl_dispatch *d;
	int listener; /* not owned */
	int stop_fd;  /* eventfd: wakes the loop to stop */
	pthread_t thread;
	bool started, stopped, abandoned;
	size_t notif_size; /* from SECCOMP_GET_NOTIF_SIZES */
};

/* What the thread owns: it outlives the supervisor if abandoned. */
struct sup_thread {
	struct sl_dispatch *d; /* one reference */
	int listener;          /* the dispatcher's duplicate */
	int stop_fd;           /* a duplicate of the supervisor's */
	size_t notif_size;
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

size_t sl_supervisor_trapped(const struct sl_supervisor *s, const struct sl_trap **traps)
{
	return sl_dispatch_trapped(s->d, traps);
}

/* ---------------- the notification thread ---------------- */

/* The shortest slice the kernel accepts (it clamps to 0.1..100 ms). */
#define SL_SUPERVISOR_SLICE_NS 100000ULL

/* 0, or -1 when the listener is unusable (errno). */
static int recv_one(struct sup_thread *s, void *buf)
{
	memset(buf, 0, s->notif_size); /* RECV insists on a zeroed buffer */
	if (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_RECV, buf) < 0)
		/* EINTR, or ENOENT: the caller died before we got it.  Anything
		 * else would repeat at once: a spin, with nobody answered. */
		return errno == EINTR || errno == ENOENT ? 0 : -1;
	sandlock_notif_t n;
	memcpy(&n, buf, sizeof(n));
	sl_dispatch_one(s->d, &n);
	return 0;
}

static void thread_done(struct sup_thread *s)
{
	close(s->stop_fd);
	sl_dispatch_unref(s->d); /* may free it: the last touch */
	free(s);
}

/*
 * Ask the scheduler to run this thread as soon as it wakes: the shortest
 * EEVDF slice (sched_runtime on a fair policy, Linux 6.12; unprivileged;
 * earlier kernels accept and ignore it).  WHY: a trapped call waits
 * interruptibly until this thread RECVs it, and a signal arriving before
 * that drops the notification and fails the call with EINTR when the
 * caller's handler lacks SA_RESTART.  For fork that is fatal: bare fork
 * never fails with EINTR, and dash (whose SIGCHLD handler lacks it) prints
 * "Cannot fork" when a pipeline's first child exits during the second
 * fork.  SYNC_WAKE_UP puts this thread on the trapped task's CPU, but with
 * the default slice a busy task there often runs first, for milliseconds:
 * measured under three CPU hogs on two cores, 700 of 3,000 forks failed;
 * with the short slice none (docs/limits.md).  Everything else about the
 * thread's scheduling (policy, nice) stays the caller's.
 */
static void prompt_wakeups(void)
{
	struct sl_sched_attr a;
	memset(&a, 0, sizeof(a));
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) < 0)
		return;
	if (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH)
		return; /* real-time or idle: the caller chose, keep it */
	a.size = sizeof(a);
	a.sched_flags = 0;
	a.sched_runtime = SL_SUPERVISOR_SLICE_NS;
	(void)syscall(SYS_sched_setattr, 0, &a, 0); /* best effort: a slower hand-off */
}

static void *supervisor_main(void *arg)
{
	struct sup_thread *s = arg;
	prompt_wakeups();
	void *buf = calloc(1, s->notif_size);
	if (!buf) {
		sl_dispatch_fail(s->d, ENOMEM); /* the run loop ends the sandbox */
		thread_done(s);
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
		if (n < 0 && errno != EINTR) {
			/* Trapped calls would wait for ever: the run loop sees
			 * this, ends the sandbox and fails the run. */
			sl_dispatch_fail(s->d, errno);
			goto out;
		}
		if (n <= 0)
			continue;
		if (pf[1].revents)
			goto out;
		if (pf[0].revents & POLLIN) {
			if (recv_one(s, buf) < 0) {
				sl_dispatch_fail(s->d, errno);
				goto out;
			}
		} else if (pf[0].revents & (POLLHUP | POLLERR | POLLNVAL))
			/* Every filtered task is gone: nothing more will come;
			 * keep waiting for stop without spinning. */
			pf[0].fd = -1;
	}
out:
	free(buf);
	thread_done(s);
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
	if (sl_dispatch_bind(s->d, listener, init) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "supervisor: %s", strerror(errno));
	setup_listener(s);
	s->stop_fd = sl_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	struct sup_thread *t = calloc(1, sizeof(*t));
	if (s->stop_fd < 0 || !t) {
		free(t);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "supervisor: %s", strerror(errno));
	}
	t->d = s->d;
	t->listener = sl_dispatch_listener(s->d);
	t->notif_size = s->notif_size;
	t->stop_fd = fcntl(s->stop_fd, F_DUPFD_CLOEXEC, 3);
	if (t->stop_fd < 0) {
		free(t);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "supervisor: %s", strerror(errno));
	}
	sl_dispatch_ref(s->d); /* the thread's */

	/* The caller's signal handlers must not run on our thread. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&s->thread, NULL, supervisor_main, t);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		thread_done(t);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "supervisor thread: %s",
		               strerror(rc));
	}
	s->started = true;
	return 0;
}

int sl_supervisor_failed(struct sl_supervisor *s)
{
	return s ? sl_dispatch_failed(s->d) : 0;
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

void sl_supervisor_close(struct sl_supervisor *s)
{
	if (s)
		sl_dispatch_close(s->d);
}

/* CLOCK_REALTIME (what pthread_timedjoin_np takes) grace_ms from now. */
static struct timespec realtime_in(int64_t grace_ms)
{
	struct timespec at;
	clock_gettime(CLOCK_REALTIME, &at);
	at.tv_sec += grace_ms / 1000;
	at.tv_nsec += (grace_ms % 1000) * 1000000;
	if (at.tv_nsec >= 1000000000) {
		at.tv_sec++;
		at.tv_nsec -= 1000000000;
	}
	return at;
}

bool sl_supervisor_stop(struct sl_supervisor *s, int64_t grace_ms)
{
	if (!s || s->stopped)
		return !s || !s->abandoned;
	s->stopped = true;
	struct timespec at = realtime_in(grace_ms);
	const struct timespec *limit = grace_ms >= 0 ? &at : NULL;
	bool all = true;
	if (s->started) {
		uint64_t one = 1;
		while (write(s->stop_fd, &one, sizeof(one)) < 0 && errno == EINTR)
			;
		if (!limit) {
			pthread_join(s->thread, NULL);
		} else if (pthread_timedjoin_np(s->thread, NULL, limit) != 0) {
			pthread_detach(s->thread); /* inside a handler that does not return */
			all = false;
		}
	}
	/* Workers too, by the same time. */
	if (!sl_dispatch_quiesce(s->d, limit))
		all = false;
	s->abandoned = !all;
	return all;
}

void sl_supervisor_finish(struct sl_supervisor *s, struct sandlock_result *r)
{
	sl_dispatch_finish(s->d, r);
}

struct sl_services *sl_supervisor_services(struct sl_supervisor *s)
{
	return sl_dispatch_services(s->d);
}

void sl_supervisor_free(struct sl_supervisor *s)
{
	if (!s)
		return;
	sl_supervisor_stop(s, -1);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	sl_dispatch_unref(s->d); /* the run's reference */
	free(s);
}
