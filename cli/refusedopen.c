/*
 * refusedopen.c — which file an open refused on the program's behalf was.
 *
 * WHY: with /proc readable, a --random-seed, --num-cpus or a virtual
 * chroot, sandlock performs the program's opens itself (the opener thread,
 * confined by the same Landlock rules), so a refused one reaches the
 * decision hook (explain.c) as the supervisor's EACCES.  The end-of-run
 * line can then name the file, as the audit log names the ones the kernel
 * refused the program directly (auditlog.c), at no cost: it is read only
 * for the first refusal, while the call is held.
 */
#include "refusedopen.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

bool cli_read_caller(pid_t pid, uint64_t addr, void *out, size_t len)
{
	struct iovec local = { out, len }, remote = { (void *)(uintptr_t)addr, len };
	if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)len)
		return true;
	char path[40];
	snprintf(path, sizeof path, "/proc/%d/mem", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	bool ok = pread(fd, out, len, (off_t)addr) == (ssize_t)len;
	close(fd);
	return ok;
}

/* A NUL-terminated string at addr, read a page piece at a time (a string
 * near the end of a mapping must not fail the read). */
static bool read_string(pid_t pid, uint64_t addr, char *out, size_t size)
{
	size_t got = 0;
	while (got + 1 < size) {
		size_t room = 4096 - (size_t)((addr + got) % 4096);
		size_t n = room < size - 1 - got ? room : size - 1 - got;
		if (!cli_read_caller(pid, addr + got, out + got, n))
			return false;
		char *nul = memchr(out + got, '\0', n);
		if (nul)
			return true;
		got += n;
	}
	out[size - 1] = '\0';
	return false; /* longer than PATH_MAX: not a path the kernel took */
}

/* The directory a relative path is from: dirfd's, or the cwd. */
static bool base_dir(pid_t pid, int dirfd, char *out, size_t size)
{
	char link[64];
	if (dirfd == AT_FDCWD)
		snprintf(link, sizeof link, "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof link, "/proc/%d/fd/%d", (int)pid, dirfd);
	ssize_t n = readlink(link, out, size - 1);
	if (n <= 0)
		return false;
	out[n] = '\0';
	return true;
}

bool cli_refused_open(const sandlock_notif_t *n, const char *call, char *path, size_t size,
                      bool *write)
{
	pid_t pid = (pid_t)n->pid;
	int dirfd = AT_FDCWD;
	uint64_t name, flags;
	if (strcmp(call, "open") == 0 || strcmp(call, "creat") == 0) {
		name = n->args[0];
		flags = call[0] == 'c' ? O_WRONLY | O_CREAT : n->args[1];
	} else if (strcmp(call, "openat") == 0 || strcmp(call, "openat2") == 0) {
		dirfd = (int)n->args[0];
		name = n->args[1];
		flags = n->args[2];
		struct open_how how;
		if (call[6] == '2' && !cli_read_caller(pid, n->args[2], &how, sizeof how))
			return false;
		if (call[6] == '2')
			flags = how.flags;
	} else {
		return false;
	}
	char buf[PATH_MAX], dir[PATH_MAX];
	if (!read_string(pid, name, buf, sizeof buf) || !buf[0])
		return false;
	const char *rel = buf;
	while (rel[0] == '.' && rel[1] == '/') /* "./x" names dir/x */
		rel += 2 + strspn(rel + 2, "/");
	if (rel[0] == '/')
		snprintf(path, size, "%s", rel);
	else if (!base_dir(pid, dirfd, dir, sizeof dir) ||
	         snprintf(path, size, "%s/%s", dir, rel) >= (int)size)
		return false;
	*write = (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));
	return true;
}
