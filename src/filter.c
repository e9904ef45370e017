/*
 * filter.c — the seccomp-bpf program: a blocklist (ERRNO), argument rules
 * for the few syscalls that need them, kills for foreign entry points
 * (i386 via int 0x80, x32), and SECCOMP_RET_USER_NOTIF for trapped
 * syscalls.  Built with libseccomp in the parent, exported to memory, and
 * installed by the child with a raw seccomp() call.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/sched.h>
#include <sched.h>
#include <seccomp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "filter.h"

#ifndef AF_PACKET
#define AF_PACKET 17
#endif
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
 * Metadata syscalls newer than the metadata guard (builtin_meta.c): their
 * arguments live in structs the guard does not decode.  Answered ENOSYS by
 * number (libseccomp 2.5 does not know their names), as on an older
 * kernel: glibc does not use them and callers fall back to setxattr,
 * removexattr or the FS_IOC_FSSETXATTR ioctl.
 */
static const int k_enosys_nrs[] = { __NR_setxattrat, __NR_removexattrat, __NR_file_setattr };
#define N_ENOSYS (sizeof(k_enosys_nrs) / sizeof(k_enosys_nrs[0]))

/* Every namespace-creating clone/unshare flag. */
static const uint64_t k_ns_flags[] = {
	CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID,   CLONE_NEWNET, CLONE_NEWTIME,
};
#define N_NS_FLAGS (sizeof(k_ns_flags) / sizeof(k_ns_flags[0]))
#define SL_NS_MASK                                                                          \
	(CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |         \
	 CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWTIME)

/* int arguments: the kernel only looks at the low 32 bits. */
#define LOW32 0xffffffffULL

static int nr_of(const char *name)
{
	return seccomp_syscall_resolve_name(name);
}

bool sl_filter_is_blocked(int nr)
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
	return false;
}

bool sl_filter_has_arg_rules(int nr)
{
	return nr >= 0 && (nr == __NR_clone || nr == __NR_unshare || nr == __NR_ioctl ||
	                   nr == __NR_socket || nr == __NR_prctl);
}

/* Mirror of the socket rule: packet sockets and raw/packet socket types. */
static int socket_denied(uint64_t domain, uint64_t type)
{
	uint32_t t = (uint32_t)type & 0xf;
	return (uint32_t)domain == AF_PACKET || t == SOCK_RAW || t == SOCK_PACKET;
}

int sl_filter_arg_check(const sandlock_notif_t *n)
{
	const uint64_t *a = n->args;
	switch (n->syscall_nr) {
	case __NR_clone:
	case __NR_unshare:
		return (a[0] & SL_NS_MASK) ? EPERM : 0;
	case __NR_ioctl: {
		uint32_t cmd = (uint32_t)a[1]; /* the kernel ignores the upper half */
		return (cmd == TIOCSTI || cmd == TIOCLINUX) ? EPERM : 0;
	}
	case __NR_socket:
		return socket_denied(a[0], a[1]) ? EPERM : 0;
	case __NR_prctl:
		return (uint32_t)a[0] == PR_SET_DUMPABLE ? EPERM : 0;
	default:
		return 0;
	}
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

static int add_blocklist(scmp_filter_ctx ctx, int *err, char **msg)
{
	for (size_t i = 0; i < N_BLOCKED; i++) {
		int nr = nr_of(k_blocked[i]);
		if (nr < 0) /* not on this architecture */
			continue;
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0, NULL, err, msg) < 0)
			return -1;
	}
	for (size_t i = 0; i < N_ENOSYS; i++)
		if (add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), k_enosys_nrs[i], 0, NULL, err, msg) < 0)
			return -1;
	/* clone3 flags live in memory the filter cannot read: make libc fall back to clone. */
	return add_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), nr_of("clone3"), 0, NULL, err, msg);
}

/* One EPERM rule per namespace flag (libseccomp ORs rules of one syscall). */
static int add_ns_rules(scmp_filter_ctx ctx, int nr, int *err, char **msg)
{
	for (size_t i = 0; i < N_NS_FLAGS; i++) {
		struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, k_ns_flags[i], k_ns_flags[i]);
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &c, err, msg) < 0)
			return -1;
	}
	return 0;
}

static int add_ioctl_rules(scmp_filter_ctx ctx, int *err, char **msg)
{
	const uint64_t cmds[] = { TIOCSTI, TIOCLINUX };
	for (size_t i = 0; i < 2; i++) {
		struct scmp_arg_cmp c = SCMP_A1(SCMP_CMP_MASKED_EQ, LOW32, cmds[i]);
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), __NR_ioctl, 1, &c, err, msg) < 0)
			return -1;
	}
	return 0;
}

