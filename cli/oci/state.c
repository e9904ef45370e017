/*
 * state.c — the per-container directories under --root.
 */
#define _XOPEN_SOURCE 700
#include "state.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int oci_state_root(const char *flag, char *out, size_t cap)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (flag)
		n = snprintf(out, cap, "%s", flag);
	else if (geteuid() == 0)
		n = snprintf(out, cap, "/run/sandlock-oci");
	else if (xdg && xdg[0] == '/')
		n = snprintf(out, cap, "%s/sandlock-oci", xdg);
	else
		n = snprintf(out, cap, "/tmp/sandlock-oci-%u", (unsigned)geteuid());
	if (n < 0 || (size_t)n >= cap) {
		oci_error("--root: path too long");
		return -1;
	}
	if (mkdir(out, 0700) < 0 && errno != EEXIST) {
		oci_error("--root %s: cannot create it: %s", out, strerror(errno));
		return -1;
	}
	struct stat st;
	/* Others must not reach the control sockets or read configs. */
	if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 077) != 0) {
		oci_error("--root %s: not a directory private to uid %u (mode 0700); "
		          "choose another --root", out, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

static bool valid_id(const char *id)
{
	size_t len = strlen(id);
	if (len == 0 || len > 1024 || id[0] == '.')
		return false;
	for (const char *p = id; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_+-.", *p)))
			return false;
	return true;
}

int oci_state_dir(const char *root, const char *id, char *out, size_t cap)
{
	if (!valid_id(id)) {
		oci_error("container id '%s': use letters, digits, '_', '+', '-', '.' "
		          "(not first), at most 1024", id);
		return -1;
	}
	int n = snprintf(out, cap, "%s/%s", root, id);
	if (n < 0 || (size_t)n >= cap) {
		oci_error("container id '%s': state path too long", id);
		return -1;
	}
	return 0;
}

int oci_state_path(const char *dir, const char *name, char *out, size_t cap)
{
	int n = snprintf(out, cap, "%s/%s", dir, name);
	return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int oci_state_make(const char *dir, const char *id)
{
	if (mkdir(dir, 0700) == 0)
		return 0;
	if (errno == EEXIST)
		oci_error("container '%s' already exists; delete it first", id);
	else
		oci_error("cannot create the state directory %s: %s", dir, strerror(errno));
	return -1;
}

bool oci_state_exists(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

static int open_lock(const char *dir)
{
	char p[OCI_PATH_MAX];
	if (oci_state_path(dir, "lock", p, sizeof p) < 0)
		return -1;
	return open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
}

int oci_state_lock(const char *dir)
{
	int fd = open_lock(dir);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

bool oci_state_alive(const char *dir)
{
	int fd = open_lock(dir);
	if (fd < 0)
		return false;
	bool alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
	close(fd); /* releases a lock we got */
	return alive;
}

bool oci_state_wait_dead(const char *dir, int timeout_ms)
{
	for (int waited = 0; waited <= timeout_ms; waited += 5) {
		if (!oci_state_alive(dir))
			return true;
		nanosleep(&(struct timespec){ .tv_nsec = 5000000 }, NULL);
	}
	return false;
}

int oci_state_write(const char *dir, json_t *st)
{
	char tmp[OCI_PATH_MAX], p[OCI_PATH_MAX];
	if (oci_state_path(dir, "state.json.tmp", tmp, sizeof tmp) < 0 ||
	    oci_state_path(dir, "state.json", p, sizeof p) < 0)
		return -1;
	if (json_dump_file(st, tmp, JSON_COMPACT) < 0 || rename(tmp, p) < 0) {
		oci_error("cannot write %s: %s", p, strerror(errno));
		return -1;
	}
	return 0;
}

json_t *oci_state_read(const char *dir)
{
	char p[OCI_PATH_MAX];
	if (oci_state_path(dir, "state.json", p, sizeof p) < 0)
		return NULL;
	return json_load_file(p, 0, NULL);
}

/* A directory the container made unreadable or unwritable is still ours
 * to remove: give the owner rights back before descending. */
static int rm_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP || type == FTW_D || type == FTW_DNR)
		return rmdir(path) < 0 && errno != ENOENT ? -1 : 0;
	return unlink(path) < 0 && errno != ENOENT ? -1 : 0;
}

static int chmod_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)ftw;
	if (type == FTW_D || type == FTW_DNR)
		chmod(path, (st->st_mode & 07777) | S_IRWXU);
	return 0;
}

int oci_state_remove(const char *dir)
{
	/* chmod first, then remove; a second round for directories the first
	 * could not open before their mode was given back. */
	nftw(dir, chmod_entry, 32, FTW_PHYS | FTW_MOUNT);
	if (nftw(dir, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0)
		return 0;
	nftw(dir, chmod_entry, 32, FTW_PHYS | FTW_MOUNT);
	if (nftw(dir, rm_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) == 0)
		return 0;
	oci_error("cannot remove %s: %s", dir, strerror(errno));
	return -1;
}
