/*
 * supervisor.h — the notification thread of a run (used by run.c).
 * It polls the listener and hands each notification to the dispatcher.
 */
#ifndef SANDLOCK_SUPERVISOR_H
#define SANDLOCK_SUPERVISOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "supervisor/handler.h"

struct sl_supervisor;
struct sl_trap;
/* Dispatch tables for cfg and hs (not owned).  NULL with *err, *msg. */
struct sl_supervisor *sl_supervisor_new(const struct sandlock_sandbox *cfg,
                                        const struct sl_handlers *hs, int *err, char **msg);
/* The syscall numbers that must reach the supervisor (sorted, unique). */
size_t sl_supervisor_trapped(const struct sl_supervisor *s, const struct sl_trap **traps);
/* Start the thread on listener (not owned) for the sandbox whose init is init. */
/* Hand the supervisor the launch's Landlock ruleset (for the on-behalf
 * opener) before start.  0, or -1 with *err, *msg. */
int sl_supervisor_use_ruleset(struct sl_supervisor *s, int ruleset_fd, int *err, char **msg);
int sl_supervisor_start(struct sl_supervisor *s, int listener, pid_t init, int *err,
                        char **msg);
/* The errno that stopped the notification thread (its poll or receive
 * failed: nothing is answered any more), or 0. */
int sl_supervisor_failed(struct sl_supervisor *s);
/* Non-zero if a handler action or KILL policy killed the sandbox; *sig = signal. */
int sl_supervisor_killed(struct sl_supervisor *s, int *sig);
struct sandlock_result;
/* After the run, before free: builtins' end-of-run work into r. */
void sl_supervisor_finish(struct sl_supervisor *s, struct sandlock_result *r);
/* The run's services (services.h: its port map, chroot view, ...). */
struct sl_services *sl_supervisor_services(struct sl_supervisor *s);
/* The run is over: no notification is answered from now on (call before
 * the sandbox's init is reaped, so that no KILL can reach a recycled pid). */
void sl_supervisor_close(struct sl_supervisor *s);
/*
 * Stop the thread and the deferred workers, waiting at most grace_ms for
 * each (-1: for ever).  False if some were still in a handler and were
 * abandoned: they keep what they use alive until their handler returns,
 * and the run's handlers must then be released with abandoned = true.
 */
bool sl_supervisor_stop(struct sl_supervisor *s, int64_t grace_ms);
/* Stop if needed, then drop the run's share (not the handlers: run.c owns them). */
void sl_supervisor_free(struct sl_supervisor *s);

#endif /* SANDLOCK_SUPERVISOR_H */
