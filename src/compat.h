/*
 * compat.h — the one place where kernel constants newer than the
 * installed (Debian) kernel headers are defined.  Every definition is
 * guarded by #ifndef so a newer header set simply wins.  Values are
 * kernel ABI facts (include/uapi/linux/landlock.h, seccomp.h).
 */
#ifndef SANDLOCK_COMPAT_H
#define SANDLOCK_COMPAT_H

#include <stdint.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

/* ---- syscall numbers: every one here is >= 424, where Linux gives a new
 * syscall the same number on all architectures (alpha aside), so these
 * fallbacks hold for x86_64 and aarch64 alike ---- */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif
#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif
#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_clone3
#define __NR_clone3 435
#endif
/* clone3's CLONE_INTO_CGROUP (Linux 5.7) and its argument struct up to
 * the cgroup field (CLONE_ARGS_SIZE_VER2), spelled out: older headers
 * lack the field. */
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
struct sl_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
	    set_tid, set_tid_size, cgroup;
};
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_setxattrat
#define __NR_setxattrat 463
#endif
#ifndef __NR_getxattrat
#define __NR_getxattrat 464
#endif
#ifndef __NR_listxattrat
#define __NR_listxattrat 465
#endif
#ifndef __NR_removexattrat
#define __NR_removexattrat 466
#endif
#ifndef __NR_file_getattr
#define __NR_file_getattr 468
#endif
#ifndef __NR_file_setattr
#define __NR_file_setattr 469
#endif

/* ---- Landlock ---- */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)       /* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)    /* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)   /* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1) /* ABI 4 */
#endif
#ifndef LANDLOCK_RULE_PATH_BENEATH
#define LANDLOCK_RULE_PATH_BENEATH 1
#endif
#ifndef LANDLOCK_RULE_NET_PORT
#define LANDLOCK_RULE_NET_PORT 2
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)               /* ABI 6 */
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0) /* ABI 7 */
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)   /* ABI 7 */
#endif
/* Landlock's audit records (ABI 7), read from the audit multicast group. */
#ifndef AUDIT_LANDLOCK_ACCESS
#define AUDIT_LANDLOCK_ACCESS 1423
#endif
#ifndef AUDIT_LANDLOCK_DOMAIN
#define AUDIT_LANDLOCK_DOMAIN 1424
#endif

/*
 * The installed header's struct landlock_ruleset_attr predates the
 * handled_access_net (ABI 4) and scoped (ABI 6) fields, so we use our own
 * layout-identical copies.  The kernel accepts a shorter struct from older
 * callers, so passing sizeof() of the full struct is right for ABI >= 6 and
 * we pass a truncated size for older ABIs.
 */
struct sl_ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};
struct sl_ll_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));
struct sl_ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
};

/* ---- seccomp ---- */
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SETFD
#define SECCOMP_ADDFD_FLAG_SETFD (1UL << 0)
#endif
#ifndef SECCOMP_ADDFD_FLAG_SEND
#define SECCOMP_ADDFD_FLAG_SEND (1UL << 1)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, uint64_t)
#endif
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif

/* ---- misc ---- */
#ifndef PIDFD_THREAD
#define PIDFD_THREAD 0x80 /* O_EXCL: pidfd_open on a non-leader thread (6.9) */
#endif
#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* ---- containment rules (filter.c) ---- */
/* The kernel's own __O_TMPFILE bit; glibc's __O_TMPFILE also carries O_DIRECTORY. */
#define SL_KERNEL_O_TMPFILE 020000000
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef NETLINK_ROUTE
#define NETLINK_ROUTE 0
#endif

/* The kernel's internal "restart the call, or EINTR by SA_RESTART" errno
 * (include/linux/errno.h, not exported): an answer to a trapped call that
 * a signal interrupts, only when that signal is sure to be taken on the
 * way out (connwait.c), else the program would see errno 512. */
#define SL_ERESTARTSYS 512

/* The kernel's TCP states past TCP_CLOSING (include/net/tcp_states.h,
 * not exported but in sock_diag's idiag_states mask): a connection
 * request, and (Linux >= 6.8) a socket bound but neither listening nor
 * connected, which a dump lists only when this bit is asked for. */
#define SL_TCP_NEW_SYN_RECV 12
#define SL_TCP_BOUND_INACTIVE 13

/* The shortest IPv6 address a bind takes (include/uapi/linux/in6.h, whose
 * header clashes with <netinet/in.h>): RFC 2133's sockaddr_in6, without
 * sin6_scope_id. */
#define SL_SIN6_LEN_RFC2133 24

/* renameat2(2) flags (glibc's <stdio.h> defines them only since 2.28 and
 * only with _GNU_SOURCE): the COW layer's rename and commit. */
#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif

/* sched_setattr(2)'s argument, first version (SCHED_ATTR_SIZE_VER0, 48
 * bytes): <linux/sched/types.h> cannot be included next to glibc's
 * <sched.h> (both define struct sched_param).  The supervisor thread's
 * EEVDF slice (supervisor.c). */
struct sl_sched_attr {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

#endif /* SANDLOCK_COMPAT_H */
