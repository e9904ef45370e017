/*
 * cgroup.h — a cgroup v2 subtree per run, where one can be made: the final
 * sweep that no process of the sandbox survives (cgroup.kill), even when
 * the sandbox's init died before it could end its subtree.
 */
#ifndef SANDLOCK_CGROUP_H
#define SANDLOCK_CGROUP_H

#include <stdbool.h>
#include <sys/types.h>

struct sl_cgroup {
	int dirfd;    /* the run's cgroup directory, or -1: none */
	int parentfd; /* the directory it was made in (for rmdir) */
	int procs;    /* its cgroup.procs, open for writing: the child joins by it */
	char name[64];
};

/* Make a fresh cgroup below the caller's own (no controllers needed: only
 * cgroup.procs and cgroup.kill are used).  False, silently, where cgroup
 * v2 is absent or not writable (unprivileged, no delegation): the run
 * then relies on init and the process-group sweep alone. */
bool sl_cgroup_create(struct sl_cgroup *cg, pid_t below);
/* (below: make it below the v2 group of that process instead of our own:
 * share_budget.)  The v2 group directory of pid (0: ours), opened, or -1. */
int sl_cgroup_open_of(pid_t pid);
/* The processes of the v2 group at dirfd and of every group below it,
 * those whose parent is outside them (the runs' inits) not counted.
 * -1 if it cannot be read. */
int sl_cgroup_count_processes(int dirfd);
/* Does the v2 group at dirfd hold groups below it? */
bool sl_cgroup_has_children(int dirfd);
/* Use an existing v2 group the child will join anyway (the limits group of
 * cglimits.c: a process is in one v2 group only, so a second one of ours
 * would be left empty).  Not made, not joined, not removed here.  False if
 * path is not a v2 group with cgroup.kill. */
bool sl_cgroup_adopt(struct sl_cgroup *cg, const char *path);
/* After the child had its chance to join (writing "0" to cg->procs, first
 * thing after fork): false if the cgroup is still empty (the write
 * failed, e.g. no permission on the common ancestor); it is then
 * destroyed and the run goes on without it. */
bool sl_cgroup_confirm(struct sl_cgroup *cg);
/* SIGKILL every process in it and wait (bounded) until it is empty. */
void sl_cgroup_kill(struct sl_cgroup *cg);
/* Kill what is left, remove the cgroup, close everything.  Idempotent. */
void sl_cgroup_destroy(struct sl_cgroup *cg);
/* freeze: write 1 to cgroup.freeze and wait (bounded: 2 s) until
 * cgroup.events says "frozen 1"; at the timeout it is thawed again.
 * !freeze: write 0.  Every task of the group, init included.  0, or -1
 * with errno (ENOTSUP: no v2 group or no cgroup.freeze). */
int sl_cgroup_freeze(const struct sl_cgroup *cg, bool freeze);
/* Tests only: pretend no cgroup can be made (the fallback path). */
extern bool sl_cgroup_disabled;

#endif /* SANDLOCK_CGROUP_H */
