/*
 * respond.h — turning a decision into the kernel's answer.
 * Used by dispatch.c only: it is the one place that answers the kernel.
 * Thread-safe (the supervisor thread and deferred completions call it).
 */
#ifndef SANDLOCK_RESPOND_H
#define SANDLOCK_RESPOND_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandlock.h"

struct sl_responder {
	int listener;
	pid_t init; /* the sandbox's init, == its pgid: what KILL ends */
	atomic_int killed;
	atomic_int kill_sig;
	/* HOLD: notifications deliberately left pending (any thread) */
	pthread_mutex_t held_lock;
	uint64_t *held;
	size_t nheld, capheld;
};

void sl_responder_init(struct sl_responder *r);
void sl_responder_bind(struct sl_responder *r, int listener, pid_t init);
void sl_responder_destroy(struct sl_responder *r);
/* Answer n with act (consumes any inject fd). */
void sl_respond(struct sl_responder *r, const sandlock_notif_t *n, sandlock_action_t *act);
/* Non-zero if a KILL decision ended the sandbox; *sig = its signal. */
int sl_responder_killed(struct sl_responder *r, int *sig);

#endif /* SANDLOCK_RESPOND_H */
