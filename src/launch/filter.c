/*
 * filter.c — the seccomp-bpf program, in two parts:
 *
 *  1. A hand-built prefix: kill foreign entry points (i386 via int 0x80,
 *     x32), then the *argument rules* (socket families and protocols,
 *     MSG_FASTOPEN, setuid creation modes, namespace clone flags, ...).
 *  2. libseccomp's program: the blocklist (ERRNO) and
 *     SECCOMP_RET_USER_NOTIF for trapped syscalls.
 *
 * WHY the argument rules are not libseccomp rules: libseccomp compares
 * 64-bit values and allows one comparison per argument in a rule, while
 * the kernel reads most of these arguments as 32-bit ints (so high bits
 * are garbage the kernel ignores) and the rules need "none of these
 * values" (protocol neither 0 nor IPPROTO_TCP).  Also an unconditional
 * NOTIFY would override a conditional libseccomp ERRNO.  The prefix
 * compares exactly the low 32 bits, as the kernel does, runs before any
 * NOTIFY, and is generated from the same table (k_arg_rules plus the
 * policy-dependent datagram rules) that sl_filter_arg_check interprets
 * in C, so the two cannot drift apart.
 *
 * Built in the parent, exported to memory, installed by the child with a
 * raw seccomp() call.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "launch/filter.h"
#include "syscalls.h"

#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif

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

/* Every namespace-creating clone/unshare flag (all in the low 32 bits). */
#define SL_NS_MASK                                                                          \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |         \
	 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

static int nr_of(const char *name)
{
	return seccomp_syscall_resolve_name(name);
}

/* ================= argument rules ================= */

/*
 * One comparison on the low 32 bits of an argument (x86_64 is little
 * endian: the low word comes first).  A rule denies with err when all its
 * comparisons hold; a syscall's rules are tried in order.
 */
enum { C_EQ, C_NE, C_ANY /* v & k != 0 */, C_MASK_EQ, C_MASK_NE /* (v & k) ==/!= m */ };
struct arg_cmp {
	uint8_t arg, op;
	uint32_t k, m;
};
#define SL_RULE_CMPS 5
struct arg_rule {
	int nr;
	int err;
	uint8_t n;
	struct arg_cmp c[SL_RULE_CMPS];
};

#define A_EQ(i, x) { (i), C_EQ, (uint32_t)(x), 0 }
#define A_NE(i, x) { (i), C_NE, (uint32_t)(x), 0 }
#define A_ANY(i, x) { (i), C_ANY, (uint32_t)(x), 0 }
#define A_TYPE_EQ(i, t) { (i), C_MASK_EQ, 0xf, (t) } /* socket type without flags */
#define A_TYPE_NE(i, t) { (i), C_MASK_NE, 0xf, (t) }
#define RULE(nr_, err_, n_, ...) { (nr_), (err_), (n_), { __VA_ARGS__ } }

/* Modes that would make a created file run with its owner's (or group's) ids. */
#define SL_SETID (S_ISUID | S_ISGID)
#define SL_CREATES (O_CREAT | SL_KERNEL_O_TMPFILE)
#define PERSONA_QUERY 0xffffffffu

/*
 * The policy-independent rules, hottest syscalls first (the prefix tests
 * syscall numbers in this order).  Every rule says why below.
 */
