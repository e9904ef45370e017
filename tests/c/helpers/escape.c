/*
 * escape.c — hostile probes run inside the sandbox by the C tests.
 *   escape <probe> [args]
 * Prints "ok" (the probe succeeded, i.e. escaped) and exits 0, or
 * "errno=NAME" and exits 1.  Probes that should be killed by the filter
 * print "ok" only if they survive.  Each probe also works outside the
 * sandbox so tests can check that it *would* succeed there.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* ASan builds: LeakSanitizer aborts in a traced process (the ptrace probe). */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

static int report(long rc)
{
	if (rc >= 0) {
		puts("ok");
		return 0;
	}
	const char *n = strerrorname_np(errno);
	printf("errno=%s\n", n ? n : "?");
	return 1;
}

static int p_read(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = open(argv[2], O_RDONLY);
	if (fd < 0)
		return report(-1);
	char c;
	long rc = read(fd, &c, 1); /* a directory gives EISDIR: open already proved access */
	if (rc < 0 && errno == EISDIR)
		rc = 0;
	return report(rc);
}

static int p_write(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return report(-1);
	return report(write(fd, "x", 1));
}

/* Fork-like syscalls: the child exits at once, the parent reaps it. */
static int reap(long pid)
{
	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid((pid_t)pid, NULL, __WALL);
	return report(pid);
}

static int p_clone_newuser(void)
{
	return reap(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
}

static int p_clone3(void)
{
	struct clone_args ca;
	memset(&ca, 0, sizeof ca);
	ca.exit_signal = SIGCHLD;
	return reap(syscall(__NR_clone3, &ca, sizeof ca));
}

/* TIOCSTI on a fresh pty master; hi adds bits the kernel ignores. */
static int p_tiocsti(int hi)
{
	int fd = open("/dev/ptmx", O_RDWR | O_NOCTTY);
	if (fd < 0) {
		printf("setup-");
		return report(-1);
	}
	unsigned long cmd = TIOCSTI | (hi ? (1UL << 32) : 0);
	char c = 'x';
	return report(ioctl(fd, cmd, &c));
}

static int p_tcp(int argc, char **argv, int bind_it)
{
	if (argc < 3)
		return 2;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0)
		return report(-1);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2])) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind_it)
		return report(bind(s, (struct sockaddr *)&a, sizeof a));
	return report(connect(s, (struct sockaddr *)&a, sizeof a));
}

static int p_abstract(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	if (s < 0)
		return report(-1);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	size_t n = strlen(argv[2]);
	if (n + 1 > sizeof a.sun_path)
		return 2;
	memcpy(a.sun_path + 1, argv[2], n); /* leading NUL: abstract namespace */
	return report(connect(s, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n)));
}

static int p_procmem(void)
{
	static volatile char target = 'a';
	int fd = open("/proc/self/mem", O_RDWR);
	if (fd < 0)
		return report(-1);
	char c = 'b';
	return report(pwrite(fd, &c, 1, (off_t)(uintptr_t)&target));
}

static int p_vm_writev(void)
{
	char src = 'b', dst = 'a';
	struct iovec l = { &src, 1 }, r = { &dst, 1 };
	return report(process_vm_writev(getpid(), &l, 1, &r, 1, 0));
}

/* i386 getpid through the int 0x80 gate (must be killed by the filter). */
static int p_int80(void)
{
	long ret = 20; /* __NR_getpid on i386 */
	__asm__ volatile("int $0x80" : "+a"(ret) : : "memory");
	return report(ret < 0 ? (errno = (int)-ret, -1) : 0);
}

static int p_x32(void)
{
	return report(syscall(0x40000000 | 39)); /* x32 getpid */
}

static int p_perf(void)
{
	char attr[128]; /* zeroed perf_event_attr with size 0: the kernel accepts the default */
	memset(attr, 0, sizeof attr);
	long fd = syscall(__NR_perf_event_open, attr, 0, -1, -1, 0);
	return report(fd);
}

static int p_bpf(void)
{
	char attr[128];
	memset(attr, 0, sizeof attr);
	/* BPF_MAP_CREATE with an all-zero attr: EINVAL outside, EPERM when blocked */
	long rc = syscall(__NR_bpf, 0, attr, sizeof attr);
	if (rc < 0 && errno == EINVAL) /* reached the bpf subsystem */
		rc = 0;
	return report(rc);
}

static int p_mount(void)
{
	/* Harmless: the target does not exist, so the VFS answers ENOENT. */
	long rc = mount("none", "/nonexistent-sandlock-target", "tmpfs", 0, NULL);
	if (rc < 0 && errno == ENOENT)
		rc = 0;
	return report(rc);
}

static int dispatch(int argc, char **argv)
{
	const char *p = argv[1];
	if (!strcmp(p, "read"))
		return p_read(argc, argv);
	if (!strcmp(p, "write"))
		return p_write(argc, argv);
	if (!strcmp(p, "ptrace"))
		return report(ptrace(PTRACE_TRACEME, 0, 0, 0));
	if (!strcmp(p, "io_uring")) {
		char params[120];
		memset(params, 0, sizeof params);
		return report(syscall(__NR_io_uring_setup, 1, params));
	}
	if (!strcmp(p, "x32"))
		return p_x32();
	if (!strcmp(p, "int80"))
		return p_int80();
	if (!strcmp(p, "clone_newuser"))
		return p_clone_newuser();
	if (!strcmp(p, "clone3"))
		return p_clone3();
	if (!strcmp(p, "unshare_newuser"))
		return report(unshare(CLONE_NEWUSER));
	if (!strcmp(p, "tiocsti"))
		return p_tiocsti(0);
	if (!strcmp(p, "tiocsti_hi"))
		return p_tiocsti(1);
	if (!strcmp(p, "raw_socket"))
		return report(socket(AF_INET, SOCK_RAW, IPPROTO_ICMP));
	if (!strcmp(p, "packet_socket"))
		return report(socket(AF_PACKET, SOCK_DGRAM, 0));
	if (!strcmp(p, "vm_writev"))
		return p_vm_writev();
	if (!strcmp(p, "dumpable"))
		return report(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
	if (!strcmp(p, "bpf"))
		return p_bpf();
	if (!strcmp(p, "mount"))
		return p_mount();
	if (!strcmp(p, "keyctl"))
		return report(syscall(__NR_keyctl, 0 /* GET_KEYRING_ID */, -3 /* SESSION */, 0));
	if (!strcmp(p, "userfaultfd"))
		return report(syscall(__NR_userfaultfd, O_CLOEXEC));
	if (!strcmp(p, "perf"))
		return p_perf();
	if (!strcmp(p, "connect"))
		return p_tcp(argc, argv, 0);
	if (!strcmp(p, "bind"))
		return p_tcp(argc, argv, 1);
	if (!strcmp(p, "abstract"))
		return p_abstract(argc, argv);
	if (!strcmp(p, "kill") && argc >= 3)
		return report(kill((pid_t)atoi(argv[2]), 0));
	if (!strcmp(p, "procmem"))
		return p_procmem();
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: escape <probe> [args]\n");
		return 2;
	}
	int rc = dispatch(argc, argv);
	if (rc == 2)
		fprintf(stderr, "escape: unknown probe or missing argument\n");
	fflush(stdout);
	return rc;
}
