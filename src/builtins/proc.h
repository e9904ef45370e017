/*
 * proc.h — the open performed on the caller's behalf by the run's opener
 * (builtins/proc.c), also used by the builtins that serve opens (hosts,
 * chroot, policy).  The /proc policy itself is procpolicy.h.
 */
#ifndef SANDLOCK_BUILTIN_PROC_H
#define SANDLOCK_BUILTIN_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "opener/opener.h"
#include "builtins/builtin.h"
#include "opener/procpolicy.h"

/* proc.c performs every open of the run on the caller's behalf (/proc
 * readable, or the views of num_cpus or random_seed to serve): another
 * builtin that needs the opens to go through the opener leaves them to it. */
bool sl_proc_opens_on_behalf(const struct sandlock_sandbox *cfg);

/* The open call performed by the run's opener (the /proc policy and
 * check, if any, applied to the file it opened) and its fd injected as
 * the answer; an errno answer when it cannot be.  Always decides. */
bool sl_open_on_behalf(const struct sl_call *call, sl_opener_check_fn check, void *ud,
                       sandlock_action_t *act);

#endif /* SANDLOCK_BUILTIN_PROC_H */
