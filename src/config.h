/*
 * config.h — the validated configuration of a sandbox (builder.c).
 * Read by everything that turns policy into mechanism; written only by
 * the builder.  Every path in it is canonical (realpath at build time).
 */
#ifndef SANDLOCK_CONFIG_H
#define SANDLOCK_CONFIG_H

#include "net/httprules.h"
#include "net/netrules.h"
#include "sandlock.h"
#include "util.h"

/* What the seccomp filter lets through beyond its defaults (filter.c). */
/* Syscall groups blocked by default that extra_allow_syscalls can re-allow. */
#define SL_GROUP_SYSV_IPC (1u << 0) /* SysV shm/msg/sem and POSIX mq: the host's IPC namespace */
struct sl_filter_policy {
	uint32_t groups; /* SL_GROUP_* re-allowed by the user */
	/* The gates of UDP and ICMP (ping) sockets, closed until the network
	 * policy can check their destinations: opened by a UDP / ICMP rule
	 * (builder.c), whose destinations builtins/netdest/ then checks. */
	bool allow_udp;
	bool allow_icmp;
	/* The filter's refusals go through the supervisor, for its decision
	 * hook (--trace): sandlock_sandbox_builder_report_filter_refusals. */
	bool report_refusals;
};
#define SL_MAX_CORES 1024
#define SL_MAX_EXTRA_DENY 128
#define SL_DEFAULT_MAX_PROCESSES 64
enum { SL_PROT_STRICT = 0, SL_PROT_DEGRADED = 1, SL_PROT_DISABLED = 2 };

#define SL_MAX_MOUNTS 64 /* builder.c names the number in its error */
struct sl_mount {
	char *virt; /* absolute guest path, normalized, never "/" */
	char *host; /* canonical host directory, or regular file (file) */
	bool ro;
	bool file; /* a single file mapped at virt (a live bind of it) */
};

#define SL_MAX_GPUS 64 /* gpu_devices: indices given at most */

