/*
 * launch.h — starting a sandboxed run, private to the library.
 *
 * The launch is in three parts, one file each, because they live under
 * different rules:
 *   launch_prepare.c  before fork, in the caller: everything that
 *                     allocates or may fail slowly (argv, environment,
 *                     executable, Landlock ruleset, BPF program).
 *   launch_child.c    the forked child, which confines itself and becomes
 *                     the sandbox's init (init.c): async-signal-safe code
 *                     and raw syscalls only.
 *   launch_parent.c   fork, the child's reports, taking its seccomp
 *                     listener (pidfd_getfd, or SCM_RIGHTS from a helper
 *                     sharing the command's fd table), release, cleanup.
 * run.c drives them: prepare, start, (supervisor starts), release, cleanup.
 */
#ifndef SANDLOCK_LAUNCH_H
#define SANDLOCK_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/filter.h>

#include "config.h"
#include "launch/cglimits.h"
#include "sandlock.h"
#include "launch/tty.h"
#include "trap.h"

/* Most fds a SANDLOCK_SPAWN_PASS_IN_ORDER spawn places (a stack array in
 * the command). */
#define SL_PASS_IN_ORDER_MAX 64

struct sl_launch {
	/* prepared before fork, owned */
	char *exe;   /* resolved executable path */
	char **argv; /* NULL-terminated */
	char **envp; /* NULL-terminated */
	int ruleset_fd;          /* -1 when running without Landlock */
	/* landlock_restrict_self's flags: LOG_NEW_EXEC_ON when the run reads
	 * the audit log (run/auditlog.c), else 0 (the kernel's default: the
	 * program's denials are not logged, no noise nobody reads). */
	unsigned ll_flags;
	const struct sl_trap *trapped; /* for the BPF program, built after fork (not owned) */
	size_t ntrapped;
	struct sock_fprog prog;  /* parent only; the child receives a copy */
	struct sl_cglimits cg;   /* the run's cgroups (cglimits.h) */
	const struct sandlock_sandbox *cfg;
	/* How fd 0, 1, 2 of the command are connected: a SANDLOCK_STDIO_*
	 * mode (never DEFAULT) and, for FD, our duplicate of the caller's fd. */
	int stdio_mode[3];
	int stdio_fd[3];
	int *keep_fds; /* sorted caller fds the command keeps (pass_fds) */
	size_t nkeep;
	bool pass_in_order; /* SANDLOCK_SPAWN_PASS_IN_ORDER: keep_fds[i] -> fd 3 + i, unsorted */
	/* The run's cgroup (cgroup.c; not owned), or -1: init is cloned into
	 * the directory (CLONE_INTO_CGROUP), else joins it through
	 * cgroup.procs first thing, so the whole sandbox is born inside. */
	int cgroup_dir;
	int cgroup_procs;
	/* How the listener reaches the parent (launch_parent.c): false =
	 * the parent takes it with pidfd_getfd; true = where that is refused
	 * (mechs.h), a helper sharing the command's fd table sends it. */
	bool listener_scm;
	/* after start */
	pid_t pid;      /* child (the sandbox's init) pid == its process group id */
	int pidfd;      /* pidfd of the child */
	int listener;   /* seccomp user-notification fd */
	int out_fd;     /* read end of captured stdout, -1 if inherited */
	int err_fd;     /* read end of captured stderr, -1 if inherited */
	int pipe_fd[3]; /* our ends of SANDLOCK_STDIO_PIPE streams, for the caller */
	pid_t cmd_pid;  /* the command (init's child), as it announced itself */
	int cmd_pidfd;  /* its pidfd */
	int sync_fd;    /* parent end of the socketpair: "ready" goes here */
	struct sl_tty tty; /* inherit_stdio: terminal foreground hand-over */
	char *tmpdir;      /* private_tmp: this run's TMPDIR, removed at cleanup */
};
/* cfg's environment (inherited or clean, then its overrides) into env,
 * NULL-terminated; also used by the fork mode's template (fork.c). */
int sl_launch_build_env(const struct sandlock_sandbox *cfg, sl_strvec *env);
/* Resolve argv[0] (under chroot in view, the run's: services.h), build
 * argv/envp and the Landlock ruleset; remember trapped[] (which must
 * outlive the run) for the BPF program. */
struct sl_view;
int sl_launch_prepare(struct sl_launch *L, const struct sandlock_sandbox *cfg,
                      const struct sl_view *view, const char *const *argv, uint32_t argc,
                      const struct sl_trap *trapped, size_t ntrapped, int *err, char **msg);
/* Apply spawn options (stdio modes, pass_fds) after sl_launch_prepare;
 * NULL = defaults.  Duplicates every FD-mode fd (the caller keeps its own). */
int sl_launch_set_options(struct sl_launch *L, const sandlock_spawn_opts_t *o, int *err,
                          char **msg);
/* Grant the files behind the command's stdio (devmin.h) in the ruleset,
 * after sl_launch_set_options and before anything applies it.  0 or -1. */
