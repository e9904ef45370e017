/*
 * masked.c — linux.maskedPaths and linux.readonlyPaths (see masked.h).
 */
#include "masked.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The empty directory and file, in the state directory. */
#define MASK_DIR "masked"
#define MASK_FILE "masked-file"

/* An absolute path without "." or ".." names: the mount table's prefixes
 * are lexical, so the path must be too. */
static bool plain_path(const char *p)
{
	if (p[0] != '/')
		return false;
	for (const char *s = p; (s = strchr(s, '/')); s++) {
		size_t k = strcspn(s + 1, "/");
		if ((k == 1 && s[1] == '.') || (k == 2 && s[1] == '.' && s[2] == '.'))
			return false;
	}
	return true;
}

/* The guest path at index i of list: checked, and whether the guest has
 * it (st filled, *ro: where it lies is read-only).  1: present, 0: the
 * guest has no such path, -1: refused (said why). */
static int entry(const struct oci_fs *fs, json_t *list, const char *what, size_t i,
                 const char **path, struct stat *st, bool *ro)
{
	*path = json_string_value(json_array_get(list, i));
	if (!*path || !plain_path(*path)) {
		oci_error("linux.%s[%zu] '%s': must be an absolute path without '.' or '..'", what,
		          i, *path ? *path : "");
		return -1;
	}
	if (oci_fs_stat(fs, *path, st, ro) == 0)
		return 1;
	/* Missing, or a file on the way: nothing to mask or protect.  Any
	 * other failure masks anyway (fail closed). */
	return errno == ENOENT || errno == ENOTDIR ? 0 : 1;
}

/* The empty directory and the empty file masked paths are mapped to. */
static int make_empties(const char *dir, const char *file)
{
	int fd = -1;
	if (mkdir(dir, 0755) < 0 || chmod(dir, 0555) < 0 ||
	    (fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444)) < 0) {
		oci_error("linux.maskedPaths: the empty %s %s: %s", fd < 0 ? "file" : "directory",
		          fd < 0 ? file : dir, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

static int mask(sandlock_builder_t *b, struct oci_fs *fs, json_t *list, const char *scratch,
                bool make)
{
	char empty[OCI_PATH_MAX], empty_file[OCI_PATH_MAX];
	if (oci_state_path(scratch, MASK_DIR, empty, sizeof empty) < 0 ||
	    oci_state_path(scratch, MASK_FILE, empty_file, sizeof empty_file) < 0 ||
	    (make && make_empties(empty, empty_file) < 0))
		return -1;
	for (size_t i = 0; i < json_array_size(list); i++) {
		const char *p;
		struct stat st;
		bool ro;
		int has = entry(fs, list, "maskedPaths", i, &p, &st, &ro);
		if (has < 0)
			return -1;
		/* As runc: a directory becomes an empty one, anything else an
		 * empty file (runc binds /dev/null; a regular file here, as the
		 * view maps directories and regular files). */
		if (has && oci_fs_map(b, fs, p, S_ISDIR(st.st_mode) ? empty : empty_file, true) < 0)
			return -1;
	}
	return 0;
}

/* A path in a writable part of the view gets itself mapped read-only
 * over its own place (the builder's self_overlay); one already in a
 * read-only part needs nothing. */
static int read_only(sandlock_builder_t *b, struct oci_fs *fs, json_t *list)
{
	for (size_t i = 0; i < json_array_size(list); i++) {
		const char *p;
		struct stat st;
		bool ro;
		char host[OCI_PATH_MAX];
		int has = entry(fs, list, "readonlyPaths", i, &p, &st, &ro);
		if (has < 0)
			return -1;
		if (!has || ro)
			continue;
		if (S_ISLNK(st.st_mode) || oci_fs_host(fs, p, host, sizeof host) < 0) {
			oci_error("linux.readonlyPaths '%s': cannot be made read-only (%s)", p,
			          S_ISLNK(st.st_mode) ? "a symbolic link" : strerror(errno));
			return -1;
		}
		if (oci_fs_map(b, fs, p, host, true) < 0)
			return -1;
	}
	return 0;
}

int oci_masked_apply(sandlock_builder_t *b, struct oci_fs *fs, json_t *linux,
                     const char *scratch, bool make)
{
	json_t *masked = json_object_get(linux, "maskedPaths");
	if (json_array_size(masked) && mask(b, fs, masked, scratch, make) < 0)
		return -1;
	return read_only(b, fs, json_object_get(linux, "readonlyPaths"));
}
