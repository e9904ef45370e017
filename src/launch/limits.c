/*
 * limits.c — settings the sandboxed child applies to itself after fork
 * (async-signal-safe: raw syscalls, no allocation).
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "launch/cglimits.h"

#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#endif

static bool has_cores(const struct sandlock_sandbox *cfg)
{
	for (size_t i = 0; i < SL_MAX_CORES / 64; i++)
		if (cfg->cpu_cores[i])
			return true;
	return false;
}

/* cpu_cores as a cpu_set_t (CPU_SET is a macro on a fixed array: safe here). */
static void core_set(const struct sandlock_sandbox *cfg, cpu_set_t *set)
{
	CPU_ZERO(set);
	for (unsigned c = 0; c < SL_MAX_CORES && c < CPU_SETSIZE; c++)
		if (cfg->cpu_cores[c / 64] & (1ull << (c % 64)))
			CPU_SET(c, set);
}

/* Writing "0" to cgroup.procs moves the writer itself into the group. */
static int join(int procs_fd)
{
	if (procs_fd < 0)
		return 0;
	return write(procs_fd, "0", 1) == 1 ? 0 : errno;
}

int sl_limits_child(const struct sandlock_sandbox *cfg, const struct sl_cglimits *cg)
{
	int e;
	if ((e = join(cg->v2.procs)) || (e = join(cg->mem_v1.procs)) || (e = join(cg->cpu_v1.procs)))
		return e;
	if (cfg->no_coredump) {
		struct rlimit rl = { 0, 0 };
		if (setrlimit(RLIMIT_CORE, &rl) < 0)
			return errno;
	}
	if (cfg->no_huge_pages && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		return errno;
	/* Set before the filter, which denies personality changes in the guest;
	 * the flag is inherited and takes effect at the command's exec. */
	if (cfg->no_randomize_memory) {
		int cur = personality(0xffffffff);
		if (cur < 0 || personality((unsigned long)cur | ADDR_NO_RANDOMIZE) < 0)
			return errno;
	}
	if (has_cores(cfg)) {
		cpu_set_t set;
		core_set(cfg, &set);
		if (sched_setaffinity(0, sizeof set, &set) < 0)
			return errno;
	}
	return 0;
}

/* max_memory without a memory group: an address-space limit of the
 * command (and so of each process it starts), never of init, which
 * shares the command's memory until the exec and must outlive any limit
 * too small for the command to start (it reports that exec's failure). */
static int limit_address_space(const struct sandlock_sandbox *cfg, const struct sl_cglimits *cg)
{
	if (!cfg->max_memory || !cg->mem_rlimit)
		return 0;
	struct rlimit rl = { cfg->max_memory, cfg->max_memory };
	return setrlimit(RLIMIT_AS, &rl) < 0 ? errno : 0;
}

int sl_limits_command(const struct sandlock_sandbox *cfg, const struct sl_cglimits *cg)
{
	int e = limit_address_space(cfg, cg);
	if (e || !cfg->max_open_files)
		return e;
	struct rlimit cur;
	if (getrlimit(RLIMIT_NOFILE, &cur) < 0)
		return errno;
	/* An upper bound, never a grant: at most what sandlock itself has. */
	rlim_t n = cfg->max_open_files;
	if (cur.rlim_cur != RLIM_INFINITY && n > cur.rlim_cur)
		n = cur.rlim_cur;
	if (cur.rlim_max != RLIM_INFINITY && n > cur.rlim_max)
		n = cur.rlim_max;
	struct rlimit rl = { n, n };
	return setrlimit(RLIMIT_NOFILE, &rl) < 0 ? errno : 0;
}

/*
 * Parent side: no_randomize_memory needs personality(ADDR_NO_RANDOMIZE),
 * which Docker's and podman's default seccomp profiles refuse (they allow
 * a few personality values only).  Tried on this thread and undone at
 * once (a personality is per thread and only acts at the next exec), so
 * the run fails here with the reason instead of in the child with a bare
 * EPERM.
 */
static int check_personality(const struct sandlock_sandbox *cfg, int *err, char **msg)
{
	if (!cfg->no_randomize_memory)
		return 0;
	int cur = personality(0xffffffff);
	if (cur >= 0 && (cur & ADDR_NO_RANDOMIZE))
		return 0;
	if (cur >= 0 && personality((unsigned long)cur | ADDR_NO_RANDOMIZE) >= 0) {
		(void)personality((unsigned long)cur);
		return 0;
	}
	return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
	               "no_randomize_memory: personality(ADDR_NO_RANDOMIZE) is refused here (%s): "
	               "a container's default seccomp profile allows only a few personalities; "
	               "run without --no-randomize-memory, or with a profile that allows it",
	               strerror(errno));
}

/* Parent side: every requested core must be one the caller may run on. */
static int check_cores(const struct sandlock_sandbox *cfg, int *err, char **msg)
{
	if (!has_cores(cfg))
		return 0;
	cpu_set_t allowed;
	if (sched_getaffinity(0, sizeof allowed, &allowed) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "sched_getaffinity: %s", strerror(errno));
	for (unsigned c = 0; c < SL_MAX_CORES; c++) {
		if (!(cfg->cpu_cores[c / 64] & (1ull << (c % 64))))
			continue;
		if (c >= CPU_SETSIZE || !CPU_ISSET(c, &allowed))
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
			               "cpu_cores: core %u is not available to this process", c);
	}
	return 0;
}

int sl_limits_check(const struct sandlock_sandbox *cfg, int *err, char **msg)
{
	if (check_cores(cfg, err, msg) < 0)
		return -1;
	return check_personality(cfg, err, msg);
}
