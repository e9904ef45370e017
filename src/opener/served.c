/*
 * served.c — helpers for the files served in place of the ones the opener
 * opened (served.h).  What is served is decided by the builtins that
 * contribute it (hostname: uts.c; /etc/hosts and trust bundles: hosts.c;
 * /proc/net/tcp with virtual ports: proc.c) and virtfiles.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "opener/served.h"
#include "opener/virtfiles.h"

int sl_serve_text(const char *name, const char *text, int *fd)
{
	int m = sl_virt_memfd(name, text, strlen(text));
	if (m < 0)
		return EIO;
	close(*fd);
	*fd = m;
	return 0;
}

int sl_serve_read(int fd, sl_buf *b)
{
	char chunk[16384];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		if (b->len > (64u << 20) || sl_buf_append(b, chunk, (size_t)n) < 0)
			return EIO;
	return n < 0 ? errno : 0;
}

int sl_file_id_of(const char *path, struct sl_file_id *id)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return -1;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

bool sl_file_id_is(const struct sl_file_id *id, int fd)
{
	struct stat st;
	return fstat(fd, &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino;
}
