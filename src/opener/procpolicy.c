/*
 * procpolicy.c — which /proc files a sandbox may open: another process's
 * /proc/PID is invisible (ENOENT), the kernel files of k_deny are
 * refused (EACCES).  Decided on the real path of a file already opened,
 * so a racing thread has nothing to swap.  A leaf: the /proc builtin
 * (builtins/proc.c), the on-behalf opener (opener.c, for every open it
 * performs, whoever asked) and the dispatcher (whether /proc is guarded)
 * use it; see builtins/proc.c for why Landlock alone cannot do this.
 */
#include <errno.h>
#include <linux/magic.h>
#include <stdio.h>
#include <string.h>
#include <sys/statfs.h>

#include "opener/procpolicy.h"
#include "run/proctree.h"
#include "util.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Kernel files no sandbox needs, that leak addresses, other processes'
 * data or the host's layout, or act on the machine (all top-level). */
static const char *const k_deny[] = {
	"kallsyms",   "kcore",         "kmsg",        "sysrq-trigger", "keys",
	"key-users",  "timer_list",    "sched_debug", "kpagecount",    "kpageflags",
	"kpagecgroup", "slabinfo",     "vmallocinfo", "modules",       "iomem",
	"ioports",    "latency_stats", "config.gz",   "pagetypeinfo",  "mtrr",
	"sysvipc",    "bus",           "acpi",        "scsi",          "driver",
	"irq",        "dynamic_debug", "pressure",
};
/* Per-process files that show the host's mount table unfiltered (mounts
 * and mountinfo are served filtered by the opener: virtfiles.h). */
static const char *const k_deny_pid[] = { "mountstats" };

bool sl_proc_readable(const struct sandlock_sandbox *cfg)
{
	for (size_t i = 0; i < cfg->fs_deny.n; i++)
		if (sl_path_under("/proc", cfg->fs_deny.v[i]))
			return false;
	for (size_t i = 0; i < cfg->fs_read.n; i++)
		if (sl_path_under("/proc", cfg->fs_read.v[i]))
			return true;
	return false; /* fs_write cannot hold /proc: refused at build */
}

bool sl_proc_undenied(const struct sandlock_sandbox *cfg)
{
	for (size_t i = 0; i < cfg->fs_deny.n; i++)
		if (sl_path_under(cfg->fs_deny.v[i], "/proc"))
			return false;
	return true;
}

long sl_proc_leading_pid(const char *s)
{
	long v = 0;
	size_t i = 0;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		if (v > 1 << 22) /* beyond PID_MAX_LIMIT */
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return i > 0 && (s[i] == '\0' || s[i] == '/') ? v : -1;
}

bool sl_proc_in_sandbox(int procfd, pid_t init, long pid)
{
	if (init <= 0 || pid <= 0)
		return false;
	for (int depth = 0; depth < 256 && pid != init; depth++) {
		char num[24], state;
		long ppid, pgrp;
		snprintf(num, sizeof num, "%ld", pid);
		if (!sl_proc_stat(procfd, num, &state, &ppid, &pgrp))
			return false;
		if (ppid == init)
			return true;
		if (ppid <= 1)
			return false;
		pid = ppid;
	}
	return false; /* pid is init (outside), or an implausible chain */
}

static bool in_list(const char *name, size_t len, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(v[i]) == len && strncmp(name, v[i], len) == 0)
			return true;
	return false;
}

int sl_proc_policy(int procfd, pid_t init, const char *real)
{
	if (strncmp(real, "/proc/", 6) != 0)
		return 0; /* "/proc" itself, or procfs mounted elsewhere: nothing here */
	const char *first = real + 6;
	size_t flen = strcspn(first, "/");
	long pid = sl_proc_leading_pid(first);
	if (pid < 0)
		return in_list(first, flen, k_deny, N_OF(k_deny)) ? EACCES : 0;
	if (!sl_proc_in_sandbox(procfd, init, pid))
		return ENOENT; /* invisible, as if it did not exist */
	const char *last = strrchr(real, '/') + 1;
	return in_list(last, strlen(last), k_deny_pid, N_OF(k_deny_pid)) ? EACCES : 0;
}

/* fd is a file of procfs (or cannot be told otherwise: treated as one). */
bool sl_on_procfs(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) < 0 || sf.f_type == PROC_SUPER_MAGIC;
}
