/*
 * launch_child.c — the forked child, from fork until it becomes the
 * sandbox's init (init.c) and forks the command.
 *
 * ASYNC-SIGNAL-SAFE CODE AND RAW SYSCALLS ONLY.  The caller may be
 * multi-threaded: after fork another thread may have held the malloc or
 * stdio lock, so no malloc, no stdio, no locks, nothing that is not on the
 * async-signal-safe list.  Everything allocated was prepared before fork
 * (launch_prepare.c).  Setup failures are reported to the parent as
 * {step, errno} on the sync socket (launch.h).
 *
 * Two processes run this code.  The forked child becomes the sandbox's
 * init: process group, death signal, subreaper, signals, stdio, limits,
 * no_new_privs, capabilities.  It then starts the command with CLONE_VM |
 * CLONE_VFORK, and the command confines itself: Landlock, announcement of
 * the listener's fd number, seccomp, then it waits for "ready" and execs.
 * After seccomp every syscall may be trapped by a handler, so the parent
 * depends on none of them (it takes the listener itself with
 * pidfd_getfd, or receives it from a helper the filter does not cover).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/caps.h"
#include "launch/init.h"
#include "launch/landlock.h"
#include "launch/launch.h"

SL_OWN_STACK static __attribute__((noreturn)) void child_fail(int sync, int step, int e);

/* dup2 that also works when fd already is target (clears close-on-exec). */
static int move_fd(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, target) < 0 ? -1 : 0;
}

/*
 * Every source is above 2 (launch_parent.c), so no dup2 clobbers another's.
 * An inherited stream the caller has closed becomes /dev/null: left free,
 * the kernel would put the seccomp listener there, where the command
 * (which keeps 0..2) could answer its own trapped calls.
 */
static void child_stdio(const struct sl_child_fds *c)
{
	for (int i = 0; i < 3; i++) {
		int src = c->stdio[i];
		if (src < 0 && fcntl(i, F_GETFD) < 0 && errno == EBADF)
			src = c->devnull;
		if (src >= 0 && move_fd(src, i) < 0)
			child_fail(c->sync, ST_STDIO, errno);
	}
}

/*
 * Before exec: close every fd above 2 except the pass_fds (sorted), which
 * lose close-on-exec.  Nothing of ours (listener, ruleset, sync socket)
 * survives.
 */
static int close_except_kept(const struct sl_launch *L)
{
	unsigned from = 3;
	for (size_t i = 0; i < L->nkeep; i++) {
		unsigned k = (unsigned)L->keep_fds[i];
		if (k > from && syscall(__NR_close_range, from, k - 1, 0) < 0)
			return -1;
		if (fcntl((int)k, F_SETFD, 0) < 0)
			return -1;
		from = k + 1;
	}
	return syscall(__NR_close_range, from, ~0U, 0) < 0 ? -1 : 0;
}

/*
 * SANDLOCK_SPAWN_PASS_IN_ORDER: the i-th passed fd becomes fd 3 + i, and
 * every other fd above 2 is closed.  Each one is first copied above the
 * target range, so that placing one cannot clobber another still to be
 * placed.  Runs in the command (shared memory with init): stack only.
 */
static int place_passed(const struct sl_launch *L)
{
	int tmp[SL_PASS_IN_ORDER_MAX];
	unsigned n = (unsigned)L->nkeep;
	for (unsigned i = 0; i < n; i++)
		if ((tmp[i] = fcntl(L->keep_fds[i], F_DUPFD_CLOEXEC, (int)(3 + n))) < 0)
			return -1;
	for (unsigned i = 0; i < n; i++)
		if (dup2(tmp[i], (int)(3 + i)) < 0) /* the copy at 3 + i is not close-on-exec */
			return -1;
	return syscall(__NR_close_range, 3 + n, ~0U, 0) < 0 ? -1 : 0;
}

