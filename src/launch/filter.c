/*
 * filter.c — the seccomp-bpf program, in two parts:
 *
 *  1. A hand-built prefix (argrules.c): kill foreign entry points (i386 via
 *     int 0x80, x32), then the *argument rules* (socket families and
 *     protocols, MSG_FASTOPEN, setuid creation modes, namespace clone
 *     flags, ...).
 *  2. libseccomp's program: the blocklist (ERRNO) and
 *     SECCOMP_RET_USER_NOTIF for trapped syscalls.
 *
 * A supervised run with report_refusals (for --trace) sends the filter's
 * own refusals to the supervisor instead, which answers them with the
 * same errno (builtins/refusals.c, builtins/args.c) where the run's
 * decision hook sees them: a round trip per refused call, none for the
 * others.
 *
 * Built in the parent, exported to memory, installed by the child with a
 * raw seccomp() call.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "launch/filter.h"
#include "syscalls.h"

/* Syscalls no sandboxed program needs and that widen the kernel attack surface. */
static const char *const k_blocked[] = {
	"ptrace", "process_vm_writev", "process_vm_readv", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "bpf", "mount", "umount2", "pivot_root", "move_mount", "open_tree",
	"fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr", "kexec_load",
	"kexec_file_load", "init_module", "finit_module", "delete_module", "userfaultfd",
	"perf_event_open", "keyctl", "add_key", "request_key", "setns", "reboot", "swapon",
	"swapoff", "acct", "quotactl", "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm",
	"settimeofday", "clock_settime", "syslog", "vhangup", "pidfd_getfd", "lookup_dcookie",
	"uselib",
};
#define N_BLOCKED (sizeof(k_blocked) / sizeof(k_blocked[0]))

/*
 * Groups blocked by default that extra_allow_syscalls re-allows by name.
 * sysv_ipc: SysV shared memory, message queues and semaphores, and POSIX
 * message queues, live in the IPC namespace, which the sandbox shares with
 * the host (no namespaces): keys and ids name objects of other processes
 * of the same user (or world-accessible ones), and Landlock does not
 * cover them.  (POSIX shm_open is a file in /dev/shm: Landlock covers it.)
 */
static const int k_sysv_ipc_nrs[] = {
	__NR_shmget,  __NR_shmat,     __NR_shmctl,        __NR_shmdt,
	__NR_msgget,  __NR_msgsnd,    __NR_msgrcv,        __NR_msgctl,
	__NR_semget,  __NR_semop,     __NR_semtimedop,    __NR_semctl,
	__NR_mq_open, __NR_mq_unlink, __NR_mq_timedsend,  __NR_mq_timedreceive,
	__NR_mq_notify, __NR_mq_getsetattr,
};
static const struct {
	const char *name;
	uint32_t bit;
	const int *nrs;
	size_t n;
} k_groups[] = {
	{ "sysv_ipc", SL_GROUP_SYSV_IPC, k_sysv_ipc_nrs,
	  sizeof(k_sysv_ipc_nrs) / sizeof(k_sysv_ipc_nrs[0]) },
};
#define N_GROUPS (sizeof(k_groups) / sizeof(k_groups[0]))

/*
 * Metadata syscalls newer than the metadata guard (builtin_meta.c): their
 * arguments live in structs the guard does not decode.  Answered ENOSYS by
 * number (libseccomp 2.5 does not know their names), as on an older
 * kernel: glibc does not use them and callers fall back to setxattr,
 * removexattr or the FS_IOC_FSSETXATTR ioctl.  Their read-only siblings
 * (getxattrat, listxattrat, file_getattr) too: no handler can be
 * registered on them by name, so a path policy (the Python path presets)
 * would never see their path.
 */
static const int k_enosys_nrs[] = { __NR_setxattrat, __NR_getxattrat,  __NR_listxattrat,
                                    __NR_removexattrat, __NR_file_getattr, __NR_file_setattr };
#define N_ENOSYS (sizeof(k_enosys_nrs) / sizeof(k_enosys_nrs[0]))

static int nr_of(const char *name)
{
	return seccomp_syscall_resolve_name(name);
}


/* ================= syscall groups and the blocklist ================= */

uint32_t sl_filter_group(const char *name, bool *is_syscall)
{
	*is_syscall = false;
	for (size_t i = 0; name && i < N_GROUPS; i++)
		if (strcmp(name, k_groups[i].name) == 0)
			return k_groups[i].bit;
	*is_syscall = name && nr_of(name) >= 0;
	return 0;
}

const char *sl_filter_group_names(void)
{
	return "sysv_ipc";
}

/* The same table for extra_deny_syscalls: a group denies all its members. */
int sl_filter_group_members(const char *name, const int **nrs, size_t *n)
{
	for (size_t i = 0; name && i < N_GROUPS; i++)
		if (strcmp(name, k_groups[i].name) == 0) {
			*nrs = k_groups[i].nrs;
			*n = k_groups[i].n;
			return 0;
		}
	return -1;
}

