/*
 * handler.h — handler objects (user callbacks) and running one of them.
 *
 * Ownership: sandlock_run_with_handlers owns the handlers of its
 * registrations from entry, and releases them in exactly one place, on
 * every path: sl_handlers_release (called by run.c only).
 */
#ifndef SANDLOCK_HANDLER_H
#define SANDLOCK_HANDLER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandlock.h"

struct sandlock_handler {
	sandlock_handler_fn fn;
	void *ud;
	sandlock_ud_free_fn ud_free;
	uint32_t on_exception;
	bool deferred;
	sandlock_guard_fn guard;
	/* Calls in progress, plus SL_HANDLER_RELEASED once the run released
	 * it: no call starts after that (see sl_handlers_release). */
	atomic_uint use;
	struct sandlock_handler *parked_next; /* see park() in handler.c */
};
#define SL_HANDLER_RELEASED 0x80000000u

/* The registrations of one run.  The array is the caller's (valid for the
 * whole synchronous run); the handler objects are owned by the run. */
struct sl_handlers {
	const sandlock_registration_t *regs;
	size_t n;
};
/*
 * Release each distinct handler exactly once (NULL entries skipped), then
 * forget them.  The only function that releases a run's handlers.
 * abandoned: a thread of the run may still be inside (or about to enter)
 * a handler (run.c gave up waiting for it).  Then no handler object is
 * freed (a late thread may still read it), ud_free runs only for handlers
 * not in a call at that moment (none can start one afterwards), and the
 * ud of a handler still in a call is leaked.
 */
void sl_handlers_release(struct sl_handlers *hs, bool abandoned);

/*
 * Run one handler.  Returns true with *act set to the decision (a handler
 * error already turned into its policy's action), false when the handler
 * did not intervene (CONTINUE, or an error under the CONTINUE policy).
 */
bool sl_handler_call(sandlock_handler_t *h, const sandlock_notif_t *n, sandlock_mem_t *mem,
                     sandlock_action_t *act);
/* Close the fd an INJECT action owns (dropped or failed actions). */
void sl_action_discard(sandlock_action_t *act);

#endif /* SANDLOCK_HANDLER_H */