/*
 * Undo what the caller's runtime (e.g. Python ignores SIGPIPE) would leak
 * into exec.  SIGCHLD too: ignored, init's children would be reaped
 * without a status.  The mask stays fully blocked (sl_init_block_signals):
 * init takes its signals synchronously; the command unblocks its own.
 */
static void child_signals(const struct sl_child_fds *c)
{
	if (signal(SIGPIPE, SIG_DFL) == SIG_ERR || signal(SIGXFSZ, SIG_DFL) == SIG_ERR ||
	    signal(SIGCHLD, SIG_DFL) == SIG_ERR)
		child_fail(c->sync, ST_SIGNALS, errno);
}

/*
 * init's view of its own children (init.c), opened while /proc may still
 * be read: Landlock applies to opens, not to reads of an open file.  Kept
 * off 0..2, which belong to the command.  -1 without /proc: init then
 * kills only the command and the parent's group sweep does the rest.
 */
static int open_children_list(void)
{
	int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fd <= 2) {
		int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = moved;
	}
	return fd;
}

static void child_limits(const struct sl_launch *L, const struct sl_child_fds *c)
{
	if (L->cfg->cwd && chdir(L->cfg->cwd) < 0)
		child_fail(c->sync, ST_CHDIR, errno);
	struct sl_cglimits cg = L->cg;
	if (c->in_cgroup && L->cgroup_dir >= 0 && L->cgroup_procs < 0)
		cg.v2.procs = -1; /* cloned into the limits' v2 group already (run.c adopted it) */
	int e = sl_limits_child(L->cfg, &cg); /* limits.c: inherited by the command */
	if (e)
		child_fail(c->sync, ST_LIMITS, e);
}

/* The lowest fd number not in use: where the kernel will put the next new fd. */
SL_OWN_STACK static int lowest_free_fd(void)
{
	int fd = 0;
	while (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
		fd++;
	return fd;
}

SL_OWN_STACK static void send_report(int sync, int32_t step, int32_t value, int32_t pid)
{
	int32_t m[SL_REPORT_INTS] = { step, value, pid };
	(void)send(sync, m, sizeof m, MSG_NOSIGNAL);
}

SL_OWN_STACK static __attribute__((noreturn)) void child_fail(int sync, int step, int e)
{
	send_report(sync, step, e, 0);
	_exit(127);
}

/*
 * The BPF program, the parent's first message (launch.h).  Static: in the
 * command it is written only while init is suspended (CLONE_VFORK), and
 * never in the caller itself.
 */
static struct sock_filter g_insns[SL_MAX_INSNS];

SL_OWN_STACK static unsigned short recv_prog(int sync)
{
	ssize_t n;
	while ((n = recv(sync, g_insns, sizeof g_insns, 0)) < 0 && errno == EINTR)
		;
	if (n <= 0 || n % (ssize_t)sizeof(g_insns[0]))
		_exit(127); /* the parent gave up before sending it */
	return (unsigned short)(n / (ssize_t)sizeof(g_insns[0]));
}

/*
 * listener_scm (launch.h): where pidfd_getfd is refused (a container's
 * default seccomp profile), the listener reaches the parent through a
 * helper.  The helper shares the command's memory and fd table (CLONE_VM |
 * CLONE_FILES) but is started before seccomp(), and a filter covers only
 * the task that installs it: so its sendmsg of the listener (SCM_RIGHTS)
 * can be trapped by no handler.  The command publishes the fd number with
 * a plain store, which is never trapped, and a futex wake, which a handler
 * may trap (then the helper sees the store at its next timed wake-up).
 * The helper is a "clone" child of the command (no exit signal), reaped by
 * the command before it execs, so the program never sees it.
 *
 * g_handover: -1 = not yet, -2 = seccomp() failed, else the listener.
 * Only ever written in the forked child (the caller's copy stays -1).
 */
static atomic_int g_handover = -1;
static char handover_stack[16 * 1024] __attribute__((aligned(64)));

struct handover {
	int sync;
	int32_t cmd; /* the command: the helper's parent */
};

SL_OWN_STACK static void send_listener(int sync, int fd, int32_t cmd)
{
	int32_t m[SL_REPORT_INTS] = { ST_OK, fd, cmd };
	struct iovec iov = { m, sizeof m };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof u);
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
		                 .msg_controllen = sizeof u.buf };
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof fd);
	(void)sendmsg(sync, &mh, MSG_NOSIGNAL);
}

