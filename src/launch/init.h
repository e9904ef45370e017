/*
 * init.h — the sandbox's init: the forked child stays behind as a child
 * subreaper, the command is its child, and it ends the whole tree.
 */
#ifndef SANDLOCK_INIT_H
#define SANDLOCK_INIT_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

#include "sandlock.h"

/* These are the only signals init acts on, and only from its parent. */
#define SL_INIT_SIG_PDEATH SIGUSR1 /* its PR_SET_PDEATHSIG: the parent died */
#define SL_INIT_SIG_KILL SIGUSR2   /* the parent asks it to end the sandbox */
_Static_assert(SIGUSR2 == SANDLOCK_SIG_END_SANDBOX, "public ABI number");
/* The caller asks init to pass a signal (si_value) to the sandbox's group. */
#define SL_INIT_SIG_FORWARD SANDLOCK_SIG_FORWARD
struct sl_init {
	pid_t self;       /* init's pid (never asked once confined: getpid may be trapped) */
	pid_t parent;     /* the supervising process */
	int children_fd;  /* /proc/thread-self/children, opened before Landlock, or -1 */
	bool mirror_stops; /* a terminal is involved: mirror the command's stops */
};
/* Child side, raw syscalls only.  Block every signal (init takes them
 * synchronously; the command unblocks its own before exec). */
void sl_init_block_signals(void);
/* Run init for the command cmd (its child) until the sandbox ends. */
__attribute__((noreturn)) void sl_init_main(const struct sl_init *in, pid_t cmd);
/* Parent side: ask init (pid == the sandbox's pgid, unreaped) to kill its
 * whole subtree and exit as the command did. */
void sl_init_request_kill(pid_t init);
/* Whether init can list its children (/proc/thread-self/children readable
 * here): then an init that exits on its own has ended its whole subtree. */
bool sl_init_sees_children(void);

#endif /* SANDLOCK_INIT_H */
