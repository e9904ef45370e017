/*
 * mounts.c — the guest's filesystem: the rootfs as the virtual chroot,
 * each OCI mount as what it means in a view without mount namespaces.
 */
#include "mounts.h"
#include "guestfs.h"
#include "log.h"
#include "masked.h"
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* path made absolute against the bundle into out. */
static int bundle_path(const char *bundle, const char *path, char *out, size_t cap)
{
	int n = path[0] == '/' ? snprintf(out, cap, "%s", path)
	                       : snprintf(out, cap, "%s/%s", bundle, path);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static bool has_opt(json_t *opts, const char *o)
{
	size_t i;
	json_t *v;
	json_array_foreach(opts, i, v) {
		const char *s = json_string_value(v);
		if (s && strcmp(s, o) == 0)
			return true;
	}
	return false;
}

/* The value of "key=..." among the options, or NULL. */
static const char *opt_value(json_t *opts, const char *key)
{
	size_t i, kl = strlen(key);
	json_t *v;
	json_array_foreach(opts, i, v) {
		const char *s = json_string_value(v);
		if (s && strncmp(s, key, kl) == 0 && s[kl] == '=')
			return s + kl + 1;
	}
	return NULL;
}

/* mkdir -p of guest path dir inside the rootfs, every step resolved in it
 * (a symlink in the image cannot make us write outside).  0, or -1. */
static int mkdirs_in_root(int rootfd, const char *dir)
{
	char p[OCI_PATH_MAX];
	if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p)
		return -1;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		int fd = oci_open_in_root(rootfd, p, O_PATH | O_DIRECTORY, 0);
		if (fd < 0) {
			char *slash = strrchr(p, '/');
			*slash = '\0';
			int parent = oci_open_in_root(rootfd, p[0] ? p : "/", O_PATH | O_DIRECTORY, 0);
			*slash = '/';
			if (parent < 0 || (mkdirat(parent, slash + 1, 0755) < 0 && errno != EEXIST)) {
				if (parent >= 0)
					close(parent);
				return -1;
			}
			close(parent);
		} else {
			close(fd);
		}
		*s = c;
		if (c == '\0')
			return 0;
	}
}

/* The mount point of a bind of one file, as runc makes it: the directory
 * holding it, and an empty file where the image has none (so the guest
 * walks to it and lists it); the image's own file is left as it is. */
