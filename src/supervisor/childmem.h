/*
 * childmem.h — reading and writing the memory of a trapped process,
 * each read confirmed with SECCOMP_IOCTL_NOTIF_ID_VALID.
 */
#ifndef SANDLOCK_CHILDMEM_H
#define SANDLOCK_CHILDMEM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandlock.h"

struct sl_memcache; /* per-pid /proc/PID/mem cache, one thread only */

struct sandlock_mem {
	int listener;  /* to check SECCOMP_IOCTL_NOTIF_ID_VALID */
	uint64_t id;   /* notification id */
	pid_t pid;
	int fd;        /* /proc/pid/mem, -1 until first use */
	bool owns_fd;  /* close fd when done (deferred jobs); else cache owns it */
	struct sl_memcache *cache; /* NULL for a private handle */
};

struct sl_memcache *sl_memcache_new(void);
void sl_memcache_free(struct sl_memcache *c);
/* Drop the cached /proc/PID/mem of pid (after execve). */
void sl_memcache_forget(struct sl_memcache *c, pid_t pid);
/* A handle for notification n; cache NULL = a private fd (other threads). */
void sl_mem_init(sandlock_mem_t *m, int listener, const sandlock_notif_t *n,
                 struct sl_memcache *cache);
void sl_mem_done(sandlock_mem_t *m);
/* True if the notification is still pending (the pid is still the caller). */
bool sl_notif_valid(int listener, uint64_t id);
/* sandlock_mem_read_string without the ID_VALID check after the read (one
 * ioctl less): for a caller that only passes the call on (CONTINUE: the
 * kernel reads the string again itself) unless sl_notif_valid, asked
 * after its last read of the caller, says the bytes were the caller's
 * (the COW builtin: most paths a build names lie outside the workdir). */
char *sl_mem_read_string_unverified(sandlock_mem_t *m, uint64_t addr, size_t max_len);

#endif /* SANDLOCK_CHILDMEM_H */
