/*
 * sandlock.h — the stable C ABI of libsandlock.
 *
 * sandlock confines an untrusted command with Landlock (filesystem, TCP,
 * IPC scopes), a seccomp-bpf blocklist and seccomp user notification (a
 * supervisor thread in the calling process that decides trapped syscalls).
 *
 * Conventions
 *  - Every pointer type is an opaque handle; free each with its _free().
 *  - Builder functions take the builder and return it (chainable).  An
 *    invalid argument is remembered and reported by sandlock_sandbox_build,
 *    which consumes the builder.
 *  - Functions that can fail take (int *err, char **err_msg); both may be
 *    NULL.  On failure *err is a SANDLOCK_ERR_* code and *err_msg a heap
 *    string to release with sandlock_string_free.
 *  - All numbers below are ABI: they never change meaning.
 */
#ifndef SANDLOCK_H
#define SANDLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 1.0: the functions that share a name with the reference's header take
 * its signatures and meanings (the previous ones live on under their own
 * names: sandlock_run_err, sandlock_handle_wait_ms, ...). */
#define SANDLOCK_VERSION "1.0.0"

/* ---- opaque handles ---- */
typedef struct sandlock_builder sandlock_builder_t;
typedef struct sandlock_sandbox sandlock_sandbox_t;
typedef struct sandlock_result sandlock_result_t;
typedef struct sandlock_handler sandlock_handler_t;
typedef struct sandlock_mem sandlock_mem_t;
/* The reference's name of the child-memory accessor (opaque here). */
typedef sandlock_mem_t sandlock_mem_handle_t;
typedef struct sandlock_handle sandlock_handle_t;

/* ---- error codes ---- */
enum {
	SANDLOCK_OK = 0,
	SANDLOCK_ERR_INVALID = 1,     /* bad argument / NULL / malformed value */
	SANDLOCK_ERR_NOT_FOUND = 2,   /* a configured path does not exist, command not found */
	SANDLOCK_ERR_BAD_PORT = 3,    /* port 0 or > 65535 */
	SANDLOCK_ERR_CONFLICT = 4,    /* options that contradict each other */
	SANDLOCK_ERR_UNSUPPORTED = 5, /* kernel lacks a required feature */
	SANDLOCK_ERR_SYSCALL = 6,     /* handler registration names an unknown or blocklisted syscall */
	SANDLOCK_ERR_SYSTEM = 7,      /* a system call failed while launching */
	SANDLOCK_ERR_NOMEM = 8,
	SANDLOCK_ERR_RUNNING = 9,     /* sandlock_handle_wait: still running at the timeout */
};

/* ---- actions (sandlock_action_t.kind) ---- */
enum {
	SANDLOCK_ACTION_UNSET = 0,
	SANDLOCK_ACTION_CONTINUE = 1,
	SANDLOCK_ACTION_ERRNO = 2,
	SANDLOCK_ACTION_RETURN_VALUE = 3,
	SANDLOCK_ACTION_INJECT_FD_SEND = 4,
	SANDLOCK_ACTION_INJECT_FD_SEND_TRACKED = 5,
	SANDLOCK_ACTION_HOLD = 6,
	SANDLOCK_ACTION_KILL = 7,
};

/* ---- exception policies: what a handler failure turns into ---- */
enum {
	SANDLOCK_EXCEPTION_KILL = 0,       /* SIGKILL the sandbox's process group, deny the call */
	SANDLOCK_EXCEPTION_DENY_EPERM = 1, /* fail the call with EPERM */
	SANDLOCK_EXCEPTION_CONTINUE = 2,   /* "did not intervene": later handlers still run */
	SANDLOCK_EXCEPTION_DENY_EIO = 3,   /* fail the call with EIO */
};

/* ---- exit reasons ---- */
enum {
	SANDLOCK_EXIT_EXITED = 0,   /* normal exit; exit_code holds the status */
	SANDLOCK_EXIT_SIGNALED = 1, /* died of a signal it was not sent by sandlock */
	SANDLOCK_EXIT_KILLED = 2,   /* killed by sandlock (handler KILL action or KILL policy) */
	SANDLOCK_EXIT_TIMEOUT = 3,  /* killed because the timeout expired */
};
/* The reference's spellings of the enums above, and its integer types. */
enum {
	SANDLOCK_EXIT_REASON_EXITED = SANDLOCK_EXIT_EXITED,
	SANDLOCK_EXIT_REASON_SIGNALED = SANDLOCK_EXIT_SIGNALED,
	SANDLOCK_EXIT_REASON_KILLED = SANDLOCK_EXIT_KILLED,
	SANDLOCK_EXIT_REASON_TIMEOUT = SANDLOCK_EXIT_TIMEOUT,
};
typedef uint32_t sandlock_exit_reason; /* SANDLOCK_EXIT_* */
typedef uint32_t sandlock_action;      /* SANDLOCK_ACTION_* */
typedef uint32_t sandlock_exception;   /* SANDLOCK_EXCEPTION_* */

/*
 * A run's direct child (the caller's child process) is the sandbox's init:
 * sending it this signal (SIGUSR2) from the calling process ends the whole
 * sandbox, including processes that left its process group.  A signal
 * handler in the caller (e.g. a CLI on SIGTERM) can use it; sandlock_run
 * then returns as for a killed sandbox.
 */
#define SANDLOCK_SIG_END_SANDBOX 12

/*
 * Forward a signal to the sandboxed command: sigqueue(init_pid,
 * SANDLOCK_SIG_FORWARD, (union sigval){ .sival_int = SIG }) makes init send
 * SIG to the sandbox's process group (the command and whatever stayed in its
 * group, as a terminal would reach them).  SIG is one of SIGINT, SIGTERM,
 * SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT; anything else is
 * ignored.  A plain kill of the group would reach init too, which takes
 * SIGUSR1/SIGUSR2 from the caller as its own requests.  Async-signal-safe.
 */
#define SANDLOCK_SIG_FORWARD 40

/* flags for sandlock_action_set_inject_bytes */
#define SANDLOCK_INJECT_WRITABLE (1u << 0)   /* do not seal the memfd read-only */
#define SANDLOCK_INJECT_NO_CLOEXEC (1u << 1) /* child-side fd without O_CLOEXEC */

/*
 * The notification handed to a handler: exactly the kernel's
 * struct seccomp_notif (80 bytes): id @0, pid @8, flags @12, nr @16,
 * arch @20, instruction_pointer @24, args[6] @32.
 */
typedef struct sandlock_notif {
	uint64_t id;
	uint32_t pid;
	uint32_t flags;
	int32_t syscall_nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
} sandlock_notif_t;
typedef sandlock_notif_t sandlock_notif_data_t; /* the reference's name */

/* The decision a handler writes.  24 bytes; use the setters below. */
typedef struct sandlock_action {
	uint32_t kind; /* SANDLOCK_ACTION_* */
	uint32_t reserved;
	union {
		int32_t errno_value;  /* ERRNO */
		int64_t return_value; /* RETURN_VALUE */
		struct {
			int32_t srcfd;        /* supervisor-side fd; ownership passes to sandlock */
			uint32_t newfd_flags; /* O_CLOEXEC or 0 */
			uint64_t tracker;     /* INJECT_FD_SEND_TRACKED: caller's token */
		} inject;
		struct {
			int32_t sig;
			int32_t pgid; /* 0 = the sandbox's own group; any other value is
			                 never trusted: sandlock signals only its own group */
		} kill;
		uint64_t raw[2];
	} u;
} sandlock_action_t;
typedef sandlock_action_t sandlock_action_out_t; /* the reference's name (same layout) */

/*
 * Handler callback.  Return 0 after setting *out; any other return value
 * (or leaving out->kind UNSET) is a handler error governed by the
 * handler's exception policy.  `mem` is valid only during the call.
 */
typedef int32_t (*sandlock_handler_fn)(void *ud, const sandlock_notif_t *notif,
                                       sandlock_mem_t *mem, sandlock_action_t *out);
typedef void (*sandlock_ud_free_fn)(void *ud);
/* A liveness guard: returns non-zero while the callback may be entered. */
typedef int (*sandlock_guard_fn)(void);

/* One (syscall name, handler) pair for sandlock_run_with_handlers. */
typedef struct sandlock_registration {
	const char *syscall;
	sandlock_handler_t *handler;
} sandlock_registration_t;

/* ================= builder ================= */
sandlock_builder_t *sandlock_sandbox_builder_new(void);
/* Paths must exist; they are resolved (symlinks followed) at build time.
 * Under chroot they are guest paths instead (see sandlock_sandbox_builder_chroot). */
