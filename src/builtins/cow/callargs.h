/*
 * callargs.h — what a path call's arguments say (callargs.c), for the
 * copy-on-write builtin's parts.
 */
#ifndef SANDLOCK_BUILTINS_COW_CALLARGS_H
#define SANDLOCK_BUILTINS_COW_CALLARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "builtins/builtin.h"

/* A call that only reads (lookups, listings, opens without write flags). */
bool sl_cowb_reads_only(int nr, const uint64_t *a);
/* The kernel's errno for a call that names "." or ".." as what it
 * creates, removes or renames, or 0. */
int sl_cowb_dot_refusal(const struct sl_call *call);

#endif
