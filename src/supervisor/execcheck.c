/*
 * execcheck.c — see execcheck.h.  policy_fn decides an exec on the argv
 * it read with every other task of the sandbox stopped, but memory can
 * still change under a stopped sandbox: kernel-side writers (an AIO
 * completion landing in a ring, the clear_child_tid word of a CLONE_VM
 * helper that dies, a robust futex list) write the caller's memory
 * between the read and the kernel's own copy.  So the result is checked
 * instead of the inputs: the new image's argv, as the kernel copied it,
 * compared with what the callback saw.
 */
#include "supervisor/execcheck.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>

static int open_proc(pid_t pid, const char *what)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
	return open(path, O_RDONLY | O_CLOEXEC);
}

void sl_exec_image(pid_t pid, struct sl_exec_image *img)
{
	memset(img, 0, sizeof *img);
	int fd = open_proc(pid, "auxv");
	Elf64_auxv_t v;
	while (fd >= 0 && read(fd, &v, sizeof v) == (ssize_t)sizeof v && v.a_type != AT_NULL)
		if (v.a_type == AT_RANDOM)
			img->at = v.a_un.a_val;
	if (fd >= 0)
		close(fd);
	fd = img->at ? open_proc(pid, "mem") : -1;
	img->ok = fd >= 0 &&
	          pread(fd, img->bytes, sizeof img->bytes, (off_t)img->at) == sizeof img->bytes;
	if (fd >= 0)
		close(fd);
}

bool sl_exec_image_changed(pid_t pid, const struct sl_exec_image *before)
{
	struct sl_exec_image now;
	sl_exec_image(pid, &now);
	return !before->ok || !now.ok || now.at != before->at ||
	       memcmp(now.bytes, before->bytes, sizeof now.bytes) != 0;
}

/* The auxv entry type of pid (0: none). */
static uint64_t auxv_value(pid_t pid, uint64_t type)
{
	int fd = open_proc(pid, "auxv");
	Elf64_auxv_t v;
	uint64_t val = 0;
	while (fd >= 0 && read(fd, &v, sizeof v) == (ssize_t)sizeof v && v.a_type != AT_NULL)
		if (v.a_type == type)
			val = v.a_un.a_val;
	if (fd >= 0)
		close(fd);
	return val;
}

/* The NUL-terminated string at addr of pid's memory, into out. */
static bool mem_string(pid_t pid, uint64_t addr, char *out, size_t cap)
{
	int fd = addr ? open_proc(pid, "mem") : -1;
	ssize_t n = fd >= 0 ? pread(fd, out, cap - 1, (off_t)addr) : -1;
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return false;
	out[n] = 0;
	return strlen(out) < (size_t)n; /* its NUL was within reach */
}

/* Is path (relative ones from pid's cwd) the program pid runs? */
static bool is_running(pid_t pid, const char *path)
{
	char exe[64], at[PATH_MAX + 64];
	struct stat a, b;
	snprintf(exe, sizeof exe, "/proc/%d/exe", (int)pid);
	if (path[0] == '/')
		snprintf(at, sizeof at, "%s", path);
	else
		snprintf(at, sizeof at, "/proc/%d/cwd/%s", (int)pid, path);
	return stat(exe, &a) == 0 && stat(at, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

/* cmd (n bytes) is the kernel's argv for a #! script run with argv. */
static bool script_form(pid_t pid, const char *cmd, size_t n, const char *argv, size_t len)
{
	size_t first = strlen(argv) + 1; /* argv[0] is dropped by the kernel */
	size_t tail = len > first ? len - first : 0;
	char fn[PATH_MAX];
	if (n < tail + 2 || memcmp(cmd + n - tail, argv + first, tail) != 0)
		return false;
	size_t pre = n - tail; /* "interp\0[arg\0...]execfn\0" */
	const char *last = cmd + pre - 1;
	while (last > cmd && last[-1])
		last--;
	if (last == cmd || !mem_string(pid, auxv_value(pid, AT_EXECFN), fn, sizeof fn))
		return false;
	return strcmp(last, fn) == 0 && is_running(pid, cmd);
}

int sl_exec_argv_is(pid_t pid, const char *argv, size_t len)
{
	int fd = open_proc(pid, "cmdline");
	if (fd < 0)
		return -1;
	size_t cap = len + 4 * PATH_MAX; /* room for a script's interpreter lines */
	char *buf = malloc(cap + 1);
	size_t got = 0;
	ssize_t r = 1;
	while (buf && got <= cap && (r = read(fd, buf + got, cap + 1 - got)) > 0)
		got += (size_t)r;
	close(fd);
	int same = !buf || r < 0 ? -1
	           : got == len && memcmp(buf, argv, len) == 0
	               ? 1
	               : got <= cap && got > 0 && buf[got - 1] == 0 &&
	                     script_form(pid, buf, got, argv, len);
	free(buf);
	return same;
}
