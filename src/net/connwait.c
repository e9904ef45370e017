/*
 * connwait.c — waiting for the TCP connects of blocking callers
 * (connwait.h), one thread per run.
 *
 * How a wait ends, as inet_stream_connect ends a blocking connect:
 *  - the handshake is over (poll: POLLOUT, POLLERR or POLLHUP): the
 *    result is what a second connect on the socket says, made
 *    non-blocking (finish below): 0 once established, else the socket's
 *    error, with the socket reset to unconnected as the kernel's blocking
 *    path leaves it (so a retry on it starts afresh);
 *  - the caller's SO_SNDTIMEO ran out: EINPROGRESS, the attempt going on;
 *  - a signal the caller takes is pending: ERESTARTSYS (EINTR with an
 *    SO_SNDTIMEO), which the kernel turns into a restart or EINTR by the
 *    handler's SA_RESTART, the attempt going on.  Only a signal that is
 *    sure to be handled on the caller's way out counts: one of its own
 *    (SigPnd), or a process-wide one (ShdPnd) when it is the thread
 *    group's leader, which such a signal wakes first (complete_signal).
 *    Else ERESTARTSYS could reach the program as errno 512; a non-leader
 *    thread's connect waits on as it would in the kernel, where the
 *    leader takes the signal;
 *  - the caller is gone (its notification no longer valid): dropped.
 * The last two are looked at every TICK_MS while anything is pending.
 *
 * The socket's O_NONBLOCK lives in the open file the caller shares with
 * our duplicate: it is set only around each connect call and put back
 * at once (another thread of the caller doing I/O on a socket that is
 * still connecting could see it for that moment).  The thread runs with
 * its effective capabilities lowered, like netdest's calls: a finishing
 * connect of a socket that was reset meanwhile connects it again, to the
 * address already checked, with the caller's rights.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childmem.h"
#include "compat.h"
#include "net/connwait.h"
#include "util.h"

#define TICK_MS 20 /* how often callers are checked for signals and death */

struct pend {
	sandlock_notif_t n;
	int fd;
	struct sockaddr_storage to;
	socklen_t len;
	int64_t deadline_ms; /* SO_SNDTIMEO's end, or -1 */
};

struct sl_connwait {
	sl_connwait_done_fn done;
	void *ctx;
	int listener;
	int wake; /* eventfd: a call handed over, or stop */
	pthread_mutex_t lock;
	struct pend *in; /* handed over, not yet taken by the thread */
	size_t nin, capin;
	bool stopping, started;
	pthread_t thread;
};

struct sl_connwait *sl_connwait_new(sl_connwait_done_fn done, void *ctx)
{
	struct sl_connwait *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->done = done;
	w->ctx = ctx;
	w->listener = -1;
	w->wake = -1;
	pthread_mutex_init(&w->lock, NULL);
	return w;
}

int sl_connwait_connect(int fd, const struct sockaddr *to, socklen_t len, bool *blocking)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	*blocking = !(fl & O_NONBLOCK);
	if (*blocking && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -1;
	int r = connect(fd, to, len);
	int e = errno;
	if (*blocking)
		fcntl(fd, F_SETFL, fl);
	errno = e;
	return r;
}

/* The handshake looks over: its result, or 1 if it goes on after all. */
static long finish(int fd, const struct sockaddr_storage *to, socklen_t len)
{
	bool blocking;
	long r = sl_connwait_connect(fd, (const struct sockaddr *)to, len, &blocking) < 0 ? -errno : 0;
	if (r == -EALREADY || r == -EINPROGRESS)
		return 1; /* still (or, reset meanwhile, again) connecting */
	return r == -EISCONN ? 0 : r; /* another thread's connect saw it through */
}

/* The end of the caller's SO_SNDTIMEO from now, or -1 for none. */
static int64_t send_deadline(int fd)
{
	struct timeval tv;
	socklen_t tl = sizeof tv;
	if (getsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, &tl) < 0 || (!tv.tv_sec && !tv.tv_usec))
		return -1;
	return sl_now_ms() + (int64_t)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
}

