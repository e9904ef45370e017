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
/* open and creat exist only on older ABIs (x86_64). */
static const int k_open_family[] = {
#ifdef __NR_open
	__NR_open,
#endif
#ifdef __NR_creat
	__NR_creat,
#endif
	__NR_openat, __NR_openat2,
};

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

int sl_sys_exec_path_arg(int nr)
{
	return nr == __NR_execveat ? 1 : 0;
}

int sl_sys_exec_argv_arg(int nr)
{
	return sl_sys_exec_path_arg(nr) + 1;
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
