/*
 * ctlsweep.c — remove the control sockets of runs that died.
 *
 * WHY: a run removes its socket file when it ends (control.c), but a
 * caller killed with SIGKILL (or crashing) cannot, and every run has one:
 * left alone, the files of dead runs pile up in the user's control
 * directory (hundreds after a day of test suites), each one a connect
 * for every `sandlock ps`, and past what ps lists they hide live runs.
 *
 * A file is a dead run's when nobody listens on it (a connect is refused:
 * ECONNREFUSED, never a hang: the socket is non-blocking) and it is
 * older than any run's window between its bind and its listen.  Every run
 * sweeps, when it opens its own socket, the files whose name says which
 * init they were for (sandbox-PID, NAME.PID) and that process is gone (or
 * a zombie): no connect to a live run's server; `sandlock ps` sweeps every
 * file.
 */
#include "run/control.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Far longer than any run takes from its bind to its listen. */
#define SL_CONTROL_STALE_S 60

/* The pid a name ends with (sandbox-PID, NAME.PID), else 0. */
static pid_t trailing_pid(const char *name, size_t len)
{
	size_t i = len;
	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i == len || i == 0 || (name[i - 1] != '-' && name[i - 1] != '.') || len - i > 9)
		return 0;
	return (pid_t)atoi(name + i);
}

/* Process pid has ended: no such process, or a zombie nobody reaped yet
 * (an init whose caller was killed is reparented, and may stay one). */
static bool gone(pid_t pid)
{
	char path[32], buf[512];
	if (pid <= 0)
		return false;
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *end = strrchr(buf, ')'); /* the name may hold anything */
	return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/* Nobody listens at dir/file: a non-blocking connect is refused. */
static bool unheard(const char *dir, const char *file)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	if ((size_t)snprintf(a.sun_path, sizeof a.sun_path, "%s/%s", dir, file) >=
	    sizeof a.sun_path)
		return false;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	bool refused = connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno == ECONNREFUSED;
	close(fd);
	return refused;
}

static bool stale(int dfd, const char *dir, const char *file, bool any)
{
	size_t len = strlen(file);
	if (len < 6 || strcmp(file + len - 5, ".sock") != 0)
		return false;
	if (!any && !gone(trailing_pid(file, len - 5)))
		return false;
	struct stat st;
	return fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISSOCK(st.st_mode) &&
	       time(NULL) - st.st_mtime >= SL_CONTROL_STALE_S && unheard(dir, file);
}

/* A run sweeps a directory at most once a minute (the mtime of its
 * .swept stamp): a file must be a minute old to be taken anyway, and a
 * sweep reads /proc for each live run (measured: 1 ms more a run among
 * 100).  A stamp in the future (a guest with -w over the directory) is
 * no reason to wait. */
static bool due(const char *dir)
{
	char stamp[4200];
	struct stat st;
	time_t now = time(NULL);
	if ((size_t)snprintf(stamp, sizeof stamp, "%s/.swept", dir) >= sizeof stamp)
		return false;
	if (lstat(stamp, &st) == 0 && now >= st.st_mtime && now - st.st_mtime < SL_CONTROL_STALE_S)
		return false;
	int fd = open(stamp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd >= 0) {
		futimens(fd, NULL);
		close(fd);
	}
	return true;
}

void sl_control_sweep(const char *dir, bool any)
{
	if (!any && !due(dir))
		return;
	DIR *d = opendir(dir);
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d));)
		if (stale(dirfd(d), dir, e->d_name, any))
			unlinkat(dirfd(d), e->d_name, 0); /* the entry, never what it names */
	closedir(d);
}
