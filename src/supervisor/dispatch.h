/*
 * dispatch.h — deciding and answering one notification.
 *
 * Built from the builtin table (builtins/table.c) and the run's user
 * handlers: the trapped syscall set and one chain per syscall.  Used by
 * supervisor.c (the loop); the dispatcher is the only caller of respond.c.
 */
#ifndef SANDLOCK_DISPATCH_H
#define SANDLOCK_DISPATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>
#include <sys/types.h>

#include "config.h"
#include "supervisor/handler.h"
#include "trap.h"

struct sl_dispatch;
/* Builtins for cfg, then hs in order.  Does not own the handlers.  NULL
 * with *err, *msg on a bad registration or OOM. */
struct sl_dispatch *sl_dispatch_new(const struct sandlock_sandbox *cfg,
                                    const struct sl_handlers *hs, int *err, char **msg);
/* What must reach the supervisor, for the filter (trap.h: normalized). */
size_t sl_dispatch_trapped(const struct sl_dispatch *d, const struct sl_trap **traps);
/* After the launch prepared its Landlock ruleset, before the listener is
 * served: start the on-behalf opener (opener.h) confined by it, if the
 * run needs one.  0, or -1 with *err, *msg. */
int sl_dispatch_use_ruleset(struct sl_dispatch *d, int ruleset_fd, int *err, char **msg);
/* Before the first notification: the listener (duplicated: the
 * dispatcher answers through its own copy) and the sandbox's init.  0 or -1. */
int sl_dispatch_bind(struct sl_dispatch *d, int listener, pid_t init);
int sl_dispatch_listener(const struct sl_dispatch *d);
/* The supervisor thread could not go on (errno e); 0 while it runs. */
void sl_dispatch_fail(struct sl_dispatch *d, int e);
int sl_dispatch_failed(struct sl_dispatch *d);
/* The run is over (call before init is reaped): answer nothing more. */
void sl_dispatch_close(struct sl_dispatch *d);
/* Decide n and answer it (supervisor thread). */
void sl_dispatch_one(struct sl_dispatch *d, const sandlock_notif_t *n);
/* Answer overdue deferred calls, run the services' timed work that is
 * due (services.h); ms until the next deadline, or -1. */
int sl_dispatch_expire(struct sl_dispatch *d);
/* Non-zero if a KILL decision ended the sandbox; *sig = its signal. */
int sl_dispatch_killed(struct sl_dispatch *d, int *sig);
/* Wait for deferred workers until the CLOCK_REALTIME time at (NULL: for
 * ever); false if some were abandoned (still in a handler). */
bool sl_dispatch_quiesce(struct sl_dispatch *d, const struct timespec *at);
/* Reference counting: the creator holds one; the last unref frees. */
void sl_dispatch_ref(struct sl_dispatch *d);
void sl_dispatch_unref(struct sl_dispatch *d);
struct sandlock_result;
/* After the run: builtins' end-of-run work (the COW commit), into r. */
void sl_dispatch_finish(struct sl_dispatch *d, struct sandlock_result *r);
/* The run's services (services.h), made with the dispatcher. */
struct sl_services *sl_dispatch_services(struct sl_dispatch *d);

#endif /* SANDLOCK_DISPATCH_H */
