/*
 * cglimits.h — resource limits and process settings of a sandbox:
 * cgroups made for a run (cglimits.c, parent side, before fork) and what
 * the child applies to itself before it confines itself (limits.c, raw
 * calls only: after fork in a possibly multi-threaded parent).
 */
#ifndef SANDLOCK_CGLIMITS_H
#define SANDLOCK_CGLIMITS_H

#include "config.h"

/* One group of ours: its directory (heap, removed at the end of the run)
 * and its cgroup.procs (O_WRONLY, above fd 2), or NULL / -1. */
struct sl_cg_group {
	char *dir;
	int procs;
};

/*
 * The run's cgroups.  On cgroup v2 a process is in exactly one group, so
 * every v2-backed limit goes into the one group v2; a limit whose
 * controller that group lacks gets a group of its own v1 hierarchy
 * (a process is in one group of each hierarchy at once).
 */
struct sl_cglimits {
	struct sl_cg_group v2, mem_v1, cpu_v1;
	const char *mem_dir; /* which of them holds memory.max / limit_in_bytes, or NULL */
	bool mem_rlimit;     /* no memory group: max_memory is RLIMIT_AS per process */
	bool cpu_throttle;   /* no CPU group: the supervisor throttles (throttle.c) */
};

void sl_cg_init(struct sl_cglimits *cg);
/*
 * Before fork: make the groups cfg needs (max_memory, max_cpu) and set
 * their limits.  max_memory without a memory group falls back to RLIMIT_AS
 * (with a warning); max_cpu without a CPU group is left to the
 * supervisor's SIGSTOP/SIGCONT throttle (cpu_throttle).  Also checks
 * cpu_cores and no_randomize_memory (sl_limits_check).  0, or -1 with *err, *msg.
 */
int sl_cg_prepare(const struct sandlock_sandbox *cfg, struct sl_cglimits *cg, int *err,
                  char **msg);
/* Before fork (limits.c): every cpu_cores entry is in the caller's
 * affinity, and no_randomize_memory's personality is allowed here. */
int sl_limits_check(const struct sandlock_sandbox *cfg, int *err, char **msg);
/* After the run (every process gone): remove the groups, close the fds. */
void sl_cg_release(struct sl_cglimits *cg);

/* What a cgroup setup can do on this host, for `sandlock check`. */
struct sl_cg_probe {
	char v2_path[256];   /* the caller's cgroup v2 directory, or "" */
	bool v2_writable;    /* a child group could be made there */
	char v2_controllers[256]; /* its cgroup.controllers */
	bool v1_memory, v1_cpu;   /* a writable v1 memory / cpu hierarchy */
};
void sl_cg_probe(struct sl_cg_probe *p);

/*
 * In the child after fork, before Landlock and seccomp (inherited by init
 * and the command): join the run's groups, then core dumps, transparent
 * huge pages, ASLR and affinity.  0 or an errno.
 */
int sl_limits_child(const struct sandlock_sandbox *cfg, const struct sl_cglimits *cg);
/* In the command, just before exec: the RLIMIT_AS fallback of max_memory
 * and RLIMIT_NOFILE (init needs its own fds and memory, so neither is
 * lowered for init).  0 or an errno. */
int sl_limits_command(const struct sandlock_sandbox *cfg, const struct sl_cglimits *cg);

/* Tests only: make no CPU group (max_cpu then takes the throttle), the
 * rest as usual: the throttle alongside a run's v2 group and its freezer. */
extern bool sl_cglimits_no_cpu_group;

#endif /* SANDLOCK_CGLIMITS_H */
