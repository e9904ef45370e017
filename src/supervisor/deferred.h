/*
 * deferred.h — running slow handlers on a bounded worker pool.
 *
 * The pool decides nothing about the kernel: every finished call (or one
 * that timed out: EIO) is handed to the completion function given at
 * creation (the dispatcher's), which answers it.
 */
#ifndef SANDLOCK_DEFERRED_H
#define SANDLOCK_DEFERRED_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "sandlock.h"

#define SL_DEFERRED_MAX 64 /* deferred calls in flight (and worker threads) */

/* Called once per submitted call, from a worker or the loop thread. */
typedef void (*sl_deferred_done_fn)(void *ctx, const sandlock_notif_t *n,
                                    sandlock_action_t *act);

struct sl_deferred;
/* hold/drop: every worker holds ctx (e.g. a reference count) from its
 * creation until its very last instruction that touches the pool, so an
 * abandoned worker (sl_deferred_stop) never outlives what it uses. */
struct sl_deferred *sl_deferred_new(uint64_t timeout_ms, sl_deferred_done_fn done, void *ctx,
                                    void (*hold)(void *ctx), void (*drop)(void *ctx));
/* Hand n to a worker for h.  0, or an errno the call must be denied with
 * (EPERM: cannot be deferred; EAGAIN: over the cap). */
int sl_deferred_submit(struct sl_deferred *d, sandlock_handler_t *h,
                       const sandlock_notif_t *n, int listener);
/* Complete overdue calls with EIO; returns ms until the next deadline or -1. */
int sl_deferred_expire(struct sl_deferred *d);
/* Stop taking jobs and wait for every worker until the CLOCK_REALTIME
 * time at (NULL: for ever).  Workers still busy then are detached: false. */
bool sl_deferred_stop(struct sl_deferred *d, const struct timespec *at);
/* Free the pool: only once no worker is left (see hold/drop). */
void sl_deferred_free(struct sl_deferred *d);

#endif /* SANDLOCK_DEFERRED_H */
