/*
 * syscalls.h — classes of syscalls that several mechanisms must agree on.
 * The only place that lists them.
 */
#ifndef SANDLOCK_SYSCALLS_H
#define SANDLOCK_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The legacy path syscalls (open, stat, mkdir, chmod, getdents, ...)
 * exist on x86_64, not on the asm-generic ABIs (aarch64), whose libc uses
 * the *at forms.  SL_NR_x is x's number, or there a distinct negative
 * stand-in that no call carries and no trap list keeps (sl_traps_add
 * skips it), so switch cases on them stay apart.  The one place that
 * knows which exist.
 */
#include <sys/syscall.h>
#ifdef __NR_open
#define SL_NR_open __NR_open
#else
#define SL_NR_open (-1)
#endif
#ifdef __NR_creat
#define SL_NR_creat __NR_creat
#else
#define SL_NR_creat (-2)
#endif
#ifdef __NR_unlink
#define SL_NR_unlink __NR_unlink
#else
#define SL_NR_unlink (-3)
#endif
#ifdef __NR_rmdir
#define SL_NR_rmdir __NR_rmdir
#else
#define SL_NR_rmdir (-4)
#endif
#ifdef __NR_mkdir
#define SL_NR_mkdir __NR_mkdir
#else
#define SL_NR_mkdir (-5)
#endif
#ifdef __NR_rename
#define SL_NR_rename __NR_rename
#else
#define SL_NR_rename (-6)
#endif
#ifdef __NR_link
#define SL_NR_link __NR_link
#else
#define SL_NR_link (-7)
#endif
#ifdef __NR_symlink
#define SL_NR_symlink __NR_symlink
#else
#define SL_NR_symlink (-8)
#endif
#ifdef __NR_mknod
#define SL_NR_mknod __NR_mknod
#else
#define SL_NR_mknod (-9)
#endif
#ifdef __NR_stat
#define SL_NR_stat __NR_stat
#else
#define SL_NR_stat (-10)
#endif
#ifdef __NR_lstat
#define SL_NR_lstat __NR_lstat
#else
#define SL_NR_lstat (-11)
#endif
#ifdef __NR_access
#define SL_NR_access __NR_access
#else
#define SL_NR_access (-12)
#endif
#ifdef __NR_readlink
#define SL_NR_readlink __NR_readlink
#else
#define SL_NR_readlink (-13)
#endif
#ifdef __NR_chmod
#define SL_NR_chmod __NR_chmod
#else
#define SL_NR_chmod (-14)
#endif
#ifdef __NR_chown
#define SL_NR_chown __NR_chown
#else
#define SL_NR_chown (-15)
#endif
#ifdef __NR_lchown
#define SL_NR_lchown __NR_lchown
#else
#define SL_NR_lchown (-16)
#endif
#ifdef __NR_utime
#define SL_NR_utime __NR_utime
#else
#define SL_NR_utime (-17)
#endif
#ifdef __NR_utimes
#define SL_NR_utimes __NR_utimes
#else
#define SL_NR_utimes (-18)
#endif
#ifdef __NR_futimesat
#define SL_NR_futimesat __NR_futimesat
#else
#define SL_NR_futimesat (-19)
#endif
#ifdef __NR_getdents
#define SL_NR_getdents __NR_getdents
#else
#define SL_NR_getdents (-20)
#endif

/* fork, vfork, clone (clone3 never reaches the supervisor: the filter
 * answers it ENOSYS so libc falls back to clone, whose flags it can see). */
bool sl_sys_is_fork_like(int nr);
size_t sl_sys_fork_like(const int **nrs);
/* clone with CLONE_THREAD (args: the call's): a thread, not a process
 * (pthread_create), which a process count must not count. */
bool sl_sys_makes_thread(int nr, const uint64_t *args);
/* A task made: fork-like calls and clone3 (which the filter answers
 * ENOSYS, but which nothing may ever let through unseen). */
bool sl_sys_creates_task(int nr);
/* execve, execveat: the caller's address space is replaced. */
bool sl_sys_is_exec_like(int nr);
size_t sl_sys_exec_like(const int **nrs);
/* An exec-like call's arguments as the kernel takes them (execveat has
 * its dirfd first and flags last; execve: AT_FDCWD and 0). */