sandlock_builder_t *sandlock_sandbox_builder_fs_read(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_fs_write(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_fs_deny(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_cwd(sandlock_builder_t *b, const char *path);
/* The sandbox's name and virtual hostname (1..64 bytes): what uname(2)
 * reports as nodename, and /proc/sys/kernel/hostname and /etc/hostname
 * read as when opened on behalf (README).  Default "sandbox-<pid>", the
 * pid of the sandbox's init. */
sandlock_builder_t *sandlock_sandbox_builder_name(sandlock_builder_t *b, const char *name);
sandlock_builder_t *sandlock_sandbox_builder_env_var(sandlock_builder_t *b, const char *key,
                                                     const char *value);
/* clean: the command gets only PATH, HOME, USER, TERM and LANG, with the
 * calling process's values where it has them at run time (PATH defaults to
 * /usr/local/bin:/usr/bin:/bin), plus the env_var overrides. */
sandlock_builder_t *sandlock_sandbox_builder_clean_env(sandlock_builder_t *b, bool clean);
sandlock_builder_t *sandlock_sandbox_builder_max_processes(sandlock_builder_t *b, uint32_t n);
/* One budget with a running sandbox, pid being any process of it: this
 * run's cgroups (the memory and CPU groups of max_memory / max_cpu, the
 * run's own v2 group) are made below that process's instead of below the
 * caller's, so the other sandbox's memory and CPU limits cover this run
 * too, and max_processes counts the processes of both (each run counts
 * the processes of its v2 group and the groups below it, inits excepted).
 * For an exec into a running container.  Needs cgroups: where the run's
 * v2 group cannot be made below pid's, the run fails to start
 * (SANDLOCK_ERR_UNSUPPORTED), never a silently separate budget. */
sandlock_builder_t *sandlock_sandbox_builder_share_budget(sandlock_builder_t *b, int32_t pid);
sandlock_builder_t *sandlock_sandbox_builder_max_memory(sandlock_builder_t *b, uint64_t bytes);
/*
 * Network (README "Network policy").  Without any rule every TCP connect
 * and bind is denied, and so is every UDP and ICMP destination.
 * net_allow / net_deny: endpoint rules "[scheme://]target[:ports]"
 * (mutually exclusive); net_allow_bind ("N", "lo-hi", "*",
 * comma-separated) and net_deny_bind (exclusive), as the reference.
 * net_allow_port(port): TCP connect to PORT on any address (= "tcp://:PORT");
 * net_allow_bind_port(port): one port; the _spec names are older
 * spellings of net_allow / net_allow_bind.
 * Bad rules are reported by sandlock_sandbox_build, naming the rule.
 */
sandlock_builder_t *sandlock_sandbox_builder_net_allow(sandlock_builder_t *b, const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_net_allow_bind(sandlock_builder_t *b,
                                                            const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_net_allow_port(sandlock_builder_t *b, uint32_t port);
sandlock_builder_t *sandlock_sandbox_builder_net_allow_bind_port(sandlock_builder_t *b,
                                                                 uint32_t port);
sandlock_builder_t *sandlock_sandbox_builder_net_allow_spec(sandlock_builder_t *b,
                                                            const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_net_deny(sandlock_builder_t *b, const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_net_allow_bind_spec(sandlock_builder_t *b,
                                                                 const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_net_deny_bind(sandlock_builder_t *b,
                                                           const char *spec);
/* NULL if spec is a well-formed endpoint rule (deny: as net_deny takes
 * it), else why not (free with sandlock_string_free).  No DNS lookup. */
char *sandlock_net_spec_error(const char *spec, int deny);
/*
 * HTTP policy (docs/http.md): with an http_allow or http_deny rule
 * ("METHOD host/path", `*` globs; deny wins), TCP connects to port 80
 * (http_port: these ports instead; 443 too with a CA) go through the
 * supervisor's proxy, which judges every request.  http_ca + http_key (a
 * PEM CA of yours) or http_inject_ca (a CA made for the run, its
 * certificate spliced into each named trust bundle the guest opens)
 * terminate TLS on 443 so HTTPS requests are judged too; without them an
 * intercepted TLS connection is judged by its server name (SNI) only.
 * http_ca_out writes the CA's certificate (never its key).
 * credential("NAME=env:VAR|file:PATH|fd:N") loads a secret into the
 * supervisor; http_auth("METHOD HOST/PATH AUTHSPEC NAME [replace|add-only]",
 * AUTHSPEC bearer, basic:USER, header:NAME, apikey:NAME or query:PARAM)
 * attaches it to the matching requests.  http_log / http_log_fd: one JSON
 * line per request.  Errors are reported by sandlock_sandbox_build.
 */
sandlock_builder_t *sandlock_sandbox_builder_http_allow(sandlock_builder_t *b, const char *rule);
sandlock_builder_t *sandlock_sandbox_builder_http_deny(sandlock_builder_t *b, const char *rule);
sandlock_builder_t *sandlock_sandbox_builder_http_port(sandlock_builder_t *b, uint16_t port);
sandlock_builder_t *sandlock_sandbox_builder_http_ca(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_http_key(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_http_inject_ca(sandlock_builder_t *b,
                                                            const char *path);
sandlock_builder_t *sandlock_sandbox_builder_http_ca_out(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_credential(sandlock_builder_t *b, const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_http_auth(sandlock_builder_t *b, const char *spec);
sandlock_builder_t *sandlock_sandbox_builder_http_log(sandlock_builder_t *b, const char *path);
sandlock_builder_t *sandlock_sandbox_builder_http_log_fd(sandlock_builder_t *b, int fd);
/* NULL if rule is a well-formed http_allow/http_deny rule, else why not
 * (free with sandlock_string_free). */
char *sandlock_http_rule_error(const char *rule);
/*
 * Pathname unix sockets: connect/sendto/sendmsg reach a socket file only
 * inside an fs_write tree, at or below a net_allow_unix path (must exist),
 * or inside an fs_read tree when net_unix_readable is true; never inside
 * fs_deny.  Abstract sockets are refused (see README).
 */
sandlock_builder_t *sandlock_sandbox_builder_net_allow_unix(sandlock_builder_t *b,
                                                            const char *path);
sandlock_builder_t *sandlock_sandbox_builder_net_unix_readable(sandlock_builder_t *b,
                                                               bool allow);
/*
 * port_remap: each run gets its own TCP/UDP port space.  An IP bind to
 * port V is performed on the caller's behalf (after the bind rules, on V);
 * when V is taken on the host, on a free port the kernel picks instead.
 * getsockname/getpeername show V, and a connect from inside to V reaches
 * the real port.  sandlock_handle_ports gives the remapped pairs.
 */
sandlock_builder_t *sandlock_sandbox_builder_port_remap(sandlock_builder_t *b, bool on);
/*
 * Route netlink (what ip addr, if_nameindex and getaddrinfo's
 * AI_ADDRCONFIG read) shows a loopback-only network where sandlock may
 * make one (CAP_SYS_ADMIN or user namespaces: docs/network.md); show = true gives the guest
 * the host's interfaces, addresses, MACs and routes instead.
 */
sandlock_builder_t *sandlock_sandbox_builder_net_host_interfaces(sandlock_builder_t *b,
                                                                 bool show);
sandlock_builder_t *sandlock_sandbox_builder_timeout_ms(sandlock_builder_t *b, uint64_t ms);
/* Deferred handler calls still running after this long are failed with EIO (default 30000). */
sandlock_builder_t *sandlock_sandbox_builder_deferred_timeout_ms(sandlock_builder_t *b,
                                                                 uint64_t ms);
/*
 * Re-allow groups of syscalls the sandbox denies by default (one, or a
 * comma-separated list, as the reference takes them; repeatable).  Groups: "sysv_ipc" — SysV shared memory, message queues and
 * semaphores and POSIX message queues, which the sandbox shares with the
 * host's IPC namespace.  A single syscall's name or an unknown group makes
 * sandlock_sandbox_build fail with SANDLOCK_ERR_INVALID.
 */
sandlock_builder_t *sandlock_sandbox_builder_extra_allow_syscalls(sandlock_builder_t *b,
                                                                  const char *names);
/*
 * Captured output kept per stream (stdout, stderr), in bytes; 0 = no limit.
 * Default SANDLOCK_DEFAULT_MAX_OUTPUT.  Past it the rest is still read (the
 * command never blocks on a full pipe) and discarded; the result tells how
 * much was dropped (sandlock_result_stdout_truncated).
 */
#define SANDLOCK_DEFAULT_MAX_OUTPUT (64ull << 20)
sandlock_builder_t *sandlock_sandbox_builder_max_output(sandlock_builder_t *b, uint64_t bytes);
/*
 * The minimal /dev of every sandbox (no grant needed): these device files
 * may be read and written; so may the files behind the command's own
 * stdin/stdout/stderr (with the access those fds have), and /dev/tty when
 * one of them is a terminal.  No other device node is reachable unless a
 * grant names it.  (Not under a chroot, whose view has no host /dev.)
 */
#define SANDLOCK_DEFAULT_DEVICES \
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"
/* Inherit the caller's stdin/stdout/stderr instead of capturing output. */
sandlock_builder_t *sandlock_sandbox_builder_inherit_stdio(sandlock_builder_t *b, bool inherit);
/* Determinism.  random_seed: getrandom() returns a byte stream seeded with
 * seed (identical seeds, identical streams; NOT cryptographically secure).
 * time_start_ns: CLOCK_REALTIME (and gettimeofday, time) start at this Unix
 * time in nanoseconds and advance at real speed (x86_64: the vDSO is
 * patched to make those calls real syscalls); CLOCK_MONOTONIC is untouched. */
sandlock_builder_t *sandlock_sandbox_builder_random_seed(sandlock_builder_t *b, uint64_t seed);
sandlock_builder_t *sandlock_sandbox_builder_time_start_ns(sandlock_builder_t *b,
                                                           int64_t unix_ns);
/* deterministic_dirs: getdents/getdents64 return a directory's entries
 * sorted by name (byte order), complete across calls.  With random_seed,
 * /dev/urandom and /dev/random opened for reading read a seeded stream
 * too (one per open, without end; a pipe: one read returns at most 64 KiB). */
sandlock_builder_t *sandlock_sandbox_builder_deterministic_dirs(sandlock_builder_t *b, bool on);
/* image: run inside a local container image's filesystem (Podman's store,
 * else Docker's), never pulled: its tree, extracted once into
 * $XDG_CACHE_HOME/sandlock/images/<id>, is the chroot (exclusive with
 * chroot); its WorkingDir the cwd and its Env the environment unless cwd /
 * env are given; a run with no command (argc 0) runs its Entrypoint + Cmd.
 * Resolved at build: an image not in the local store fails the build. */
sandlock_builder_t *sandlock_sandbox_builder_image(sandlock_builder_t *b, const char *ref);
/* The image's command (Entrypoint + Cmd) of a sandbox built with image,
 * *argc items (0: none); valid while sb lives. */
const char *const *sandlock_sandbox_image_argv(const sandlock_sandbox_t *sb, uint32_t *argc);
/* gpu_devices: grant GPUs.  len 0: every GPU; else only these indices
 * (/dev/nvidiaN, /dev/dri/cardN and renderD(128+N)) and
 * CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES set to them (unless env sets
 * them).  The control nodes (/dev/nvidiactl, nvidia-uvm, nvidia-modeset,
 * nvidia-caps, /dev/kfd) come with any GPU; driver libraries and /proc,
 * /sys files are granted by the usual fs_read.  Not called: no GPU node is
 * reachable. */
sandlock_builder_t *sandlock_sandbox_builder_gpu_devices(sandlock_builder_t *b,
                                                         const uint32_t *devices, uint32_t len);
/* num_cpus: the guest sees n CPUs (1..1024): /proc/cpuinfo renumbered to n
 * entries, /sys/devices/system/cpu/{online,possible,present} "0-(n-1)",
 * sched_getaffinity a mask of CPUs 0..n-1 (the real affinity, cpu_core,
 * is unchanged).  With max_memory, /proc/meminfo shows the budget. */
sandlock_builder_t *sandlock_sandbox_builder_num_cpus(sandlock_builder_t *b, uint32_t n);
/* The reference's list forms: cpu_core for each of cores[0..len), and
 * time_start_ns in whole seconds. */
sandlock_builder_t *sandlock_sandbox_builder_cpu_cores(sandlock_builder_t *b,
                                                       const uint32_t *cores, uint32_t len);
sandlock_builder_t *sandlock_sandbox_builder_time_start(sandlock_builder_t *b,
                                                        uint64_t epoch_secs);
/* ---- knobs: resource limits and process settings (limits.c, cglimits.c) ----
 * max_processes defaults to 64 (0 = unlimited).  max_memory is a budget for
 * the whole sandbox (cgroup memory limit) where a cgroup can be made, else
 * RLIMIT_AS per process (see README).  max_open_files: RLIMIT_NOFILE, soft
 * and hard, clamped to the caller's own limits.  max_cpu: percent of one
 * core (1..100) for the whole sandbox: a cgroup CPU quota where a group can
 * be made, else the run loop stops and continues the sandbox (SIGSTOP /
 * SIGCONT) against its measured CPU time.  cpu_core: add one core to the affinity
 * set (repeatable).  Bad values make sandlock_sandbox_build fail. */
sandlock_builder_t *sandlock_sandbox_builder_max_open_files(sandlock_builder_t *b, unsigned int n);
sandlock_builder_t *sandlock_sandbox_builder_max_cpu(sandlock_builder_t *b, uint8_t pct);
sandlock_builder_t *sandlock_sandbox_builder_cpu_core(sandlock_builder_t *b, uint32_t core);
sandlock_builder_t *sandlock_sandbox_builder_no_coredump(sandlock_builder_t *b, bool on);
sandlock_builder_t *sandlock_sandbox_builder_no_huge_pages(sandlock_builder_t *b, bool on);
sandlock_builder_t *sandlock_sandbox_builder_no_randomize_memory(sandlock_builder_t *b, bool on);
/* Deny more syscalls (names) or groups of them (e.g. "sysv_ipc") with
 * EPERM, on top of the default blocklist: one, or a comma-separated list
 * ("mkdir,mkdirat"); repeatable.  An empty name in a list fails the build. */
sandlock_builder_t *sandlock_sandbox_builder_extra_deny_syscalls(sandlock_builder_t *b,
                                                                 const char *names);
/* ---- Landlock protections (SANDLOCK_PROTECTION_*): strict by default ----
 * A protection the kernel's Landlock ABI lacks makes the run fail with
 * SANDLOCK_ERR_UNSUPPORTED, unless allow_degraded lists it (then it is
 * skipped there); disable never enforces it.  Last call per protection wins. */
sandlock_builder_t *sandlock_sandbox_builder_allow_degraded(sandlock_builder_t *b,
                                                            uint32_t protection);
sandlock_builder_t *sandlock_sandbox_builder_disable(sandlock_builder_t *b, uint32_t protection);
/*
 * Called once per run, on the thread that called sandlock_run*, when the
 * sandbox has started: `pid` is the run's direct child (the sandbox's init,
 * whose process group is the sandbox's), already confined and supervised.
 * It is called before the run waits for the command, and not at all when
 * the launch fails.  Keep it short: the command is already running.
 * fn NULL removes the callback.  ud is borrowed, never freed by sandlock.
 */
typedef void (*sandlock_start_fn)(void *ud, int32_t pid);
sandlock_builder_t *sandlock_sandbox_builder_on_start(sandlock_builder_t *b, sandlock_start_fn fn,
                                                      void *ud);
/*
 * A supervised decision, for tracing: one call per trapped syscall the
 * supervisor answers, just before the answer is sent (the call is still
 * pending).  decided_by names who decided: a builtin ("metadata guard",
 * "process count", "argument rules", "time start", "random seed"), or
 * "handler" for a user handler, or NULL when nobody did (CONTINUE).  The
 * callback runs on the supervisor thread, or on a worker thread for a
 * deferred handler's answer, so it must be thread-safe, quick, and must not
 * call sandlock functions other than sandlock_syscall_name.  Pointers are
 * valid only during the call.  fn NULL removes it; ud is borrowed.
 */
typedef struct sandlock_decision {
	const sandlock_notif_t *notif;
	const sandlock_action_t *action;
	const char *decided_by;
} sandlock_decision_t;
typedef void (*sandlock_decision_fn)(void *ud, const sandlock_decision_t *d);
sandlock_builder_t *sandlock_sandbox_builder_on_decision(sandlock_builder_t *b,
                                                         sandlock_decision_fn fn, void *ud);
/*
 * For tracing: the seccomp filter's own refusals (the blocklist: ptrace,
 * mount, bpf, keyctl, io_uring_*, ...; extra_deny_syscalls; the argument
 * rules: namespace flags, socket families, personality flags, ...) go
 * through the supervisor, which refuses them with the same errno, so
 * on_decision sees them (decided_by "syscall filter" or "argument rules").
 * Costs a round trip per refused call, nothing for the others.  Only a
 * run has a supervisor: confine and sandlock_fork refuse in the filter as
 * always.  Off by default.
 */
sandlock_builder_t *sandlock_sandbox_builder_report_filter_refusals(sandlock_builder_t *b,
                                                                   bool on);
/*
 * Tell a failed run's first access Landlock refused
 * (sandlock_result_denied_access).  Only where the caller may read the
 * kernel's audit log (CAP_AUDIT_READ; Landlock ABI 7) does the run listen
 * and ask Landlock to log the program's denials; elsewhere it is a no-op,
 * never an error.  The kernel logs them only while audit is enabled
 * (auditd, or `auditctl -e 1`); with no auditd they also reach the kernel
 * log, rate-limited.  Costs a netlink socket per run; a failed run reads
 * the records queued meanwhile.  Off by default (docs/cli.md).
 */
sandlock_builder_t *sandlock_sandbox_builder_audit_denials(sandlock_builder_t *b, bool on);
/*
 * Dynamic policy (builtins/policy.c): fn is called on the supervisor
 * thread for each event of the sandbox's processes while the call is held:
 *   "execve"/"execveat" (category "process"): argv read while every other
 *       task of the sandbox is stopped; the exec then runs on exactly that
 *       argv (nothing can rewrite it before the kernel copied it);
 *   "connect", "bind", "sendto", "sendmsg" (category "network"): host and
 *       port of the destination, from the address sandlock copied once and
 *       then uses for the call it performs on the caller's behalf;
 *   "clone", "clone3", "fork", "vfork" ("process"): before the new process
 *       exists;  "exit_group" ("process"): the verdict is ignored but KILL.
 * Path strings are never exposed (they could change after the check); use
 * sandlock_policy_deny_path, which decides on the file actually opened.
 * The return value is the verdict: SANDLOCK_VERDICT_ALLOW (0),
 * _DENY (-1: EPERM), a positive errno (deny with it), _AUDIT (-2: allow),
 * _KILL (-3: end the sandbox, reason SANDLOCK_EXIT_KILLED).  Pointers in
 * ev are valid during the call only.  fn NULL removes it; ud is borrowed.
 */
enum {
	SANDLOCK_VERDICT_ALLOW = 0,
	SANDLOCK_VERDICT_DENY = -1,
	SANDLOCK_VERDICT_AUDIT = -2,
	SANDLOCK_VERDICT_KILL = -3,
};
typedef struct sandlock_policy_event {
	const char *syscall;     /* "execve", "connect", ... */
	const char *category;    /* "process" or "network" */
	int32_t pid;             /* the calling thread */
	int32_t parent_pid;      /* its process's parent */
	const char *host;        /* numeric IP of a network event, else NULL */
	uint16_t port;           /* its port, else 0 */
	const char *const *argv; /* exec events: NULL-terminated, else NULL */
	size_t argc;
	bool denied;             /* the static policy already refused it */
} sandlock_policy_event_t;
typedef struct sandlock_policy_ctx sandlock_policy_ctx_t;
typedef int32_t (*sandlock_policy_fn)(void *ud, const sandlock_policy_event_t *ev,
                                      sandlock_policy_ctx_t *ctx);
sandlock_builder_t *sandlock_sandbox_builder_policy_callback(sandlock_builder_t *b,
                                                             sandlock_policy_fn fn, void *ud);
/*
 * The reference's policy_fn: the same events as a sandlock_event_t
 * (category as a number: 0 file, 1 network, 2 process, 3 memory), the same
 * verdicts, the context as a sandlock_ctx_t; user_data_drop (or NULL) is
 * called once, when the sandbox (or an unbuilt builder) is freed.
 */
typedef sandlock_policy_ctx_t sandlock_ctx_t;
typedef struct sandlock_event {
	const char *syscall;
	uint8_t category;
	uint32_t pid;
	uint32_t parent_pid;
	const char *host;
	uint16_t port;
	bool denied;
	const char *const *argv;
	uint32_t argc;
} sandlock_event_t;
typedef int32_t (*sandlock_policy_fn_t)(const sandlock_event_t *event, sandlock_ctx_t *ctx,
                                        void *user_data);
typedef void (*sandlock_policy_ud_drop_t)(void *user_data);
sandlock_builder_t *sandlock_sandbox_builder_policy_fn(sandlock_builder_t *b,
                                                       sandlock_policy_fn_t cb, void *user_data,
                                                       void (*user_data_drop)(void *user_data));
/* The reference's context calls (void: a bad argument changes nothing).
 * restrict_max_memory lowers the run's memory budget (its memory cgroup's
 * memory.max, else every process's RLIMIT_AS); restrict_max_processes
 * lowers max_processes for the forks that follow; restrict_pid_network
 * limits the IP destinations of one process (and the threads of it).
 * All of them only tighten: a larger value than the current one is
 * ignored. */
void sandlock_ctx_restrict_network(sandlock_ctx_t *ctx, const char *const *ips, uint32_t count);
void sandlock_ctx_grant_network(sandlock_ctx_t *ctx, const char *const *ips, uint32_t count);
void sandlock_ctx_restrict_max_memory(sandlock_ctx_t *ctx, uint64_t bytes);
void sandlock_ctx_restrict_max_processes(sandlock_ctx_t *ctx, uint32_t n);
void sandlock_ctx_restrict_pid_network(sandlock_ctx_t *ctx, uint32_t pid, const char *const *ips,
                                       uint32_t count);
void sandlock_ctx_deny_path(sandlock_ctx_t *ctx, const char *path);
void sandlock_ctx_allow_path(sandlock_ctx_t *ctx, const char *path);
/* Tighten the running sandbox (only inside fn).  0, or a negative errno
 * (-EINVAL naming nothing: a relative or missing path, a bad address). */
/* From now on, opening path or anything beneath it fails with EACCES
 * (decided on the file actually opened, so a symlink, "..", a hard link
 * or an fd-relative open reaching it is refused too). */
int32_t sandlock_policy_deny_path(sandlock_policy_ctx_t *ctx, const char *path);
/* Undo a deny_path of exactly that path. */
int32_t sandlock_policy_allow_path(sandlock_policy_ctx_t *ctx, const char *path);
/* From now on, IP destinations must be one of ips (numeric IPv4/IPv6);
 * n 0 refuses every IP destination.  Repeated calls narrow further. */
int32_t sandlock_policy_restrict_network(sandlock_policy_ctx_t *ctx, const char *const *ips,
                                         size_t n);
/* Let these IPs through a restrict_network again (the static net_allow
 * rules still apply). */
int32_t sandlock_policy_grant_network(sandlock_policy_ctx_t *ctx, const char *const *ips,
                                      size_t n);
/* End the sandbox once fn returns (whatever the verdict). */
void sandlock_policy_kill(sandlock_policy_ctx_t *ctx);
void sandlock_sandbox_builder_free(sandlock_builder_t *b);

/* Consumes b.  NULL + *err, *err_msg on bad configuration. */
sandlock_sandbox_t *sandlock_sandbox_build(sandlock_builder_t *b, int *err, char **err_msg);
void sandlock_sandbox_free(sandlock_sandbox_t *sb);

/* ---- protections ---- */
enum {
	SANDLOCK_PROTECTION_FS_REFER = 0,        /* Landlock ABI 2: rename/link across dirs */
	SANDLOCK_PROTECTION_FS_TRUNCATE = 1,     /* ABI 3: truncate(2) */
	SANDLOCK_PROTECTION_NET_TCP = 2,         /* ABI 4: TCP connect/bind rules */
	SANDLOCK_PROTECTION_FS_IOCTL_DEV = 3,    /* ABI 5: ioctl on device files */
	SANDLOCK_PROTECTION_SIGNAL_SCOPE = 4,    /* ABI 6: signals to outside processes */
	SANDLOCK_PROTECTION_ABSTRACT_UNIX_SOCKET_SCOPE = 5, /* ABI 6: abstract unix sockets */
	SANDLOCK_PROTECTION_COUNT = 6,
};
/* Resolved status of a protection (sandlock_sandbox_protection_status). */
enum {
	SANDLOCK_PROTECTION_ACTIVE = 0,
	SANDLOCK_PROTECTION_DEGRADED = 1,    /* allow_degraded and the kernel lacks it */
	SANDLOCK_PROTECTION_DISABLED = 2,
	SANDLOCK_PROTECTION_UNAVAILABLE = 3, /* strict and the kernel lacks it: runs fail */
};
/* Status of protection p for sb on this kernel, or -1 for a bad argument. */
int sandlock_sandbox_protection_status(const sandlock_sandbox_t *sb, uint32_t protection);
/* Name of a protection ("signal_scope", ...), or NULL; static storage. */
const char *sandlock_protection_name(uint32_t protection);
/* Landlock ABI that provides protection p, or 0 for an unknown p. */
uint32_t sandlock_protection_min_abi(uint32_t protection);

/*
 * Confine the calling process itself with sb's Landlock rules and seccomp
 * blocklist (irreversible; no supervisor, no child).  Settings that need a
 * supervisor or a fresh child (cwd, env, timeouts, memory/CPU limits, an
 * explicit max_processes, no_randomize_memory) are refused with
 * SANDLOCK_ERR_CONFLICT, as is a process with more than one thread (Landlock
 * would confine only the calling one).  0, or -1 with *err, *err_msg.
 * sandlock_confine is the reference's call: the same, without the reason.
 */
int sandlock_confine_err(const sandlock_sandbox_t *sb, int *err, char **err_msg);
int sandlock_confine(const sandlock_sandbox_t *policy);
/* The first setting of sb that sandlock_confine refuses (with why it needs
 * a supervisor), or NULL if it refuses none; static storage. */
const char *sandlock_confine_refusal(const sandlock_sandbox_t *sb);

/* ================= running ================= */
/* argv[0] is resolved against PATH when it has no '/'.  NULL on launch failure. */
sandlock_result_t *sandlock_run_err(const sandlock_sandbox_t *sb, const char *const *argv,
                                    uint32_t argc, int *err, char **err_msg);
/*
 * Like sandlock_run with user handlers.  Ownership of every handler passes
 * to the run on entry: each handler's ud_free is called exactly once (a
 * handler listed several times is freed once), on success and on failure.
 *
 * The timeout bounds the whole run: once the sandbox is gone, the run
 * waits at most 200 ms for handler callbacks still running, then returns
 * without them.  Such a callback's thread is abandoned (not killed): it
 * finishes the callback whenever that returns, its decision is dropped,
 * and the thread exits; what it uses stays valid until then.  The ud of a
 * handler still inside its callback at that moment is leaked (its ud_free
 * is never called); the other handlers are released as usual.
 *
 * Both return NULL with SANDLOCK_ERR_SYSTEM if supervising the run itself
 * fails (poll/read errors, the notification thread stops); the sandbox is
 * killed first.
 */
sandlock_result_t *sandlock_run_with_handlers_err(const sandlock_sandbox_t *sb,
                                                  const char *const *argv, uint32_t argc,
                                                  const sandlock_registration_t *regs,
                                                  size_t nregs, int *err, char **err_msg);

/*
 * The reference's calls (refabi.c), over the ones above.  name: the
 * sandbox's name for this run (NULL: the policy's own, or sandbox-<pid>);
 * NULL on any failure, without a reason.  A registration names its
 * syscall by number on the native arch; ownership of every handler passes
 * to the run on entry, as above.
 */
typedef struct sandlock_handler_registration {
	int64_t syscall_nr;
	sandlock_handler_t *handler;
} sandlock_handler_registration_t;
sandlock_result_t *sandlock_run(const sandlock_sandbox_t *policy, const char *name,
                                const char *const *argv, unsigned int argc);
sandlock_result_t *sandlock_run_with_handlers(const sandlock_sandbox_t *policy, const char *name,
                                              const char *const *argv, uint32_t argc,
                                              const sandlock_handler_registration_t *registrations,
                                              uintptr_t nregistrations);
/* The same on the caller's own stdin, stdout and stderr (nothing captured). */
sandlock_result_t *sandlock_run_interactive_with_handlers(
    const sandlock_sandbox_t *policy, const char *name, const char *const *argv, uint32_t argc,
    const sandlock_handler_registration_t *registrations, uintptr_t nregistrations);

/* ================= handles: a run as an object ================= */
/* How one of the command's standard streams is connected. */
enum {
	SANDLOCK_STDIO_DEFAULT = 0, /* CAPTURE, or INHERIT when the sandbox has inherit_stdio */
	SANDLOCK_STDIO_CAPTURE = 1, /* stdout/stderr: collected into the result; stdin: /dev/null */
	SANDLOCK_STDIO_INHERIT = 2, /* the caller's own stream */
	SANDLOCK_STDIO_DEVNULL = 3,
	SANDLOCK_STDIO_FD = 4,      /* the caller's fd (duplicated at spawn; the caller keeps it) */
	SANDLOCK_STDIO_PIPE = 5,    /* a pipe whose other end the caller takes (sandlock_handle_*_fd) */
};

/* flags of sandlock_spawn_opts_t */
#define SANDLOCK_SPAWN_CREATE (1u << 0) /* stop before exec until sandlock_handle_start */
/* pass_fds[i] becomes the command's fd 3 + i, in the order given (at most
 * 64, no repeats), instead of keeping its number: how a gather consumer
 * gets its sources on fds 3, 4, ... */
#define SANDLOCK_SPAWN_PASS_IN_ORDER (1u << 1)

typedef struct sandlock_stdio {
	int32_t mode; /* SANDLOCK_STDIO_* */
	int32_t fd;   /* SANDLOCK_STDIO_FD only */
} sandlock_stdio_t;

/*
 * Options of sandlock_spawn (NULL: all defaults).  Zero-initialise and set
 * size = sizeof(sandlock_spawn_opts_t): later versions only append fields,
 * and accept the smaller struct of a caller built against an older one.
 * pass_fds: caller fds (> 2) the command keeps, open, at the same numbers
 * (every other fd above 2 is closed before exec).
 */
typedef struct sandlock_spawn_opts {
	uint32_t size;
	uint32_t flags;          /* SANDLOCK_SPAWN_* */
	sandlock_stdio_t stdio[3]; /* stdin, stdout, stderr */
	const int32_t *pass_fds;
	size_t npass_fds;
} sandlock_spawn_opts_t;

/*
 * Start a run without waiting for it.  Handlers as for
 * sandlock_run_with_handlers (owned by the run from entry, released when
 * the handle is freed, or at once on failure).  sb must stay alive until
 * sandlock_handle_free.  Captured output is collected by a thread of the
 * handle, so the command never blocks on a full pipe while the caller does
 * other things.  Returns NULL + *err on failure (nothing is left running).
 *
 * The handle must be used from the thread that created it or others, but
 * the creating THREAD must outlive the run: the sandbox's init ends the
 * sandbox when the thread that forked it exits (PR_SET_PDEATHSIG).
 */
sandlock_handle_t *sandlock_spawn(const sandlock_sandbox_t *sb, const char *const *argv,
                                  uint32_t argc, const sandlock_registration_t *regs,
                                  size_t nregs, const sandlock_spawn_opts_t *opts, int *err,
                                  char **err_msg);
/* Release a SANDLOCK_SPAWN_CREATE'd command to exec.  0, or -1 (not
 * created-and-waiting, or the command died). */
int sandlock_handle_start(sandlock_handle_t *h);
/* The command's pid (the process that execs argv; its children are in the
 * sandbox too).  Valid from spawn until the handle's result is taken. */
int32_t sandlock_handle_pid(const sandlock_handle_t *h);
/* The sandbox's init: the caller's child and the parent of the command. */
int sandlock_handle_init_pid(const sandlock_handle_t *h);
/* port_remap: the virtual ports of this run bound on another real port,
 * as pairs virt[i] -> real[i], the first max of them; returns how many
 * there are (a port not listed is its own real port), -1 for a NULL h.
 * Safe while the run runs, from any thread. */
int sandlock_handle_ports(sandlock_handle_t *h, uint16_t *virt, uint16_t *real, size_t max);
/* True until the command (and so the sandbox) has ended. */
bool sandlock_handle_is_running(sandlock_handle_t *h);
/* Stop / continue every process of the sandbox (all descendants of init,
 * also those started meanwhile): the run's cgroup v2 group is frozen where
 * it has one (init too; a kill or the timeout thaws it first), else each
 * process gets SIGSTOP / SIGCONT.  0, or -1 with errno (ESRCH: not running). */
int sandlock_handle_pause(sandlock_handle_t *h);
int sandlock_handle_resume(sandlock_handle_t *h);
/* CPU time (ns, user + system, every process and thread) the sandbox has
 * used so far: its cgroup's cpu.stat where the run has a v2 group, else
 * /proc (clock-tick resolution).  -1 with errno (ESRCH: not running). */
int64_t sandlock_handle_cpu_time_ns(sandlock_handle_t *h);
/* Memory the sandbox uses now (bytes): its memory cgroup's charge where
 * max_memory made one, else the sum of its processes' resident sets.
 * -1 with errno (ESRCH: not running). */
int64_t sandlock_handle_memory_bytes(sandlock_handle_t *h);
/* End the whole sandbox; the result then reports SANDLOCK_EXIT_KILLED.
 * 0, or -1 (ESRCH) when it had already ended. */
int sandlock_handle_kill(sandlock_handle_t *h);
/* Our end of a SANDLOCK_STDIO_PIPE stream (stdin: write end; stdout and
 * stderr: read ends).  Ownership passes to the caller (close it: for stdin
 * that is the command's EOF); a second call returns -1. */
int sandlock_handle_stdin_fd(sandlock_handle_t *h);
int sandlock_handle_stdout_fd(sandlock_handle_t *h);
int sandlock_handle_stderr_fd(sandlock_handle_t *h);
/*
 * Wait up to timeout_ms (< 0: forever; 0: just look) for the run to end.
 * The result (owned by the caller) or NULL: *err == SANDLOCK_ERR_RUNNING
 * if it is still running, another code if the run failed or the handle was
 * never started, or its result was already taken.
 */
sandlock_result_t *sandlock_handle_wait_ms(sandlock_handle_t *h, int64_t timeout_ms, int *err,
                                           char **err_msg);
/* The reference's waits: until the end (NULL on failure), or for at most
 * timeout_ms (0: no limit), after which the sandbox is killed and the
 * result's reason is SANDLOCK_EXIT_TIMEOUT. */
sandlock_result_t *sandlock_handle_wait(sandlock_handle_t *h);
sandlock_result_t *sandlock_handle_wait_timeout(sandlock_handle_t *h, uint64_t timeout_ms);
/* Ends the run if it still runs (nothing of it is left running after
 * this returns), releases its handlers and frees everything.  NULL is ok. */
void sandlock_handle_free(sandlock_handle_t *h);
/*
 * The reference's handle calls (name: this run's sandbox name, NULL: the
 * policy's; the policy may be freed once they return).  sandlock_create
 * (and _create_for_run, the same here) stops the command before exec
 * until sandlock_start, output captured into the result.  sandlock_popen
 * starts it with each stream 0 inherit, 1 piped, 2 null: a piped stream's
 * fd goes to *out (closed when out is NULL; the caller closes it: close
 * stdin before waiting), others get -1; NULL for an unknown mode.
 * sandlock_run_interactive runs on the caller's stdio and returns the exit
 * code (-1: not run).  sandlock_handle_port_mappings: port_remap's moved
 * ports as JSON {"80":9001} (sandlock_string_free), NULL when none.
 */
sandlock_handle_t *sandlock_create(const sandlock_sandbox_t *policy, const char *name,
                                   const char *const *argv, unsigned int argc);
sandlock_handle_t *sandlock_create_for_run(const sandlock_sandbox_t *policy, const char *name,
                                           const char *const *argv, unsigned int argc);
int sandlock_start(sandlock_handle_t *h);
sandlock_handle_t *sandlock_popen(const sandlock_sandbox_t *policy, const char *name,
                                  const char *const *argv, unsigned int argc,
                                  uint32_t stdin_mode, uint32_t stdout_mode, uint32_t stderr_mode,
                                  int *out_stdin_fd, int *out_stdout_fd, int *out_stderr_fd);
int sandlock_run_interactive(const sandlock_sandbox_t *policy, const char *name,
                             const char *const *argv, unsigned int argc);
char *sandlock_handle_port_mappings(const sandlock_handle_t *h);
/*
 * sandlock_dry_run: the command runs on its COW workdir, its changes are
 * listed and discarded (never committed), its output captured.  NULL
 * without a workdir (the writes would be real) or when it cannot run.
 * change_kind: 'A', 'M' or 'D'; change_path: sandlock_string_free.
 */
typedef struct sandlock_dry_run_result sandlock_dry_run_result_t;
sandlock_dry_run_result_t *sandlock_dry_run(const sandlock_sandbox_t *policy, const char *name,
                                            const char *const *argv, unsigned int argc);
int sandlock_dry_run_result_exit_code(const sandlock_dry_run_result_t *r);
sandlock_exit_reason sandlock_dry_run_result_reason(const sandlock_dry_run_result_t *r);
int sandlock_dry_run_result_signal(const sandlock_dry_run_result_t *r);
bool sandlock_dry_run_result_success(const sandlock_dry_run_result_t *r);
const uint8_t *sandlock_dry_run_result_stdout_bytes(const sandlock_dry_run_result_t *r,
                                                    uintptr_t *len);
const uint8_t *sandlock_dry_run_result_stderr_bytes(const sandlock_dry_run_result_t *r,
                                                    uintptr_t *len);
uintptr_t sandlock_dry_run_result_changes_len(const sandlock_dry_run_result_t *r);
char sandlock_dry_run_result_change_kind(const sandlock_dry_run_result_t *r, uintptr_t i);
char *sandlock_dry_run_result_change_path(const sandlock_dry_run_result_t *r, uintptr_t i);
void sandlock_dry_run_result_free(sandlock_dry_run_result_t *r);
/* ================= COW fork: clones of an initialized template ================= */
/*
 * sandlock_fork makes a template process that confines itself with sb
 * (as sandlock_confine does: no supervisor), runs init once, then forks n
 * copy-on-write clones; clone i runs work(ud, i) with CLONE_ID=i in its
 * environment and its stdout on a pipe of its own, and exits with what
 * work returns.  A keeper process outside the sandbox reaps the clones,
 * enforces sb's timeout and, once every clone has exited (or on a timeout,
 * sandlock_fork_kill, sandlock_fork_free or the caller's death), kills
 * whatever is left.  sb's cwd, env and clean_env apply; what confine
 * refuses for other reasons is refused (SANDLOCK_ERR_CONFLICT); clones are
 * not counted in max_processes.  init and work run in forked children of
 * the caller: in a multi-threaded caller only what is safe after fork.
 */
typedef struct sandlock_fork sandlock_fork_t;
/* 0, or non-zero with a NUL-terminated reason in err (errlen bytes) to fail the fork. */
typedef int (*sandlock_fork_init_fn)(void *ud, char *err, size_t errlen);
typedef int (*sandlock_fork_work_fn)(void *ud, uint32_t clone_id);
/* Makes a child like fork(2): 0 in it, its pid in the parent, -1 on failure. */
typedef int32_t (*sandlock_fork_fn)(void *ud);

typedef struct sandlock_fork_opts {
	size_t size;                  /* sizeof(sandlock_fork_opts_t) */
	sandlock_fork_init_fn init;   /* NULL: nothing to initialize */
	sandlock_fork_work_fn work;   /* required */
	/* NULL: fork(2).  A language runtime passes its own fork (Python's
	 * os.fork keeps the interpreter consistent in the child). */
	sandlock_fork_fn fork_fn;
	void *ud;                     /* passed to all three */
} sandlock_fork_opts_t;

/* The running clones, or NULL (init failed: SANDLOCK_ERR_SYSTEM with its reason). */
sandlock_fork_t *sandlock_fork_start(const sandlock_sandbox_t *sb, uint32_t n,
                               const sandlock_fork_opts_t *opts, int *err, char **err_msg);
uint32_t sandlock_fork_count(const sandlock_fork_t *f);
int32_t sandlock_fork_pid(const sandlock_fork_t *f, uint32_t clone_id); /* -1: no such clone */
/* End every clone still running (their results say KILLED).  Thread-safe. */
void sandlock_fork_kill(sandlock_fork_t *f);
/* Read every clone's stdout to its end and reap them all: 0, or -1 with
 * SANDLOCK_ERR_RUNNING if some still run after timeout_ms (-1: no limit). */
int sandlock_fork_wait(sandlock_fork_t *f, int64_t timeout_ms, int *err, char **err_msg);
/* Clone clone_id's result after a successful wait (stdout captured, capped
 * by max_output; stderr is the caller's, not captured); borrowed, valid
 * until sandlock_fork_free.  NULL before the wait or for a bad id. */
const sandlock_result_t *sandlock_fork_result(const sandlock_fork_t *f, uint32_t clone_id);
/* Kills what still runs, reaps the keeper, frees. */
void sandlock_fork_free(sandlock_fork_t *f);
/* Wait for f's clones, then run argv in sb with all their stdout, in clone
 * order, on its stdin; its result (owned by the caller) or NULL. */
sandlock_result_t *sandlock_fork_reduce(const sandlock_sandbox_t *sb, const char *const *argv,
                                   uint32_t argc, sandlock_fork_t *f, int *err,
                                   char **err_msg);

/*
 * The reference's fork mode (refork.c), over the calls above: a
 * sandlock_t holds the policy and the two callbacks (init_fn once in the
 * template, work_fn(clone_id) in each clone, which then exits 0);
 * sandlock_fork makes n clones (NULL on failure), sandlock_wait says how
 * the last fork's template ended (0, or -1 when it failed), and
 * sandlock_reduce consumes the clones: their stdout, in clone order, on
 * argv's stdin.  name is kept for the reference's sake (the clones have
 * no supervisor, hence no virtual hostname).
 */
typedef struct sandlock_fns sandlock_t;
typedef sandlock_fork_t sandlock_fork_result_t;
typedef void (*sandlock_init_fn_t)(void);
typedef void (*sandlock_work_fn_t)(uint32_t clone_id);
sandlock_t *sandlock_new_with_fns(const sandlock_sandbox_t *policy, const char *name,
                                  sandlock_init_fn_t init_fn, sandlock_work_fn_t work_fn);
sandlock_fork_result_t *sandlock_fork(sandlock_t *sb, uint32_t n);
uint32_t sandlock_fork_result_count(const sandlock_fork_result_t *r);
int32_t sandlock_fork_result_pid(const sandlock_fork_result_t *r, uint32_t index);
sandlock_result_t *sandlock_reduce(sandlock_fork_result_t *fork_result,
                                   const sandlock_sandbox_t *policy, const char *name,
                                   const char *const *argv, unsigned int argc);
void sandlock_fork_result_free(sandlock_fork_result_t *r);
int sandlock_wait(sandlock_t *sb);
void sandlock_sandbox_fns_free(sandlock_t *sb);

/* ================= pipelines and gathers, the reference's C calls ================= */
/*
 * A pipeline: each stage's stdout is the next one's stdin (the first reads
 * /dev/null); sandlock_pipeline_run returns the last stage's result (its
 * stdout and stderr captured) and consumes the pipeline.  A gather: the
 * sources run at once, each into a pipe; the consumer reads the last
 * source on its stdin and the others on fds 3, 4, ... in the order added,
 * named in its environment as _SANDLOCK_GATHER="name:fd,..." (Python's
 * sandlock.inputs reads it).  A stage keeps its policy (the caller may
 * free its own at once).  timeout_ms bounds the whole run (0: none): then
 * every stage is killed and the result's reason is TIMEOUT.  NULL on any
 * failure (no stage, a stage that cannot start).
 */
typedef struct sandlock_pipeline sandlock_pipeline_t;
typedef struct sandlock_gather sandlock_gather_t;
sandlock_pipeline_t *sandlock_pipeline_new(void);
void sandlock_pipeline_add_stage(sandlock_pipeline_t *pipe, const sandlock_sandbox_t *policy,
                                 const char *const *argv, unsigned int argc);
sandlock_result_t *sandlock_pipeline_run(sandlock_pipeline_t *pipe, uint64_t timeout_ms);
void sandlock_pipeline_free(sandlock_pipeline_t *pipe);
sandlock_gather_t *sandlock_gather_new(void);
void sandlock_gather_add_source(sandlock_gather_t *g, const char *name,
                                const sandlock_sandbox_t *policy, const char *const *argv,
                                unsigned int argc);
void sandlock_gather_set_consumer(sandlock_gather_t *g, const sandlock_sandbox_t *policy,
                                  const char *const *argv, unsigned int argc);
sandlock_result_t *sandlock_gather_run(sandlock_gather_t *g, uint64_t timeout_ms);
void sandlock_gather_free(sandlock_gather_t *g);

/* ================= copy-on-write workdir ================= */
enum { SANDLOCK_BRANCH_COMMIT = 0, SANDLOCK_BRANCH_ABORT = 1, SANDLOCK_BRANCH_KEEP = 2 };
/* Writes under dir are staged, never applied to it during the run; paths
 * (symlinks too) resolve in the merged view.  With chroot, dir is the
 * rootfs (or a directory of it) or a read-write fs_mount's host directory,
 * seen through guest paths; anything else fails at build. */
sandlock_builder_t *sandlock_sandbox_builder_workdir(sandlock_builder_t *b, const char *dir);
/*
 * Each run gets its own empty, writable temporary directory (0700, made in
 * $TMPDIR or /tmp, else /var/tmp or /dev/shm), named by TMPDIR in the
 * command's environment, and removed with everything in it when the run is
 * cleaned up.  XDG_CACHE_HOME and npm_config_cache point into it unless the
 * command's environment sets them (~/.cache and ~/.npm are not writable
 * with only a project granted).  It is not mounted over /tmp (no namespaces): a program that
 * writes to a fixed /tmp path still needs fs_write("/tmp").  Refused with
 * chroot (mount a directory at /tmp instead) and by sandlock_confine.
 */
sandlock_builder_t *sandlock_sandbox_builder_private_tmp(sandlock_builder_t *b, bool on);
/* Where the upper layers live (default: a private directory in the first
 * of $TMPDIR or /tmp, /var/tmp, /dev/shm that no fs grant covers). */
sandlock_builder_t *sandlock_sandbox_builder_fs_storage(sandlock_builder_t *b, const char *dir);
/* SANDLOCK_BRANCH_*: after a successful run (default COMMIT) / a failed one (ABORT). */
sandlock_builder_t *sandlock_sandbox_builder_on_exit(sandlock_builder_t *b, uint8_t action);
sandlock_builder_t *sandlock_sandbox_builder_on_error(sandlock_builder_t *b, uint8_t action);
/* Bytes the upper layer may hold (0: unlimited); ENOSPC past it. */
sandlock_builder_t *sandlock_sandbox_builder_max_disk(sandlock_builder_t *b, uint64_t bytes);

/* ================= virtual chroot ================= */
/* The guest sees rootfs as "/" for every path syscall and exec (paths are
 * resolved inside it by the supervisor; ".." and symlinks cannot leave
 * it).  The rootfs is readable (and executable), never writable unless
 * fs_write names a guest path of it.  cwd, fs_read, fs_write and fs_deny
 * are then guest paths, resolved at build in the guest's view (symlinks
 * followed as the guest sees them, ".." stopping at its "/"), so each
 * names a host path in the rootfs or a mount's host directory, never one
 * outside; one the view does not have is skipped (as the reference
 * does); fs_write inside a read-only mount is SANDLOCK_ERR_CONFLICT. */
sandlock_builder_t *sandlock_sandbox_builder_chroot(sandlock_builder_t *b, const char *rootfs);
/* Map the host directory host at the absolute guest path virt (needs
 * chroot): read-write, or read-only (writes fail with EROFS).  host may
 * be a regular file: then virt is that file, live (writes from either
 * side are seen by the other, as a bind mount of a file), found by name
 * in its host directory at each lookup; the directory holding virt must
 * exist in the view. */
sandlock_builder_t *sandlock_sandbox_builder_fs_mount(sandlock_builder_t *b, const char *virt,
                                                      const char *host);
sandlock_builder_t *sandlock_sandbox_builder_fs_mount_ro(sandlock_builder_t *b, const char *virt,
                                                         const char *host);

/* ================= results ================= */
/* Exit status if EXITED; 128+signal if SIGNALED/KILLED; 124 on TIMEOUT. */
int sandlock_result_exit_code(const sandlock_result_t *r);
/* As the reference: a SIGKILL from anywhere is KILLED (Linux ends an OOM
 * kill and a timeout the same way), another signal SIGNALED; KILLED for a
 * NULL result.  signal: the number for SIGNALED, else -1. */
sandlock_exit_reason sandlock_result_reason(const sandlock_result_t *r);
int sandlock_result_signal(const sandlock_result_t *r);
/* Ours: the signal that ended the command whatever the reason (-1: none,
 * the value sandlock_result_signal, Python and --json give for "no signal"),
 * and whether a handler's KILL action (or KILL exception policy) or a
 * policy_fn kill verdict ended the run. */
int sandlock_result_term_signal(const sandlock_result_t *r);
bool sandlock_result_killed_by_handler(const sandlock_result_t *r);
bool sandlock_result_success(const sandlock_result_t *r);
/* Heap copies (NUL-terminated), free with sandlock_string_free. */
char *sandlock_result_stdout(const sandlock_result_t *r);
char *sandlock_result_stderr(const sandlock_result_t *r);
/* Borrowed raw bytes, valid until sandlock_result_free. */
const uint8_t *sandlock_result_stdout_bytes(const sandlock_result_t *r, uintptr_t *len);
const uint8_t *sandlock_result_stderr_bytes(const sandlock_result_t *r, uintptr_t *len);
/* True if the run returned while handler callbacks were still running
 * (abandoned threads, see sandlock_run_with_handlers).  A binding whose
 * runtime keeps per-thread state for those threads must not free it. */
bool sandlock_result_handlers_abandoned(const sandlock_result_t *r);
/* Bytes of the stream discarded past the max_output cap (0: complete). */
uint64_t sandlock_result_stdout_truncated(const sandlock_result_t *r);
uint64_t sandlock_result_stderr_truncated(const sandlock_result_t *r);
/* The COW workdir's changes (conflicts false: the change list, A/M/D,
 * sorted; true: the changes a commit did not apply because the real file
 * moved on meanwhile).  Path relative to workdir, borrowed; NULL past the end. */
size_t sandlock_result_change_count(const sandlock_result_t *r, bool conflicts);
const char *sandlock_result_change(const sandlock_result_t *r, bool conflicts, size_t i,
                                   char *kind);
/* The upper layer left in place (KEEP, conflicts, failure), or NULL. */
const char *sandlock_result_cow_kept(const sandlock_result_t *r);
/* Why the commit or listing failed, or NULL. */
const char *sandlock_result_cow_error(const sandlock_result_t *r);
/* Why the command never ran although the sandbox started (exit status 126
 * or 127): "cannot execute PATH: EACCES" (the execve's errno name), or
 * "cannot limit PATH: ..."; NULL when it ran.  Borrowed, valid until
 * sandlock_result_free. */
const char *sandlock_result_error(const sandlock_result_t *r);
/* A failed run's first access Landlock refused (sandlock_sandbox_builder_
 * audit_denials): what was refused, as Landlock's audit record names it
 * ("fs.read_file", "fs.make_reg", "fs.execute", "net.connect_tcp", ...,
 * comma-separated when several), and, when path is not NULL, *path: the
 * file (for a file made, removed or renamed: its directory) or, for
 * other kinds, the record's fields.  NULL when none was seen.  Borrowed,
 * valid until sandlock_result_free. */
const char *sandlock_result_denied_access(const sandlock_result_t *r, const char **path);
void sandlock_result_free(sandlock_result_t *r);
void sandlock_string_free(char *s);

/* ================= handlers ================= */
/* NULL if fn is NULL or on_exception is not a SANDLOCK_EXCEPTION_* value
 * (ud_free is then NOT called: the caller keeps ud). */
sandlock_handler_t *sandlock_handler_new(sandlock_handler_fn fn, void *ud,
                                         sandlock_ud_free_fn ud_free, uint32_t on_exception);
/* Run the callback on a worker thread instead of the supervisor loop.
 * (A callback that does not return is abandoned at the end of the run,
 * as described at sandlock_run_with_handlers.) */
void sandlock_handler_set_deferred(sandlock_handler_t *h, bool deferred);
/* Checked before every call; when it returns 0 the call is a handler error
 * (and ud_free is skipped at release: its runtime is gone, ud is leaked). */
void sandlock_handler_set_guard(sandlock_handler_t *h, sandlock_guard_fn guard);
/* Free a handler never passed to a run (calls ud_free). */
void sandlock_handler_free(sandlock_handler_t *h);

/* ---- action setters ---- */
void sandlock_action_set_continue(sandlock_action_t *out);
void sandlock_action_set_errno(sandlock_action_t *out, int32_t errno_value);
void sandlock_action_set_return_value(sandlock_action_t *out, int64_t value);
void sandlock_action_set_inject_fd_send(sandlock_action_t *out, int srcfd, uint32_t newfd_flags);
void sandlock_action_set_inject_fd_send_tracked(sandlock_action_t *out, int srcfd,
                                                uint32_t newfd_flags, uint64_t tracker);
/* Copies data into a new memfd (sealed unless SANDLOCK_INJECT_WRITABLE).
 * If the memfd cannot be made the action becomes ERRNO EIO. */
void sandlock_action_set_inject_bytes(sandlock_action_out_t *out, const uint8_t *data,
                                      uintptr_t len, uint32_t flags);
/* Leave the call pending; it ends when the run ends. */
void sandlock_action_set_hold(sandlock_action_t *out);
void sandlock_action_set_kill(sandlock_action_t *out, int32_t sig, int32_t pgid);

/* ---- child memory (valid only inside a callback) ----
 * Every read is confirmed with SECCOMP_IOCTL_NOTIF_ID_VALID before it is
 * reported as successful, so data from a recycled pid is never returned.
 * peek/poke return 0 when all len bytes were transferred, else a negative
 * errno (-ESRCH once the call is no longer pending). */
int32_t sandlock_mem_peek(sandlock_mem_t *m, uint64_t addr, void *buf, size_t len);
int32_t sandlock_mem_poke(sandlock_mem_t *m, uint64_t addr, const void *buf, size_t len);
/* Heap string (free with sandlock_string_free), or NULL when unreadable or
 * when no NUL occurs within max_len bytes (never truncates silently). */
char *sandlock_mem_read_string(sandlock_mem_t *m, uint64_t addr, size_t max_len);
/* The reference's accessors over the same checks: 0, or -1.  read copies
 * exactly len bytes (*out_len: how many); read_cstr copies a string of at
 * most max_len - 1 bytes and its NUL (*out_len: its length), and fails
 * rather than cut a longer one; write copies len bytes. */
int32_t sandlock_mem_read(const sandlock_mem_handle_t *handle, uint64_t addr, uint8_t *buf,
                          uintptr_t len, uintptr_t *out_len);
int32_t sandlock_mem_read_cstr(const sandlock_mem_handle_t *handle, uint64_t addr, uint8_t *buf,
                               uintptr_t max_len, uintptr_t *out_len);
int32_t sandlock_mem_write(const sandlock_mem_handle_t *handle, uint64_t addr,
                           const uint8_t *buf, uintptr_t len);

/* ---- opening on the caller's behalf (open, creat, openat, openat2) ----
 * A handler that checks a path and answers CONTINUE can be raced: another
 * thread of the program may rewrite the path after the check, and the
 * kernel reads it again.  sandlock_open_on_behalf closes that race: it
 * reads the arguments once, performs the open itself in a thread confined
 * by the sandbox's own Landlock ruleset and without capabilities (so it
 * can open nothing the program could not), relative to the program's cwd
 * or dirfd, with the program's flags, mode, umask and openat2 resolve
 * flags.  The handler then decides on the file actually opened and either
 * injects it:
 *     sandlock_action_set_inject_fd_send(out, o.fd, o.newfd_flags);
 * or refuses it (close(o.fd), sandlock_string_free(o.path), errno).
 * Deciding afterwards is too late for O_TRUNC and O_CREAT: pass a check to
 * decide before they take effect.  With a check, O_TRUNC is applied only
 * once the check allowed the file, and a file O_CREAT had to create is
 * removed again when the check refuses it (creating through a dangling
 * symlink then fails with EEXIST).
 * Only inside a callback, for the callback's own notification. */
typedef struct sandlock_opened {
	int32_t fd;           /* supervisor-side fd: the handler's until injected or closed */
	uint32_t newfd_flags; /* O_CLOEXEC if the program asked for it, else 0 */
	uint64_t dev;         /* st_dev of the opened file */
	uint64_t ino;         /* st_ino of the opened file */
	char *path;           /* its real path (sandlock_string_free), as /proc/self/fd shows it */
} sandlock_opened_t;
/* 0 with *out filled; otherwise a positive errno to answer the call with:
 * the open failed as it would have for the program (ENOENT, EACCES, ...),
 * or it could not be done safely (EPERM; see README), or the check refused
 * it, or n is not an open of m's notification (EINVAL).  *out is zeroed
 * (fd -1) on failure. */
/* The check: 0 allows the file, a positive errno refuses it (the call
 * then fails with it; a negative value refuses with EPERM).  `file` is
 * valid during the call only; the fd is not yet the handler's. */
typedef int32_t (*sandlock_open_check_fn)(void *ud, const sandlock_opened_t *file);
/* check may be NULL: then every effect of the open has happened when this
 * returns. */
int32_t sandlock_open_on_behalf(sandlock_mem_t *m, const sandlock_notif_t *n,
                                sandlock_open_check_fn check, void *ud,
                                sandlock_opened_t *out);

/* ================= profiles ================= */
/*
 * Read the TOML profile at path (the schema of docs/profiles.md: [config]
 * [determinism] [program] [filesystem] [network] [http] [syscalls]
 * [limits]) and return it checked and normalized, as one JSON object
 * (heap, free with sandlock_string_free): {"section": {"key": value}} with
 * the keys the file sets, sizes in bytes, time_start in Unix nanoseconds,
 * relative host paths made relative to the profile's directory, each
 * mount as {"virtual", "host", "read_only"}; keys of features this
 * version lacks appear only when the file asks nothing of them (false,
 * [], {}) and are then left out.  The one reader of profiles: the CLI and
 * the Python package both load them through it, so both accept the same
 * files.  Like ssh's StrictModes the file must be the caller's (or
 * root's), writable by nobody else, in a directory others cannot replace
 * it in.  NULL on failure: *err_msg "PATH:LINE:COL: [section] key: reason"
 * (SANDLOCK_ERR_INVALID), or "PATH: reason" (NOT_FOUND, SYSTEM, NOMEM).
 */
char *sandlock_profile_load(const char *path, int *err, char **err_msg);

/* ================= misc ================= */
/* Syscall number for the native arch, or -1 if unknown. */
int64_t sandlock_syscall_nr(const char *name);
/* Heap copy of the name (free with sandlock_string_free), or NULL. */
char *sandlock_syscall_name(int64_t nr);
/* Landlock ABI of the running kernel, or -1 when Landlock is unavailable. */
int sandlock_landlock_abi_version(void);
const char *sandlock_version(void);
/* Landlock ABI sandlock's strict default needs (every protection): 6. */
int sandlock_min_landlock_abi(void);
/* "1.5G", "512M", "64k", "4096" (binary units, case-blind, optional "iB"/"B"),
 * rounded down to whole bytes.  0 and *out set, or -1 malformed, -2 zero,
 * -3 too large (>= 2^64). */
int sandlock_parse_memory_size(const char *s, uint64_t *out);
/* A point in time: Unix seconds, optionally with a fraction ("946684800.5"),
 * or RFC 3339 ("2000-01-01T00:00:00Z", "2000-01-01T12:00:00.5+01:00"), not
 * before 1970: 0 with *out_ns (Unix nanoseconds), or -1. */
int sandlock_parse_time(const char *s, int64_t *out_ns);
/* The `sandlock check` report: this host's Landlock ABI, each protection,
 * seccomp features, cgroups, and the mechanisms the supervisor uses here
 * (inside a container some are refused: which features that costs, and
 * why).  Heap string, free with sandlock_string_free. */
char *sandlock_check_report(void);
/* The same report as one JSON object (a line). */
char *sandlock_check_report_json(void);

#ifdef __cplusplus
}
#endif
#endif /* SANDLOCK_H */
