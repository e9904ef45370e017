/*
 * supervisor.h — private contract between the supervisor's own files:
 * supervisor.c (thread + registration), dispatch.c (handler chains),
 * respond.c (answering the kernel), deferred.c (worker pool),
 * childmem.c (cache invalidation).  Not used by any other mechanism.
 */
#ifndef SANDLOCK_SUPERVISOR_H
#define SANDLOCK_SUPERVISOR_H

#include "internal.h"

#define SL_DEFERRED_MAX 64 /* deferred calls in flight (and worker threads) */

/* One trapped syscall's user handlers, in registration order. */
struct sl_chain {
	int nr;
	sandlock_handler_t **h;
	size_t n;
};

struct sl_deferred;

struct sl_supervisor {
	/* configuration copied from the sandbox (the run outlives nothing) */
	uint32_t max_processes;
	uint64_t deferred_timeout_ms;
	sl_strvec meta_write; /* fs_write roots: where metadata may change */
	sl_strvec meta_deny;  /* fs_deny paths: never */
	/* owned handlers, released exactly once by sl_supervisor_free */
	sandlock_registration_t *regs;
	size_t nregs;
	struct sl_chain *chains; /* sorted by nr */
	size_t nchains;
	int *trapped; /* sorted, unique */
	size_t ntrapped;
	/* runtime */
	int listener;
	pid_t pgid;
	int stop_fd; /* eventfd: wakes the loop to stop */
	pthread_t thread;
	bool started, stopped;
	size_t notif_size, resp_size; /* from SECCOMP_GET_NOTIF_SIZES */
	struct sl_memcache *cache;    /* supervisor thread only */
	struct sl_deferred *deferred;
	atomic_int killed;
	atomic_int kill_sig;
	/* HOLD: notifications deliberately left pending (any thread) */
	pthread_mutex_t held_lock;
	uint64_t *held;
	size_t nheld, capheld;
};

/* childmem.c: drop the cached /proc/PID/mem of pid (after execve). */
void sl_memcache_forget(struct sl_memcache *c, pid_t pid);

/* dispatch.c: decide and answer one notification (supervisor thread). */
void sl_dispatch(struct sl_supervisor *s, const sandlock_notif_t *n);
/*
 * Run one handler.  Returns true with *act set to the decision (a handler
 * error already turned into its policy's action), false when the handler
 * did not intervene (CONTINUE, or an error under the CONTINUE policy).
 */
bool sl_call_handler(const sandlock_handler_t *h, const sandlock_notif_t *n,
                     sandlock_mem_t *mem, sandlock_action_t *act);

/* respond.c: answer the kernel with act (consumes any inject fd). */
void sl_respond(struct sl_supervisor *s, const sandlock_notif_t *n, sandlock_action_t *act);
void sl_respond_errno(struct sl_supervisor *s, const sandlock_notif_t *n, int err);
void sl_respond_continue(struct sl_supervisor *s, const sandlock_notif_t *n);
/* Close the fd an INJECT action owns (dropped or failed actions). */
void sl_action_discard(sandlock_action_t *act);

/* deferred.c */
struct sl_deferred *sl_deferred_new(struct sl_supervisor *s);
/* Hand n to a worker for h; answers EPERM/EAGAIN itself when refused. */
void sl_deferred_submit(struct sl_deferred *d, const sandlock_handler_t *h,
                        const sandlock_notif_t *n);
/* Answer EIO to overdue calls; returns ms until the next deadline or -1. */
int sl_deferred_expire(struct sl_deferred *d);
/* Wait for every worker (a callback that never returns blocks here). */
void sl_deferred_stop(struct sl_deferred *d);
void sl_deferred_free(struct sl_deferred *d);

/* builtin_procs.c: trapped by the process-count builtin. */
bool sl_procs_is_fork_like(int nr);
/* 0 to let the call go on, or an errno (EAGAIN) to deny it. */
int sl_procs_check(const struct sl_supervisor *s, const sandlock_notif_t *n);

/* builtin_meta.c: the metadata guard (chmod, chown, xattr, utimes families). */
size_t sl_meta_syscalls(const int **nrs); /* the guarded syscall numbers */
bool sl_meta_is_guarded(int nr);
/* Decide and perform a guarded call on the caller's behalf (supervisor
 * thread): *act becomes RETURN_VALUE 0 or ERRNO.  Never CONTINUE. */
void sl_meta_decide(const struct sl_supervisor *s, const sandlock_notif_t *n,
                    sandlock_mem_t *mem, sandlock_action_t *act);
/* True if path is root or below it, component-wise (exported for tests). */
bool sl_meta_path_under(const char *path, const char *root);

#endif /* SANDLOCK_SUPERVISOR_H */
