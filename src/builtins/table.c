/*
 * table.c — every builtin, in dispatch order.  Adding a builtin is one
 * new file in this folder and one line here (docs/architecture.md).
 *
 * Order matters for FIRST-phase builtins: the argument re-check comes
 * first so that nothing later sees a call the filter would have denied,
 * then the blocklist's refusals (when reported) for the same reason.
 */
#include "builtins/builtin.h"

extern const struct sl_builtin sl_builtin_args;
extern const struct sl_builtin sl_builtin_refusals;
extern const struct sl_builtin sl_builtin_procs;
extern const struct sl_builtin sl_builtin_random;
extern const struct sl_builtin sl_builtin_clock;
extern const struct sl_builtin sl_builtin_pids;
extern const struct sl_builtin sl_builtin_cow;
extern const struct sl_builtin sl_builtin_chroot;
extern const struct sl_builtin sl_builtin_policy;
extern const struct sl_builtin sl_builtin_meta;
extern const struct sl_builtin sl_builtin_proc;
extern const struct sl_builtin sl_builtin_uts;
extern const struct sl_builtin sl_builtin_netdest;
extern const struct sl_builtin sl_builtin_cpus;
extern const struct sl_builtin sl_builtin_hosts;
extern const struct sl_builtin sl_builtin_netlink;
extern const struct sl_builtin sl_builtin_sysvipc;

const struct sl_builtin *const sl_builtin_table[] = {
	&sl_builtin_args,  /* FIRST: the filter's argument rules, again */
	&sl_builtin_refusals, /* FIRST: report_refusals: the blocklist refused here, seen */
	&sl_builtin_procs, /* FIRST: max_processes */
	&sl_builtin_random, /* FIRST: random_seed, getrandom answered from a seeded PRNG */
	&sl_builtin_clock,  /* FIRST: time_start, realtime clock reads shifted */
	&sl_builtin_pids,  /* FIRST: calls naming another process stay inside */
	&sl_builtin_cow,   /* FIRST: workdir writes staged in the COW layer */
	&sl_builtin_chroot, /* FIRST: chroot, path syscalls resolved in the guest's view */
	&sl_builtin_policy, /* FIRST: policy_fn events, runtime deny_path/network */
	&sl_builtin_meta,  /* LAST: chmod/chown/xattr/utimes performed on behalf */
	&sl_builtin_proc,  /* LAST: opens and /proc listings on behalf, /proc filtered */
	&sl_builtin_uts,   /* LAST: uname with the sandbox's name as nodename */
	&sl_builtin_netdest, /* LAST: connect/send/bind destinations, performed on behalf */
	&sl_builtin_cpus,  /* FIRST: num_cpus, sched_getaffinity answers N CPUs */
	&sl_builtin_hosts,   /* LAST: opens on behalf for the synthetic /etc/hosts */
	&sl_builtin_netlink, /* FIRST: NETLINK_ROUTE sockets of a loopback-only view */
	&sl_builtin_sysvipc, /* LAST: SysV IPC refused as the filter would, but seen */
};

const size_t sl_builtin_count = sizeof(sl_builtin_table) / sizeof(sl_builtin_table[0]);

int sl_builtin_unsupervised_traps(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	for (size_t i = 0; i < sl_builtin_count; i++) {
		const struct sl_builtin *b = sl_builtin_table[i];
		if (b->in_every_filter && b->syscalls && b->syscalls(cfg, out) < 0)
			return -1;
	}
	sl_traps_normalize(out);
	return 0;
}

int sl_builtin_traps(const struct sandlock_sandbox *cfg, struct sl_traps *per)
{
	for (size_t i = 0; i < sl_builtin_count; i++) {
		const struct sl_builtin *b = sl_builtin_table[i];
		if (b->syscalls && b->syscalls(cfg, &per[i]) < 0)
			return -1;
	}
	return 0;
}

/* Does any syscall of x appear in y? */
static bool share(const struct sl_traps *x, const struct sl_traps *y)
{
	for (size_t k = 0; k < x->n; k++)
		if (sl_traps_has(y, x->v[k].nr))
			return true;
	return false;
}

bool sl_builtin_last_clash(const struct sl_traps *per, size_t *a, size_t *b)
{
	for (size_t j = 0; j < sl_builtin_count; j++) {
		if (sl_builtin_table[j]->phase != SL_PHASE_LAST)
			continue;
		for (size_t i = 0; i < j; i++)
			if (sl_builtin_table[i]->phase == SL_PHASE_LAST && share(&per[j], &per[i])) {
				*a = i;
				*b = j;
				return true;
			}
	}
	return false;
}
