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

/* The call's path argument at addr, read by the one caller-path reader
 * (childfd.h, sl_child_read_path; follow: the call follows its last
 * name).  Heap (free()); NULL with *e (EFAULT, ENAMETOOLONG, ...). */
char *sl_chroot_read(const struct sl_call *call, uint64_t addr, bool follow, int *e);
/* The guest path of the call's (dirfd, addr), read once.  0 or an errno;
 * *empty when the path is "" (an fd-based form). */
int sl_chroot_guest_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                         uint64_t addr, bool follow, char *out, size_t cap, bool *empty);
/* Open path (read from the caller, relative to its dirfd) in the view as
 * O_PATH (| extra); *ro: under a read-only mount.  fd or -errno;
 * -ENOTEMPTY marks an empty path (for the caller to pass). */
int sl_chroot_open_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                        const char *path, int extra, bool *ro);
/* As sl_chroot_open_path, the path read at addr (followed unless extra
 * has O_NOFOLLOW). */
int sl_chroot_open_call_path(const struct sl_view *v, const struct sl_call *call, int dirfd,
                             uint64_t addr, int extra, bool *ro);
/* The result of a libc call: 0 or -errno. */
long sl_chroot_rc(int r);

#endif
