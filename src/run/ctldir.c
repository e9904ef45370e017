/*
 * ctldir.c — the control directories of named runs (cli/control.c makes
 * and uses them).  The library knows them so that no sandbox reaches a
 * control socket: a guest granted `-w /tmp` could otherwise connect to a
 * sibling run's socket and read or kill it (netdest refuses the connect).
 */
#include "run/ctldir.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "run/proctree.h"
#include "net/sockdest.h"
#include "util.h"

int sl_ctldir_candidates(char out[SL_CTLDIR_MAX][SL_CTLDIR_LEN])
{
	unsigned uid = (unsigned)getuid();
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *home = getenv("HOME");
	int n = 0;
	if (xdg && xdg[0] == '/')
		snprintf(out[n++], SL_CTLDIR_LEN, "%s/sandlock", xdg);
	snprintf(out[n++], SL_CTLDIR_LEN, "/run/user/%u/sandlock", uid);
	snprintf(out[n++], SL_CTLDIR_LEN, "/tmp/sandlock-%u", uid);
	if (home && home[0] == '/')
		snprintf(out[n++], SL_CTLDIR_LEN, "%s/.cache/sandlock-%u", home, uid);
	return n;
}

/* "PREFIX<digits>SUFFIX" exactly? */
static bool numbered(const char *s, const char *prefix, const char *suffix)
{
	size_t pl = strlen(prefix);
	if (strncmp(s, prefix, pl) != 0)
		return false;
	s += pl;
	if (*s < '0' || *s > '9')
		return false;
	while (*s >= '0' && *s <= '9')
		s++;
	return strcmp(s, suffix) == 0;
}

bool sl_ctldir_holds(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return false;
	char dir[4096];
	size_t n = (size_t)(slash - path);
	if (n >= sizeof dir)
		return false;
	memcpy(dir, path, n);
	dir[n] = 0;
	if (numbered(dir, "/run/user/", "/sandlock") || numbered(dir, "/tmp/sandlock-", ""))
		return true;
	char c[SL_CTLDIR_MAX][SL_CTLDIR_LEN];
	int k = sl_ctldir_candidates(c);
	for (int i = 0; i < k; i++) {
		char canon[4096]; /* path is canonical: $XDG_RUNTIME_DIR may not be */
		if (strcmp(c[i], dir) == 0 || (realpath(c[i], canon) && strcmp(canon, dir) == 0))
			return true;
	}
	return false;
}

bool sl_ctldir_served_by(const char *path, pid_t pid)
{
	struct stat st;
	unsigned long sock = 0;
	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
	       sl_sd_unix_listener_at(st.st_dev, st.st_ino, &sock) == 0 && sock &&
	       sl_pid_holds_socket(pid, sock);
}

bool sl_ctldir_abstract_served_by(const char *name, pid_t pid)
{
	struct sl_sockaddr a = { .len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	                                            strlen(name)) };
	struct sockaddr_un *u = (struct sockaddr_un *)&a.ss;
	u->sun_family = AF_UNIX;
	if (strlen(name) + 1 >= sizeof u->sun_path)
		return false;
	memcpy(u->sun_path + 1, name, strlen(name));
	unsigned long sock = 0;
	return sl_sd_abstract_inode(&a, SOCK_STREAM, &sock) == 0 && sock &&
	       sl_pid_holds_socket(pid, sock);
}
