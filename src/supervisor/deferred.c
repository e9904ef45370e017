/*
 * deferred.c — running slow handlers off the supervisor thread.
 *
 * A deferred handler's call is copied into a job for a worker pool that
 * grows on demand up to SL_DEFERRED_MAX threads (idle workers are
 * reused).  At most SL_DEFERRED_MAX calls are in flight; beyond that the
 * call fails with EAGAIN at once instead of queueing without bound.
 *
 * Deferral is refused (EPERM) on execve/execveat and on process-creating
 * syscalls: their answer cannot safely be decided later, off the loop.
 *
 * The pool answers nothing itself: a finished call's decision goes to the
 * completion function (the dispatcher's), which replies to the kernel.
 *
 * Every in-flight call has a deadline (cfg->deferred_timeout_ms).  The
 * supervisor loop completes overdue calls with EIO (its poll timeout is
 * the nearest deadline); the worker's later result is then dropped (an
 * injected fd is closed).  A slot is in flight from submission until its
 * call is answered — it is released *before* the answer is sent, so the
 * caller's next call (which may come at once) finds it free.  A callback
 * that never returns keeps one thread forever; sl_deferred_stop waits for
 * it only until its deadline, then detaches it.  A detached worker still
 * uses the pool and the completion's context: each worker holds the
 * context (hooks given at creation, the dispatcher's reference count)
 * until it exits, and the pool is freed with that context, never while a
 * worker may run.
 *
 * Hand-off latency: waking a worker asleep on another CPU is a cross-CPU
 * wake-up (an IPI), which costs tens of microseconds on a VM (DESIGN.md),
 * more than a whole quick handler.  So an idle worker waits pinned to the
 * CPU the supervisor loop last submitted from: the wake-up is then local,
 * and the worker runs as soon as the loop goes back to poll().  (Measured
 * on a 2-CPU VM: ~100 us per deferred call unpinned, ~30 us pinned,
 * against ~13 us for a handler on the loop.)  Calls that pile up spread
 * out: a worker that leaves others queued behind it returns to the
 * thread's original affinity before it runs its job, so concurrent slow
 * handlers still get every CPU.  (Polling the queue instead was tried
 * and is worse on two CPUs: the poller takes the CPU the guest needs.)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "supervisor/childmem.h"
#include "supervisor/deferred.h"
#include "supervisor/handler.h"
#include "syscalls.h"
#include "util.h"

enum { SLOT_PENDING, SLOT_EXPIRED };

struct dslot {
	bool used;
	int state;
	uint64_t deadline_ms;
	sandlock_notif_t n;
};

struct djob {
	struct djob *next;
	sandlock_notif_t n;
	sandlock_handler_t *h;
	int listener;
	int slot;
};

struct sl_deferred {
	uint64_t timeout_ms;
	sl_deferred_done_fn done;
	void *ctx;
	void (*hold)(void *ctx), (*drop)(void *ctx);
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dslot slots[SL_DEFERRED_MAX];
	int inflight;
	struct djob *head, *tail;
	int nqueued;
	atomic_int loop_cpu; /* the CPU the supervisor loop last submitted from */
	pthread_t threads[SL_DEFERRED_MAX];
	int nthreads, nidle;
	bool stopping;
};

struct sl_deferred *sl_deferred_new(uint64_t timeout_ms, sl_deferred_done_fn done, void *ctx,
                                    void (*hold)(void *ctx), void (*drop)(void *ctx))
{
	struct sl_deferred *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->timeout_ms = timeout_ms;
	d->done = done;
	d->ctx = ctx;
	atomic_init(&d->loop_cpu, -1);
	d->hold = hold;
	d->drop = drop;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	return d;
}

static bool refuse_deferral(int nr)
{
	return sl_sys_is_exec_like(nr) || sl_sys_creates_task(nr);
}

/* Called with d->lock held: the call leaves the in-flight set. */
static void release_slot(struct sl_deferred *d, int slot)
{
	d->slots[slot].used = false;
	d->inflight--;
}

