/*
 * llrule.h — one Landlock rule on an open file (llrule.c).
 *
 * A leaf of its own so that the files adding device rules to a ruleset
 * (devmin.c, gpu.c), which landlock.c calls while it builds one, need not
 * call back into landlock.c.
 */
#ifndef SANDLOCK_LLRULE_H
#define SANDLOCK_LLRULE_H

#include <stdbool.h>
#include <stdint.h>

/* One rule on fd (any fd of a file in a mountable filesystem); rights are
 * masked to the file rights for a non-directory.  0 or -errno. */
int sl_landlock_add_fd_rule(int ruleset, int fd, uint64_t rights, bool is_dir);

#endif /* SANDLOCK_LLRULE_H */
