/*
 * argrules.c — the filter's argument rules (argrules.h): one table, read
 * twice.  filter.c puts the BPF compiled from it (sl_filter_prefix) in
 * front of libseccomp's program; builtins/args.c asks it again about a
 * trapped call (sl_filter_arg_check); --trace names the rule a refused
 * call broke (sl_filter_arg_rule).
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
 * in C, so the two cannot drift apart.  Split from filter.c (which keeps
 * the blocklist and the libseccomp program) to keep each under 700 lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "launch/argrules.h"
#include "syscalls.h"

#ifndef SOCK_PACKET
#define SOCK_PACKET 10
#endif

/* Every namespace-creating clone/unshare flag (all in the low 32 bits). */
#define SL_NS_MASK                                                                          \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |         \
	 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

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
	const char *why; /* what it refuses, for --trace */
	uint8_t n;
	struct arg_cmp c[SL_RULE_CMPS];
	bool gate; /* a network rule opens it (the UDP/ping gate) */
};

#define A_EQ(i, x) { (i), C_EQ, (uint32_t)(x), 0 }
#define A_NE(i, x) { (i), C_NE, (uint32_t)(x), 0 }
#define A_ANY(i, x) { (i), C_ANY, (uint32_t)(x), 0 }
#define A_TYPE_EQ(i, t) { (i), C_MASK_EQ, 0xf, (t) } /* socket type without flags */
#define A_TYPE_NE(i, t) { (i), C_MASK_NE, 0xf, (t) }
#define RULE(nr_, err_, why_, n_, ...) \
	{ .nr = (nr_), .err = (err_), .why = (why_), .n = (n_), .c = { __VA_ARGS__ } }

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
	RULE(__NR_openat, EPERM, "a set-user/group-ID mode on a file it creates",
	     2, A_ANY(2, SL_CREATES), A_ANY(3, SL_SETID)),
	/* A terminal's input queue and console are the user's, not the guest's. */
	RULE(__NR_ioctl, EPERM, "TIOCSTI (typing into the terminal)", 1, A_EQ(1, TIOCSTI)),
	RULE(__NR_ioctl, EPERM, "TIOCLINUX (the console)", 1, A_EQ(1, TIOCLINUX)),
	/* TCP Fast Open connects inside sendto/sendmsg, where Landlock's
	 * connect(2) port rule never runs. */
	RULE(__NR_sendto, EPERM, "TCP Fast Open (MSG_FASTOPEN)",
	     1, A_ANY(3, MSG_FASTOPEN)),
	RULE(__NR_sendmsg, EPERM, "TCP Fast Open (MSG_FASTOPEN)",
	     1, A_ANY(2, MSG_FASTOPEN)),
#ifdef __NR_open /* x86_64; asm-generic arches (aarch64) have only openat */
	RULE(__NR_open, EPERM, "a set-user/group-ID mode on a file it creates",
	     2, A_ANY(1, SL_CREATES), A_ANY(2, SL_SETID)),