static void run_job(struct sl_deferred *d, struct djob *job)
{
	/* A private /proc/PID/mem handle: the cache is the loop's alone. */
	sandlock_mem_t mem;
	sl_mem_init(&mem, job->listener, &job->n, NULL);
	sandlock_action_t act;
	bool decided = sl_handler_call(job->h, &job->n, &mem, &act);
	sl_mem_done(&mem);
	if (!decided) /* deferral is terminal: "did not intervene" = proceed */
		sandlock_action_set_continue(&act);

	/* An expired call was answered EIO by the loop already. */
	pthread_mutex_lock(&d->lock);
	bool expired = d->slots[job->slot].state == SLOT_EXPIRED;
	release_slot(d, job->slot);
	pthread_mutex_unlock(&d->lock);

	if (expired)
		sl_action_discard(&act);
	else
		d->done(d->ctx, &job->n, &act);
}

/* A worker's affinity: the one it started with, and where it is pinned. */
struct wcpu {
	cpu_set_t orig;
	bool have_orig;
	int pinned; /* -1: not pinned */
};

/* Wait next to the supervisor loop (see the top of this file). */
static void follow_loop_cpu(struct sl_deferred *d, struct wcpu *w)
{
	int cpu = atomic_load_explicit(&d->loop_cpu, memory_order_relaxed);
	if (!w->have_orig || cpu < 0 || cpu >= CPU_SETSIZE || cpu == w->pinned ||
	    !CPU_ISSET(cpu, &w->orig))
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof set, &set) == 0)
		w->pinned = cpu;
}

static void unpin(struct wcpu *w)
{
	if (w->pinned >= 0 && sched_setaffinity(0, sizeof w->orig, &w->orig) == 0)
		w->pinned = -1;
}

