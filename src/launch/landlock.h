/*
 * landlock.h — Landlock rulesets: the filesystem and TCP policy, and
 * the scopes (abstract unix sockets, signals).  See docs/architecture.md
 * for which layers a sandbox gets and why.
 */
#ifndef SANDLOCK_LANDLOCK_H
#define SANDLOCK_LANDLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "config.h"

int sl_landlock_abi(void); /* cached; -1 when unavailable; min(kernel, cap) */
/* Test hook: when > 0, pretend the kernel's Landlock ABI is at most this. */
extern int sl_landlock_abi_cap;
/*
 * Create and fill a ruleset for cfg before fork.  Returns the ruleset fd,
 * or -1 with *err, *msg set.  Returns -2 when the kernel has no Landlock:
 * the run then fails with SANDLOCK_ERR_UNSUPPORTED (never a weaker sandbox).
 */
int sl_landlock_prepare(const struct sandlock_sandbox *cfg, int *err, char **msg);
/* Add a read + execute grant on directory dir (canonical) to a ruleset
 * sl_landlock_prepare made for cfg, before any thread applies it (a
 * builtin's run-time directory: builtin.h, ruleset).  0, or -1 with *msg. */
int sl_landlock_grant_read(int ruleset_fd, const struct sandlock_sandbox *cfg, const char *dir,
                           char **msg);
/* The filesystem rights a ruleset for cfg handles on this kernel (0: none). */
uint64_t sl_landlock_handled(const struct sandlock_sandbox *cfg);
/* Child side, raw syscalls only: restrict_self(ruleset_fd, flags). 0 or -errno. */
int sl_landlock_apply(int ruleset_fd, unsigned flags);

#endif /* SANDLOCK_LANDLOCK_H */
