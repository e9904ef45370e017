/*
 * syscalls.c — the syscall classes of syscalls.h.
 */
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>

#include "compat.h"
#include "syscalls.h"

/* fork and vfork exist only on older ABIs (x86_64); asm-generic ones
 * (aarch64, riscv64) have clone and clone3 alone. */
static const int k_fork_like[] = {
#ifdef __NR_fork
	__NR_fork,
#endif
#ifdef __NR_vfork
	__NR_vfork,
#endif
	__NR_clone,
};
static const int k_exec_like[] = { __NR_execve, __NR_execveat };
/* Legacy members are SL_NR_ stand-ins where the ABI lacks them (negative:
 * never a call's number; sl_traps_add skips them). */
static const int k_open_family[] = { SL_NR_open, SL_NR_creat, __NR_openat, __NR_openat2 };
static const int k_path_lookup[] = {
	SL_NR_stat,         SL_NR_lstat,      __NR_newfstatat, __NR_statx,       SL_NR_access,
	__NR_faccessat,     __NR_faccessat2,  SL_NR_readlink,  __NR_readlinkat,
};
static const int k_path_change[] = {
	SL_NR_mkdir,   __NR_mkdirat,  SL_NR_rmdir,   SL_NR_unlink, __NR_unlinkat,
	SL_NR_rename,  __NR_renameat, __NR_renameat2, SL_NR_link,  __NR_linkat,
	SL_NR_symlink, __NR_symlinkat, SL_NR_mknod,  __NR_mknodat, __NR_truncate,
};
static const int k_path_metadata[] = {
	SL_NR_chmod, __NR_fchmodat, __NR_fchmodat2, SL_NR_chown, SL_NR_lchown,
	__NR_fchownat, __NR_utimensat, SL_NR_utime, SL_NR_utimes, SL_NR_futimesat,
};
static const int k_path_xattr[] = {
	__NR_getxattr, __NR_lgetxattr, __NR_listxattr,    __NR_llistxattr,
	__NR_setxattr, __NR_lsetxattr, __NR_removexattr, __NR_lremovexattr,
};
static const int k_path_other[] = { __NR_statfs, __NR_inotify_add_watch };
static const int k_fd_metadata[] = { __NR_fchmod, __NR_fchown };
static const int k_xattr_write[] = {
	__NR_setxattr,    __NR_lsetxattr,    __NR_fsetxattr,
	__NR_removexattr, __NR_lremovexattr, __NR_fremovexattr,
};
static const int k_dir_listing[] = { SL_NR_getdents, __NR_getdents64 };
static const int k_cwd[] = { __NR_chdir, __NR_getcwd };

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static bool member(const int *v, size_t n, int nr)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == nr)
			return true;
	return false;
}

bool sl_sys_is_fork_like(int nr)
{
	return member(k_fork_like, N_OF(k_fork_like), nr);
}

size_t sl_sys_fork_like(const int **nrs)
{
	*nrs = k_fork_like;
	return N_OF(k_fork_like);
}

bool sl_sys_makes_thread(int nr, const uint64_t *args)
{
	return nr == __NR_clone && (args[0] & CLONE_THREAD);
}

bool sl_sys_creates_task(int nr)
{
	return sl_sys_is_fork_like(nr) || nr == __NR_clone3;
}

bool sl_sys_is_exec_like(int nr)
{
	return member(k_exec_like, N_OF(k_exec_like), nr);
}

size_t sl_sys_exec_like(const int **nrs)
{
	*nrs = k_exec_like;
	return N_OF(k_exec_like);
}

void sl_sys_exec_args(int nr, const uint64_t *a, struct sl_exec_args *out)
{
	bool at = nr == __NR_execveat;
	out->dirfd = at ? (int)(int32_t)a[0] : AT_FDCWD;
	out->path = a[at];
	out->argv = a[at + 1];
	out->envp = a[at + 2];
	out->flags = at ? (int)a[4] : 0;
}

bool sl_sys_is_open_family(int nr)
{
	return member(k_open_family, N_OF(k_open_family), nr);
}

size_t sl_sys_open_family(const int **nrs)
{
	*nrs = k_open_family;
	return N_OF(k_open_family);
}

bool sl_sys_is_path_lookup(int nr)
{
	return member(k_path_lookup, N_OF(k_path_lookup), nr);
}

size_t sl_sys_path_lookup(const int **nrs)
{
	*nrs = k_path_lookup;
	return N_OF(k_path_lookup);
}

bool sl_sys_path_arg(int nr, const uint64_t *a, int *dirfd, uint64_t *path)
{
	switch (nr) {
	case SL_NR_open: case SL_NR_creat: case SL_NR_unlink: case SL_NR_rmdir: case SL_NR_mkdir:
	case SL_NR_mknod: case __NR_truncate: case SL_NR_stat: case SL_NR_lstat: case SL_NR_access:
	case SL_NR_readlink: case SL_NR_chmod: case SL_NR_chown: case SL_NR_lchown:
	case __NR_getxattr: case __NR_lgetxattr: case __NR_listxattr: case __NR_llistxattr:
	case __NR_setxattr: case __NR_lsetxattr: case __NR_removexattr: case __NR_lremovexattr:
		*dirfd = AT_FDCWD;
		*path = a[0];
		return true;
	case __NR_openat: case __NR_unlinkat: case __NR_mkdirat: case __NR_mknodat:
	case __NR_newfstatat: case __NR_statx: case __NR_faccessat: case __NR_faccessat2:
	case __NR_readlinkat: case __NR_fchmodat: case __NR_fchownat: case __NR_utimensat:
		*dirfd = (int)(int32_t)a[0];
		*path = a[1];
		return true;
	case __NR_symlinkat:
		*dirfd = (int)(int32_t)a[1];
		*path = a[2];
		return true;
	case SL_NR_symlink:
		*dirfd = AT_FDCWD;
		*path = a[1];
		return true;
	default:
		return false;
	}
}

