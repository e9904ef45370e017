/*
 * open.h — opens and listings in the merged view (open.c).
 */
#ifndef SANDLOCK_BUILTINS_COW_OPEN_H
#define SANDLOCK_BUILTINS_COW_OPEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "builtins/builtin.h"
#include "builtins/cow/state.h"

/* Inject a read-only open of path (from base) made by the opener thread,
 * so Landlock decides on it as it would for the caller. */
bool sl_cowb_open_by_opener(const struct sl_call *call, int base, const char *path, int flags,
                            uint64_t resolve, sandlock_action_t *act);
/* open/openat/creat of the canonical rel (shadowed: the caller's string
 * would not reach it): staged, copied up or passed. */
bool sl_cowb_open(struct cow_state *s, const struct sl_call *call, const char *rel,
                  bool shadowed, int flags, mode_t mode, sandlock_action_t *act);
/* getdents64 of a workdir directory: the merged listing. */
bool sl_cowb_dents(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act);

#endif
