/*
 * usage.c — CPU time and memory of a running sandbox, from its cgroup
 * where one holds the whole tree, else from /proc of each process.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/proctree.h"
#include "run/usage.h"
#include "util.h"

/* A scan lists at most this many processes (max_processes is far lower). */
#define SL_USAGE_MAX_PROCS 4096

/* Read a small file (dirfd-relative or absolute) into buf; bytes or -1. */
static ssize_t slurp(int dirfd, const char *path, char *buf, size_t cap)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

/* "usage_usec N" of the group's cpu.stat (present without the cpu
 * controller: the core accounts every group). */
static int64_t group_cpu_ns(int cg_dirfd)
{
	char buf[1024];
	if (slurp(cg_dirfd, "cpu.stat", buf, sizeof buf) <= 0)
		return -1;
	const char *p = strstr(buf, "usage_usec ");
	unsigned long long us;
	if (!p || sscanf(p, "usage_usec %llu", &us) != 1)
		return -1;
	return (int64_t)us * 1000;
}

/* utime + stime + cutime + cstime of one process, in clock ticks; -1 if gone. */
static int64_t proc_ticks(pid_t pid)
{
	char path[48], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (slurp(AT_FDCWD, path, buf, sizeof buf) <= 0)
		return -1;
	/* comm may contain spaces and ')': fields after the LAST ')' */
	const char *p = strrchr(buf, ')');
	unsigned long long ut, st;
	long long cut, cst;
	if (!p || sscanf(p + 1,
	                 " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %lld %lld", &ut,
	                 &st, &cut, &cst) != 4)
		return -1;
	return (int64_t)(ut + st) + cut + cst;
}

/* init's descendants into a heap array; count or -1. */
static int tree(pid_t init, struct sl_proc **out)
{
	*out = malloc(SL_USAGE_MAX_PROCS * sizeof(**out));
	if (!*out)
		return -1;
	int n = sl_tree_list(init, *out, SL_USAGE_MAX_PROCS);
	return n > SL_USAGE_MAX_PROCS ? SL_USAGE_MAX_PROCS : n;
}

int64_t sl_usage_cpu_ns(pid_t init, int cg_dirfd)
{
	if (cg_dirfd >= 0) {
		int64_t ns = group_cpu_ns(cg_dirfd);
		if (ns >= 0)
			return ns;
	}
	int64_t ticks = proc_ticks(init);
	if (ticks < 0)
		return -1;
	struct sl_proc *v;
	int n = tree(init, &v);
	for (int i = 0; i < n; i++) {
		int64_t t = proc_ticks(v[i].pid);
		if (t > 0)
			ticks += t; /* gone meanwhile: its time moved to its parent */
	}
	free(v);
	long hz = sysconf(_SC_CLK_TCK);
	return ticks * (1000000000 / (hz > 0 ? hz : 100));
}

/* Resident set of one process, bytes (statm's second field, in pages). */
static int64_t proc_rss(pid_t pid)
{
	char path[48], buf[256];
	snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
	unsigned long long size, res;
	if (slurp(AT_FDCWD, path, buf, sizeof buf) <= 0 || sscanf(buf, "%llu %llu", &size, &res) != 2)
		return 0;
	return (int64_t)res * sysconf(_SC_PAGESIZE);
}

int64_t sl_usage_memory_bytes(pid_t init, const char *mem_dir)
{
	char buf[64];
	unsigned long long b;
	if (mem_dir) {
		int dfd = open(mem_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		bool ok = dfd >= 0 && (slurp(dfd, "memory.current", buf, sizeof buf) > 0 ||
		                       slurp(dfd, "memory.usage_in_bytes", buf, sizeof buf) > 0);
		if (dfd >= 0)
			close(dfd);
		if (ok && sscanf(buf, "%llu", &b) == 1)
			return (int64_t)b;
	}
	struct sl_proc *v;
	int n = tree(init, &v);
	if (n < 0) {
		free(v);
		return -1;
	}
	int64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += proc_rss(v[i].pid);
	free(v);
	return sum;
}