bool sl_sys_path_follows(int nr, const uint64_t *a)
{
	switch (nr) {
	case SL_NR_open: case __NR_openat: {
		int flags = (int)a[nr == SL_NR_open ? 1 : 2];
		return !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
	}
	case SL_NR_creat: case __NR_truncate: case SL_NR_stat: case SL_NR_access: case __NR_faccessat:
	case SL_NR_chmod: case __NR_fchmodat: case SL_NR_chown: case __NR_getxattr:
	case __NR_listxattr: case __NR_setxattr: case __NR_removexattr:
		return true;
	case __NR_newfstatat: case __NR_faccessat2:
		return !(a[3] & AT_SYMLINK_NOFOLLOW);
	case __NR_statx:
		return !(a[2] & AT_SYMLINK_NOFOLLOW);
	case __NR_fchownat:
		return !(a[4] & AT_SYMLINK_NOFOLLOW);
	case __NR_utimensat:
		return !(a[3] & AT_SYMLINK_NOFOLLOW);
	default: /* unlink*, rmdir, mkdir*, mknod*, symlink*, readlink*, lstat, lchown, l*xattr */
		return false;
	}
}

size_t sl_sys_path_change(const int **nrs)
{
	*nrs = k_path_change;
	return N_OF(k_path_change);
}

size_t sl_sys_path_metadata(const int **nrs)
{
	*nrs = k_path_metadata;
	return N_OF(k_path_metadata);
}

size_t sl_sys_path_xattr(const int **nrs)
{
	*nrs = k_path_xattr;
	return N_OF(k_path_xattr);
}

size_t sl_sys_path_other(const int **nrs)
{
	*nrs = k_path_other;
	return N_OF(k_path_other);
}

size_t sl_sys_fd_metadata(const int **nrs)
{
	*nrs = k_fd_metadata;
	return N_OF(k_fd_metadata);
}

size_t sl_sys_xattr_write(const int **nrs)
{
	*nrs = k_xattr_write;
	return N_OF(k_xattr_write);
}

struct sl_xattr_call sl_sys_xattr(int nr)
{
	static const struct {
		int nr;
		struct sl_xattr_call c;
	} k[] = {
		{ __NR_getxattr, { SL_XATTR_GET, true, true } },
		{ __NR_lgetxattr, { SL_XATTR_GET, true, false } },
		{ __NR_fgetxattr, { SL_XATTR_GET, false, false } },
		{ __NR_listxattr, { SL_XATTR_LIST, true, true } },
		{ __NR_llistxattr, { SL_XATTR_LIST, true, false } },
		{ __NR_flistxattr, { SL_XATTR_LIST, false, false } },
		{ __NR_setxattr, { SL_XATTR_SET, true, true } },
		{ __NR_lsetxattr, { SL_XATTR_SET, true, false } },
		{ __NR_fsetxattr, { SL_XATTR_SET, false, false } },
		{ __NR_removexattr, { SL_XATTR_REMOVE, true, true } },
		{ __NR_lremovexattr, { SL_XATTR_REMOVE, true, false } },
		{ __NR_fremovexattr, { SL_XATTR_REMOVE, false, false } },
	};
	for (size_t i = 0; i < N_OF(k); i++)
		if (k[i].nr == nr)
			return k[i].c;
	return (struct sl_xattr_call){ SL_XATTR_NONE, false, false };
}

size_t sl_sys_dir_listing(const int **nrs)
{
	*nrs = k_dir_listing;
	return N_OF(k_dir_listing);
}

size_t sl_sys_cwd(const int **nrs)
{
	*nrs = k_cwd;
	return N_OF(k_cwd);
}

/*
 * Syscalls that act on another process named by number (builtins/pids.c).
 * The filter (filter.c) lets through the forms that can only mean the
 * caller itself and traps every other form.
 */
static const struct sl_pid_sys k_pid_targeting[] = {
	{ __NR_prlimit64, SL_PID_A0, 0 },
	{ __NR_sched_setaffinity, SL_PID_A0, 0 },
	{ __NR_sched_setscheduler, SL_PID_A0, 0 },
	{ __NR_sched_setparam, SL_PID_A0, 0 },
	{ __NR_sched_setattr, SL_PID_A0, 0 },
	{ __NR_migrate_pages, SL_PID_A0, 0 },
	{ __NR_move_pages, SL_PID_A0, 0 },
	{ __NR_get_robust_list, SL_PID_A0, 0 },
	{ __NR_setpriority, SL_PID_WHICH_WHO, 0 /* PRIO_PROCESS */ },
	{ __NR_ioprio_set, SL_PID_WHICH_WHO, 1 /* IOPRIO_WHO_PROCESS */ },
	/* pid 0 is not "self" for these: every call names a pid. */
	{ __NR_kcmp, SL_PID_ALWAYS, 0 },
	{ __NR_pidfd_open, SL_PID_ALWAYS, 0 },
};

size_t sl_sys_pid_targeting(const struct sl_pid_sys **v)
{
	*v = k_pid_targeting;
	return N_OF(k_pid_targeting);
}

const struct sl_pid_sys *sl_sys_pid_form(int nr)
{
	for (size_t i = 0; i < N_OF(k_pid_targeting); i++)
		if (k_pid_targeting[i].nr == nr)
			return &k_pid_targeting[i];
	return NULL;
}