static const struct arg_rule k_arg_rules[] = {
	/* setuid/setgid files: a root guest would leave setuid-root programs
	 * in -w trees.  Only O_CREAT/O_TMPFILE opens use the mode. */
	RULE(__NR_openat, EPERM, 2, A_ANY(2, SL_CREATES), A_ANY(3, SL_SETID)),
	/* A terminal's input queue and console are the user's, not the guest's. */
	RULE(__NR_ioctl, EPERM, 1, A_EQ(1, TIOCSTI)),
	RULE(__NR_ioctl, EPERM, 1, A_EQ(1, TIOCLINUX)),
	/* TCP Fast Open connects inside sendto/sendmsg, where Landlock's
	 * connect(2) port rule never runs. */
	RULE(__NR_sendto, EPERM, 1, A_ANY(3, MSG_FASTOPEN)),
	RULE(__NR_sendmsg, EPERM, 1, A_ANY(2, MSG_FASTOPEN)),
#ifdef __NR_open /* x86_64; asm-generic arches (aarch64) have only openat */
	RULE(__NR_open, EPERM, 2, A_ANY(1, SL_CREATES), A_ANY(2, SL_SETID)),
#endif
	RULE(__NR_clone, EPERM, 1, A_ANY(0, SL_NS_MASK)),
	/* Families: only unix, IPv4/IPv6 and netlink (NETLINK_ROUTE below). */
	RULE(__NR_socket, EPERM, 4, A_NE(0, AF_UNIX), A_NE(0, AF_INET), A_NE(0, AF_INET6),
	     A_NE(0, AF_NETLINK)),
	/* IPv4/IPv6: stream and datagram only (raw sockets forge packets). */
	RULE(__NR_socket, EPERM, 3, A_EQ(0, AF_INET), A_TYPE_NE(1, SOCK_STREAM),
	     A_TYPE_NE(1, SOCK_DGRAM)),
	RULE(__NR_socket, EPERM, 3, A_EQ(0, AF_INET6), A_TYPE_NE(1, SOCK_STREAM),
	     A_TYPE_NE(1, SOCK_DGRAM)),
	/* Landlock's port rules cover IPPROTO_TCP only: MPTCP, SCTP, SMC and
	 * any other stream protocol would connect and listen anywhere. */
	RULE(__NR_socket, EPERM, 4, A_EQ(0, AF_INET), A_TYPE_EQ(1, SOCK_STREAM), A_NE(2, 0),
	     A_NE(2, IPPROTO_TCP)),
	RULE(__NR_socket, EPERM, 4, A_EQ(0, AF_INET6), A_TYPE_EQ(1, SOCK_STREAM), A_NE(2, 0),
	     A_NE(2, IPPROTO_TCP)),
	RULE(__NR_socket, EPERM, 2, A_EQ(0, AF_UNIX), A_TYPE_EQ(1, SOCK_RAW)),
	RULE(__NR_socket, EPERM, 2, A_EQ(0, AF_UNIX), A_TYPE_EQ(1, SOCK_PACKET)),
	/* Netlink: NETLINK_ROUTE only (getaddrinfo reads interfaces through
	 * it; changes need CAP_NET_ADMIN, which the sandbox has dropped).
	 * NETLINK_SOCK_DIAG would list the host's sockets, NETLINK_AUDIT ... */
	RULE(__NR_socket, EPERM, 2, A_EQ(0, AF_NETLINK), A_NE(2, NETLINK_ROUTE)),
	/* TCP_FASTOPEN_CONNECT: connect(2) still runs Landlock's check, but
	 * Fast Open from the guest is denied as a whole.  (TCP_FASTOPEN on a
	 * listener is server side and stays allowed: bind rules govern it.) */
	RULE(__NR_setsockopt, EPERM, 2, A_EQ(1, IPPROTO_TCP), A_EQ(2, TCP_FASTOPEN_CONNECT)),
	/* Source routing: a routing header (IPv6: segment routing, type 2)
	 * or an IPv4 source-route option makes the kernel send to the
	 * route's first hop, not to the address the network rules checked.
	 * Sticky options by setsockopt here; as ancillary data of sendmsg
	 * in sockdest.c (every sendmsg is performed on behalf). */
	RULE(__NR_setsockopt, EPERM, 2, A_EQ(1, IPPROTO_IPV6), A_EQ(2, IPV6_RTHDR)),
	RULE(__NR_setsockopt, EPERM, 2, A_EQ(1, IPPROTO_IPV6), A_EQ(2, IPV6_2292RTHDR)),
	RULE(__NR_setsockopt, EPERM, 2, A_EQ(1, IPPROTO_IPV6), A_EQ(2, IPV6_2292PKTOPTIONS)),
	RULE(__NR_setsockopt, EPERM, 2, A_EQ(1, IPPROTO_IP), A_EQ(2, IP_OPTIONS)),
	RULE(__NR_sendmmsg, EPERM, 1, A_ANY(3, MSG_FASTOPEN)),
#ifdef __NR_creat
	RULE(__NR_creat, EPERM, 1, A_ANY(1, SL_SETID)),
#endif
#ifdef __NR_mknod
	RULE(__NR_mknod, EPERM, 1, A_ANY(1, SL_SETID)),
#endif
	RULE(__NR_mknodat, EPERM, 1, A_ANY(2, SL_SETID)),
	/* Execution domains other than Linux, and flags such as
	 * ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC, weaken the guest's own
	 * hardening; the query and PER_LINUX are what programs use. */
	RULE(__NR_personality, EPERM, 2, A_NE(0, PERSONA_QUERY), A_NE(0, PER_LINUX)),
	/* socketpair: only unix sockets (no other family needs it). */
	RULE(__NR_socketpair, EPERM, 1, A_NE(0, AF_UNIX)),
	RULE(__NR_unshare, EPERM, 1, A_ANY(0, SL_NS_MASK)),
	RULE(__NR_prctl, EPERM, 1, A_EQ(0, PR_SET_DUMPABLE)),
	/* openat2's mode lives in struct open_how, out of the filter's reach
	 * (like clone3's flags): answer ENOSYS, as a kernel before 5.6 would;
	 * glibc does not use openat2 and its callers fall back to openat. */
	RULE(__NR_openat2, ENOSYS, 0, A_EQ(0, 0)),
};
#define N_ARG_RULES (sizeof(k_arg_rules) / sizeof(k_arg_rules[0]))
#define SL_MAX_RULES (N_ARG_RULES + 2)

