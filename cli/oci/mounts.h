/*
 * mounts.h — root.path and config.json's mounts as the virtual chroot
 * and its fs_mounts: bind -> fs_mount (ro with "ro"), tmpfs -> a private
 * scratch directory in the state directory (removed by delete), proc ->
 * the host's /proc seen through sandlock's /proc policy (read-only),
 * sysfs -> the host's /sys read-only, /dev -> a minimal /dev (null, zero,
 * full, random, urandom, tty).  A bind of a single file (podman's
 * /etc/hosts, /etc/hostname, /etc/resolv.conf) is an fs_mount of that
 * file: live, as runc's bind.
 */
#ifndef SANDLOCK_OCI_MOUNTS_H
#define SANDLOCK_OCI_MOUNTS_H

#include <stdbool.h>

#include <jansson.h>

#include "sandlock.h"

/* 0, or -1 after naming the mount.  make: create the scratch directories
 * under scratch (create); else they must exist (exec).  Then
 * maskedPaths and readonlyPaths (masked.h). */
int oci_mounts_apply(sandlock_builder_t *b, json_t *config, const char *bundle,
                     const char *scratch, bool make);

#endif