struct sandlock_sandbox {
	struct sl_filter_policy filter;
	sl_strvec fs_read;  /* canonical absolute paths (realpath) */
	sl_strvec fs_write; /* canonical absolute paths */
	sl_strvec fs_deny;  /* canonical absolute paths */
	char *cwd;          /* canonical, or NULL = inherit */
	char *name;         /* virtual hostname; NULL = "sandbox-<init pid>" */
	bool clean_env;
	sl_strvec env;          /* "K=V" overrides, in call order (a later K wins) */
	uint32_t max_processes; /* 0 = unlimited */
	pid_t budget_pid; /* share_budget: the run's groups go below this process's (0: none) */
	uint64_t max_memory;    /* bytes, 0 = unlimited */
	/* Network policy (builder.c builds it; builtins/netdest/ enforces
	 * it on behalf; Landlock is the kernel backstop for TCP). */
	struct sl_netrules net;   /* net_allow (deny_mode false) or net_deny rules */
	uint16_t net_connect[64]; /* Landlock CONNECT_TCP ports, when ll_connect */
	size_t n_net_connect;
	bool ll_connect;          /* Landlock handles TCP connect (with net_connect) */
	struct sl_portranges bind_allow; /* Landlock BIND_TCP ports (or all) */
	struct sl_portranges bind_deny;  /* net_deny_bind: checked on an on-behalf bind */
	/* Pathname AF_UNIX destinations: fs_write trees, net_allow_unix paths,
	 * and fs_read trees when unix_readable; never under fs_deny. */
	sl_strvec unix_allow;     /* canonical */
	bool unix_readable;
	bool port_remap;          /* own port space: binds performed on behalf (portmap.h) */
	bool net_host_interfaces; /* route netlink shows the host's, not a loopback view */
	/* HTTP policy: the supervisor's proxy (proxy.h) when it has rules. */
	struct sl_httpcfg http;
	uint64_t timeout_ms;          /* 0 = none */
	uint64_t deferred_timeout_ms; /* default 30000 */
	bool inherit_stdio;
	struct sl_prog_cache *progs; /* BPF programs built for this sandbox (launch_prepare.c) */
	/* determinism (builtins/random.c, builtins/clock.c) */
	bool has_random_seed;
	uint64_t random_seed;   /* getrandom() gives a stream seeded with this */
	bool has_time_start;
	int64_t time_start_ns;  /* CLOCK_REALTIME reads start here (Unix epoch, ns) */
	bool deterministic_dirs; /* listings sorted by name (dirsort.c) */
	/* /proc and /sys views (virtfiles.c, builtins/cpus.c) */
	uint32_t num_cpus;      /* CPUs the guest sees; 0 = the real ones */
	/* gpu_devices (gpu.c): off, every GPU (n_gpus 0), or these indices */
	bool gpu_on;
	uint8_t n_gpus;
	uint32_t gpus[SL_MAX_GPUS];
	/* knobs (limits.c, cglimits.c, landlock.c, filter.c) */
	bool max_processes_set;    /* explicitly set (confine refuses it) */
	uint32_t max_open_files;   /* RLIMIT_NOFILE, 0 = inherit */
	uint32_t max_cpu;          /* percent of one core, 0 = unlimited */
	uint64_t cpu_cores[SL_MAX_CORES / 64]; /* affinity bits; all 0 = inherit */
	bool no_coredump, no_huge_pages, no_randomize_memory;
	int extra_deny[SL_MAX_EXTRA_DENY]; /* syscall numbers denied with EPERM */
	size_t n_extra_deny;
	/* COW workdir (builtins/cow/, cow/) */
	char *workdir;    /* canonical, or NULL = off */
	char *fs_storage; /* canonical: upper layers are made in it */
	bool storage_owned; /* we made fs_storage: rmdir at free */
	int storage_lock;   /* storage_owned: its owner lock (cowstore.h) */
	int on_exit, on_error; /* SANDLOCK_BRANCH_* */
	uint64_t max_disk;
	bool private_tmp; /* each run gets its own empty TMPDIR (tmpdir.c) */
	char *tmp_root;   /* private_tmp: the sandbox's directory (in fs_write) of run dirs */
	/* Virtual chroot (builtins/chroot.c, chroot.c): the guest sees chroot
	 * as "/", with the mounts' host directories at their virtual paths. */
	char *chroot;                      /* canonical, or NULL = off */
	struct sl_mount mounts[SL_MAX_MOUNTS]; /* virt normalized, host canonical */
	size_t n_mounts;
	uint8_t protection[SANDLOCK_PROTECTION_COUNT]; /* SL_PROT_STRICT/DEGRADED/DISABLED */
	uint64_t max_output; /* bytes kept per captured stream; 0 = unlimited */
	sandlock_start_fn on_start; /* NULL = none; see sandlock.h */
	void *on_start_ud;
	sandlock_decision_fn on_decision; /* NULL = none; called by dispatch.c */
	/* Read back the first access Landlock refused a failed run, where the
	 * caller can read the audit log (run/auditlog.c). */
	bool audit_denials;
	void *on_decision_ud;
	sandlock_policy_fn policy_fn; /* NULL = none; builtins/policy.c */
	void *policy_ud;
	sl_strvec image_argv; /* image: its Entrypoint + Cmd, run when argv is empty */
	void (*policy_ud_free)(void *); /* NULL, or frees policy_ud with the config */
	/* How the run's control socket answers "stop" and "policy" (borrowed;
	 * the CLI's, run/control.h); NULL: the library's own answers. */
	const struct sl_control_opts *control;
	int refs; /* holders of a built sandbox: sandlock_sandbox_free drops one */
};

struct sandlock_builder {
	struct sandlock_sandbox cfg;
	int err;      /* first error seen, reported by build */
	char *errmsg; /* heap */
	sl_strvec raw_read, raw_write, raw_deny; /* as given; resolved at build */
	sl_strvec raw_unix;                 /* net_allow_unix, resolved at build */
	sl_strvec raw_net_allow, raw_net_deny; /* endpoint specs, parsed at build */
	sl_strvec raw_bind_allow, raw_bind_deny; /* bind port specs */
	sl_strvec raw_http_allow, raw_http_deny, raw_inject_ca; /* parsed at build */
	sl_strvec raw_creds, raw_auth;       /* --credential / --http-auth, loaded at build */
	char *raw_http_ca, *raw_http_key;
	char *raw_cwd;
	char *raw_workdir, *raw_storage;
	char *raw_chroot;
	char *raw_image; /* a local container image: resolved into raw_chroot at build */
	struct sl_mount raw_mounts[SL_MAX_MOUNTS]; /* as given; resolved at build */
	size_t n_raw_mounts;
};

#endif /* SANDLOCK_CONFIG_H */
