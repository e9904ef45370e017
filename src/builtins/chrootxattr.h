/* chrootxattr.h — path xattr calls under chroot (chrootxattr.c), for chroot.c. */
#ifndef SANDLOCK_BUILTINS_CHROOTXATTR_H
#define SANDLOCK_BUILTINS_CHROOTXATTR_H

#include <stdbool.h>

#include "paths/chroot.h"
#include "builtins/builtin.h"

/* True for get/set/list/removexattr and their l* forms; *follow: whether
 * the last component's symlink is followed. */
bool sl_chroot_is_xattr(int nr, bool *follow);
/* Perform call (an xattr call) on fd, the O_PATH file its path names in
 * the view (ro: under a read-only mount).  The result or -errno. */
long sl_chroot_xattr(const struct sl_view *v, const struct sl_call *call, int fd, bool ro);

#endif
