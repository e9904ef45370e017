/*
 * execpath.h — making a trapped execve/execveat run another file than the
 * one its path string names to the kernel.
 *
 * Exec can only be performed by the kernel, on the caller's own call: the
 * supervisor cannot exec for it, nor move the path pointer (a register).
 * What it can change is the memory that pointer reaches.  The virtual
 * chroot (a guest path -> the host path behind it) and the COW workdir (a
 * file staged in the upper layer) therefore write the path the kernel
 * must use over the caller's string, then let the call continue.
 *
 * The new path is usually longer and often *is* argv[0] (a shell runs
 * "./prog" with the same string as path and argv[0]).  Every argv/envp
 * string the new path would cover is first copied to scratch space below
 * the calling thread's stack pointer (memory no one uses while it is
 * blocked in the call) and its argv/envp slot pointed there, so the
 * program still sees its own argv.  The bytes after the caller's string
 * are overwritten, which is harmless once the exec succeeds (the image is
 * replaced): callers answer every failure they can foresee before.
 */
#ifndef SANDLOCK_EXECPATH_H
#define SANDLOCK_EXECPATH_H

#include <stdbool.h>
#include <stddef.h>

#include "builtins/builtin.h"

/*
 * A caller made by vfork (or posix_spawn, or any CLONE_VM child) shares
 * its memory with its parent, which runs on once the exec is over: what
 * was written there must be put back before the parent sees it.  The
 * parent is stopped (SIGSTOP: its own parent may see the stop, as for
 * policy_fn's exec freeze) before the call continues, and the builtin's
 * answered hook (builtin.h) waits for the exec to be over, restores the
 * bytes and lets the parent go on.  One per builtin state: a chain runs
 * on one thread, and answered follows its decide.
 */
struct sl_exec_piece {
	uint64_t addr;
	size_t len;
	unsigned char *old;
};
struct sl_exec_undo {
	uint64_t id;        /* the notification it belongs to; 0: none */
	pid_t tid, tgid;    /* the caller (thread, process) */
	pid_t parent;       /* the parent sharing its memory (sl_path_swap: tgid) */
	bool self;          /* sl_path_swap: parent is the caller's own process */
	int parent_pidfd;   /* held stopped through this */
	int caller_pidfd;   /* exec: the caller's process, held stopped too */
	int mem_fd;         /* PARENT's /proc mem, opened while the memory was shared */
	struct sl_exec_piece *v;
	size_t n;
};

/* Make the trapped exec's path string read path (absolute, or relative to
 * the caller's cwd for execve), argv and envp unchanged as the program
 * will see them.  Where path would run into the argv or envp array
 * itself and short_ok, the file (opened by the confined opener: Landlock
 * decides) is installed in the caller and named by its short /dev/fd/N
 * form instead.  undo (zeroed, or after sl_exec_answered) records what a
 * parent sharing the memory needs put back.  0, or -errno: ENAMETOOLONG
 * when it cannot be placed (no scratch space, no short form), memory
 * untouched then. */
int sl_exec_set_path(const struct sl_call *call, const char *path, bool short_ok,
                     struct sl_exec_undo *undo);

/*
 * chdir: the kernel must chdir on the caller's own string, which the
 * caller keeps using afterwards (a shell's $PWD).  Write path over the
 * string at addr (running on past it when longer), with the caller's
 * process stopped from the answer on, and the old bytes put back by
 * sl_exec_answered once its call is over, before it runs again.
 * 0, or -errno (nothing changed).
 */
int sl_path_swap(const struct sl_call *call, uint64_t addr, const char *path,
                 struct sl_exec_undo *undo);

/* The builtin's state goes away (its run is over): whatever undo still
 * holds is put back and let go. */
void sl_exec_undo_release(struct sl_exec_undo *undo);

/* The answered hook's part: if undo belongs to n, wait (bounded) until the
 * exec is over, restore the parent's memory, continue it, clear undo. */
void sl_exec_answered(struct sl_exec_undo *undo, const sandlock_notif_t *n);

#endif /* SANDLOCK_EXECPATH_H */
