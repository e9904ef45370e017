/*
 * cglimits.c — the cgroups of one run, for limits that cover the whole
 * sandbox rather than each process: max_memory (memory.max on cgroup v2,
 * memory.limit_in_bytes on v1) and max_cpu (cpu.max / cpu.cfs_quota_us).
 *
 * A group is made below the caller's own group of that hierarchy, named
 * sandlock-<pid>-<n>, before fork; the child joins it before it confines
 * itself (limits.c), so init, the command and everything they start are
 * in it and stay in it: Landlock keeps /sys/fs/cgroup unwritable unless
 * the caller grants it (README), so nothing inside can move itself out.  v2 is tried first, then
 * v1; where neither can be made (no delegation, not root), max_memory
 * falls back to RLIMIT_AS per process and max_cpu is refused.
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

#include "cglimits.h"

#define SL_CPU_PERIOD_US 100000

static atomic_uint g_seq;

void sl_cg_init(struct sl_cglimits *cg)
{
	memset(cg, 0, sizeof(*cg));
	cg->mem_procs = cg->cpu_procs = -1;
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
 * the caller's path in it, from /proc/self/mountinfo and /proc/self/cgroup.
 * Heap "mount/path", or NULL.
 */
static char *own_group(const char *ctl)
{
	char line[1024], mnt[512] = "", path[512] = "";
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
	f = fopen("/proc/self/cgroup", "re");
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

/* A group (v2, else v1 hierarchy v1ctl) whose limit file accepted val. */
static char *group_with(const char *v2ctl, const char *v2file, const char *v2val,
                        const char *v1ctl, const char *const *v1files,
                        const char *const *v1vals, size_t nv1)
{
	char *parent = own_group("");
	char *dir = parent ? make_group(parent) : NULL;
	free(parent);
	char ctls[256];
	if (dir && get(dir, "cgroup.controllers", ctls, sizeof ctls) && has_word(ctls, v2ctl) &&
	    put(dir, v2file, v2val) == 0)
		return dir;
	remove_group(&dir);
	parent = own_group(v1ctl);
	dir = parent ? make_group(parent) : NULL;
	free(parent);
	for (size_t i = 0; dir && i < nv1; i++)
		if (put(dir, v1files[i], v1vals[i]) < 0)
			remove_group(&dir);
	return dir;
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

static int memory_group(const struct sandlock_sandbox *cfg, struct sl_cglimits *cg)
{
	char v[32];
	snprintf(v, sizeof v, "%llu", (unsigned long long)cfg->max_memory);
	const char *files[] = { "memory.limit_in_bytes" };
	const char *vals[] = { v };
	cg->mem_dir = group_with("memory", "memory.max", v, "memory", files, vals, 1);
	if (!cg->mem_dir)
		return -1;
	/* Swap counts too where the kernel accounts it (v2 swap.max is separate:
	 * 0 keeps the budget from being stretched by swapping). */
	(void)put(cg->mem_dir, "memory.swap.max", "0");
	(void)put(cg->mem_dir, "memory.memsw.limit_in_bytes", v);
	cg->mem_procs = open_procs(cg->mem_dir);
	return cg->mem_procs < 0 ? -1 : 0;
}

static int cpu_group(const struct sandlock_sandbox *cfg, struct sl_cglimits *cg)
{
	char v2[48], quota[24], period[24];
	unsigned q = cfg->max_cpu * (SL_CPU_PERIOD_US / 100);
	snprintf(v2, sizeof v2, "%u %u", q, SL_CPU_PERIOD_US);
	snprintf(quota, sizeof quota, "%u", q);
	snprintf(period, sizeof period, "%u", SL_CPU_PERIOD_US);
	const char *files[] = { "cpu.cfs_period_us", "cpu.cfs_quota_us" };
	const char *vals[] = { period, quota };
	cg->cpu_dir = group_with("cpu", "cpu.max", v2, "cpu", files, vals, 2);
	if (!cg->cpu_dir)
		return -1;
	cg->cpu_procs = open_procs(cg->cpu_dir);
	return cg->cpu_procs < 0 ? -1 : 0;
}

int sl_cg_prepare(const struct sandlock_sandbox *cfg, struct sl_cglimits *cg, int *err,
                  char **msg)
{
	sl_cg_init(cg);
	if (sl_limits_check_cores(cfg, err, msg) < 0)
		return -1;
	if (cfg->max_cpu && cpu_group(cfg, cg) < 0) {
		sl_cg_release(cg);
		return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
		               "max_cpu needs a cgroup with the cpu controller, and none can be "
		               "made here (see `sandlock check`)");
	}
	if (cfg->max_memory && memory_group(cfg, cg) < 0) {
		remove_group(&cg->mem_dir);
		cg->mem_rlimit = true;
		sl_warn("no memory cgroup can be made here: max_memory is an address-space "
		        "limit (RLIMIT_AS) of each process, not of the whole sandbox");
	}
	return 0;
}

void sl_cg_release(struct sl_cglimits *cg)
{
	if (cg->mem_procs >= 0)
		close(cg->mem_procs);
	if (cg->cpu_procs >= 0)
		close(cg->cpu_procs);
	cg->mem_procs = cg->cpu_procs = -1;
	remove_group(&cg->mem_dir);
	remove_group(&cg->cpu_dir);
}

void sl_cg_probe(struct sl_cg_probe *p)
{
	memset(p, 0, sizeof(*p));
	char *v2 = own_group("");
	if (v2) {
		snprintf(p->v2_path, sizeof p->v2_path, "%s", v2);
		p->v2_writable = access(v2, W_OK) == 0;
		if (!get(v2, "cgroup.controllers", p->v2_controllers, sizeof p->v2_controllers))
			p->v2_controllers[0] = 0;
		free(v2);
	}
	char *m = own_group("memory"), *c = own_group("cpu");
	p->v1_memory = m && access(m, W_OK) == 0;
	p->v1_cpu = c && access(c, W_OK) == 0;
	free(m);
	free(c);
}
