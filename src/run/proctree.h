/*
 * proctree.h — reading the process tree from /proc: the process count of
 * the sandbox (builtins/procs.c), the end-of-run sweep and pause/resume
 * of a running sandbox (run.c).
 */
#ifndef SANDLOCK_PROCTREE_H
#define SANDLOCK_PROCTREE_H

#include <stdbool.h>
#include <sys/types.h>

/* Fields of /proc/<pid>/stat (procfd: an fd of /proc); false if gone. */
bool sl_proc_stat(int procfd, const char *pid, char *state, long *ppid, long *pgrp);
/* Number of processes descending from root, root excluded (walks the
 * /proc children files down from root; zombies count until reaped; 0 once
 * root is gone).  -1 if /proc is unreadable. */
int sl_count_tree_processes(pid_t root);

/* A growable list of pids. */
struct sl_pidvec {
	pid_t *v;
	size_t n, cap;
};
int sl_pidvec_push(struct sl_pidvec *pv, pid_t p); /* 0 or -1 (ENOMEM) */
/* Push the children of every thread of pid (/proc/PID/task/TID/children)
 * onto out.  0 (also for a pid that is gone) or -1. */
int sl_proc_children(pid_t pid, struct sl_pidvec *out);

/* One process of a tree: pid, parent, state letter of /proc/PID/stat. */
struct sl_proc {
	pid_t pid, ppid;
	char state;
};
/* root's descendants (root excluded): the first max in out[], returns how
 * many there are (may exceed max), or -1.  Used by pause/resume (run.c). */
int sl_tree_list(pid_t root, struct sl_proc *out, size_t max);

/* True if some descendant of root (root excluded) holds an fd of the
 * socket with inode ino (its /proc/PID/fd links read "socket:[ino]"). */
bool sl_tree_holds_socket(pid_t root, unsigned long ino);
/* Does process pid itself hold socket ino (its /proc/PID/fd)? */
bool sl_pid_holds_socket(pid_t pid, unsigned long ino);

#endif /* SANDLOCK_PROCTREE_H */
