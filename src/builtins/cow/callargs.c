/*
 * callargs.c — what a path call's arguments say, read without the layer:
 * whether the call only reads, and the kernel's refusal of "." and ".."
 * as a name to create, remove or rename.  Split from cow.c: these are
 * the syscall tables, the layer's decisions are elsewhere (which argument
 * is the path and whether it is followed: syscalls.c, shared with the
 * chroot builtin).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "syscalls.h"
#include "supervisor/childfd.h"
#include "builtins/cow/callargs.h"

/* A call that only reads (lookups, listings, opens without write flags). */
bool sl_cowb_reads_only(int nr, const uint64_t *a)
{
	if (nr == SL_NR_open || nr == __NR_openat) {
		int flags = (int)a[nr == SL_NR_open ? 1 : 2];
		return ((flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC)) &&
		        (flags & O_TMPFILE) != O_TMPFILE) || (flags & O_PATH);
	}
	switch (nr) {
	case __NR_getdents64: case __NR_newfstatat: case SL_NR_stat: case SL_NR_lstat: case __NR_statx:
	case SL_NR_access: case __NR_faccessat: case __NR_faccessat2: case SL_NR_readlink:
	case __NR_readlinkat: case __NR_getxattr: case __NR_lgetxattr: case __NR_listxattr:
	case __NR_llistxattr: case __NR_chdir: case __NR_getcwd:
		return true;
	default:
		return false;
	}
}

/* 1 if the string at addr ends in a "." component, 2 for "..", else 0
 * (trailing slashes ignored). */
static int last_dot(const struct sl_call *call, uint64_t addr)
{
	int e = 0; /* unreadable: the call itself finds out */
	char *p = sl_child_read_path(call->mem, addr, call->n, false, &e);
	int r = 0;
	if (p) {
		size_t n = strlen(p);
		while (n > 1 && p[n - 1] == '/')
			n--;
		size_t b = n;
		while (b > 0 && p[b - 1] != '/')
			b--;
		if (n - b == 1 && p[b] == '.')
			r = 1;
		else if (n - b == 2 && p[b] == '.' && p[b + 1] == '.')
			r = 2;
	}
	free(p);
	return r;
}

/*
 * The kernel refuses to name "." or ".." as what a call creates, removes
 * or renames (it is not a name in its parent); collapsed, the path would
 * name a real entry.  The kernel's errno, or 0 for a call it takes.
 */
int sl_cowb_dot_refusal(const struct sl_call *call)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	switch (nr) {
	case SL_NR_rename:
		return last_dot(call, a[0]) || last_dot(call, a[1]) ? EBUSY : 0;
	case __NR_renameat: case __NR_renameat2:
		return last_dot(call, a[1]) || last_dot(call, a[3]) ? EBUSY : 0;
	case SL_NR_link:
		return last_dot(call, a[1]) ? EEXIST : 0;
	case __NR_linkat:
		return last_dot(call, a[3]) ? EEXIST : 0;
	case SL_NR_unlink:
		return last_dot(call, a[0]) ? EISDIR : 0;
	case SL_NR_rmdir: {
		int d = last_dot(call, a[0]);
		return d == 1 ? EINVAL : d == 2 ? ENOTEMPTY : 0;
	}
	case __NR_unlinkat: {
		int d = last_dot(call, a[1]);
		if (!(a[2] & AT_REMOVEDIR))
			return d ? EISDIR : 0;
		return d == 1 ? EINVAL : d == 2 ? ENOTEMPTY : 0;
	}
	case SL_NR_mkdir: case SL_NR_mknod:
		return last_dot(call, a[0]) ? EEXIST : 0;
	case __NR_mkdirat: case __NR_mknodat:
		return last_dot(call, a[1]) ? EEXIST : 0;
	case SL_NR_symlink:
		return last_dot(call, a[1]) ? EEXIST : 0;
	case __NR_symlinkat:
		return last_dot(call, a[2]) ? EEXIST : 0;
	default:
		return 0;
	}
}
