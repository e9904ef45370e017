/*
 * internal.h — interfaces between libsandlock's mechanisms.
 * One .c file per mechanism; this header is the contract between them.
 */
#ifndef SANDLOCK_INTERNAL_H
#define SANDLOCK_INTERNAL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/filter.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "compat.h"
#include "sandlock.h"

#define SL_EXPORT __attribute__((visibility("default")))

/* ================= util.c ================= */
/* Set *err = code and *msg = formatted heap string (each may be NULL). Returns -1. */
int sl_fail(int *err, char **msg, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
char *sl_strdup(const char *s);              /* NULL on NULL or OOM */
char *sl_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* CLOCK_MONOTONIC in milliseconds: deadlines and timeouts. */
int64_t sl_now_ms(void);
void sl_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* "sandlock: warning: ..." on stderr */

typedef struct sl_strvec {
	char **v;
	size_t n, cap;
} sl_strvec;
int sl_strvec_push(sl_strvec *sv, const char *s); /* copies s; 0 or -1 (OOM) */
void sl_strvec_free(sl_strvec *sv);

/* Growable byte buffer (captured output). */
typedef struct sl_buf {
	uint8_t *data;
	size_t len, cap;
} sl_buf;
int sl_buf_append(sl_buf *b, const void *p, size_t n);
void sl_buf_free(sl_buf *b);

/* ================= builder.c : the validated configuration ================= */
struct sandlock_sandbox {
	sl_strvec fs_read;  /* canonical absolute paths (realpath) */
	sl_strvec fs_write; /* canonical absolute paths */
	sl_strvec fs_deny;  /* canonical absolute paths */
	char *cwd;          /* canonical, or NULL = inherit */
	bool clean_env;
	sl_strvec env;          /* "K=V" overrides, in call order (a later K wins) */
	uint32_t max_processes; /* 0 = unlimited */
	uint64_t max_memory;    /* bytes, 0 = unlimited */
	uint16_t net_connect[64];
	size_t n_net_connect;
	uint16_t net_bind[64];
	size_t n_net_bind;
	uint64_t timeout_ms;          /* 0 = none */
	uint64_t deferred_timeout_ms; /* default 30000 */
	bool inherit_stdio;
	struct sl_prog_cache *progs; /* BPF programs built for this sandbox (launch_prepare.c) */
};

struct sandlock_builder {
	struct sandlock_sandbox cfg;
	int err;      /* first error seen, reported by build */
	char *errmsg; /* heap */
	sl_strvec raw_read, raw_write, raw_deny; /* as given; resolved at build */
	char *raw_cwd;
};

/* ================= landlock.c ================= */
int sl_landlock_abi(void); /* cached; -1 when unavailable; min(kernel, cap) */
/* Test hook: when > 0, pretend the kernel's Landlock ABI is at most this. */
extern int sl_landlock_abi_cap;
/*
 * Create and fill a ruleset for cfg before fork.  Returns the ruleset fd,
 * or -1 with *err, *msg set.  Returns -2 when the kernel has no Landlock:
 * the run then fails with SANDLOCK_ERR_UNSUPPORTED (never a weaker sandbox).
 */
int sl_landlock_prepare(const struct sandlock_sandbox *cfg, int *err, char **msg);
/* Child side, raw syscalls only: restrict_self(ruleset_fd). 0 or -errno. */
int sl_landlock_apply(int ruleset_fd);

/* ================= filter.c ================= */
/* True if nr is denied by the blocklist (a handler may not be registered on it). */
bool sl_filter_is_blocked(int nr);
/*
 * Build the BPF program (before fork): blocklist -> ERRNO/KILL, x32/i386
 * -> kill, argument filters, and trapped[] -> SECCOMP_RET_USER_NOTIF.
 * 0 or -1 with *err, *msg set.  Free with sl_filter_free.
 */
int sl_filter_build(const struct sandlock_sandbox *cfg, const int *trapped, size_t ntrapped,
                    struct sock_fprog *out, int *err, char **msg);
void sl_filter_free(struct sock_fprog *prog);
/* True if nr has argument rules (clone, ioctl, socket, prctl, unshare, ...). */
bool sl_filter_has_arg_rules(int nr);
/*
 * The same argument rules as the BPF filter, for trapped syscalls (libseccomp
 * lets an unconditional NOTIFY override a conditional ERRNO, so the
 * supervisor re-applies them first).  Returns an errno to deny with, or 0.
 */
int sl_filter_arg_check(const sandlock_notif_t *n);

/* ================= tty.c : the terminal of an inherit_stdio run ================= */
/*
 * The sandbox runs in its own process group, so it must be made the
 * terminal's foreground group or a read from the terminal stops it with
 * SIGTTIN.  The run's thread also mirrors the sandbox's job-control stops.
 */
struct sl_tty {
	int fd;        /* our controlling terminal among fds 0..2, or -1: nothing to do */
	pid_t caller;  /* the caller's process group */
	pid_t sandbox; /* the sandbox's process group (== the child's pid, unreaped) */
	bool handed;   /* we made the sandbox the terminal's foreground group */
	int waiting;   /* stop signal the sandbox waits in for the foreground, or 0 */
	bool warned;
};
/* How often (ms) the run checks for a stopped sandbox while sl_tty is active. */
#define SL_TTY_POLL_MS 100
void sl_tty_init(struct sl_tty *t); /* inactive */
/* Before the child execs: find the terminal; if the caller is its foreground
 * group, hand the foreground to pgid. */
void sl_tty_start(struct sl_tty *t, pid_t pgid);
/* Periodically while the child runs: mirror its stops, hand the terminal over. */
void sl_tty_watch(struct sl_tty *t);
/* Give the terminal back to the caller's group if we took it; idempotent. */
void sl_tty_end(struct sl_tty *t);

/* launch_*.c: see launch.h */

/* ================= handler.c ================= */
struct sandlock_handler {
	sandlock_handler_fn fn;
	void *ud;
	sandlock_ud_free_fn ud_free;
	uint32_t on_exception;
	bool deferred;
	sandlock_guard_fn guard;
};
/* Free each distinct handler in regs exactly once (NULL entries skipped). */
void sl_handlers_release(const sandlock_registration_t *regs, size_t nregs);

/* ================= childmem.c ================= */
struct sandlock_mem {
	int listener;  /* to check SECCOMP_IOCTL_NOTIF_ID_VALID */
	uint64_t id;   /* notification id */
	pid_t pid;
	int fd;        /* /proc/pid/mem, -1 until first use */
	bool owns_fd;  /* close fd when done (deferred jobs); else cache owns it */
	struct sl_memcache *cache; /* NULL for a private handle */
};
struct sl_memcache; /* per-pid /proc/PID/mem cache, supervisor-thread only */
struct sl_memcache *sl_memcache_new(void);
void sl_memcache_free(struct sl_memcache *c);
void sl_mem_init(sandlock_mem_t *m, int listener, const sandlock_notif_t *n,
                 struct sl_memcache *cache);
void sl_mem_done(sandlock_mem_t *m);
/* True if the notification is still pending (the pid is still the caller). */
bool sl_notif_valid(int listener, uint64_t id);

/* ================= supervisor.c / dispatch.c / respond.c ================= */
struct sl_supervisor;
/*
 * Build the dispatch table: builtins (from cfg) first, then regs in order.
 * Takes ownership of the handlers on every path: on failure they are
 * released before returning NULL.
 */
struct sl_supervisor *sl_supervisor_new(const struct sandlock_sandbox *cfg,
                                        const sandlock_registration_t *regs, size_t nregs,
                                        int *err, char **msg);
/* The syscall numbers that must reach the supervisor (sorted, unique). */
size_t sl_supervisor_trapped(const struct sl_supervisor *s, const int **nrs);
/* Start the notification thread on listener for the sandbox whose process
 * group is pgid.  The supervisor does not own listener. */
int sl_supervisor_start(struct sl_supervisor *s, int listener, pid_t pgid, int *err,
                        char **msg);
/* Non-zero if a handler action or KILL policy killed the sandbox; *sig = signal. */
int sl_supervisor_killed(const struct sl_supervisor *s, int *sig);
/* Stop the thread, wait for deferred workers, answer nothing further. */
void sl_supervisor_stop(struct sl_supervisor *s);
/* Stop if needed, then release handlers (ud_free once each) and memory. */
void sl_supervisor_free(struct sl_supervisor *s);

/* ================= caps.c ================= */
/* Child side, after NO_NEW_PRIVS: empty the bounding, ambient, effective,
 * permitted and inheritable capability sets.  Raw syscalls only.  0 or
 * -errno.  (Without CAP_SETPCAP the bounding set is left as is.) */
int sl_caps_drop(void);

/* ================= builtin_procs.c ================= */
/* Fields of /proc/<pid>/stat (procfd: an fd of /proc); false if gone. */
bool sl_proc_stat(int procfd, const char *pid, char *state, long *ppid, long *pgrp);
/* Number of processes descending from root, root excluded (scans /proc
 * for ppid links; zombies count until reaped).  -1 if /proc is unreadable. */
int sl_count_tree_processes(pid_t root);

/* ================= init.c : the sandbox's init (see init.c) ================= */
/* The forked child stays behind as the sandbox's init; the command is its
 * child.  These are the only signals init acts on, and only from its parent. */
#define SL_INIT_SIG_PDEATH SIGUSR1 /* its PR_SET_PDEATHSIG: the parent died */
#define SL_INIT_SIG_KILL SIGUSR2   /* the parent asks it to end the sandbox */
_Static_assert(SIGUSR2 == SANDLOCK_SIG_END_SANDBOX, "public ABI number");
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

/* ================= run.c / result.c ================= */
struct sandlock_result {
	int reason;
	int exit_code;
	int signal;
	sl_buf out, err;
};

#endif /* SANDLOCK_INTERNAL_H */