struct sl_exec_args {
	int dirfd;
	uint64_t path, argv, envp;
	int flags; /* AT_EMPTY_PATH, AT_SYMLINK_NOFOLLOW */
};
void sl_sys_exec_args(int nr, const uint64_t *args, struct sl_exec_args *out);
/* open, creat, openat, openat2: a file opened by path (what the on-behalf
 * opener performs). */
bool sl_sys_is_open_family(int nr);
size_t sl_sys_open_family(const int **nrs);

/* A class as a list (the functions below): its numbers into *nrs, their count. */
typedef size_t (*sl_sys_class)(const int **nrs);

/* The path family, by what a call does with its path (legacy members are
 * SL_NR_ stand-ins where the ABI lacks them: skip negative numbers):
 * look it up (stat, access, readlink and their *at forms) ... */
size_t sl_sys_path_lookup(const int **nrs);
bool sl_sys_is_path_lookup(int nr);
/* The (dirfd, path) argument pair of a call that names one path (the
 * lookups, open/creat/openat, the single-path changes, chmod/chown/
 * utimensat, the path xattr calls; AT_FDCWD for the legacy forms); false
 * for others (two paths, an fd).  One decoding, so that the COW and chroot
 * builtins cannot read a call's path from different arguments. */
bool sl_sys_path_arg(int nr, const uint64_t *args, int *dirfd, uint64_t *path);
/* Whether such a call follows a symlink in its last name (its flags:
 * O_NOFOLLOW, O_CREAT|O_EXCL, AT_SYMLINK_NOFOLLOW; lstat, readlink, lchown,
 * the l*xattr calls, and the calls that make or remove a name never do). */
bool sl_sys_path_follows(int nr, const uint64_t *args);
/* ... create, remove, rename or link a name, or truncate the file ... */
size_t sl_sys_path_change(const int **nrs);
/* ... change mode, owner or times by path (chmod, chown, utime*) ... */
size_t sl_sys_path_metadata(const int **nrs);
/* ... or its extended attributes ({get,list,set,remove}xattr, l forms) ... */
size_t sl_sys_path_xattr(const int **nrs);
/* ... or only resolve it for something else: statfs, inotify_add_watch. */
size_t sl_sys_path_other(const int **nrs);
/* Metadata changed through an fd: fchmod, fchown. */
size_t sl_sys_fd_metadata(const int **nrs);
/* Extended attributes written, by path or by fd: {set,remove}xattr, their
 * l and f forms. */
size_t sl_sys_xattr_write(const int **nrs);
/* What an xattr call of the path or fd forms does (op SL_XATTR_NONE: nr
 * is none), and whether it names its file by path, following a last
 * symlink (the forms without l) or not. */
enum sl_xattr_op { SL_XATTR_NONE, SL_XATTR_GET, SL_XATTR_LIST, SL_XATTR_SET, SL_XATTR_REMOVE };
struct sl_xattr_call {
	enum sl_xattr_op op;
	bool by_path, follow;
};
struct sl_xattr_call sl_sys_xattr(int nr);
/* getdents, getdents64: a directory listed through an fd. */
size_t sl_sys_dir_listing(const int **nrs);
/* chdir, getcwd: the caller's working directory. */
size_t sl_sys_cwd(const int **nrs);

/*
 * Syscalls that act on another process named by a pid (or a pid-like
 * "who") argument: limits, priority, scheduling, affinity, memory
 * placement, kcmp, pidfd_open.  How the caller names itself:
 *   SL_PID_A0        arg0 is a pid, 0 = the caller;
 *   SL_PID_WHICH_WHO arg0 is a "which", arg1 a "who": only which ==
 *                    self_which with who == 0 is the caller alone;
 *   SL_PID_ALWAYS    every call names a pid (no "self" shorthand).
 * The filter lets the self forms through and traps the rest for
 * builtins/pids.c.  Signals (kill, tkill, tgkill, pidfd_send_signal) are
 * not here: Landlock's signal scoping confines them.
 */
enum sl_pid_form { SL_PID_A0, SL_PID_WHICH_WHO, SL_PID_ALWAYS };
struct sl_pid_sys {
	int nr;
	enum sl_pid_form form;
	int self_which; /* SL_PID_WHICH_WHO: the "which" meaning one process */
};
size_t sl_sys_pid_targeting(const struct sl_pid_sys **v);
const struct sl_pid_sys *sl_sys_pid_form(int nr); /* NULL: not in the class */

#endif /* SANDLOCK_SYSCALLS_H */
