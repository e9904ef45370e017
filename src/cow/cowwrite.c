/*
 * cowwrite.c — writes to staged files under max_disk (see cowwrite.h).
 *
 * Why on behalf: a CONTINUEd write would happen after our check, so two
 * threads (or a write still in flight while the layer is measured) could
 * pass the quota.  Performing the write here, on a duplicate of the
 * caller's fd (same open file description: same offset, same O_APPEND),
 * makes the check and the growth one step of the single supervisor
 * thread.  The data is copied from the caller's memory in 1 MiB chunks;
 * a write that would pass the quota writes what still fits and returns
 * that count (a short write, as on a full disk); the next one gets ENOSPC.
 *
 * The bound: the sum over staged and deleted-while-running files of
 * max(size, allocated blocks) stays <= max_disk (see sl_cow_charge).
 * mmap(MAP_SHARED) cannot grow a file, so it needs no trap.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/falloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "cow/cowwrite.h"

#define CHUNK ((size_t)1 << 20)
#ifndef RWF_DSYNC
#define RWF_DSYNC 0x00000002
#endif
#ifndef RWF_SYNC
#define RWF_SYNC 0x00000004
#endif
#ifndef RWF_APPEND
#define RWF_APPEND 0x00000010
#endif

const int sl_cowwrite_nrs[] = {
	__NR_write,     __NR_pwrite64,        __NR_writev,   __NR_pwritev,
	__NR_pwritev2,  __NR_fallocate,       __NR_ftruncate, __NR_copy_file_range,
	__NR_sendfile,  __NR_splice,          __NR_io_submit,
};
const size_t sl_cowwrite_nrs_count = sizeof sl_cowwrite_nrs / sizeof sl_cowwrite_nrs[0];

bool sl_cowwrite_is(int nr)
{
	for (size_t i = 0; i < sl_cowwrite_nrs_count; i++)
		if (sl_cowwrite_nrs[i] == nr)
			return true;
	return false;
}

/* The caller's fd as ours (sl_child_file, into *cf) if it is a staged
 * file, else -1: the kernel performs the call.  *err: the fd could not be
 * looked at (never left to the kernel: an uncharged write to a staged
 * file would pass max_disk); 0 otherwise. */
static int staged_fd(struct sl_cow *c, int listener, const sandlock_notif_t *n, uint64_t arg,
                     struct sl_child_file *cf, int *err)
{
	int ge = sl_child_file(listener, n, (int)(int32_t)arg, cf);
	/* No such fd, or one that is no file: the kernel's answer is ours. */
	*err = ge == -EBADF || ge == -ENXIO ? 0 : ge;
	if (ge < 0)
		return -1;
	int fd = cf->fd;
	struct stat st;
	char link[64], path[PATH_MAX];
	ssize_t len = -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
		len = readlink(link, path, sizeof path - 1);
	}
	if (len <= 0) {
		sl_child_file_done(listener, n, cf, false);
		return -1;
	}
	path[len] = '\0';
	if (!sl_cow_owns(c, path, &st)) {
		sl_child_file_done(listener, n, cf, false);
		return -1;
	}
	return fd;
}

/* Charge the growth of writing want bytes at pos; shrink *want to what
 * fits.  0, or -ENOSPC when not one byte fits. */
static int fit(struct sl_cow *c, const struct stat *st, off_t pos, size_t *want)
{
	uint64_t size = (uint64_t)st->st_size, end = (uint64_t)pos + *want;
	uint64_t grow = end > size ? end - size : 0;
	if (!grow || sl_cow_charge(c, grow) == 0)
		return 0;
	uint64_t room = sl_cow_room(c);
	if (room >= grow)
		return sl_cow_charge(c, grow);
	if (grow - room >= *want)
		return -ENOSPC;
	*want -= (size_t)(grow - room);
	return sl_cow_charge(c, room);
}

/*
 * Write the caller's segments iov[0..niov) to fd: at off (pwrite; -1 for
 * the file position), appending if append.  The count written, or -errno
 * if nothing was.
 */
static long put(struct sl_cow *c, int fd, sandlock_mem_t *mem, const struct iovec *iov,
                size_t niov, off_t off, bool append)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	if ((fl & O_ACCMODE) == O_RDONLY)
		return -EBADF;
	bool o_append = (fl & O_APPEND) != 0;
	append |= o_append;
	char *buf = malloc(CHUNK);
	if (!buf)
		return -ENOMEM;
	long done = 0, err = 0;
	for (size_t i = 0; i < niov && !err; i++) {
		uint64_t addr = (uint64_t)(uintptr_t)iov[i].iov_base;
		size_t left = iov[i].iov_len;
		while (left && !err) {
			size_t want = left < CHUNK ? left : CHUNK;
			struct stat st;
			off_t pos = 0;
			if (fstat(fd, &st) < 0)
				err = -errno;
			else if ((pos = append ? st.st_size : off >= 0 ? off + done
			                                            : lseek(fd, 0, SEEK_CUR)) < 0)
				err = -errno;
			else if ((err = fit(c, &st, pos, &want)) == 0 &&
			         sandlock_mem_peek(mem, addr, buf, want) != 0)
				err = -EFAULT;
			if (err)
				break;
			/* write() moves the shared file position (to the end on
			 * O_APPEND); pwrite keeps it (and appends on O_APPEND too);
			 * RWF_APPEND on a plain fd writes at the size. */
			bool positioned = off >= 0 || (append && !o_append);
			ssize_t w = positioned ? pwrite(fd, buf, want, pos) : write(fd, buf, want);
			if (w < 0) {
				err = -errno;
				break;
			}
			done += w;
			addr += (uint64_t)w;
			left -= (size_t)w;
			if ((size_t)w < want)
				err = 1; /* short: stop here, as the kernel would */
		}
	}
	free(buf);
	return done > 0 ? done : err < 0 ? err : 0;
}

