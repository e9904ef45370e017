/*
 * stat.h — lookups in the merged view (stat.c).
 */
#ifndef SANDLOCK_BUILTINS_COW_STAT_H
#define SANDLOCK_BUILTINS_COW_STAT_H

#include <stdbool.h>

#include "builtins/builtin.h"
#include "builtins/cow/state.h"

/* stat/statx/access/readlink/getxattr/listxattr of rel in the merged
 * view: answered here unless the caller's own string finds the same real
 * file (shadowed false, rel real). */
bool sl_cowb_stat(struct cow_state *s, const struct sl_call *call, const char *rel,
                  bool shadowed, bool follow, sandlock_action_t *act);
/* A path that left workdir through something staged: reads performed,
 * changes refused (EACCES). */
bool sl_cowb_outside(struct cow_state *s, const struct sl_call *call, const char *path,
                     bool follow, sandlock_action_t *act);

#endif