static int file_mount_point(int rootfd, const char *dest, size_t idx)
{
	char parent[OCI_PATH_MAX];
	snprintf(parent, sizeof parent, "%s", dest);
	char *slash = strrchr(parent, '/');
	if (slash && slash != parent) {
		*slash = '\0';
		if (mkdirs_in_root(rootfd, parent) < 0) {
			oci_error("mounts[%zu]: cannot make %s in the rootfs: %s", idx, parent,
			          strerror(errno));
			return -1;
		}
	}
	int fd = oci_open_in_root(rootfd, dest, O_PATH | O_NOFOLLOW, 0);
	if (fd < 0)
		fd = oci_open_in_root(rootfd, dest, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
	if (fd < 0) {
		oci_error("mounts[%zu]: cannot make the mount point %s in the rootfs: %s", idx, dest,
		          strerror(errno));
		return -1;
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

static int bind_mount(sandlock_builder_t *b, struct oci_fs *fs, int rootfd, const char *bundle,
                      json_t *m, const char *dest, size_t idx, bool make)
{
	const char *src = json_string_value(json_object_get(m, "source"));
	char host[OCI_PATH_MAX];
	struct stat st;
	if (!src || bundle_path(bundle, src, host, sizeof host) < 0 || stat(host, &st) < 0) {
		oci_error("mounts[%zu] (%s): source '%s': %s", idx, dest, src ? src : "",
		          src ? strerror(errno) : "missing");
		return -1;
	}
	bool ro = has_opt(json_object_get(m, "options"), "ro");
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		oci_error("mounts[%zu] (%s): source %s is neither a directory nor a regular file; "
		          "sandlock maps those", idx, dest, host);
		return -1;
	}
	if (make && S_ISREG(st.st_mode) && file_mount_point(rootfd, dest, idx) < 0)
		return -1;
	if (make && S_ISDIR(st.st_mode))
		mkdirs_in_root(rootfd, dest); /* the mount point, as runc makes it */
	return oci_fs_map(b, fs, dest, host, ro);
}

/* The devices runc makes in a container's /dev: harmless character
 * devices, made with mknod when the runtime may (CAP_MKNOD). */
static void make_dev(const char *dir)
{
	static const struct { const char *name; unsigned maj, min; } devs[] = {
		{ "null", 1, 3 }, { "zero", 1, 5 },    { "full", 1, 7 },
		{ "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
	};
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	for (size_t i = 0; i < sizeof devs / sizeof *devs; i++)
		if (mknodat(dfd, devs[i].name, S_IFCHR | 0666, makedev(devs[i].maj, devs[i].min)) < 0)
			oci_warn("/dev/%s: not made (%s; device nodes need CAP_MKNOD)", devs[i].name,
			         strerror(errno));
		else
			fchmodat(dfd, devs[i].name, 0666, 0); /* past the umask */
	static const char *const dirs[] = { "shm", "pts", "mqueue" };
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
		mkdirat(dfd, dirs[i], 0755);
	static const char *const links[][2] = { { "fd", "/proc/self/fd" },
		                                { "stdin", "/proc/self/fd/0" },
		                                { "stdout", "/proc/self/fd/1" },
		                                { "stderr", "/proc/self/fd/2" } };
	for (size_t i = 0; i < sizeof links / sizeof *links; i++)
		symlinkat(links[i][1], dfd, links[i][0]);
	close(dfd);
}

static int tmpfs_mount(sandlock_builder_t *b, struct oci_fs *fs, int rootfd, json_t *m,
                       const char *dest, const char *scratch, size_t idx, bool make)
{
	json_t *opts = json_object_get(m, "options");
	char dir[OCI_PATH_MAX];
	char name[32];
	snprintf(name, sizeof name, "tmpfs-%zu", idx);
	if (oci_state_path(scratch, name, dir, sizeof dir) < 0)
		return -1;
	if (make) {
		const char *mode = opt_value(opts, "mode");
		if (mkdir(dir, 0755) < 0 || (mode && chmod(dir, (mode_t)strtoul(mode, NULL, 8)) < 0)) {
			oci_error("mounts[%zu] tmpfs %s: scratch directory %s: %s", idx, dest, dir,
			          strerror(errno));
			return -1;
		}
		if (opt_value(opts, "size"))
			oci_warn("mounts[%zu] tmpfs %s: size not enforced (a scratch directory on "
			         "the host's disk)", idx, dest);
		if (strcmp(dest, "/dev") == 0)
			make_dev(dir);
		mkdirs_in_root(rootfd, dest);
	}
	return oci_fs_map(b, fs, dest, dir, has_opt(opts, "ro"));
}

static int one_mount(sandlock_builder_t *b, struct oci_fs *fs, int rootfd, const char *bundle,
                     const char *scratch, json_t *m, size_t idx, bool make)
{
	const char *dest = json_string_value(json_object_get(m, "destination"));
	const char *type = json_string_value(json_object_get(m, "type"));
	json_t *opts = json_object_get(m, "options");
	if (!dest || dest[0] != '/') {
		oci_error("mounts[%zu].destination '%s': must be an absolute path", idx,
		          dest ? dest : "");
		return -1;
	}
	if (strcmp(dest, "/") == 0) {
		oci_error("mounts[%zu]: a mount over / ; use root.path", idx);
		return -1;
	}
	if (has_opt(opts, "bind") || has_opt(opts, "rbind") || (type && strcmp(type, "bind") == 0))
		return bind_mount(b, fs, rootfd, bundle, m, dest, idx, make);
	if (!type)
		type = "";
	if (strcmp(type, "tmpfs") == 0)
		return tmpfs_mount(b, fs, rootfd, m, dest, scratch, idx, make);
	if (strcmp(type, "proc") == 0) {
		/* The host's /proc, filtered by the sandbox's /proc policy: the
		 * guest lists and opens only its own processes. */
		return oci_fs_map(b, fs, dest, "/proc", true);
	}
	if (strcmp(type, "sysfs") == 0)
		return oci_fs_map(b, fs, dest, "/sys", true);
	if (strcmp(type, "devpts") == 0 || strcmp(type, "mqueue") == 0 ||
	    strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0) {
		/* devpts: the terminal's fd is given to the process, and the host's
		 * other ptys must stay out of reach; mqueue: POSIX queues are denied;
		 * cgroup: the sandbox sees no cgroup tree. */
		oci_info("mounts[%zu]: %s at %s not made (see docs/oci.md)", idx, type, dest);
		return 0;
	}
	oci_error("mounts[%zu]: type '%s' at %s is not supported by sandlock (bind, tmpfs, "
	          "proc, sysfs are)", idx, type, dest);
	return -1;
}

int oci_mounts_apply(sandlock_builder_t *b, json_t *c, const char *bundle, const char *scratch,
                     bool make)
{
	json_t *root = json_object_get(c, "root");
	struct oci_fs *fs = calloc(1, sizeof *fs);
	if (!fs || bundle_path(bundle, json_string_value(json_object_get(root, "path")), fs->rootfs,
	                       sizeof fs->rootfs) < 0) {
		free(fs);
		return -1;
	}
	int rootfd = open(fs->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		oci_error("root.path %s: %s", fs->rootfs, strerror(errno));
		free(fs);
		return -1;
	}
	sandlock_sandbox_builder_chroot(b, fs->rootfs);
	fs->root_ro = json_is_true(json_object_get(root, "readonly"));
	if (!fs->root_ro)
		sandlock_sandbox_builder_fs_write(b, "/"); /* a guest path: the rootfs */
	size_t i;
	json_t *m;
	int rc = 0;
	json_array_foreach(json_object_get(c, "mounts"), i, m) {
		if (rc == 0)
			rc = one_mount(b, fs, rootfd, bundle, scratch, m, i, make);
	}
	close(rootfd);
	if (rc == 0)
		rc = oci_masked_apply(b, fs, json_object_get(c, "linux"), scratch, make);
	free(fs);
	return rc;
}
