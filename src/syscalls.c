/*
 * syscalls.c — the syscall classes of syscalls.h.
 */
#include <sys/syscall.h>

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

bool sl_sys_is_exec_like(int nr)
{
	return member(k_exec_like, N_OF(k_exec_like), nr);
}

size_t sl_sys_exec_like(const int **nrs)
{
	*nrs = k_exec_like;
	return N_OF(k_exec_like);
}