int sl_launch_grant_stdio(struct sl_launch *L, int *err, char **msg);
/* True when all three streams are the caller's: the terminal is handed over. */
bool sl_launch_inherits_all(const struct sl_launch *L);
/* Fork the sandbox's init, which starts the command; the command confines
 * itself and announces its listener's fd number before seccomp(); the
 * parent takes the listener with pidfd_getfd, or (listener_scm) receives
 * it from the command's helper.  On return the command is blocked waiting
 * for sl_launch_release. */
int sl_launch_start(struct sl_launch *L, int *err, char **msg);
/* Tell the command to exec (after handing the sandbox the terminal's
 * foreground, see sl_tty_start). */
int sl_launch_release(struct sl_launch *L);
/* Give the terminal back, close every fd, free every buffer (idempotent). Does not kill. */
void sl_launch_cleanup(struct sl_launch *L);

/*
 * The BPF program for L->trapped, into L->prog: the sandbox's copy, or
 * built now.  Called by the parent right after fork, so that libseccomp's
 * work overlaps the child's setup.
 */
int sl_launch_build_prog(struct sl_launch *L, int *err, char **msg);

/*
 * Each sandbox keeps the BPF programs built for it, keyed by the trapped
 * set: libseccomp needs 0.2-0.4 ms to generate one, more than the rest of
 * a launch's preparation.  Created with the sandbox (NULL on OOM), freed
 * with it; safe to use from concurrent runs.
 */
struct sl_prog_cache *sl_prog_cache_new(void);
void sl_prog_cache_free(struct sl_prog_cache *c);

/* ---- between launch_parent.c and launch_child.c: the sync protocol ----
 *
 * Over a SOCK_SEQPACKET pair.  Parent -> command, first: the BPF program
 * (struct sock_filter[], at most SL_MAX_INSNS).  init and the command ->
 * parent: int32_t {step, value, pid} messages.  {ST_OK, N, pid} from the
 * command, sent twice: before seccomp() it announces that the listener
 * will be fd N in process pid, after seccomp() it says the listener is
 * there (with listener_scm, the helper sends that second one, carrying the
 * listener as SCM_RIGHTS).  {step, errno, 0} reports the setup step that
 * failed.  Parent ->
 * command, last: one byte, SL_READY or SL_READY_TTY, once the supervisor
 * runs.  The parent's end stays open until the run ends; after the
 * release init sends one more, {ST_EXEC or ST_LIMITS, errno, 0}, if the
 * command could not become the program. */
#define SL_REPORT_INTS 3
#define SL_MAX_INSNS 4096 /* BPF_MAXINSNS */

/*
 * For code that runs on a stack of our own (the CLONE_VM command): ASan's
 * no-return hook before _exit() does not know that stack and would print
 * a warning into the command's stderr.  Those functions are left
 * uninstrumented (they handle no buffers of their own).
 */
#if defined(__SANITIZE_ADDRESS__)
#define SL_OWN_STACK __attribute__((no_sanitize_address))
#else
#define SL_OWN_STACK
#endif

/* The "ready" byte: go, and whether init mirrors the command's stops. */
#define SL_READY 'R'
#define SL_READY_TTY 'T'

/* Child setup steps, reported to the parent when one fails. */
enum sl_launch_step {
	ST_OK = 0,
	ST_SETPGID,
	ST_PDEATHSIG,
	ST_PARENT_GONE,
	ST_STDIO,
	ST_CHDIR,
	ST_RLIMIT,
	ST_NO_NEW_PRIVS,
	ST_CAPS,
	ST_LANDLOCK,
	ST_SECCOMP,
	ST_SIGNALS,
	ST_SUBREAPER,
	ST_SPAWN,
	ST_LIMITS,
	ST_HANDOVER,
	/* After the release: the command's execve failed (value: errno),
	 * read at the end of the run (sl_launch_exec_failure). */
	ST_EXEC,
};

/* What the child gets from the parent's side of fork (all fds inherited). */
struct sl_child_fds {
	int sync;
	int stdio[3]; /* what becomes fd 0, 1, 2 (-1: left as inherited) */
	int devnull;  /* /dev/null, for an inherited stream the caller has closed */
	pid_t parent;
	pid_t self; /* asked before confinement: getpid may be trapped after */
	bool in_cgroup; /* cloned into cgroup_dir: no cgroup.procs write to make */
};

/* The child's whole life after fork (launch_child.c): never returns. */
__attribute__((noreturn)) void sl_launch_child_main(const struct sl_launch *L,
                                                    const struct sl_child_fds *c);

/* The command's report that it could not become the program (ST_EXEC:
 * its execve failed, ST_LIMITS: its limits), read without waiting from
 * the run's copy of the sync socket: 0, or the errno with *step set. */
int sl_launch_exec_failure(int sync_fd, int *step);

#endif /* SANDLOCK_LAUNCH_H */
