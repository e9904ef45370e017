/*
 * virtfiles.h — synthetic views of host files, served by the opener.
 *
 * When the opener (opener.c) has opened, read-only, one of the files
 * below for the guest, the fd it hands over is replaced by a sealed
 * memfd with the sandbox's view of it (a pipe for the random devices):
 *   /proc/cpuinfo, /proc/stat, /sys/devices/system/cpu/{online,possible,present}
 *                         num_cpus: N processors, renumbered 0..N-1
 *   /proc/meminfo         max_memory: MemTotal is the budget
 *   /dev/urandom, /dev/random
 *                         random_seed: a seeded stream (a pipe, urandom.h)
 *   /proc/PID/mounts, /proc/PID/mountinfo (and task/TID/...)
 *                         /proc readable: only mounts at or below a
 *                         readable or writable path, none under a denied one
 * The real file was opened first, by the confined opener: a view is never
 * served for a file the guest could not open itself, and the mount views
 * filter the table of the file actually opened.
 */
#ifndef SANDLOCK_VIRTFILES_H
#define SANDLOCK_VIRTFILES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct sandlock_sandbox;
struct sl_virt;

/* The views cfg asks for (copied: no pointer into cfg); NULL on OOM. */
struct sl_virt *sl_virt_new(const struct sandlock_sandbox *cfg);
void sl_virt_free(struct sl_virt *v);
/* real: the canonical path of *fd, opened read-only for thread caller.  If it has a view,
 * *fd is closed and replaced by the view: 0; no view: 0, *fd untouched;
 * an errno if the view could not be made (never the real file then). */
int sl_virt_serve(struct sl_virt *v, const char *real, pid_t caller, int *fd);
/* A sealed, read-only memfd holding buf[0..len), offset 0; -1 on error. */
int sl_virt_memfd(const char *name, const void *buf, size_t len);

#endif /* SANDLOCK_VIRTFILES_H */
