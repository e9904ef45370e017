/*
 * uts.h — the sandbox's virtual hostname (builtins/uts.c), also served
 * by the on-behalf opener for /proc/sys/kernel/hostname and /etc/hostname.
 */
#ifndef SANDLOCK_BUILTIN_UTS_H
#define SANDLOCK_BUILTIN_UTS_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

/* cfg->name, or "sandbox-<init>". */
void sl_uts_name(const struct sandlock_sandbox *cfg, pid_t init, char *out, size_t cap);

#endif /* SANDLOCK_BUILTIN_UTS_H */
