/*
 * exec.h — exec, chdir and getcwd in the merged view (exec.c).
 */
#ifndef SANDLOCK_BUILTINS_COW_EXEC_H
#define SANDLOCK_BUILTINS_COW_EXEC_H

#include <stdbool.h>

#include "builtins/builtin.h"
#include "builtins/cow/state.h"

/* execve/execveat of a staged program, or a real one the caller's string
 * does not reach: the kernel is given its host path. */
bool sl_cowb_exec(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act);
/* chdir into a directory only the view reaches: its host path swapped in. */
bool sl_cowb_chdir(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act);
/* getcwd in the upper layer: the path of the place it mirrors. */
bool sl_cowb_getcwd(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act);

#endif