#endif
	RULE(__NR_clone, EPERM, "new namespaces (CLONE_NEW* flags)",
	     1, A_ANY(0, SL_NS_MASK)),
	/* Families: only unix, IPv4/IPv6 and netlink (NETLINK_ROUTE below). */
	RULE(__NR_socket, EPERM, "a socket family other than unix, IPv4, IPv6 and netlink",
	     4, A_NE(0, AF_UNIX), A_NE(0, AF_INET), A_NE(0, AF_INET6),
	     A_NE(0, AF_NETLINK)),
	/* IPv4/IPv6: stream and datagram only (raw sockets forge packets). */
	RULE(__NR_socket, EPERM, "IPv4 sockets other than stream and datagram (raw)",
	     3, A_EQ(0, AF_INET), A_TYPE_NE(1, SOCK_STREAM),
	     A_TYPE_NE(1, SOCK_DGRAM)),
	RULE(__NR_socket, EPERM, "IPv6 sockets other than stream and datagram (raw)",
	     3, A_EQ(0, AF_INET6), A_TYPE_NE(1, SOCK_STREAM),
	     A_TYPE_NE(1, SOCK_DGRAM)),
	/* Landlock's port rules cover IPPROTO_TCP only: MPTCP, SCTP, SMC and
	 * any other stream protocol would connect and listen anywhere. */
	RULE(__NR_socket, EPERM, "a stream protocol other than TCP (MPTCP, SCTP, ...)",
	     4, A_EQ(0, AF_INET), A_TYPE_EQ(1, SOCK_STREAM), A_NE(2, 0),
	     A_NE(2, IPPROTO_TCP)),
	RULE(__NR_socket, EPERM, "a stream protocol other than TCP (MPTCP, SCTP, ...)",
	     4, A_EQ(0, AF_INET6), A_TYPE_EQ(1, SOCK_STREAM), A_NE(2, 0),
	     A_NE(2, IPPROTO_TCP)),
	RULE(__NR_socket, EPERM, "raw unix sockets",
	     2, A_EQ(0, AF_UNIX), A_TYPE_EQ(1, SOCK_RAW)),
	RULE(__NR_socket, EPERM, "packet unix sockets",
	     2, A_EQ(0, AF_UNIX), A_TYPE_EQ(1, SOCK_PACKET)),
	/* Netlink: NETLINK_ROUTE only (getaddrinfo reads interfaces through
	 * it; changes need CAP_NET_ADMIN, which the sandbox has dropped).
	 * NETLINK_SOCK_DIAG would list the host's sockets, NETLINK_AUDIT ... */
	RULE(__NR_socket, EPERM, "a netlink protocol other than NETLINK_ROUTE",
	     2, A_EQ(0, AF_NETLINK), A_NE(2, NETLINK_ROUTE)),
	/* TCP_FASTOPEN_CONNECT: connect(2) still runs Landlock's check, but
	 * Fast Open from the guest is denied as a whole.  (TCP_FASTOPEN on a
	 * listener is server side and stays allowed: bind rules govern it.) */
	RULE(__NR_setsockopt, EPERM, "TCP Fast Open (TCP_FASTOPEN_CONNECT)",
	     2, A_EQ(1, IPPROTO_TCP), A_EQ(2, TCP_FASTOPEN_CONNECT)),
	/* Source routing: a routing header (IPv6: segment routing, type 2)
	 * or an IPv4 source-route option makes the kernel send to the
	 * route's first hop, not to the address the network rules checked.
	 * Sticky options by setsockopt here; as ancillary data of sendmsg
	 * in sockdest.c (every sendmsg is performed on behalf). */
	RULE(__NR_setsockopt, EPERM, "source routing (an IPv6 routing header)",
	     2, A_EQ(1, IPPROTO_IPV6), A_EQ(2, IPV6_RTHDR)),
	RULE(__NR_setsockopt, EPERM, "source routing (an IPv6 routing header)",
	     2, A_EQ(1, IPPROTO_IPV6), A_EQ(2, IPV6_2292RTHDR)),
	RULE(__NR_setsockopt, EPERM, "source routing (IPv6 packet options)",
	     2, A_EQ(1, IPPROTO_IPV6), A_EQ(2, IPV6_2292PKTOPTIONS)),
	RULE(__NR_setsockopt, EPERM, "source routing (IPv4 IP_OPTIONS)",
	     2, A_EQ(1, IPPROTO_IP), A_EQ(2, IP_OPTIONS)),
	RULE(__NR_sendmmsg, EPERM, "TCP Fast Open (MSG_FASTOPEN)",
	     1, A_ANY(3, MSG_FASTOPEN)),
#ifdef __NR_creat
	RULE(__NR_creat, EPERM, "a set-user/group-ID mode on a file it creates",
	     1, A_ANY(1, SL_SETID)),
#endif
#ifdef __NR_mknod
	RULE(__NR_mknod, EPERM, "a set-user/group-ID mode on a file it creates",
	     1, A_ANY(1, SL_SETID)),