/*
 * UDP and ping sockets: Landlock has no rule for them, so they stay shut
 * until the network policy can check their destinations.  This is the one
 * gate to open: allow_udp lets SOCK_DGRAM protocol 0/IPPROTO_UDP through,
 * allow_icmp the ping sockets (IPPROTO_ICMP, IPPROTO_ICMPV6).
 */
static struct arg_rule dgram_rule(const struct sl_filter_policy *p, int family)
{
	struct arg_rule r = RULE(__NR_socket, EPERM, 2, A_EQ(0, family), A_TYPE_EQ(1, SOCK_DGRAM));
	if (p->allow_udp) {
		r.c[r.n++] = (struct arg_cmp)A_NE(2, 0);
		r.c[r.n++] = (struct arg_cmp)A_NE(2, IPPROTO_UDP);
	}
	if (p->allow_icmp)
		r.c[r.n++] = (struct arg_cmp)A_NE(2, family == AF_INET ? IPPROTO_ICMP : IPPROTO_ICMPV6);
	return r;
}

/* Every argument rule under policy p, into out[SL_MAX_RULES]. */
static size_t arg_rules(const struct sl_filter_policy *p, struct arg_rule *out)
{
	memcpy(out, k_arg_rules, sizeof(k_arg_rules));
	size_t n = N_ARG_RULES;
	out[n++] = dgram_rule(p, AF_INET);
	out[n++] = dgram_rule(p, AF_INET6);
	return n;
}

static bool cmp_holds(const struct arg_cmp *c, const uint64_t *args)
{
	uint32_t v = (uint32_t)args[c->arg]; /* the low word, as the prefix loads it */
	switch (c->op) {
	case C_EQ:
		return v == c->k;
	case C_NE:
		return v != c->k;
	case C_ANY:
		return (v & c->k) != 0;
	case C_MASK_EQ:
		return (v & c->k) == c->m;
	default: /* C_MASK_NE */
		return (v & c->k) != c->m;
	}
}

bool sl_filter_has_arg_rules(int nr)
{
	for (size_t i = 0; i < N_ARG_RULES; i++)
		if (k_arg_rules[i].nr == nr)
			return true;
	return false;
}

int sl_filter_arg_check(const struct sl_filter_policy *p, const sandlock_notif_t *n)
{
	struct arg_rule rules[SL_MAX_RULES];
	size_t nr = arg_rules(p, rules);
	for (size_t i = 0; i < nr; i++) {
		const struct arg_rule *r = &rules[i];
		if (r->nr != n->syscall_nr)
			continue;
		bool all = true;
		for (size_t j = 0; j < r->n && all; j++)
			all = cmp_holds(&r->c[j], n->args);
		if (all)
			return r->err;
	}
	return 0;
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
 * no rule of its own. */
static int add_blocklist(scmp_filter_ctx ctx, const struct sl_filter_policy *p,
                         const struct sl_trap *trapped, size_t ntrapped, int *err, char **msg)
{
	for (size_t i = 0; i < N_BLOCKED; i++) {
		int nr = nr_of(k_blocked[i]);
		if (nr < 0) /* not on this architecture */
			continue;
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
                          const struct sl_filter_policy *p, int *err, char **msg)
{
	for (size_t i = 0; cfg && i < cfg->n_extra_deny; i++) {
		int nr = cfg->extra_deny[i];
		if (sl_filter_is_blocked(p, nr))
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
                            const struct sl_filter_policy *p, const struct sl_trap *trapped,
                            size_t n, int *err, char **msg)
{
	for (size_t i = 0; i < n; i++) {
		int nr = trapped[i].nr;
		/* A denied group's member may be trapped: sysvipc.c refuses it. */
		if (sl_filter_is_blocked(p, nr) && !in_blocked_group(p, nr))
			return sl_fail(err, msg, SANDLOCK_ERR_SYSCALL,
			               "syscall %d is blocklisted and cannot be trapped", nr);
		/* A builtin's trap on an extra-denied syscall: the deny wins (user
		 * handlers on it were refused at registration, chains.c). */
		if (sl_filter_extra_denied(cfg, nr))
			continue;
		if (add_notify_rule(ctx, &trapped[i], err, msg) < 0)
			return -1;
	}
	return 0;
}

/* ================= the hand-built prefix ================= */

#define SL_PREFIX_MAX 1024 /* instructions; far above what the rules need */

struct prog {
	struct sock_filter *f;
	size_t n;
};

static void emit(struct prog *p, struct sock_filter ins)
{
	if (p->n < SL_PREFIX_MAX)
		p->f[p->n] = ins;
	p->n++; /* counted past the cap so the caller sees the overflow */
}

#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))

static size_t cmp_len(const struct arg_cmp *c)
{
	return (c->op == C_MASK_EQ || c->op == C_MASK_NE) ? 3 : 2;
}

static size_t rule_len(const struct arg_rule *r)
{
	size_t n = 1; /* the RET */
	for (size_t j = 0; j < r->n; j++)
		n += cmp_len(&r->c[j]);
	return n;
}

/* One comparison; on failure jump to the instruction at index fail. */
static void emit_cmp(struct prog *p, const struct arg_cmp *c, size_t fail)
{
	emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(c->arg)));
	if (c->op == C_MASK_EQ || c->op == C_MASK_NE)
		emit(p, (struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, c->k));
	uint8_t off = (uint8_t)(fail - (p->n + 1)); /* rule_len() keeps it < 256 */
	switch (c->op) {
	case C_EQ:
		emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c->k, 0, off));
		break;
	case C_NE:
		emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c->k, off, 0));
		break;
	case C_ANY:
		emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, c->k, 0, off));
		break;
	case C_MASK_EQ:
		emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c->m, 0, off));
		break;
	default: /* C_MASK_NE */
		emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, c->m, off, 0));
		break;
	}
}

