/*
 * tmpdir.c — private directories of a sandbox (tmpdir.h).
 *
 * The private /tmp cannot replace the real /tmp (no mount namespace): it
 * is a fresh directory the run alone is granted, named by TMPDIR, which
 * compilers, pip, npm, Python's tempfile and mktemp(1) all honour.  The
 * sandbox gets one 0700 directory at build, granted as a -w tree (so the
 * metadata guard, unix sockets and the /proc views treat it as one); each
 * run makes its own empty run-XXXXXX in it, removed when the run is
 * cleaned up, after every process of the sandbox is gone.  Runs of one
 * sandbox object at the same time share its policy and so may reach each
 * other's directory; separate sandboxes (other sandlock commands) cannot.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "launch/tmpdir.h"
#include "util.h"

const char *sl_tmp_candidate(size_t i)
{
	const char *env = getenv("TMPDIR");
	switch (i) {
	case 0:
		return env && *env ? env : "/tmp";
	case 1:
		return "/var/tmp";
	case 2:
		return "/dev/shm";
	default:
		return NULL;
	}
}

bool sl_dir_exec_allowed(const char *dir)
{
	struct statvfs v;
	return statvfs(dir, &v) == 0 && !(v.f_flag & ST_NOEXEC);
}

char *sl_private_tmp_make(int *err, char **msg)
{
	int e = ENOENT;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; sl_tmp_candidate(i); i++) {
			char *dir = realpath(sl_tmp_candidate(i), NULL);
			char *t = dir && (pass || sl_dir_exec_allowed(dir))
			                  ? sl_asprintf("%s/sandlock-tmp-XXXXXX", dir)
			                  : NULL;
			free(dir);
			if (t && mkdtemp(t))
				return t;
			if (t)
				e = errno;
			free(t);
		}
	sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "tmp: cannot make a private temporary directory "
	        "in $TMPDIR, /tmp, /var/tmp or /dev/shm: %s", strerror(e));
	return NULL;
}

/* Give the owner rwx on the directory behind an O_PATH fd (a guest may
 * have made it unreadable), without following a symlink put in its place. */
static void open_up(int pathfd)
{
	char p[32];
	snprintf(p, sizeof p, "/proc/self/fd/%d", pathfd);
	(void)chmod(p, 0700);
}

void sl_remove_tree(int root)
{
	int fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == EACCES) {
		open_up(root);
		fd = openat(root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	DIR *d = sl_fdopendir(fd);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), de->d_name, 0) == 0)
			continue;
		int sub = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0) {
			sl_remove_tree(sub);
			close(sub);
		}
		unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

char *sl_private_tmp_run(const char *root, int *err, char **msg)
{
	char *t = sl_asprintf("%s/run-XXXXXX", root);
	if (t && mkdtemp(t))
		return t;
	int e = t ? errno : ENOMEM;
	free(t);
	sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "tmp: cannot make a directory in '%s': %s", root,
	        strerror(e));
	return NULL;
}

void sl_private_tmp_remove(char *dir)
{
	if (!dir)
		return;
	int fd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		sl_remove_tree(fd);
		close(fd);
	}
	rmdir(dir);
	free(dir);
}
