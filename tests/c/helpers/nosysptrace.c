/*
 * nosysptrace.c — run a program the way Docker's and Kubernetes' default
 * seccomp profiles run a container without CAP_SYS_PTRACE: ptrace,
 * process_vm_readv, process_vm_writev, pidfd_getfd and kcmp answer EPERM
 * (personality is left alone: sandlock's own tests use it).
 *   nosysptrace PROGRAM [ARGS...]
 * The filter is inherited by everything the program starts, sandboxes
 * included, exactly as inside such a container.  Used by
 * tests/python/test_containers.py to test, without a container runtime,
 * that sandlock needs none of these calls.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef __NR_pidfd_getfd
#define __NR_pidfd_getfd 438
#endif

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#else
#error "nosysptrace: unsupported architecture"
#endif

#define DENY(nr)                                              \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1),          \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: nosysptrace PROGRAM [ARGS...]\n");
		return 2;
	}
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		DENY(__NR_ptrace),
		DENY(__NR_process_vm_readv),
		DENY(__NR_process_vm_writev),
		DENY(__NR_pidfd_getfd),
		DENY(__NR_kcmp),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof f / sizeof f[0], f };
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		perror("nosysptrace: seccomp");
		return 2;
	}
	execvp(argv[1], argv + 1);
	perror("nosysptrace: exec");
	return 127;
}