#endif
	RULE(__NR_mknodat, EPERM, "a set-user/group-ID mode on a file it creates",
	     1, A_ANY(2, SL_SETID)),
	/* Execution domains other than Linux, and flags such as
	 * ADDR_NO_RANDOMIZE or READ_IMPLIES_EXEC, weaken the guest's own
	 * hardening; the query and PER_LINUX are what programs use. */
	RULE(__NR_personality, EPERM,
	     "an execution domain or personality flag other than PER_LINUX (ADDR_NO_RANDOMIZE, ...)",
	     2, A_NE(0, PERSONA_QUERY), A_NE(0, PER_LINUX)),
	/* socketpair: only unix sockets (no other family needs it). */
	RULE(__NR_socketpair, EPERM, "socketpair of a family other than unix",
	     1, A_NE(0, AF_UNIX)),
	RULE(__NR_unshare, EPERM, "new namespaces (CLONE_NEW* flags)",
	     1, A_ANY(0, SL_NS_MASK)),
	RULE(__NR_prctl, EPERM, "PR_SET_DUMPABLE", 1, A_EQ(0, PR_SET_DUMPABLE)),
	/* openat2's mode lives in struct open_how, out of the filter's reach
	 * (like clone3's flags): answer ENOSYS, as a kernel before 5.6 would;
	 * glibc does not use openat2 and its callers fall back to openat. */
	RULE(__NR_openat2, ENOSYS, "openat2 (answered ENOSYS: callers fall back to openat)",
	     0, A_EQ(0, 0)),
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
	struct arg_rule r = RULE(__NR_socket, EPERM, "UDP and ping sockets", 2, A_EQ(0, family),
	                         A_TYPE_EQ(1, SOCK_DGRAM));
	r.gate = true;
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

/* The first rule of p's that n breaks, copied to *out; false if none. */
static bool broken_rule(const struct sl_filter_policy *p, const sandlock_notif_t *n,
                        struct arg_rule *out)
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
		if (all) {
			*out = *r;
			return true;
		}
	}
	return false;
}

int sl_filter_arg_check(const struct sl_filter_policy *p, const sandlock_notif_t *n)
{
	struct arg_rule r;
	return broken_rule(p, n, &r) ? r.err : 0;
}

const char *sl_filter_arg_rule(const struct sl_filter_policy *p, const sandlock_notif_t *n,
                               bool *gate)
{
	static const struct sl_filter_policy k_closed; /* every gate shut */
	struct arg_rule r;
	if (!broken_rule(p ? p : &k_closed, n, &r))
		return NULL;
	*gate = r.gate;
	return r.why;
}

/* ================= the hand-built prefix ================= */

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
                       bool notify, size_t *ja)
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
		/* Reported refusals go to the supervisor, where builtins/args.c
		 * answers the same errno from the same table. */
		uint32_t ret = notify && r->err == EPERM
			               ? SECCOMP_RET_USER_NOTIF
			               : SECCOMP_RET_ERRNO | ((uint32_t)r->err & SECCOMP_RET_DATA);
		emit(p, (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ret));
	}
	*ja = p->n;
	emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JA, 0, 0, 0));
}

int sl_filter_prefix(const struct sl_filter_policy *pol, bool notify, struct sock_filter *out,
                     size_t *n)
{
	struct arg_rule rules[SL_MAX_RULES];
	size_t nrules = arg_rules(pol, rules);
	size_t ja[SL_MAX_RULES];
	size_t ngroups = 0;
	struct prog pr = { out, 0 }, *p = &pr;
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
			emit_group(p, rules, nrules, rules[i].nr, notify, &ja[ngroups++]);
	if (p->n > SL_PREFIX_MAX)
		return -1;
	for (size_t g = 0; g < ngroups; g++)
		p->f[ja[g]].k = (uint32_t)(p->n - (ja[g] + 1));
	*n = p->n;
	return 0;
}
