/*
 * masked.h — config.json's linux.maskedPaths and linux.readonlyPaths.
 *
 * A masked path is made empty as runc makes it: an empty read-only
 * directory mapped over a directory, an empty read-only file over
 * anything else (scratch files of the container; runc binds /dev/null),
 * so the guest reads nothing of it by any route (the view
 * maps every path, "..", symlinks and dirfds included, through the
 * longest mount).  A read-only path must take no writes: where it lies
 * in a read-only part of the view (the /proc and /sys views, a read-only
 * root or mount) nothing more is needed; in a writable one its own host
 * path is mapped read-only over it.  Paths the guest does not have are
 * skipped, as runc skips them.
 */
#ifndef SANDLOCK_OCI_MASKED_H
#define SANDLOCK_OCI_MASKED_H

#include <stdbool.h>

#include <jansson.h>

#include "guestfs.h"
#include "sandlock.h"

/* linux: config.json's "linux" (may be NULL).  scratch, make: as
 * oci_mounts_apply (the empty directory is made at create).  0, or -1
 * after naming the path. */
int oci_masked_apply(sandlock_builder_t *b, struct oci_fs *fs, json_t *linux,
                     const char *scratch, bool make);

#endif
