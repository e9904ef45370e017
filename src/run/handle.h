/*
 * handle.h — one run as an object (sandlock_handle_t), shared by the two
 * files of the handle: run.c (its life: spawn, start, kill, wait, free,
 * the synchronous runs) and runctl.c (what a caller does to a running
 * sandbox: pause, resume, usage, its pids, ports and stdio; and the CPU
 * throttle the run loop ticks).  run.c calls runctl.c, never the reverse.
 */
#ifndef SANDLOCK_HANDLE_H
#define SANDLOCK_HANDLE_H

#include <pthread.h>
#include <stdatomic.h>

#include "launch/launch.h"
#include "run/cgroup.h"
#include "run/runloop.h"
#include "run/throttle.h"
#include "supervisor/handler.h"

enum hstate {
	H_CREATED, /* launched, the command waits for "ready" */
	H_RUNNING, /* released; finish() runs (inline or on the I/O thread) */
};

/*
 * One run.  Lifetimes: the handlers from sandlock_spawn's entry until
 * handle_free (released there, and only there, via sl_handlers_release);
 * the supervisor and the launch until handle_free; init (L.pid) unreaped
 * until finish() reaps it.  mu guards state, reaping and finished; every
 * signal to init or its tree is sent under mu with reaping false, so it
 * can never reach a recycled pid.
 */
struct sandlock_handle {
	const sandlock_sandbox_t *sb;
	struct sl_handlers hs;
	struct sl_supervisor *sup;
	struct sl_launch L;
	bool prepared; /* L holds resources (sl_launch_cleanup) */
	bool launched; /* init exists (forked, not yet reaped by finish) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum hstate state;
	bool reaping;     /* init has exited: no more signals */
	bool finished;    /* finish() is done: r is final */
	atomic_bool caller_kill; /* sandlock_handle_kill (or free) ended it */
	bool thread;      /* the I/O thread was started */
	bool joined;
	bool taken;       /* the result went to the caller */
	pthread_t io;
	/* The run's cgroup (cgroup.c): init joins it at birth; cgroup.kill is
	 * the final sweep.  Destroyed with the handle. */
	struct sl_cgroup cg;
	bool abandoned;            /* a handler thread was left running */
	struct sl_loop_error le;      /* the run loop failed (le.what set) */
	/* A duplicate of the sync socket kept after the release: it hangs up
	 * once the command has exec'd (or died) and init has left vfork. */
	int exec_fd;
	/* The audit log's multicast group (run/auditlog.c), or -1: read after
	 * a failed run for the first access Landlock refused. */
	int audit_fd;
	/* max_cpu without a CPU cgroup (throttle.c), ticked by the run loop;
	 * paused: the caller's pause, which the throttle never undoes. */
	struct sl_throttle thr;
	bool paused;
	bool frozen; /* the pause froze cg (cgroup.freeze), not the signal tree */
	sandlock_result_t *r;
	/* Its control socket (run/control.h): served from the spawn until
	 * init has exited (finish), so `sandlock ps` lists it; NULL: none. */
	struct sl_control *ctl;
	/* Called last in handle_destroy (sl_handle_on_free): what a caller
	 * made for this run only, as refspawn.c's policy under a name. */
	void (*on_free)(void *);
	void *on_free_arg;
};

static inline void handle_lock(sandlock_handle_t *h)
{
	pthread_mutex_lock(&h->mu);
}

static inline void handle_unlock(sandlock_handle_t *h)
{
	pthread_mutex_unlock(&h->mu);
}

/* Is init alive and signalable?  Caller holds mu. */
bool sl_handle_signalable(const sandlock_handle_t *h);
/* Before ending a frozen sandbox: thaw its group (mu held). */
void sl_handle_thaw_locked(sandlock_handle_t *h);
/* The run loop's view of the handle (struct sl_loop_owner): the CPU
 * throttle's wait and tick, the thaw before the end (each takes mu). */
int64_t sl_handle_throttle_wait_ms(void *h);
void sl_handle_throttle_tick(void *h);
void sl_handle_thaw_for_end(void *h);

#endif
