/*
 * stage.h — changes staged in the layer other than opens (stage.c).
 */
#ifndef SANDLOCK_BUILTINS_COW_STAGE_H
#define SANDLOCK_BUILTINS_COW_STAGE_H

#include <stdbool.h>
#include <stdint.h>

#include "builtins/builtin.h"
#include "builtins/cow/state.h"

/* chmod/chown/utimensat/setxattr/removexattr of rel: its upper copy. */
bool sl_cowb_meta(struct cow_state *s, const struct sl_call *call, const char *rel,
                  bool follow, sandlock_action_t *act);
/* rename/link: both paths under workdir, or EXDEV; false: neither is. */
bool sl_cowb_pair(struct cow_state *s, const struct sl_call *call, int d1, uint64_t p1, int d2,
                  uint64_t p2, sandlock_action_t *act);
/* truncate(2) of rel: the staged copy, charged when it grows. */
long sl_cowb_truncate(struct cow_state *s, const char *rel, uint64_t len);

#endif
