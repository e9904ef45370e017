/*
 * chrootcall.h — a trapped call's path in the chroot view (chrootcall.c),
 * for chroot.c and chrootwrite.c.
 */
#ifndef SANDLOCK_BUILTINS_CHROOTCALL_H
#define SANDLOCK_BUILTINS_CHROOTCALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "paths/chroot.h"
#include "builtins/builtin.h"

/* The guest path of the call's (dirfd, addr), read once.  0 or an errno;
 * *empty when the path is "" (an fd-based form). */
int sl_chroot_guest_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                         uint64_t addr, char *out, size_t cap, bool *empty);
/* Open (dirfd, addr) in the view as O_PATH (| extra); *ro: under a
 * read-only mount.  fd or -errno; -ENOTEMPTY marks an empty path (for the
 * caller to pass). */
int sl_chroot_open_call_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                             uint64_t addr, int extra, bool *ro);
/* The result of a libc call: 0 or -errno. */
long sl_chroot_rc(int r);

#endif
