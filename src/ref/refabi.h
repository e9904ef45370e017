/* refabi.h — the reference's policy_fn over ours (refabi.c), for builder.c. */
#ifndef SANDLOCK_REFABI_H
#define SANDLOCK_REFABI_H

#include "sandlock.h"

/* An adapter holding the reference callback, its user data and drop;
 * NULL when out of memory.  sl_ref_policy_call is our sandlock_policy_fn
 * over it, sl_ref_policy_free drops the user data and the adapter. */
void *sl_ref_policy_new(sandlock_policy_fn_t cb, void *ud, void (*drop)(void *));
int32_t sl_ref_policy_call(void *adapter, const sandlock_policy_event_t *ev,
                           sandlock_policy_ctx_t *ctx);
void sl_ref_policy_free(void *adapter);

/* policy under another name for one synchronous run (NULL name: policy
 * itself): a shallow copy in *copy; NULL for a name over 64 bytes. */
const sandlock_sandbox_t *sl_named_policy(const sandlock_sandbox_t *policy, const char *name,
                                          sandlock_sandbox_t *copy);
/* One more holder of a built sandbox (sandlock_sandbox_free drops one). */
void sl_sandbox_ref(const sandlock_sandbox_t *sb);

/* fn(arg) once the handle is destroyed, after everything of its run
 * (refspawn.c: a policy copy the run used).  One per handle. */
void sl_handle_on_free(sandlock_handle_t *h, void (*fn)(void *), void *arg);

#endif
