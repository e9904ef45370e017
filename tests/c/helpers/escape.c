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
#include <linux/capability.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/timex.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "probe.h"

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

/* ---------------- capabilities ---------------- */

/* "eff=HEX prm=HEX inh=HEX bnd=HEX amb=HEX": this process's capability sets. */
static int p_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return report(-1);
	unsigned long long bnd = 0, amb = 0;
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) == 1)
			bnd |= 1ULL << c;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) == 1)
			amb |= 1ULL << c;
	}
#define CAP64(f) ((unsigned long long)d[1].f << 32 | d[0].f)
	printf("eff=%llx prm=%llx inh=%llx bnd=%llx amb=%llx\n", CAP64(effective),
	       CAP64(permitted), CAP64(inheritable), bnd, amb);
#undef CAP64
	return 0;
}

/* A character device like /dev/null (1,3): needs CAP_MKNOD (and Landlock's MAKE_CHAR). */
static int p_mknod(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	return report(mknod(argv[2], S_IFCHR | 0600, makedev(1, 3)));
}

/* Read-only adjtimex: allowed to anyone. */
static int p_adjtime_read(void)
{
	struct timex tx;
	memset(&tx, 0, sizeof tx);
	return report(adjtimex(&tx));
}

/* A modifying adjtimex that changes nothing: set the tick to its current
 * value.  Needs CAP_SYS_TIME.  (Harmless even if it succeeded.) */
static int p_adjtime_set(void)
{
	struct timex tx;
	memset(&tx, 0, sizeof tx);
	if (adjtimex(&tx) < 0) {
		printf("setup-");
		return report(-1);
	}
	long tick = tx.tick;
	memset(&tx, 0, sizeof tx);
	tx.modes = ADJ_TICK;
	tx.tick = tick;
	return report(adjtimex(&tx));
}

/* ---------------- file metadata (Landlock does not cover it) ---------------- */

static int p_chmod(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	return report(chmod(argv[2], (mode_t)strtoul(argv[3], NULL, 8)));
}

/* fchmod through an O_RDONLY descriptor (only read access is needed to get one). */
static int p_fchmod_ro(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	int fd = open(argv[2], O_RDONLY);
	if (fd < 0) {
		printf("setup-");
		return report(-1);
	}
	return report(fchmod(fd, (mode_t)strtoul(argv[3], NULL, 8)));
}

/* chown path uid gid; lchown with "l" in front of the probe name. */
static int p_chown(int argc, char **argv, int nofollow)
{
	if (argc < 5)
		return 2;
	uid_t u = (uid_t)strtol(argv[3], NULL, 10);
	gid_t g = (gid_t)strtol(argv[4], NULL, 10);
	return report(nofollow ? lchown(argv[2], u, g) : chown(argv[2], u, g));
}

/* Set both timestamps of path to the given second (utimensat). */
static int p_utimes(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	struct timespec ts[2] = { { atol(argv[3]), 0 }, { atol(argv[3]), 0 } };
	return report(utimensat(AT_FDCWD, argv[2], ts, 0));
}

static int p_setxattr(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	return report(setxattr(argv[2], argv[3], argv[4], strlen(argv[4]), 0));
}

/* The path the racing thread keeps rewriting under chmod's feet. */
static char race_buf[4096];
static const char *race_paths[2];
static atomic_int race_stop;

static void *race_flipper(void *arg)
{
	(void)arg;
	for (unsigned i = 0; !atomic_load(&race_stop); i++)
		strcpy(race_buf, race_paths[i & 1]);
	return NULL;
}

/*
 * chmod_race ALLOWED DENIED N: N chmod(0777) calls on a buffer another
 * thread flips between the two paths.  A supervisor that checked the path
 * and then let the kernel re-read it would sometimes chmod DENIED.  The
 * test looks at DENIED's mode afterwards; this prints "ok".
 */
static int p_chmod_race(int argc, char **argv)
{
	if (argc < 5 || strlen(argv[2]) >= sizeof race_buf || strlen(argv[3]) >= sizeof race_buf)
		return 2;
	race_paths[0] = argv[2];
	race_paths[1] = argv[3];
	strcpy(race_buf, argv[2]);
	pthread_t t;
	if (pthread_create(&t, NULL, race_flipper, NULL) != 0)
		return 2;
	long n = atol(argv[4]);
	for (long i = 0; i < n; i++)
		(void)chmod(race_buf, 0777);
	atomic_store(&race_stop, 1);
	pthread_join(t, NULL);
	return report(0);
}

/* fchmodat2(AT_FDCWD, path, mode, AT_SYMLINK_NOFOLLOW) by number (glibc 2.36 has no wrapper). */
static int p_fchmodat2_nofollow(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	return report(syscall(452, AT_FDCWD, argv[2], (mode_t)strtoul(argv[3], NULL, 8),
	                      AT_SYMLINK_NOFOLLOW));
}

/* rawsys NR: syscall NR with all-zero arguments (for ENOSYS checks). */
static int p_rawsys(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	return report(syscall(atol(argv[2]), 0, 0, 0, 0, 0, 0));
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
	if (!strcmp(p, "caps"))
		return p_caps();
	if (!strcmp(p, "mknod"))
		return p_mknod(argc, argv);
	if (!strcmp(p, "adjtime_read"))
		return p_adjtime_read();
	if (!strcmp(p, "adjtime_set"))
		return p_adjtime_set();
	if (!strcmp(p, "chmod"))
		return p_chmod(argc, argv);
	if (!strcmp(p, "fchmod_ro"))
		return p_fchmod_ro(argc, argv);
	if (!strcmp(p, "chown"))
		return p_chown(argc, argv, 0);
	if (!strcmp(p, "lchown"))
		return p_chown(argc, argv, 1);
	if (!strcmp(p, "utimes"))
		return p_utimes(argc, argv);
	if (!strcmp(p, "setxattr"))
		return p_setxattr(argc, argv);
	if (!strcmp(p, "fchmodat2_nofollow"))
		return p_fchmodat2_nofollow(argc, argv);
	if (!strcmp(p, "rawsys"))
		return p_rawsys(argc, argv);
	if (!strcmp(p, "chmod_race"))
		return p_chmod_race(argc, argv);
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