/* ---------------- the thread ---------------- */

static unsigned long long status_mask(const char *st, const char *key)
{
	const char *p = strstr(st, key);
	return p ? strtoull(p + strlen(key), NULL, 16) : 0;
}

/* Is a signal pending that the caller will surely take on its way out
 * of the call (see the top of this file)? */
static bool signal_pending(const sandlock_notif_t *n)
{
	char path[64], st[4096];
	snprintf(path, sizeof path, "/proc/%u/status", n->pid);
	ssize_t k = sl_read_small_at(AT_FDCWD, path, st, sizeof st);
	if (k <= 0)
		return false;
	unsigned long long blocked = status_mask(st, "\nSigBlk:\t");
	unsigned long long own = status_mask(st, "\nSigPnd:\t");
	const char *tg = strstr(st, "\nTgid:\t");
	bool leader = tg && strtoul(tg + 6, NULL, 10) == n->pid;
	if (leader)
		own |= status_mask(st, "\nShdPnd:\t");
	return (own & ~blocked) != 0;
}

static void answer(struct sl_connwait *w, const struct pend *p, long r)
{
	sandlock_action_t act;
	if (r < 0)
		sandlock_action_set_errno(&act, (int)-r);
	else
		sandlock_action_set_return_value(&act, 0);
	w->done(w->ctx, &p->n, &act);
}

/* The periodic look at p's caller: true when p's wait is over. */
static bool tick(struct sl_connwait *w, const struct pend *p, int64_t now)
{
	bool interrupted = signal_pending(&p->n);
	/* After the look at /proc: a valid notification means the tid was
	 * still our caller's. */
	if (!sl_notif_valid(w->listener, p->n.id))
		return true; /* gone: nobody to answer */
	if (interrupted)
		answer(w, p, p->deadline_ms >= 0 ? -EINTR : -SL_ERESTARTSYS);
	else if (p->deadline_ms >= 0 && now >= p->deadline_ms)
		answer(w, p, -EINPROGRESS);
	return interrupted || (p->deadline_ms >= 0 && now >= p->deadline_ms);
}

/* Move what was handed over into v; false when stopping. */
static bool take_in(struct sl_connwait *w, struct pend **v, size_t *n, size_t *cap)
{
	uint64_t x;
	if (read(w->wake, &x, sizeof x) < 0 && errno != EAGAIN)
		return false;
	pthread_mutex_lock(&w->lock);
	bool go = !w->stopping;
	if (go && *n + w->nin > *cap) {
		size_t c = (*n + w->nin) * 2;
		struct pend *nv = realloc(*v, c * sizeof(**v));
		if (nv) {
			*v = nv;
			*cap = c;
		}
	}
	if (go && *n + w->nin <= *cap) {
		memcpy(*v + *n, w->in, w->nin * sizeof(**v));
		*n += w->nin;
		w->nin = 0;
	}
	pthread_mutex_unlock(&w->lock);
	return go;
}

static int poll_timeout(const struct pend *v, size_t n, int64_t now)
{
	int64_t t = TICK_MS;
	for (size_t i = 0; i < n; i++)
		if (v[i].deadline_ms >= 0 && v[i].deadline_ms - now < t)
			t = v[i].deadline_ms - now;
	return t < 0 ? 0 : (int)t;
}