SL_OWN_STACK static int handover_main(void *arg)
{
	const struct handover *h = arg;
	/* Dies with the command (a failed setup), never outlives it. */
	(void)syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if ((int32_t)syscall(SYS_getppid) != h->cmd)
		return 0;
	long wait_ns = 50000;
	int fd;
	while ((fd = atomic_load(&g_handover)) == -1) {
		struct timespec ts = { 0, wait_ns };
		(void)syscall(SYS_futex, &g_handover, FUTEX_WAIT_PRIVATE, -1, &ts, NULL, 0);
		wait_ns = wait_ns * 2 > 5000000 ? 5000000 : wait_ns * 2;
	}
	if (fd >= 0)
		send_listener(h->sync, fd, h->cmd);
	return 0;
}

/* The command's side: publish the listener (or -2) and wake the helper. */
SL_OWN_STACK static void publish_listener(int fd)
{
	atomic_store(&g_handover, fd);
	(void)syscall(SYS_futex, &g_handover, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

SL_OWN_STACK static pid_t start_handover(const struct sl_child_fds *c, struct handover *h)
{
	pid_t pid = clone(handover_main, handover_stack + sizeof handover_stack,
	                  CLONE_VM | CLONE_FILES, h);
	if (pid < 0)
		child_fail(c->sync, ST_HANDOVER, errno);
	return pid;
}

/*
 * Landlock, then receive the BPF program, tell the parent where the
 * listener will appear, and seccomp.  Landlock comes first so that no
 * handler can see (let alone fake) landlock_restrict_self: before
 * seccomp() nothing is trapped.  The announcement must happen before the
 * filter exists too: any syscall made afterwards may be one a user
 * handler traps (sendmsg, write, ...), and nobody answers trapped calls
 * until the parent has the listener and runs the supervisor.  So the
 * parent fetches the listener itself with pidfd_getfd(), or the helper
 * above, which no filter covers, sends it (listener_scm).
 *
 * The number is exact: the kernel installs the listener at the lowest free
 * fd, and between the probe and seccomp() nothing in this process creates
 * an fd: it is single-threaded, send() on an existing socket makes none,
 * and no code of ours runs in between.  (Only a caller's signal handler
 * could, if someone signalled it in that window; the parent then finds no
 * listener at N and fails the launch rather than use a wrong fd.)  Before
 * seccomp() the slot is simply empty.
 */
SL_OWN_STACK static pid_t command_confine(const struct sl_launch *L, const struct sl_child_fds *c,
                                          struct handover *h)
{
	if (L->ruleset_fd >= 0) {
		int rc = sl_landlock_apply(L->ruleset_fd, L->ll_flags);
		if (rc < 0)
			child_fail(c->sync, ST_LANDLOCK, -rc);
	}
	struct sock_fprog prog = { recv_prog(c->sync), g_insns };
	int32_t self = (int32_t)syscall(SYS_getpid);
	int32_t m[SL_REPORT_INTS] = { ST_OK, lowest_free_fd(), self };
	if (send(c->sync, m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m)
		_exit(127);
	*h = (struct handover){ c->sync, self };
	pid_t helper = L->listener_scm ? start_handover(c, h) : -1;
	long fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
	                  SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
	                  &prog);
	/* Still unfiltered when seccomp() failed: the report cannot be trapped. */
	if (fd < 0) {
		if (helper > 0)
			publish_listener(-2);
		child_fail(c->sync, ST_SECCOMP, errno);
	}
	if (helper > 0) {
		publish_listener((int)fd); /* the helper sends it: no "attached" of ours */
		return helper;
	}
	/*
	 * fd == m[1]; the parent verifies what it fetched.  Say "attached" so
	 * it fetches now instead of at its next poll timeout.  This send may
	 * be trapped by a handler: it then waits for the supervisor, which the
	 * parent starts anyway once its own polling finds the listener.  Its
	 * result does not matter.
	 */
	send_report(c->sync, ST_OK, (int32_t)fd, self);
	return -1;
}

/* "errno N" into buf (at least 24 bytes), without stdio. */
SL_OWN_STACK static const char *errno_number(char *buf, int e)
{
	char digits[12];
	int n = 0;
	unsigned v = e < 0 ? 0u : (unsigned)e;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < (int)sizeof digits);
	memcpy(buf, "errno ", 6);
	char *p = buf + 6;
	while (n)
		*p++ = digits[--n];
	*p = '\0';
	return buf;
}

/*
 * A failed execve would otherwise end in a bare 126/127: say why on the
 * child's stderr (the capture pipe or the caller's).  One writev of
 * strings that already exist: async-signal-safe (strerrorname_np only
 * indexes glibc's static table).  A user handler may trap this write too;
 * the supervisor is running by now, so it is answered.
 */
SL_OWN_STACK static void report_failure(const char *what, const char *exe, int e)
{
	char num[24];
	const char *name = strerrorname_np(e);
	if (!name)
		name = errno_number(num, e);
	struct iovec iov[] = {
		{ (void *)"sandlock: ", 10 },
		{ (void *)what, strlen(what) },
		{ (void *)exe, strlen(exe) },
		{ (void *)": ", 2 },
		{ (void *)name, strlen(name) },
		{ (void *)"\n", 1 },
	};
	(void)writev(2, iov, sizeof iov / sizeof iov[0]);
}

/*
 * Where init and the command meet during the CLONE_VFORK window: the
 * command writes, init reads once the command has exec'd or died.
 */
struct spawn {
	const struct sl_launch *L;
	const struct sl_child_fds *c;
	volatile bool mirror_stops; /* from the "ready" byte */
	/* The command could not become the program (its sync socket is
	 * already closed): the step and errno, for init to report. */
	volatile int fail_step, fail_errno;
};

/*
 * The command: init's child, started with CLONE_VM | CLONE_VFORK on its
 * own stack, so it shares init's memory until execve (init is suspended
 * meanwhile).  It therefore writes nothing but its own stack, errno and
 * sp->mirror_stops.  It confines itself (Landlock, seccomp), waits for
 * "ready", unblocks its signals, dies with init (only a SIGKILL from
 * outside the sandbox can end init early) and execs.
 */
SL_OWN_STACK static int command_main(void *arg)
{
	struct spawn *sp = arg;
	const struct sl_launch *L = sp->L;
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	struct handover h;
	pid_t helper = command_confine(L, sp->c, &h);
	/*
	 * From here on every syscall may be trapped; the parent depends on none
	 * of them.  It fetches the listener, starts the supervisor and only
	 * then sends "ready", so a trapped read() here is answered.
	 */
	char go;
	ssize_t n;
	while ((n = read(sp->c->sync, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1) /* parent gave up */
		_exit(127);
	/* The helper has sent the listener (the parent had it before "go"):
	 * reap it, so the program never sees a child it did not start. */
	while (helper > 0 && wait4(helper, NULL, __WCLONE, NULL) < 0 && errno == EINTR)
		;
	sp->mirror_stops = go == SL_READY_TTY;
	sigset_t none;
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if ((L->pass_in_order ? place_passed(L) : close_except_kept(L)) < 0)
		_exit(127);
	/* RLIMIT_NOFILE last: the command's own (init keeps its fds), after our
	 * fds are gone, so even a tiny limit leaves room for the exec. */
	int le = sl_limits_command(L->cfg, &L->cg);
	if (le) {
		report_failure("cannot limit ", L->exe, le);
		sp->fail_step = ST_LIMITS; /* init reports it (become_init) */
		sp->fail_errno = le;
		_exit(126);
	}
	execve(L->exe, L->argv, L->envp);
	int e = errno;
	report_failure("cannot execute ", L->exe, e);
	sp->fail_step = ST_EXEC;
	sp->fail_errno = e;
	_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
}

/*
 * The command's stack.  init is a single-threaded fork and the command
 * runs only while init is suspended, so one static buffer per process is
 * enough; it is never touched in the caller itself.
 */
static char command_stack[64 * 1024] __attribute__((aligned(64)));

/*
 * Start the command and become the sandbox's init (init.c).  CLONE_VM |
 * CLONE_VFORK instead of fork: no copy of the caller's page tables (large
 * for a Python caller), and init needs to do nothing before the command
 * execs.
 */
static __attribute__((noreturn)) void become_init(const struct sl_launch *L,
                                                  const struct sl_child_fds *c, int children_fd)
{
	struct spawn sp = { L, c, false, 0, 0 };
	pid_t cmd = clone(command_main, command_stack + sizeof command_stack,
	                  CLONE_VM | CLONE_VFORK | SIGCHLD, &sp);
	if (cmd < 0)
		child_fail(c->sync, ST_SPAWN, errno);
	/* The command has exec'd, or died (its report is on the sync socket,
	 * and init's loop below reaps it and exits as it did).  One that
	 * could not exec left why in our shared memory: the result says it. */
	if (sp.fail_errno)
		send_report(c->sync, sp.fail_step, sp.fail_errno, 0);
	/* init needs no fd but its children list: not the listener, not the
	 * terminal, not the capture pipes (their EOF is the command's). */
	if (children_fd > 0)
		(void)syscall(__NR_close_range, 0, (unsigned)children_fd - 1, 0);
	(void)syscall(__NR_close_range, (unsigned)children_fd + 1, ~0U, 0);
	struct sl_init in = { c->self, c->parent, children_fd, sp.mirror_stops };
	sl_init_main(&in, cmd);
}

/*
 * init: process group, death signal, subreaper, signals, stdio, limits,
 * no_new_privs and capabilities (inherited by the command), then the
 * command.  init itself enters neither the Landlock domain nor the
 * seccomp filter: it runs only this code, and staying outside the
 * command's Landlock domain is what protects it from the command (a
 * domain can neither signal (ABI >= 6) nor ptrace a process outside it).
 */
void sl_launch_child_main(const struct sl_launch *L, const struct sl_child_fds *c)
{
	sl_init_block_signals();
	/* Into the run's cgroup before anything else can fork: everything the
	 * sandbox starts is then inside it (cgroup.kill ends it all).  Failure
	 * is not fatal: the parent sees the cgroup empty and does without. */
	if (L->cgroup_procs >= 0 && !c->in_cgroup)
		(void)!write(L->cgroup_procs, "0", 1);
	if (setpgid(0, 0) < 0)
		child_fail(c->sync, ST_SETPGID, errno);
	/* Catchable, unlike SIGKILL: init ends the whole sandbox first. */
	if (prctl(PR_SET_PDEATHSIG, SL_INIT_SIG_PDEATH, 0, 0, 0) < 0)
		child_fail(c->sync, ST_PDEATHSIG, errno);
	if (getppid() != c->parent) /* parent died before PDEATHSIG was armed */
		_exit(127);
	/* Every orphan of the sandbox becomes ours, setsid() or not. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		child_fail(c->sync, ST_SUBREAPER, errno);
	child_signals(c);
	child_stdio(c);
	child_limits(L, c);
	int children_fd = open_children_list();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(c->sync, ST_NO_NEW_PRIVS, errno);
	/* A sandbox started by root keeps no capability (caps.c). */
	int cr = sl_caps_drop();
	if (cr < 0)
		child_fail(c->sync, ST_CAPS, -cr);
	become_init(L, c, children_fd);
}
