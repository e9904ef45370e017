/*
 * tracepath.c — paths as --trace and learn see them (tracepath.h): a
 * traced process's path made absolute and canonical, the rule a path lies
 * under, the directory a grant names.  Pure path work on the host, shared
 * by trace.c (judging and recording calls) and learnprofile.c (making the
 * grants), so that neither calls the other back.
 */
#include "tracepath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandlock.h"

bool cli_path_under(const char *path, const char *root)
{
	size_t n = strlen(root);
	if (n == 1 && root[0] == '/')
		return true;
	return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

const char *cli_path_first_under(const struct cli_list *roots, const char *path)
{
	for (size_t i = 0; i < roots->n; i++)
		if (cli_path_under(path, roots->v[i]))
			return roots->v[i];
	return NULL;
}

/* Canonical copies of the paths that resolve (the build refuses others). */
int cli_path_canon_list(struct cli_list *out, const struct cli_list *in)
{
	for (size_t i = 0; i < in->n; i++) {
		char *c = realpath(in->v[i], NULL);
		int rc = c ? cli_list_add(out, c) : 0;
		free(c);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* readlink of /proc/PID/NAME as a heap string, or NULL. */
static char *proc_link(uint32_t pid, const char *name)
{
	char p[64], buf[PATH_MAX];
	snprintf(p, sizeof(p), "/proc/%u/%s", pid, name);
	ssize_t n = readlink(p, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] != '/')
		return NULL;
	buf[n] = '\0';
	return strdup(buf);
}

/*
 * The absolute spelling of path as the trapped process means it: relative
 * to its cwd or to dirfd, with /proc/self (which here would be sandlock)
 * turned into /proc/PID.
 */
char *cli_path_absolute(uint32_t pid, int dirfd, const char *path)
{
	char *base = NULL, *out = NULL;
	if (strncmp(path, "/proc/self", 10) == 0 && (path[10] == '/' || !path[10])) {
		if (asprintf(&out, "/proc/%u%s", pid, path + 10) < 0)
			return NULL;
		return out;
	}
	if (path[0] == '/')
		return strdup(path);
	if (dirfd == AT_FDCWD) {
		base = proc_link(pid, "cwd");
	} else {
		char name[32];
		snprintf(name, sizeof(name), "fd/%d", dirfd);
		base = proc_link(pid, name);
	}
	if (!base)
		return NULL;
	if (asprintf(&out, "%s/%s", base, path) < 0)
		out = NULL;
	free(base);
	return out;
}

/* realpath of p, or of its parent plus the last name when p does not exist
 * yet (a file being created).  *exists says which. */
char *cli_path_canonical(const char *p, bool *exists)
{
	char *c = realpath(p, NULL);
	*exists = c != NULL;
	if (c || errno != ENOENT)
		return c;
	const char *slash = strrchr(p, '/');
	if (!slash || !slash[1])
		return NULL;
	char *dir = strndup(p, slash == p ? 1 : (size_t)(slash - p));
	char *cdir = dir ? realpath(dir, NULL) : NULL;
	free(dir);
	if (!cdir)
		return NULL;
	char *out = NULL;
	if (asprintf(&out, "%s%s%s", cdir, strcmp(cdir, "/") ? "/" : "", slash + 1) < 0)
		out = NULL;
	free(cdir);
	return out;
}

/* The directory a grant for path should name: its parent, or the path
 * itself when it is a directory. */
char *cli_path_grant_dir(const char *path, bool exists)
{
	if (exists) {
		char *c = realpath(path, NULL);
		if (c) {
			/* a directory is granted as itself */
			int fd = open(c, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (fd >= 0) {
				close(fd);
				return c;
			}
			free(c);
		}
	}
	const char *slash = strrchr(path, '/');
	return strndup(path, slash && slash != path ? (size_t)(slash - path) : 1);
}

/* A device every sandbox may open (sandlock.h), or its terminal. */
bool cli_path_default_device(bool tty, const char *path)
{
	static const char *const devs[] = { SANDLOCK_DEFAULT_DEVICES };
	for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++)
		if (strcmp(path, devs[i]) == 0)
			return true;
	return tty && strcmp(path, "/dev/tty") == 0;
}
