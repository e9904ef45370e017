/*
 * runloop.h — the loop that supervises one released run from outside
 * (runloop.c), for run.c: capture the output, keep the deadline, end the
 * sandbox, reap and sweep it, say why it ended.
 */
#ifndef SANDLOCK_RUNLOOP_H
#define SANDLOCK_RUNLOOP_H

#include <signal.h>
#include <stdatomic.h>

#include "launch/launch.h"
#include "run/cgroup.h"
#include "util.h"

struct sl_supervisor;

/* One captured stream: where it goes and how much of it may be kept. */
struct sl_stream {
	sl_buf *buf;
	uint64_t *dropped; /* bytes read past the cap (or lost to OOM), discarded */
	uint64_t cap;      /* 0 = unlimited */
};

/* Why the loop could not go on (its own poll/read failed). */
struct sl_loop_error {
	int e;
	const char *what;
};

/*
 * What the loop asks of the run that owns it (run.c, under its lock):
 * how long the CPU throttle lets it sleep, the throttle's tick between
 * polls, and the thaw of a frozen sandbox before it is ended.
 */
struct sl_loop_owner {
	void *h;
	int64_t (*throttle_wait_ms)(void *h);
	void (*throttle_tick)(void *h);
	void (*thaw_for_end)(void *h);
};

/*
 * Capture output until the child exits; end the sandbox at the deadline
 * (timeout_ms, 0: none) or once the supervisor or the caller killed it.
 * 0, or -1 when the loop itself failed (*le): the caller then kills the
 * sandbox with sl_end_unsupervised.
 */
int sl_io_loop(const struct sl_loop_owner *o, struct sl_launch *L, const struct sl_stream *out,
               const struct sl_stream *err, struct sl_supervisor *sup, uint64_t timeout_ms,
               const atomic_bool *caller_kill, bool *timed_out, struct sl_loop_error *le);
/* Bounded drain of whatever group members wrote before they died. */
void sl_io_drain(struct sl_launch *L, const struct sl_stream *out, const struct sl_stream *err);
/* The loop failed: end the sandbox without it, using no new fd. */
void sl_end_unsupervised(struct sl_launch *L, struct sl_cgroup *cg);
/* Kill every leftover of init's group (and cgroup), then reap init into *si. */
void sl_reap_and_sweep(struct sl_launch *L, siginfo_t *si, struct sl_cgroup *cg);
/* The result's reason, signal and exit code from init's status. */
void sl_set_reason(sandlock_result_t *r, const siginfo_t *si, bool timed_out,
                   struct sl_supervisor *sup, bool caller_kill);
/* True once the child has exited (not reaped: WNOWAIT). */
bool sl_child_exited(pid_t pid);
/* waitid(pid, WEXITED | flags) into *si, again after EINTR. */
void sl_wait_child(pid_t pid, siginfo_t *si, int flags);
/* The run loop failed (*le): the sandbox was killed; there is no result. */
void sl_loop_error_report(const struct sl_loop_error *le, int *err, char **msg);

#endif