static int add_socket_rules(scmp_filter_ctx ctx, int *err, char **msg)
{
	struct scmp_arg_cmp c[3] = {
		SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, AF_PACKET),
		SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_RAW),
		SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_PACKET),
	};
	for (size_t i = 0; i < 3; i++)
		if (add_rule(ctx, SCMP_ACT_ERRNO(EPERM), __NR_socket, 1, &c[i], err, msg) < 0)
			return -1;
	return 0;
}

static int add_prctl_rules(scmp_filter_ctx ctx, int *err, char **msg)
{
	struct scmp_arg_cmp c = SCMP_A0(SCMP_CMP_MASKED_EQ, LOW32, PR_SET_DUMPABLE);
	return add_rule(ctx, SCMP_ACT_ERRNO(EPERM), __NR_prctl, 1, &c, err, msg);
}

static bool is_trapped(int nr, const int *trapped, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (trapped[i] == nr)
			return true;
	return false;
}

/*
 * Argument rules for syscalls that are not trapped.  A trapped one gets only
 * the unconditional NOTIFY rule; the supervisor applies sl_filter_arg_check.
 */
static int add_arg_rules(scmp_filter_ctx ctx, const int *trapped, size_t n, int *err,
                         char **msg)
{
	if (!is_trapped(__NR_clone, trapped, n) && add_ns_rules(ctx, __NR_clone, err, msg) < 0)
		return -1;
	if (!is_trapped(__NR_unshare, trapped, n) && add_ns_rules(ctx, __NR_unshare, err, msg) < 0)
		return -1;
	if (!is_trapped(__NR_ioctl, trapped, n) && add_ioctl_rules(ctx, err, msg) < 0)
		return -1;
	if (!is_trapped(__NR_socket, trapped, n) && add_socket_rules(ctx, err, msg) < 0)
		return -1;
	if (!is_trapped(__NR_prctl, trapped, n) && add_prctl_rules(ctx, err, msg) < 0)
		return -1;
	return 0;
}

static int add_notify_rules(scmp_filter_ctx ctx, const int *trapped, size_t n, int *err,
                            char **msg)
{
	for (size_t i = 0; i < n; i++) {
		if (sl_filter_is_blocked(trapped[i]))
			return sl_fail(err, msg, SANDLOCK_ERR_SYSCALL,
			               "syscall %d is blocklisted and cannot be trapped", trapped[i]);
		if (i > 0 && trapped[i] == trapped[i - 1])
			continue;
		if (add_rule(ctx, SCMP_ACT_NOTIFY, trapped[i], 0, NULL, err, msg) < 0)
			return -1;
	}
	return 0;
}

/*
 * Raw prefix run before libseccomp's program: anything that is not the
 * native x86_64 ABI (i386 int 0x80, x32 numbers) is killed outright.
 * libseccomp also does this; the prefix makes it independent of its version.
 */
static const struct sock_filter k_prefix[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 2),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
#define N_PREFIX (sizeof(k_prefix) / sizeof(k_prefix[0]))

/* Export ctx's BPF through a memfd (libseccomp 2.5 only writes to an fd). */
static int export_prog(scmp_filter_ctx ctx, struct sock_fprog *out, int *err, char **msg)
{
	int fd = memfd_create("sandlock-bpf", MFD_CLOEXEC);
	if (fd < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "memfd_create: %s", strerror(errno));
	int rc = seccomp_export_bpf(ctx, fd);
	off_t len = rc < 0 ? -1 : lseek(fd, 0, SEEK_END);
	if (len <= 0 || len % sizeof(struct sock_filter) || len / sizeof(struct sock_filter) > 4000) {
		close(fd);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp_export_bpf failed");
	}
	size_t n = (size_t)len / sizeof(struct sock_filter);
	struct sock_filter *f = calloc(n + N_PREFIX, sizeof(*f));
	if (!f) {
		close(fd);
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	memcpy(f, k_prefix, sizeof(k_prefix));
	ssize_t got = pread(fd, f + N_PREFIX, (size_t)len, 0);
	close(fd);
	if (got != len) {
		free(f);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "reading exported BPF failed");
	}
	out->filter = f;
	out->len = (unsigned short)(n + N_PREFIX);
	return 0;
}

int sl_filter_build(const struct sandlock_sandbox *cfg, const int *trapped, size_t ntrapped,
                    struct sock_fprog *out, int *err, char **msg)
{
	(void)cfg;
	out->filter = NULL;
	out->len = 0;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp_init failed");
	int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc < 0)
		rc = sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "seccomp_attr_set: %s", strerror(-rc));
	if (rc == 0)
		rc = add_notify_rules(ctx, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = add_blocklist(ctx, err, msg);
	if (rc == 0)
		rc = add_arg_rules(ctx, trapped, ntrapped, err, msg);
	if (rc == 0)
		rc = export_prog(ctx, out, err, msg);
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
