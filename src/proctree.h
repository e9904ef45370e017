/*
 * proctree.h — reading the process tree from /proc: the process count of
 * the sandbox (builtins/procs.c) and the end-of-run sweep (run.c).
 */
#ifndef SANDLOCK_PROCTREE_H
#define SANDLOCK_PROCTREE_H

#include <stdbool.h>
#include <sys/types.h>

/* Fields of /proc/<pid>/stat (procfd: an fd of /proc); false if gone. */
bool sl_proc_stat(int procfd, const char *pid, char *state, long *ppid, long *pgrp);
/* Number of processes descending from root, root excluded (scans /proc
 * for ppid links; zombies count until reaped).  -1 if /proc is unreadable. */
int sl_count_tree_processes(pid_t root);

#endif /* SANDLOCK_PROCTREE_H */
