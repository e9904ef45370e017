/*
 * cpus.c — num_cpus: sched_getaffinity reports N CPUs.
 *
 * WHY: nproc, os.process_cpu_count() and many thread pools size
 * themselves from the affinity mask, others from the CPU files the opener
 * serves (virtfiles.h); both must say N.  The answer is a mask of CPUs
 * 0..N-1, as long as the kernel's own answer or long enough for N bits.
 * Only the view changes: the real affinity (cpu_cores) is not touched, so
 * num_cpus does not limit what the sandbox may use (pair it with
 * cpu_cores for that).  A query for another process's mask is left to the
 * kernel (pids.c keeps such calls inside the sandbox).
 */
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "builtins/builtin.h"

struct cpus_state {
	uint32_t n;
};

static int cpus_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	return cfg->num_cpus ? sl_traps_add(out, __NR_sched_getaffinity) : 0;
}

static int cpus_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                     char **msg)
{
	(void)sv;
	if (!cfg->num_cpus)
		return 0;
	struct cpus_state *s = calloc(1, sizeof(*s));
	if (!s) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	s->n = cfg->num_cpus;
	*state = s;
	return 0;
}

static bool cpus_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const struct cpus_state *s = state;
	const sandlock_notif_t *n = call->n;
	pid_t who = (pid_t)n->args[0];
	if (!s || n->syscall_nr != __NR_sched_getaffinity || (who != 0 && who != (pid_t)n->pid))
		return false;
	size_t len = (size_t)n->args[1];
	/* The kernel's checks and size (cpumask_size()), from our own mask. */
	unsigned long probe[SL_MAX_CORES / (8 * sizeof(unsigned long))];
	size_t plen = len < sizeof probe ? len : sizeof probe;
	long kret = syscall(__NR_sched_getaffinity, 0, plen, probe);
	if (kret < 0 && errno == EINVAL && len > plen)
		kret = (long)sizeof probe;
	if (kret < 0) {
		sandlock_action_set_errno(act, errno);
		return true;
	}
	size_t need = ((s->n + 63) / 64) * 8;
	size_t ret = (size_t)kret > need ? (size_t)kret : need;
	if (len < ret) {
		sandlock_action_set_errno(act, EINVAL);
		return true;
	}
	uint8_t *mask = calloc(1, ret);
	if (!mask) {
		sandlock_action_set_errno(act, ENOMEM);
		return true;
	}
	for (uint32_t c = 0; c < s->n; c++)
		mask[c / 8] |= (uint8_t)(1u << (c % 8));
	if (sandlock_mem_poke(call->mem, n->args[2], mask, ret) != 0)
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, (int64_t)ret);
	free(mask);
	return true;
}

const struct sl_builtin sl_builtin_cpus = {
	.name = "num_cpus",
	.setting = "num_cpus (needs the supervisor)",
	.phase = SL_PHASE_FIRST,
	.syscalls = cpus_syscalls,
	.init = cpus_init,
	.free = free,
	.decide = cpus_decide,
};
