/*
 * guestfs.c — the guest's filesystem as the mounts made it (guestfs.h):
 * the table mounts.c fills and masked.c reads, in a file of its own so
 * that mounts.c, which runs masked.c after the mounts, is not called back.
 */
#include "guestfs.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

int oci_fs_map(sandlock_builder_t *b, struct oci_fs *fs, const char *dest, const char *host,
               bool ro)
{
	if (fs->n == OCI_MAX_MOUNTS) {
		oci_error("mounts: more than %d directories to map at %s", OCI_MAX_MOUNTS, dest);
		return -1;
	}
	struct oci_mnt *m = &fs->m[fs->n++];
	m->dest = dest;
	m->ro = ro;
	snprintf(m->host, sizeof m->host, "%s", host);
	if (ro)
		sandlock_sandbox_builder_fs_mount_ro(b, dest, host);
	else
		sandlock_sandbox_builder_fs_mount(b, dest, host);
	return 0;
}

/* Length of prefix if the guest path p is prefix or lies below it, else 0. */
static size_t below(const char *p, const char *prefix)
{
	size_t k = strlen(prefix);
	while (k > 1 && prefix[k - 1] == '/')
		k--;
	return strncmp(p, prefix, k) == 0 && (p[k] == '/' || p[k] == '\0') ? k : 0;
}

/* The place of the absolute guest path guest: the host directory holding
 * it into host, the rest (relative, "." for the directory itself) into
 * rel, its read-only flag into *ro.  0, or -1 if too long. */
static int fs_place(const struct oci_fs *fs, const char *guest, char *host, char *rel,
                    size_t cap, bool *ro)
{
	size_t best = 0;
	const struct oci_mnt *bm = NULL;
	for (size_t i = 0; i < fs->n; i++) {
		size_t k = below(guest, fs->m[i].dest);
		if (k > best) {
			best = k;
			bm = &fs->m[i];
		}
	}
	const char *rest = guest + best;
	while (*rest == '/')
		rest++;
	*ro = bm ? bm->ro : fs->root_ro;
	if (snprintf(host, cap, "%s", bm ? bm->host : fs->rootfs) >= (int)cap ||
	    snprintf(rel, cap, "%s", *rest ? rest : ".") >= (int)cap)
		return -1;
	return 0;
}

int oci_open_in_root(int rootfd, const char *p, int flags, mode_t mode)
{
	struct open_how how = { .flags = (uint64_t)flags | O_CLOEXEC, .mode = mode,
		                .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS };
	return (int)syscall(SYS_openat2, rootfd, p, &how, sizeof how);
}

int oci_fs_host(const struct oci_fs *fs, const char *guest, char *out, size_t cap)
{
	char host[OCI_PATH_MAX], rel[OCI_PATH_MAX], link[64];
	bool ro;
	if (fs_place(fs, guest, host, rel, sizeof host, &ro) < 0)
		return -1;
	int dir = open(host, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int fd = dir < 0 ? -1 : oci_open_in_root(dir, rel, O_PATH | O_NOFOLLOW, 0);
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t n = fd < 0 ? -1 : readlink(link, out, cap - 1);
	if (n >= 0)
		out[n] = '\0';
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	return n > 0 && (size_t)n < cap - 1 ? 0 : -1;
}

int oci_fs_stat(const struct oci_fs *fs, const char *guest, struct stat *st, bool *ro)
{
	char host[OCI_PATH_MAX], rel[OCI_PATH_MAX];
	if (fs_place(fs, guest, host, rel, sizeof host, ro) < 0)
		return -1;
	if (strcmp(rel, ".") == 0) /* a mount itself (a file one too) */
		return stat(host, st);
	int dir = open(host, O_PATH | O_DIRECTORY | O_CLOEXEC); /* ENOTDIR below a file */
	int fd = dir < 0 ? -1 : oci_open_in_root(dir, rel, O_PATH | O_NOFOLLOW, 0);
	int rc = fd < 0 || fstat(fd, st) < 0 ? -1 : 0;
	if (fd >= 0)
		close(fd);
	if (dir >= 0)
		close(dir);
	return rc;
}
