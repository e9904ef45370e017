/*
 * guestfs.h — the guest's filesystem as the mounts made it: where a guest
 * path lives (the rootfs, or the host directory of the longest mount above
 * it) and whether it is read-only there.  mounts.c fills it, masked.c
 * (maskedPaths, readonlyPaths) reads it.
 */
#ifndef SANDLOCK_OCI_GUESTFS_H
#define SANDLOCK_OCI_GUESTFS_H

#include <stdbool.h>
#include <sys/types.h>

#include "sandlock.h"
#include "state.h"

#define OCI_MAX_MOUNTS 64
struct oci_fs {
	char rootfs[OCI_PATH_MAX];
	bool root_ro;
	size_t n;
	struct oci_mnt {
		const char *dest; /* borrowed from config.json */
		char host[OCI_PATH_MAX];
		bool ro;
	} m[OCI_MAX_MOUNTS];
};

/* lstat of the guest path as the mounts place it (resolved inside its
 * rootfs or mount directory, the last name not followed), *ro: whether
 * its place is read-only.  0, or -1 with errno (ENOENT: the guest has no
 * such path). */
struct stat;
int oci_fs_stat(const struct oci_fs *fs, const char *guest, struct stat *st, bool *ro);

/* The canonical host path behind the guest path (resolved inside its
 * rootfs or mount directory, the last name not followed).  0, or -1. */
int oci_fs_host(const struct oci_fs *fs, const char *guest, char *out, size_t cap);

/* Map the host directory or regular file host at guest dest (read-only
 * with ro), and note it in fs.  0, or -1 after saying why (too many). */
int oci_fs_map(sandlock_builder_t *b, struct oci_fs *fs, const char *dest, const char *host,
               bool ro);

/* openat2 of p beneath rootfd as if rootfd were / (RESOLVE_IN_ROOT, no
 * magic links): an image's symlinks cannot lead out of it.  fd or -1. */
int oci_open_in_root(int rootfd, const char *p, int flags, mode_t mode);

#endif
