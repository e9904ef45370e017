/*
 * policy.h — the dynamic policy of builtins/policy.c, consulted by
 * builtins/netdest.c for the network calls it performs on the caller's
 * behalf: the callback sees the address netdest copied, and netdest then
 * performs the call with that very copy (nothing is re-read).
 */
#ifndef SANDLOCK_BUILTIN_POLICY_H
#define SANDLOCK_BUILTIN_POLICY_H

#include "net/sockdest.h"
#include "builtins/builtin.h"

/* The verdict is "end the sandbox". */
#define SL_POLICY_KILL (-1)

/*
 * The dynamic policy's word on call (syscall named `syscall`) reaching a:
 * static_err is the static policy's answer (0: allowed).  Returns 0 to go
 * ahead, a positive errno to refuse, or SL_POLICY_KILL.  Without a
 * policy_fn (or for a call the policy builtin did not see first) it
 * returns static_err unchanged.  Supervisor thread only.
 */
int sl_policy_net(const struct sl_call *call, const char *syscall, const struct sl_sockaddr *a,
                  int static_err);

/* Tests only: exec events skip the freeze (to show the race it closes). */
extern bool sl_policy_freeze_disabled;
/* Tests only: an allowed exec's new image is not checked against the argv
 * the callback saw (to show a writer the freeze cannot stop). */
extern bool sl_policy_verify_disabled;

#endif /* SANDLOCK_BUILTIN_POLICY_H */
