/*
 * profile/load.c — sandlock_profile_load: a profile file, trusted, read,
 * parsed (toml.c) and checked (schema.c), handed over as JSON text so that
 * any caller (the CLI, the Python package through ctypes) gets the one
 * grammar without linking a JSON or TOML library of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/schema.h"
#include "profile/toml.h"
#include "util.h"

/*
 * A profile decides what the sandbox may do, so, like ssh's StrictModes,
 * it must be the user's (or root's) and writable by nobody else, nor be
 * replaceable in its directory (writable by others without the sticky
 * bit).  0, or -1 with *msg naming the fix.
 */
static int trusted_file(const char *path, int fd, int *err, char **msg)
{
	struct stat st, dst;
	uid_t me = getuid();
	char *dir = sl_strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		slash[slash == dir] = '\0';
	int dr = dir ? stat(slash ? dir : ".", &dst) : -1;
	free(dir);
	if (fstat(fd, &st) < 0 || dr < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "%s: %s", path, strerror(errno));
	if (st.st_uid != me && st.st_uid != 0)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "%s is owned by uid %u, not by you or root: a profile must be yours "
		               "(copy it, or chown it)", path, (unsigned)st.st_uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "%s is writable by other users (mode %04o): chmod go-w %s", path,
		               (unsigned)(st.st_mode & 07777), path);
	if ((dst.st_mode & S_IWOTH) && !(dst.st_mode & S_ISVTX))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "%s is in a directory others may write to (mode %04o): move it to a "
		               "directory of yours", path, (unsigned)(dst.st_mode & 07777));
	return 0;
}

/* The whole trusted file as a string; NULL with *err, *msg. */
static char *slurp(const char *path, int *err, char **msg)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		sl_fail(err, msg, errno == ENOENT ? SANDLOCK_ERR_NOT_FOUND : SANDLOCK_ERR_SYSTEM,
		        "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (trusted_file(path, fileno(f), err, msg) < 0) {
		fclose(f);
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	bool bad = ferror(f);
	fclose(f);
	if (m)
		fclose(m);
	if (!m || bad || memchr(buf, '\0', len)) {
		sl_fail(err, msg, !m ? SANDLOCK_ERR_NOMEM : bad ? SANDLOCK_ERR_SYSTEM : SANDLOCK_ERR_INVALID,
		        "%s: %s", path, !m ? "out of memory" : bad ? "read error" : "contains a NUL byte");
		free(buf);
		return NULL;
	}
	return buf;
}

SL_EXPORT char *sandlock_profile_load(const char *path, int *err, char **err_msg)
{
	if (err_msg)
		*err_msg = NULL;
	if (!path || !*path) {
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "sandlock_profile_load: no path");
		return NULL;
	}
	char *text = slurp(path, err, err_msg);
	if (!text)
		return NULL;
	char *why = NULL;
	struct toml_table *root = toml_parse(text, &why);
	free(text);
	bool parsed = root != NULL;
	json_t *j = parsed ? sl_profile_check(root, path, &why) : NULL;
	toml_free(root);
	if (!j) { /* the parser's "LINE:COL: reason", or the schema's "PATH:LINE:COL: ..." */
		sl_fail(err, err_msg, why ? SANDLOCK_ERR_INVALID : SANDLOCK_ERR_NOMEM, "%s%s%s",
		        parsed ? "" : path, parsed ? "" : ":", why ? why : " out of memory");
		free(why);
		return NULL;
	}
	char *out = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (!out)
		sl_fail(err, err_msg, SANDLOCK_ERR_NOMEM, "%s: out of memory", path);
	else if (err)
		*err = SANDLOCK_OK;
	return out;
}
