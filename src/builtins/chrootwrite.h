/*
 * chrootwrite.h — the write-side path calls under chroot (chrootwrite.c),
 * for chroot.c.  Each takes the call's (dirfd, path address) as its
 * syscall has them and returns the call's result or -errno: EROFS in a
 * read-only mount, EACCES where the view is not writable, EBUSY/EXDEV for
 * a mount point (sl_view_busy).
 */
#ifndef SANDLOCK_BUILTINS_CHROOTWRITE_H
#define SANDLOCK_BUILTINS_CHROOTWRITE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "paths/chroot.h"
#include "builtins/builtin.h"

/* mkdir (dir) or mknod; an existing name is EEXIST first. */
long sl_chroot_create(const struct sl_view *v, const struct sl_call *call, int dirfd,
                      uint64_t addr, mode_t mode, dev_t dev, bool dir);
/* unlink, or rmdir with AT_REMOVEDIR in flags. */
long sl_chroot_unlink(const struct sl_view *v, const struct sl_call *call, int dirfd,
                      uint64_t addr, int flags);
/* symlink: target (an address) stays a guest path. */
long sl_chroot_symlink(const struct sl_view *v, const struct sl_call *call, uint64_t target,
                       int dirfd, uint64_t addr);
/* rename* (flags: renameat2's), or link* with link. */
long sl_chroot_pair(const struct sl_view *v, const struct sl_call *call, int d1, uint64_t p1,
                    int d2, uint64_t p2, unsigned flags, bool link);
/* chmod, chown, utimensat, truncate on the file itself (follow: its last
 * symlink). */
long sl_chroot_meta(const struct sl_view *v, const struct sl_call *call, int dirfd,
                    uint64_t addr, bool follow);

#endif
