/*
 * cglimits.c — the cgroups of one run, for limits that cover the whole
 * sandbox rather than each process: max_memory (memory.max on cgroup v2,
 * memory.limit_in_bytes on v1) and max_cpu (cpu.max / cpu.cfs_quota_us).
 *
 * A group is made below the caller's own group of that hierarchy, named
 * sandlock-<pid>-<n>, before fork; the child joins it before it confines
 * itself (limits.c), so init, the command and everything they start are
 * in it and stay in it: Landlock keeps /sys/fs/cgroup unwritable unless
 * the caller grants it (README), so nothing inside can move itself out.
 * v2 is tried first (one group for both limits), then v1; where neither
 * can be made (no delegation, not root), max_memory falls back to
 * RLIMIT_AS per process and max_cpu to the supervisor's throttle
 * (throttle.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "launch/cglimits.h"
#include "run/cgroup.h" /* sl_cgroup_disabled */

bool sl_cglimits_no_cpu_group;

#define SL_CPU_PERIOD_US 100000

static atomic_uint g_seq;

void sl_cg_init(struct sl_cglimits *cg)
{
	memset(cg, 0, sizeof(*cg));
	cg->v2.procs = cg->mem_v1.procs = cg->cpu_v1.procs = -1;
}

/* Write s to dir/file; 0 or -errno. */
static int put(const char *dir, const char *file, const char *s)
{
	char *p = sl_asprintf("%s/%s", dir, file);
	if (!p)
		return -ENOMEM;
	int fd = open(p, O_WRONLY | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return -errno;
	ssize_t n = write(fd, s, strlen(s));
	int e = errno;
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -(n < 0 ? e : EIO);
}

/* First line of dir/file into buf (without the newline); false if unreadable. */
static bool get(const char *dir, const char *file, char *buf, size_t cap)
{
	char *p = sl_asprintf("%s/%s", dir, file);
	FILE *f = p ? fopen(p, "re") : NULL;
	free(p);
	if (!f)
		return false;
	bool ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = 0;
	return ok;
}

/* Does the space-separated list contain word? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ' || p[-1] == ',') &&
		    (p[n] == 0 || p[n] == ' ' || p[n] == ','))
			return true;
	return false;
}

/*
 * The mount point of the hierarchy with controller ctl ("" = cgroup2) and
 * the path of pid (0: the caller; share_budget: a process of the sandbox
 * whose budget this run shares) in it, from /proc/self/mountinfo and
 * /proc/PID/cgroup.  Heap "mount/path", or NULL.
 */
static char *group_of(const char *ctl, pid_t pid)
{
	char line[1024], mnt[512] = "", path[512] = "", file[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	while (f && !*mnt && fgets(line, sizeof line, f)) {
		char *dash = strstr(line, " - ");
		char point[512], fstype[64], opts[512] = "";
		if (!dash || sscanf(line, "%*s %*s %*s %*s %511s", point) != 1 ||
		    sscanf(dash + 3, "%63s %*s %511s", fstype, opts) < 1)
			continue;
		if (*ctl ? (strcmp(fstype, "cgroup") == 0 && has_word(opts, ctl))
		         : strcmp(fstype, "cgroup2") == 0)
			snprintf(mnt, sizeof mnt, "%s", point);
	}
	if (f)
		fclose(f);
	if (pid)
		snprintf(file, sizeof file, "/proc/%d/cgroup", (int)pid);
	f = fopen(pid ? file : "/proc/self/cgroup", "re");
	while (f && *mnt && !*path && fgets(line, sizeof line, f)) {
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = 0;
		bool match = *ctl ? has_word(c1 + 1, ctl) : (c1[1] == 0);
		if (match) {
			c2[1 + strcspn(c2 + 1, "\n")] = 0;
			snprintf(path, sizeof path, "%s", c2 + 1);
		}
	}
	if (f)
		fclose(f);
	if (!*mnt || !*path)
		return NULL;
	return sl_asprintf("%s%s", mnt, strcmp(path, "/") == 0 ? "" : path);
}

/* mkdir a fresh sandlock-<pid>-<n> group below parent; heap path or NULL. */
static char *make_group(const char *parent)
{
	char *dir = sl_asprintf("%s/sandlock-%d-%u", parent, (int)getpid(),
	                        atomic_fetch_add(&g_seq, 1));
	if (dir && mkdir(dir, 0755) == 0)
		return dir;
	free(dir);
	return NULL;
}

static void remove_group(char **dir)
{
	if (!*dir)
		return;
	/* The kernel frees a group a moment after its last task is reaped. */
	for (int i = 0; i < 200 && rmdir(*dir) < 0 && errno == EBUSY; i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	free(*dir);
	*dir = NULL;
}

static int open_procs(const char *dir)
{
	char *p = sl_asprintf("%s/cgroup.procs", dir);
	int fd = p ? open(p, O_WRONLY | O_CLOEXEC) : -1;
	free(p);
	/* Off 0..2: the child moves its stdio there before it joins. */
	if (fd >= 0 && fd <= 2) {
		int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = moved;
	}
	return fd;
}

/* Keep g only if its cgroup.procs can be opened (the child joins by it). */
static bool group_ready(struct sl_cg_group *g)
{
	if (g->dir && (g->procs = open_procs(g->dir)) >= 0)
		return true;
	remove_group(&g->dir);
	return false;
}

/* The limits as their files want them. */
struct limit_vals {
	char mem[32], cpu_max[48], quota[24], period[24];
};

static void limit_vals(const struct sandlock_sandbox *cfg, struct limit_vals *v)
{
	unsigned q = cfg->max_cpu * (SL_CPU_PERIOD_US / 100);
	snprintf(v->mem, sizeof v->mem, "%llu", (unsigned long long)cfg->max_memory);
	snprintf(v->cpu_max, sizeof v->cpu_max, "%u %u", q, SL_CPU_PERIOD_US);
	snprintf(v->quota, sizeof v->quota, "%u", q);
	snprintf(v->period, sizeof v->period, "%u", SL_CPU_PERIOD_US);
}

/*
 * cgroup v2: ONE group for every limit its controllers allow.  (Two v2
 * groups, one per limit, would not work: joining the second moves the
 * child out of the first, and that limit would silently not apply.)
 * Sets *mem / *cpu for the limits it holds.
 */
static void v2_group(const struct sandlock_sandbox *cfg, const struct limit_vals *v,
                     struct sl_cglimits *cg, bool *mem, bool *cpu)
{
	char *parent = group_of("", cfg->budget_pid);
	char *dir = parent ? make_group(parent) : NULL;
	free(parent);
	char ctls[256];
	if (dir && get(dir, "cgroup.controllers", ctls, sizeof ctls)) {
		if (cfg->max_memory && has_word(ctls, "memory") && put(dir, "memory.max", v->mem) == 0) {
			/* 0: the budget is not stretched by swapping */
			(void)put(dir, "memory.swap.max", "0");
			*mem = true;
		}
		*cpu = cfg->max_cpu && has_word(ctls, "cpu") && put(dir, "cpu.max", v->cpu_max) == 0;
	}
	cg->v2.dir = dir;
	if (!(*mem || *cpu) || !group_ready(&cg->v2)) {
		remove_group(&cg->v2.dir);
		*mem = *cpu = false;
	}
}

/* A group of the v1 hierarchy of controller ctl whose files took vals. */
static bool v1_group(struct sl_cg_group *g, const char *ctl, pid_t below,
                     const char *const *files, const char *const *vals, size_t n)
{
	char *parent = group_of(ctl, below);
	g->dir = parent ? make_group(parent) : NULL;
	free(parent);
	for (size_t i = 0; g->dir && i < n; i++)
		if (put(g->dir, files[i], vals[i]) < 0)
			remove_group(&g->dir);
	return group_ready(g);
}

int sl_cg_prepare(const struct sandlock_sandbox *cfg, struct sl_cglimits *cg, int *err,
                  char **msg)
{
	sl_cg_init(cg);
	if (sl_limits_check(cfg, err, msg) < 0)
		return -1;
	if (!cfg->max_memory && !cfg->max_cpu)
		return 0;
	struct limit_vals v;
	limit_vals(cfg, &v);
	bool mem = false, cpu = false;
	if (!sl_cgroup_disabled)
		v2_group(cfg, &v, cg, &mem, &cpu);
	if (cpu && sl_cglimits_no_cpu_group)
		cpu = false; /* the v2 group stays (memory, the freezer); max_cpu is throttled */
	if (mem)
		cg->mem_dir = cg->v2.dir;
	if (cfg->max_memory && !mem && !sl_cgroup_disabled) {
		const char *files[] = { "memory.limit_in_bytes" };
		const char *vals[] = { v.mem };
		if ((mem = v1_group(&cg->mem_v1, "memory", cfg->budget_pid, files, vals, 1))) {
			/* swap counts too where the kernel accounts it */
			(void)put(cg->mem_v1.dir, "memory.memsw.limit_in_bytes", v.mem);
			cg->mem_dir = cg->mem_v1.dir;
		}
	}
	if (cfg->max_cpu && !cpu && !sl_cgroup_disabled && !sl_cglimits_no_cpu_group) {
		const char *files[] = { "cpu.cfs_period_us", "cpu.cfs_quota_us" };
		const char *vals[] = { v.period, v.quota };
		cpu = v1_group(&cg->cpu_v1, "cpu", cfg->budget_pid, files, vals, 2);
	}
	/* No CPU group: the supervisor stops and continues the sandbox
	 * (throttle.c), as the reference does everywhere. */
	cg->cpu_throttle = cfg->max_cpu && !cpu;
	if (cfg->max_memory && !mem) {
		cg->mem_rlimit = true;
		sl_warn("no memory cgroup can be made here: max_memory is an address-space "
		        "limit (RLIMIT_AS) of each process, not of the whole sandbox");
	}
	return 0;
}

static void release_group(struct sl_cg_group *g)
{
	if (g->procs >= 0)
		close(g->procs);
	g->procs = -1;
	remove_group(&g->dir);
}

void sl_cg_release(struct sl_cglimits *cg)
{
	release_group(&cg->v2);
	release_group(&cg->mem_v1);
	release_group(&cg->cpu_v1);
	cg->mem_dir = NULL;
}

void sl_cg_probe(struct sl_cg_probe *p)
{
	memset(p, 0, sizeof(*p));
	char *v2 = group_of("", 0);
	if (v2) {
		snprintf(p->v2_path, sizeof p->v2_path, "%s", v2);
		p->v2_writable = access(v2, W_OK) == 0;
		if (!get(v2, "cgroup.controllers", p->v2_controllers, sizeof p->v2_controllers))
			p->v2_controllers[0] = 0;
		free(v2);
	}
	char *m = group_of("memory", 0), *c = group_of("cpu", 0);
	p->v1_memory = m && access(m, W_OK) == 0;
	p->v1_cpu = c && access(c, W_OK) == 0;
	free(m);
	free(c);
}