static void *worker_main(void *arg)
{
	struct sl_deferred *d = arg;
	struct wcpu w = { .pinned = -1 };
	w.have_orig = sched_getaffinity(0, sizeof w.orig, &w.orig) == 0;
	pthread_mutex_lock(&d->lock);
	for (;;) {
		if (!d->head && !d->stopping) {
			d->nidle++;
			pthread_mutex_unlock(&d->lock);
			follow_loop_cpu(d, &w);
			pthread_mutex_lock(&d->lock);
			while (!d->head && !d->stopping)
				pthread_cond_wait(&d->cond, &d->lock);
			d->nidle--;
		}
		if (!d->head)
			break; /* stopping and drained */
		struct djob *job = d->head;
		d->head = job->next;
		if (!d->head)
			d->tail = NULL;
		d->nqueued--;
		bool crowd = d->nqueued > 0; /* other calls wait: spread out */
		pthread_mutex_unlock(&d->lock);
		if (crowd)
			unpin(&w);

		run_job(d, job);
		free(job);

		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	/* The last touch of d or its context: this may free both. */
	d->drop(d->ctx);
	return NULL;
}

/* Called with d->lock held.  0, or -1 if no thread exists to run jobs. */
static int grow_pool(struct sl_deferred *d)
{
	if (d->nqueued <= d->nidle || d->nthreads >= SL_DEFERRED_MAX)
		return 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* workers take no signals */
	d->hold(d->ctx); /* the worker's, dropped as it exits */
	int rc = pthread_create(&d->threads[d->nthreads], NULL, worker_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc == 0)
		d->nthreads++;
	else
		d->drop(d->ctx); /* never the last reference: the caller has one */
	/* Without a new thread the job still runs once a busy one is free. */
	return rc == 0 || d->nthreads > 0 ? 0 : -1;
}

static int take_slot(struct sl_deferred *d, const sandlock_notif_t *n)
{
	for (int i = 0; i < SL_DEFERRED_MAX; i++) {
		if (!d->slots[i].used) {
			d->slots[i].used = true;
			d->slots[i].state = SLOT_PENDING;
			d->slots[i].deadline_ms = (uint64_t)sl_now_ms() + d->timeout_ms;
			d->slots[i].n = *n;
			d->inflight++;
			return i;
		}
	}
	return -1;
}

int sl_deferred_submit(struct sl_deferred *d, sandlock_handler_t *h,
                       const sandlock_notif_t *n, int listener)
{
	if (refuse_deferral(n->syscall_nr))
		return EPERM;
	struct djob *job = calloc(1, sizeof(*job));
	if (!job)
		return EAGAIN;
	pthread_mutex_lock(&d->lock);
	int slot = d->inflight < SL_DEFERRED_MAX ? take_slot(d, n) : -1;
	if (slot < 0) {
		pthread_mutex_unlock(&d->lock);
		free(job);
		return EAGAIN; /* over the cap: fail fast */
	}
	job->n = *n;
	job->h = h;
	job->listener = listener;
	job->slot = slot;
	if (d->tail)
		d->tail->next = job;
	else
		d->head = job;
	d->tail = job;
	d->nqueued++;
	if (grow_pool(d) < 0) {
		/* No worker at all: undo and refuse. */
		d->head = d->tail = NULL;
		d->nqueued = 0;

		release_slot(d, slot);
		pthread_mutex_unlock(&d->lock);
		free(job);
		return EAGAIN;
	}
	atomic_store_explicit(&d->loop_cpu, sched_getcpu(), memory_order_relaxed);
	pthread_mutex_unlock(&d->lock);
	/* After the unlock: a worker woken on this CPU may preempt us at once,
	 * and must not find the lock still held (one more switch). */
	pthread_cond_signal(&d->cond);
	return 0;
}

int sl_deferred_expire(struct sl_deferred *d)
{
	if (!d)
		return -1;
	sandlock_notif_t late[SL_DEFERRED_MAX];
	int nlate = 0;
	uint64_t now = (uint64_t)sl_now_ms(), next = UINT64_MAX;
	pthread_mutex_lock(&d->lock);
	for (int i = 0; i < SL_DEFERRED_MAX; i++) {
		struct dslot *sl = &d->slots[i];
		if (!sl->used || sl->state != SLOT_PENDING)
			continue;
		if (sl->deadline_ms <= now) {
			/* Answered now; the slot stays taken until the worker is
			 * done with it (it still runs the callback). */
			sl->state = SLOT_EXPIRED;
			late[nlate++] = sl->n;
		} else if (sl->deadline_ms - now < next) {
			next = sl->deadline_ms - now;
		}
	}
	pthread_mutex_unlock(&d->lock);
	for (int i = 0; i < nlate; i++) {
		sandlock_action_t act;
		sandlock_action_set_errno(&act, EIO);
		d->done(d->ctx, &late[i], &act);
	}
	if (next == UINT64_MAX)
		return -1;
	return next > INT_MAX ? INT_MAX : (int)next;
}

/* Join t by the CLOCK_REALTIME time at (NULL: no limit); false on timeout. */
static bool join_by(pthread_t t, const struct timespec *at)
{
	if (!at)
		return pthread_join(t, NULL) == 0;
	return pthread_timedjoin_np(t, NULL, at) == 0;
}

bool sl_deferred_stop(struct sl_deferred *d, const struct timespec *at)
{
	if (!d)
		return true;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_broadcast(&d->cond);
	int n = d->nthreads;
	pthread_mutex_unlock(&d->lock);
	/* Only the supervisor thread starts workers, and it has stopped (or
	 * was abandoned: then it starts no more, the loop is over), so
	 * nthreads cannot grow now. */
	bool all = true;
	for (int i = 0; i < n; i++) {
		if (!join_by(d->threads[i], at)) {
			pthread_detach(d->threads[i]); /* its handler never returned */
			all = false;
		}
	}
	pthread_mutex_lock(&d->lock);
	d->nthreads = 0;
	pthread_mutex_unlock(&d->lock);
	return all;
}

void sl_deferred_free(struct sl_deferred *d)
{
	if (!d)
		return;
	/* No worker is left by now: each holds the context that frees us. */
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	free(d);
}
