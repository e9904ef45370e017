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

#endif /* SANDLOCK_SYSCALLS_H */