static void *waiter_main(void *arg)
{
	struct sl_connwait *w = arg;
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) != 0)
		sl_warn("connect waiter: cannot lower its capabilities");
	struct pend *v = NULL;
	struct pollfd *pf = NULL;
	size_t n = 0, cap = 0, pcap = 0;
	int64_t next_tick = sl_now_ms() + TICK_MS;
	for (;;) {
		if (n + 1 > pcap) {
			struct pollfd *np = realloc(pf, (n + 1) * 2 * sizeof(*pf));
			if (!np)
				break; /* cannot wait: the callers die with the run */
			pf = np;
			pcap = (n + 1) * 2;
		}
		pf[0] = (struct pollfd){ .fd = w->wake, .events = POLLIN };
		for (size_t i = 0; i < n; i++)
			pf[i + 1] = (struct pollfd){ .fd = v[i].fd, .events = POLLOUT };
		int64_t now = sl_now_ms();
		if (poll(pf, n + 1, n ? poll_timeout(v, n, now) : -1) < 0 && errno != EINTR)
			break;
		now = sl_now_ms();
		bool ticking = now >= next_tick;
		if (ticking)
			next_tick = now + TICK_MS;
		size_t keep = 0;
		for (size_t i = 0; i < n; i++) {
			long r = 1;
			if (pf[i + 1].revents)
				r = finish(v[i].fd, &v[i].to, v[i].len);
			bool over = r <= 0;
			if (over)
				answer(w, &v[i], r);
			else if (ticking || (v[i].deadline_ms >= 0 && now >= v[i].deadline_ms))
				over = tick(w, &v[i], now);
			if (over)
				close(v[i].fd);
			else
				v[keep++] = v[i];
		}
		n = keep;
		if ((pf[0].revents & POLLIN) && !take_in(w, &v, &n, &cap))
			break;
	}
	for (size_t i = 0; i < n; i++)
		close(v[i].fd);
	free(v);
	free(pf);
	return NULL;
}

static int start(struct sl_connwait *w, int listener)
{
	w->listener = listener;
	w->wake = sl_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)); /* stdio numbers: util.h */
	if (w->wake < 0)
		return -errno;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signals */
	int rc = pthread_create(&w->thread, NULL, waiter_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		close(w->wake);
		w->wake = -1;
		return -rc;
	}
	w->started = true;
	return 0;
}

/* ---------------- handing over ---------------- */

static int hand_over(struct sl_connwait *w, const struct pend *p)
{
	pthread_mutex_lock(&w->lock);
	if (w->nin == w->capin) {
		size_t c = w->capin ? w->capin * 2 : 8;
		struct pend *nv = realloc(w->in, c * sizeof(*nv));
		if (!nv) {
			pthread_mutex_unlock(&w->lock);
			return -ENOMEM;
		}
		w->in = nv;
		w->capin = c;
	}
	w->in[w->nin++] = *p;
	pthread_mutex_unlock(&w->lock);
	uint64_t one = 1;
	if (write(w->wake, &one, sizeof one) < 0) /* cannot fail below 2^64 - 1 */
		sl_warn("connect waiter: cannot wake it");
	return 0;
}

long sl_connwait_wait(struct sl_connwait *w, int listener, const sandlock_notif_t *n, int fd,
                      const struct sockaddr_storage *to, socklen_t len)
{
	/* Loopback handshakes are usually over by now: no hand-over. */
	struct pollfd pf = { .fd = fd, .events = POLLOUT };
	if (poll(&pf, 1, 0) == 1) {
		long r = finish(fd, to, len);
		if (r <= 0)
			return r;
	}
	/* Kept for long: above the stdio numbers a launch may be filling. */
	int held = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (held < 0)
		return -errno;
	struct pend p = { .n = *n, .fd = held, .to = *to, .len = len,
		              .deadline_ms = send_deadline(fd) };
	int e = w->started ? 0 : start(w, listener);
	if (!e)
		e = hand_over(w, &p);
	close(e ? held : fd);
	return e ? e : 1;
}

void sl_connwait_free(struct sl_connwait *w)
{
	if (!w)
		return;
	if (w->started) {
		pthread_mutex_lock(&w->lock);
		w->stopping = true;
		pthread_mutex_unlock(&w->lock);
		uint64_t one = 1;
		if (write(w->wake, &one, sizeof one) < 0)
			sl_warn("connect waiter: cannot wake it to stop");
		pthread_join(w->thread, NULL);
	}
	for (size_t i = 0; i < w->nin; i++)
		close(w->in[i].fd);
	free(w->in);
	if (w->wake >= 0)
		close(w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
