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
#include "execcheck.h"

#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

int sl_exec_argv_is(pid_t pid, const char *argv, size_t len)
{
	int fd = open_proc(pid, "cmdline");
	if (fd < 0)
		return -1;
	char *buf = malloc(len + 1);
	size_t got = 0;
	ssize_t r = 1;
	while (buf && got <= len && (r = read(fd, buf + got, len + 1 - got)) > 0)
		got += (size_t)r;
	close(fd);
	int same = !buf || r < 0 ? -1 : got == len && memcmp(buf, argv, len) == 0;
	free(buf);
	return same;
}