/* The caller's iovec array (at most IOV_MAX entries), heap. */
static struct iovec *read_iov(sandlock_mem_t *mem, uint64_t addr, uint64_t cnt, long *e)
{
	if (cnt > IOV_MAX) {
		*e = -EINVAL;
		return NULL;
	}
	struct iovec *v = calloc(cnt ? cnt : 1, sizeof(*v));
	if (!v)
		*e = -ENOMEM;
	else if (cnt && sandlock_mem_peek(mem, addr, v, cnt * sizeof(*v)) != 0) {
		free(v);
		v = NULL;
		*e = -EFAULT;
	}
	return v;
}

static long do_vec(struct sl_cow *c, int fd, const sandlock_notif_t *n, sandlock_mem_t *mem)
{
	const uint64_t *a = n->args;
	long e = 0;
	struct iovec *v = read_iov(mem, a[1], a[2], &e);
	if (!v)
		return e;
	off_t off = -1;
	bool append = false, sync = false;
	if (n->syscall_nr != __NR_writev) {
		off = (off_t)a[3];
		if (n->syscall_nr == __NR_pwritev2) {
			append = (a[5] & RWF_APPEND) != 0;
			sync = (a[5] & (RWF_DSYNC | RWF_SYNC)) != 0;
		} else if (off < 0) {
			free(v);
			return -EINVAL;
		}
		if (off < -1) {
			free(v);
			return -EINVAL;
		}
	}
	long r = put(c, fd, mem, v, (size_t)a[2], off, append);
	if (r > 0 && sync)
		fdatasync(fd);
	free(v);
	return r;
}

static long do_size(struct sl_cow *c, int fd, const sandlock_notif_t *n)
{
	const uint64_t *a = n->args;
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	uint64_t size = (uint64_t)st.st_size, grow = 0;
	if (n->syscall_nr == __NR_ftruncate) {
		if ((int64_t)a[1] < 0)
			return -EINVAL;
		grow = a[1] > size ? a[1] - size : 0;
		if (sl_cow_charge(c, grow) < 0)
			return -ENOSPC;
		return ftruncate(fd, (off_t)a[1]) == 0 ? 0 : -errno;
	}
	int mode = (int)a[1];
	uint64_t off = a[2], len = a[3];
	if ((int64_t)off < 0 || (int64_t)len <= 0)
		return -EINVAL;
	if (mode & (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_COLLAPSE_RANGE))
		grow = 0; /* gives space back */
	else if (mode & (FALLOC_FL_KEEP_SIZE | FALLOC_FL_INSERT_RANGE))
		grow = len; /* blocks past the size, or a shift: all of it new */
	else
		grow = off + len > size ? off + len - size : 0;
	if (sl_cow_charge(c, grow) < 0)
		return -ENOSPC;
	return fallocate(fd, mode, (off_t)off, (off_t)len) == 0 ? 0 : -errno;
}

bool sl_cowwrite(struct sl_cow *c, int listener, const sandlock_notif_t *n, sandlock_mem_t *mem,
                 long *ret)
{
	int nr = n->syscall_nr;
	if (nr == __NR_io_submit) {
		/* Kernel AIO writes would bypass the accounting: refused with a
		 * quota (glibc's POSIX aio uses threads and plain writes). */
		*ret = -ENOSYS;
		return true;
	}
	int out = nr == __NR_copy_file_range || nr == __NR_splice ? 2 : 0;
	struct sl_child_file cf;
	int err;
	int fd = staged_fd(c, listener, n, n->args[out], &cf, &err);
	if (fd < 0 && err) {
		*ret = err;
		return true;
	}
	if (fd < 0)
		return false;
	const uint64_t *a = n->args;
	if (nr == __NR_copy_file_range)
		*ret = -EXDEV; /* callers fall back to read + write */
	else if (nr == __NR_sendfile || nr == __NR_splice)
		*ret = -EINVAL;
	else if (nr == __NR_write || nr == __NR_pwrite64) {
		struct iovec one = { (void *)(uintptr_t)a[1], (size_t)a[2] };
		if (nr == __NR_pwrite64 && (int64_t)a[3] < 0)
			*ret = -EINVAL;
		else
			*ret = put(c, fd, mem, &one, 1, nr == __NR_write ? -1 : (off_t)a[3], false);
	} else if (nr == __NR_writev || nr == __NR_pwritev || nr == __NR_pwritev2)
		*ret = do_vec(c, fd, n, mem);
	else
		*ret = do_size(c, fd, n);
	int e = sl_child_file_done(listener, n, &cf, *ret >= 0);
	if (e < 0 && *ret >= 0)
		*ret = e;
	return true;
}
