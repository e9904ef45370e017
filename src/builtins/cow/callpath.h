/*
 * callpath.h — the path a call names, in the copy-on-write layer's space
 * and resolved in its merged view (callpath.c).
 */
#ifndef SANDLOCK_BUILTINS_COW_CALLPATH_H
#define SANDLOCK_BUILTINS_COW_CALLPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "builtins/builtin.h"
#include "builtins/cow/state.h"

/* Resolve the path argument (dirfd, addr) of call in the merged view
 * (cowpath.h).  1 with *res filled; 0: not ours, pass; -errno: the answer. */
int sl_cowb_resolve_arg(struct cow_state *s, const struct sl_call *call, int dirfd, uint64_t addr,
                        bool follow, struct sl_cow_res *res);

/* The same for a path already copied from the caller (a socket
 * address's), relative to its cwd; /proc/self already rewritten. */
int sl_cowb_resolve_str(struct cow_state *s, const struct sl_call *call, const char *path,
                        bool follow, struct sl_cow_res *res);

#endif
