/*
 * syscalls.h — classes of syscalls that several mechanisms must agree on.
 * The only place that lists them.
 */
#ifndef SANDLOCK_SYSCALLS_H
#define SANDLOCK_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>

/* fork, vfork, clone (clone3 never reaches the supervisor: the filter
 * answers it ENOSYS so libc falls back to clone, whose flags it can see). */
bool sl_sys_is_fork_like(int nr);
size_t sl_sys_fork_like(const int **nrs);
/* execve, execveat: the caller's address space is replaced. */
bool sl_sys_is_exec_like(int nr);
size_t sl_sys_exec_like(const int **nrs);
/* Which argument of an exec-like call holds the path, and which argv
 * (execveat has its dirfd first). */
int sl_sys_exec_path_arg(int nr);
int sl_sys_exec_argv_arg(int nr);
/* open, creat, openat, openat2: a file opened by path (what the on-behalf
 * opener performs). */
bool sl_sys_is_open_family(int nr);
size_t sl_sys_open_family(const int **nrs);

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
