/*
 * fork.h — the COW fork mode, private to the library.  Two files, because
 * they live on different sides of fork():
 *   fork.c        the caller: sandlock_fork (prepares everything, forks
 *                 the keeper), receiving the clones, wait, results, reduce.
 *   fork_child.c  the keeper (outside the sandbox, a child subreaper), the
 *                 template (confines itself, runs init, forks the clones)
 *                 and the clones.
 * Protocol:
 *   template -> keeper  pids pipe: int32 pid of each clone, before the
 *                       caller hears of it (so the keeper knows a clone
 *                       before it can reap it)
 *   template -> caller  SOCK_SEQPACKET: 'P' + int32 pids[] with their stdout
 *                       read ends (SCM_RIGHTS, at most SL_FORK_BATCH), or
 *                       'E' + kind + int32 code + text: an error, then EOF
 *   keeper -> caller    records pipe: struct sl_fork_rec per clone, one for
 *                       the template, then SL_FORK_END_PID
 *   caller -> keeper    control socket: any byte or hang-up = kill it all
 */
#ifndef SANDLOCK_FORK_H
#define SANDLOCK_FORK_H

#include <stdint.h>

#include <linux/filter.h>

#include "config.h"
#include "sandlock.h"

#define SL_FORK_BATCH 64          /* fds per message (the kernel takes 253) */
#define SL_FORK_TEMPLATE_PID (-1) /* record of the template's own end */
#define SL_FORK_END_PID 0         /* record: the fork's whole tree is gone */

enum { SL_FORK_OWN = 0, SL_FORK_TIMEOUT = 1, SL_FORK_KILLED = 2 }; /* how it ended */
enum { SL_FORK_ERR_CONFINE = 'C', SL_FORK_ERR_INIT = 'I', SL_FORK_ERR_TEMPLATE = 'T' };

struct sl_fork_rec {
	int32_t pid, status, how; /* waitpid status */
};

/* Everything the keeper and the template need, prepared in the caller. */
struct sl_fork_plan {
	const struct sandlock_sandbox *sb;
	uint32_t n;
	sandlock_fork_opts_t o;
	int ruleset;            /* Landlock ruleset to apply */
	struct sock_fprog prog; /* seccomp blocklist */
	char **envp;            /* NULL: keep the environment */
	uint64_t timeout_ms;    /* 0: none */
	int ctrl, rec_w, pids_r, pids_w, sock; /* the children's ends */
	const int *close_fds;   /* caller fds the keeper closes first */
	size_t nclose;
};

/* The keeper's life, in the child of the caller's fork; never returns. */
_Noreturn void sl_fork_keeper_main(const struct sl_fork_plan *p);
/* fork_fn of the options, or fork(2). */
pid_t sl_fork_child(const sandlock_fork_opts_t *o);

#endif /* SANDLOCK_FORK_H */