/* True if nr belongs to a group the policy leaves blocked. */
static bool in_blocked_group(const struct sl_filter_policy *p, int nr)
{
	for (size_t g = 0; g < N_GROUPS; g++) {
		if (p->groups & k_groups[g].bit)
			continue;
		for (size_t i = 0; i < k_groups[g].n; i++)
			if (k_groups[g].nrs[i] == nr)
				return true;
	}
	return false;
}

bool sl_filter_is_blocked(const struct sl_filter_policy *p, int nr)
{
	if (nr < 0)
		return false;
	if (nr == nr_of("clone3"))
		return true;
	for (size_t i = 0; i < N_ENOSYS; i++)
		if (nr == k_enosys_nrs[i])
			return true;
	for (size_t i = 0; i < N_BLOCKED; i++)
		if (nr == nr_of(k_blocked[i]))
			return true;
	return in_blocked_group(p, nr);
}

bool sl_filter_extra_denied(const struct sandlock_sandbox *cfg, int nr)
{
	for (size_t i = 0; cfg && i < cfg->n_extra_deny; i++)
		if (cfg->extra_deny[i] == nr)
			return true;
	return false;
}

bool sl_filter_denies(const struct sandlock_sandbox *cfg, int nr)
{
	static const struct sl_filter_policy k_default;
	return sl_filter_is_blocked(cfg ? &cfg->filter : &k_default, nr) ||
	       sl_filter_extra_denied(cfg, nr);
}

int sl_filter_refusal_traps(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	for (size_t i = 0; i < N_BLOCKED; i++)
		if (sl_traps_add(out, nr_of(k_blocked[i])) < 0)
			return -1;
	for (size_t i = 0; cfg && i < cfg->n_extra_deny; i++)
		if (sl_traps_add(out, cfg->extra_deny[i]) < 0)
			return -1;
	return 0;
}

static int add_rule(scmp_filter_ctx ctx, uint32_t act, int nr, unsigned cnt,
                    const struct scmp_arg_cmp *cmp, int *err, char **msg)
{
	int rc = seccomp_rule_add_array(ctx, act, nr, cnt, cmp);
	if (rc < 0) {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp rule for %s: %s", name ? name : "?",
		        strerror(-rc));
		free(name);
		return -1;
	}
	return 0;
}

/* Is nr trapped (a builtin answers it in the filter's place)? */
static bool is_trapped(int nr, const struct sl_trap *trapped, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (trapped[i].nr == nr)
			return true;
	return false;
}

/* The blocklist; a member of a denied group that a builtin traps (with a
 * supervisor, sysvipc.c refuses it itself, so the refusal is seen) gets
 * no rule of its own, nor, when refusals are reported, a blocklisted
 * syscall (refusals.c traps them). */
static int add_blocklist(scmp_filter_ctx ctx, const struct sl_filter_policy *p, bool report,
                         const struct sl_trap *trapped, size_t ntrapped, int *err, char **msg)
{
	for (size_t i = 0; i < N_BLOCKED; i++) {
		int nr = nr_of(k_blocked[i]);
		if (nr < 0 || (report && is_trapped(nr, trapped, ntrapped)))
			continue; /* not on this architecture; refused by the supervisor */
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, NULL, err, msg) < 0)
			return -1;
	}
	for (size_t g = 0; g < N_GROUPS; g++) {
		if (p->groups & k_groups[g].bit)
			continue;
		for (size_t i = 0; i < k_groups[g].n; i++)
			if (!is_trapped(k_groups[g].nrs[i], trapped, ntrapped) &&
			    add_rule(ctx, SCMP_ACT_ERRNO(EPERM), k_groups[g].nrs[i], 0, NULL, err, msg) < 0)
				return -1;
	}
	for (size_t i = 0; i < N_ENOSYS; i++)
		if (add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), k_enosys_nrs[i], 0, NULL, err, msg) < 0)
			return -1;
	/* clone3 flags live in memory the filter cannot read: make libc fall back to clone. */
	return add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr_of("clone3"), 0, NULL, err, msg);
}

/* extra_deny_syscalls: EPERM, like the default blocklist (syscalls it
 * already denies keep their own rule; argument rules run before, in the
 * prefix, and only deny more). */
static int add_extra_deny(scmp_filter_ctx ctx, const struct sandlock_sandbox *cfg,
                          const struct sl_filter_policy *p, bool report,
                          const struct sl_trap *trapped, size_t ntrapped, int *err, char **msg)
{
	for (size_t i = 0; cfg && i < cfg->n_extra_deny; i++) {
		int nr = cfg->extra_deny[i];
		if (sl_filter_is_blocked(p, nr) || (report && is_trapped(nr, trapped, ntrapped)))
			continue;
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, NULL, err, msg) < 0)
			return -1;
	}
	return 0;
}

/* One NOTIFY rule per condition of t (libseccomp ORs the rules of one
 * syscall); none: every call. */
