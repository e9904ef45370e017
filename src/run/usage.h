/*
 * usage.h — what a running sandbox uses: CPU time and memory, for
 * sandlock_handle_cpu_time_ns / _memory_bytes and the CPU throttle
 * (throttle.c).
 */
#ifndef SANDLOCK_USAGE_H
#define SANDLOCK_USAGE_H

#include <stdint.h>
#include <sys/types.h>

/*
 * CPU time (ns, user + system, every thread) used by the sandbox so far.
 * With the run's cgroup v2 group (cg_dirfd >= 0, the whole tree is in it)
 * its cpu.stat usage_usec; else the sum over init and its descendants of
 * utime + stime + cutime + cstime (/proc/PID/stat, clock ticks): the
 * times of reaped processes are in their parents' c-times.  -1 if
 * neither can be read.
 */
int64_t sl_usage_cpu_ns(pid_t init, int cg_dirfd);
/*
 * Memory (bytes) the sandbox uses now: the charge of its memory cgroup
 * (mem_dir: v2 memory.current or v1 memory.usage_in_bytes), else the sum
 * of the resident set sizes of init's descendants.  -1 if unreadable.
 */
int64_t sl_usage_memory_bytes(pid_t init, const char *mem_dir);

#endif /* SANDLOCK_USAGE_H */