/* True if an earlier rule already has r's syscall (its group is emitted). */
static bool seen_before(const struct arg_rule *rules, size_t i)
{
	for (size_t k = 0; k < i; k++)
		if (rules[k].nr == rules[i].nr)
			return true;
	return false;
}

/*
 * One group per syscall (A holds the syscall number on entry):
 *     JEQ nr ? next : skip      JA over the body
 *     rule; rule; ...           each jumps to the next rule when it fails
 *     JA end                    no rule matched: on to libseccomp
 * The final JA is patched once the end is known (*ja = its index).
 */
static void emit_group(struct prog *p, const struct arg_rule *rules, size_t nrules, int nr,
                       size_t *ja)
{
	size_t body = 1;
	for (size_t i = 0; i < nrules; i++)
		if (rules[i].nr == nr)
			body += rule_len(&rules[i]);
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)nr, 1, 0));
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, (uint32_t)body, 0, 0));
	for (size_t i = 0; i < nrules; i++) {
		const struct arg_rule *r = &rules[i];
		if (r->nr != nr)
			continue;
		size_t next = p->n + rule_len(r);
		for (size_t j = 0; j < r->n; j++)
			emit_cmp(p, &r->c[j], next);
		emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
		                                     SECCOMP_RET_ERRNO | ((uint32_t)r->err & SECCOMP_RET_DATA)));
	}
	*ja = p->n;
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0));
}

/*
 * The prefix: anything that is not the native ABI as libseccomp reports it
 * (on x86_64: i386 int 0x80 and x32 numbers too) is killed outright
 * (libseccomp also does this; the prefix makes it independent of its
 * version), then the argument rules.  Falls
 * through to libseccomp's program, which reloads what it needs.
 */
static int build_prefix(const struct sl_filter_policy *pol, struct prog *p)
{
	struct arg_rule rules[SL_MAX_RULES];
	size_t nrules = arg_rules(pol, rules);
	size_t ja[SL_MAX_RULES];
	size_t ngroups = 0;
	p->n = 0;
	emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	uint32_t native = seccomp_arch_native();
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, native, 1, 0));
	emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	if (native == SCMP_ARCH_X86_64) {
		emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
		emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 1));
		emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	}
	for (size_t i = 0; i < nrules; i++)
		if (!seen_before(rules, i))
			emit_group(p, rules, nrules, rules[i].nr, &ja[ngroups++]);
	if (p->n > SL_PREFIX_MAX)
		return -1;
	for (size_t g = 0; g < ngroups; g++)
		p->f[ja[g]].k = (uint32_t)(p->n - (ja[g] + 1));
	return 0;
}

/* Export ctx's BPF through a memfd (libseccomp 2.5 only writes to an fd),
 * behind the prefix. */
static int export_prog(scmp_filter_ctx ctx, const struct sl_filter_policy *pol,
                       struct sock_fprog *out, int *err, char **msg)
{
	struct prog pre = { calloc(SL_PREFIX_MAX, sizeof(struct sock_filter)), 0 };
	if (!pre.f)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	if (build_prefix(pol, &pre) < 0) {
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
                    size_t ntrapped, struct sock_fprog *out, int *err, char **msg)
{
	static const struct sl_filter_policy k_default;
	const struct sl_filter_policy *pol = cfg ? &cfg->filter : &k_default;
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
		rc = add_notify_rules(ctx, cfg, pol, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = add_blocklist(ctx, pol, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = add_extra_deny(ctx, cfg, pol, err, msg);
	if (rc == 0)
		rc = export_prog(ctx, pol, out, err, msg);
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