static int add_notify_rule(scmp_filter_ctx ctx, const struct sl_trap *t, int *err, char **msg)
{
	if (t->ncond == 0)
		return add_rule(ctx, SCMP_ACT_NOTIFY, t->nr, 0, NULL, err, msg);
	for (size_t k = 0; k < t->ncond; k++) {
		const struct sl_trap_cond *c = &t->cond[k];
		if (c->arg > 5 || k >= SL_TRAP_MAX_CONDS)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "bad trap condition on %d", t->nr);
		struct scmp_arg_cmp cmp =
			c->op == SL_TRAP_MASKED_EQ
				? SCMP_CMP(c->arg, SCMP_CMP_MASKED_EQ, c->mask, (scmp_datum_t)c->val)
				: SCMP_CMP(c->arg, SCMP_CMP_NE, (scmp_datum_t)c->val);
		if (add_rule(ctx, SCMP_ACT_NOTIFY, t->nr, 1, &cmp, err, msg) < 0)
			return -1;
	}
	return 0;
}

/* trapped[] is normalized (trap.h): a trap on every call of a syscall
 * is its only one. */
static int add_notify_rules(scmp_filter_ctx ctx, const struct sandlock_sandbox *cfg,
                            const struct sl_filter_policy *p, bool report,
                            const struct sl_trap *trapped, size_t n, int *err, char **msg)
{
	for (size_t i = 0; i < n; i++) {
		int nr = trapped[i].nr;
		/* A denied group's member may be trapped: sysvipc.c refuses it;
		 * reported refusals: refusals.c refuses every denied syscall,
		 * first in its chain. */
		if (!report && sl_filter_is_blocked(p, nr) && !in_blocked_group(p, nr))
			return sl_fail(err, msg, SANDLOCK_ERR_SYSCALL,
			               "syscall %d is blocklisted and cannot be trapped", nr);
		/* A builtin's trap on an extra-denied syscall: the deny wins (user
		 * handlers on it were refused at registration, chains.c). */
		if (!report && sl_filter_extra_denied(cfg, nr))
			continue;
		if (add_notify_rule(ctx, &trapped[i], err, msg) < 0)
			return -1;
	}
	return 0;
}

/* Export ctx's BPF through a memfd (libseccomp 2.5 only writes to an fd),
 * behind the prefix. */
static int export_prog(scmp_filter_ctx ctx, const struct sl_filter_policy *pol, bool report,
                       struct sock_fprog *out, int *err, char **msg)
{
	struct {
		struct sock_filter *f;
		size_t n;
	} pre = { calloc(SL_PREFIX_MAX, sizeof(struct sock_filter)), 0 };
	if (!pre.f)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	if (sl_filter_prefix(pol, report, pre.f, &pre.n) < 0) {
		free(pre.f);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp argument rules too long");
	}
	int fd = memfd_create("sandlock-bpf", MFD_CLOEXEC);
	if (fd < 0) {
		free(pre.f);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "memfd_create: %s", strerror(errno));
	}
	int rc = seccomp_export_bpf(ctx, fd);
	off_t len = rc < 0 ? -1 : lseek(fd, 0, SEEK_END);
	if (len <= 0 || len % sizeof(struct sock_filter) ||
	    len / sizeof(struct sock_filter) + pre.n > BPF_MAXINSNS) {
		close(fd);
		free(pre.f);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp_export_bpf failed");
	}
	size_t n = (size_t)len / sizeof(struct sock_filter);
	struct sock_filter *f = calloc(n + pre.n, sizeof(*f));
	if (!f) {
		close(fd);
		free(pre.f);
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	memcpy(f, pre.f, pre.n * sizeof(*f));
	ssize_t got = pread(fd, f + pre.n, (size_t)len, 0);
	close(fd);
	free(pre.f);
	if (got != len) {
		free(f);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "reading exported BPF failed");
	}
	out->filter = f;
	out->len = (unsigned short)(n + pre.n);
	return 0;
}

int sl_filter_build(const struct sandlock_sandbox *cfg, const struct sl_trap *trapped,
                    size_t ntrapped, bool supervised, struct sock_fprog *out, int *err,
                    char **msg)
{
	static const struct sl_filter_policy k_default;
	const struct sl_filter_policy *pol = cfg ? &cfg->filter : &k_default;
	bool report = supervised && pol->report_refusals;
	out->filter = NULL;
	out->len = 0;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp_init failed");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	/* A binary tree over syscall numbers instead of a linear scan: the
	 * syscalls with argument rules (openat, sendto, ...) cannot use the
	 * kernel's verdict cache and run the whole program every time. */
	if (rc == 0 && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2) < 0)
		sl_warn("libseccomp cannot build a binary-tree filter; using a linear one");
	if (rc < 0)
		rc = sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp_attr_set: %s", strerror(-rc));
	if (rc == 0)
		rc = add_notify_rules(ctx, cfg, pol, report, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = add_blocklist(ctx, pol, report, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = add_extra_deny(ctx, cfg, pol, report, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = export_prog(ctx, pol, report, out, err, msg);
	seccomp_release(ctx);
	return rc;
}

void sl_filter_free(struct sock_fprog *prog)
{
	if (!prog)
		return;
	free(prog->filter);
	prog->filter = NULL;
	prog->len = 0;
}
