/*
 * launch_parent.c — the caller's side of a launch: fork the child (which
 * confines itself, launch_child.c), read its reports, take its seccomp
 * listener (pidfd_getfd, or SCM_RIGHTS from the command's helper where a
 * container refuses pidfd_getfd: mechs.h), release it once the supervisor
 * runs, and close and free everything at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/filter.h"
#include "launch/launch.h"
#include "launch/mechs.h"
#include "launch/tmpdir.h"

/* Bound on the child's setup (it makes no trappable call the parent waits for). */
#define SL_SETUP_TIMEOUT_MS 10000

static const char *step_name(int step)
{
	static const char *const names[] = {
		[ST_OK] = "ok",
		[ST_SETPGID] = "setpgid",
		[ST_PDEATHSIG] = "prctl(PR_SET_PDEATHSIG)",
		[ST_PARENT_GONE] = "parent check",
		[ST_STDIO] = "dup2(stdio)",
		[ST_CHDIR] = "chdir",
		[ST_RLIMIT] = "setrlimit(RLIMIT_AS)",
		[ST_NO_NEW_PRIVS] = "prctl(PR_SET_NO_NEW_PRIVS)",
		[ST_CAPS] = "capability drop",
		[ST_LANDLOCK] = "landlock_restrict_self",
		[ST_SECCOMP] = "seccomp(SET_MODE_FILTER)",
		[ST_SIGNALS] = "signal reset",
		[ST_SUBREAPER] = "prctl(PR_SET_CHILD_SUBREAPER)",
		[ST_SPAWN] = "clone(command)",
		[ST_LIMITS] = "applying limits (cgroup, rlimits, affinity, personality)",
		[ST_HANDOVER] = "clone(listener hand-over helper)",
		[ST_EXEC] = "execve",
	};
	if (step < 0 || step > ST_EXEC)
		return "child setup";
	return names[step];
}


/* Keep our descriptors off 0..2 so the child's dup2 onto stdio cannot clobber them. */
static int above_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

/*
 * Our side of the fork.  pipes[i]: a pipe for stream i (CAPTURE of
 * stdout/stderr, or PIPE), [0] read end, [1] write end; child[i] is what
 * the child moves onto fd i (-1: leave it).  Only child[] fds that we
 * opened are closed here (an FD-mode fd belongs to L).
 */
struct parent_fds {
	int sv[2], devnull;
	int pipes[3][2];
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void parent_fds_close(struct parent_fds *p)
{
	close_fd(&p->sv[0]);
	close_fd(&p->sv[1]);
	close_fd(&p->devnull);
	for (int i = 0; i < 3; i++) {
		close_fd(&p->pipes[i][0]);
		close_fd(&p->pipes[i][1]);
	}
}

static int make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	p[0] = above_stdio(p[0]);
	p[1] = above_stdio(p[1]);
	return (p[0] < 0 || p[1] < 0) ? -1 : 0;
}

/* Does stream i need a pipe?  stdin: only PIPE; stdout/err: CAPTURE too. */
static bool wants_pipe(const struct sl_launch *L, int i)
{
	int m = L->stdio_mode[i];
	return m == SANDLOCK_STDIO_PIPE || (i > 0 && m == SANDLOCK_STDIO_CAPTURE);
}

static bool wants_devnull(const struct sl_launch *L, int i)
{
	int m = L->stdio_mode[i];
	return m == SANDLOCK_STDIO_DEVNULL || (i == 0 && m == SANDLOCK_STDIO_CAPTURE);
}

/* The child's end of stream i (stdin reads the pipe, the others write it). */
static int child_end(const struct sl_launch *L, const struct parent_fds *p, int i)
{
	if (wants_pipe(L, i))
		return p->pipes[i][i == 0 ? 0 : 1];
	if (wants_devnull(L, i))
		return p->devnull;
	return L->stdio_mode[i] == SANDLOCK_STDIO_FD ? L->stdio_fd[i] : -1;
}

static int parent_fds_open(const struct sl_launch *L, struct parent_fds *p)
{
	p->sv[0] = p->sv[1] = p->devnull = -1;
	for (int i = 0; i < 3; i++)
		p->pipes[i][0] = p->pipes[i][1] = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->sv) < 0)
		return -1;
	p->sv[0] = above_stdio(p->sv[0]);
	p->sv[1] = above_stdio(p->sv[1]);
	if (p->sv[0] < 0 || p->sv[1] < 0)
		return -1;
	/* Always: it is also what fills the caller's closed 0..2 when a
	 * stream is inherited (launch_child.c). */
	p->devnull = above_stdio(open("/dev/null", O_RDWR | O_CLOEXEC));
	if (p->devnull < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		if (wants_pipe(L, i) && make_pipe(p->pipes[i]) < 0)
			return -1;
	return 0;
}

/* After fork: keep our ends (capture for the loop, PIPE for the caller). */
static void take_parent_ends(struct sl_launch *L, struct parent_fds *p)
{
	for (int i = 0; i < 3; i++) {
		if (!wants_pipe(L, i))
			continue;
		int *ours = &p->pipes[i][i == 0 ? 1 : 0];
		int *dest = L->stdio_mode[i] == SANDLOCK_STDIO_PIPE ? &L->pipe_fd[i]
		            : i == 1                                ? &L->out_fd
		                                                    : &L->err_fd;
		*dest = *ours;
		*ours = -1;
	}
}

/* Kill and reap a child that never got released. */
static void abort_child(struct sl_launch *L)
{
	if (L->pid > 0) {
		kill(L->pid, SIGKILL);
		while (waitpid(L->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	L->pid = -1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *errname(int e)
{
	return strerrorname_np(e) ? strerrorname_np(e) : strerror(e);
}

/*
 * One report from the child (launch.h): 1 = got one, 0 = none yet, -1 =
 * EOF/error.  fd: where a listener sent with it (SCM_RIGHTS) goes, or
 * NULL (then one is closed); -1 when none came.
 */
static int read_report(int sync, int32_t m[SL_REPORT_INTS], int flags, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { m, SL_REPORT_INTS * sizeof(int32_t) };
	struct msghdr mh;
	ssize_t n;
	bool reset = false;
	/* ECONNRESET: the child exited without reading all we sent.  The
	 * kernel reports that before the messages the child sent us, and only
	 * once: read on for its report. */
	for (;;) {
		mh = (struct msghdr){ .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
			                  .msg_controllen = sizeof u.buf };
		n = recvmsg(sync, &mh, flags | MSG_CMSG_CLOEXEC);
		if (n >= 0 || (errno != EINTR && (errno != ECONNRESET || reset)))
			break;
		reset = reset || errno == ECONNRESET;
	}
	int got = -1;
	struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&got, CMSG_DATA(cm), sizeof got);
	if (fd)
		*fd = got;
	else if (got >= 0)
		close(got);
	if (n == (ssize_t)(SL_REPORT_INTS * sizeof(int32_t)))
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return -1;
}

int sl_launch_exec_failure(int sync_fd, int *step)
{
	int32_t m[SL_REPORT_INTS];
	/* Past a report nobody read (the command's "attached", when the
	 * listener was fetched first): one message per read. */
	for (int i = 0; sync_fd >= 0 && i < 8; i++) {
		if (read_report(sync_fd, m, MSG_DONTWAIT, NULL) != 1)
			return 0;
		if ((m[0] == ST_EXEC || m[0] == ST_LIMITS) && m[1] > 0) {
			*step = m[0];
			return m[1];
		}
	}
	return 0;
}

/* Turn a failure report (m[0] > 0) or a silent death into an error.  A
 * silent death under a memory limit is almost always that limit (the
 * cgroup's OOM kill during the loader's first pages): say so, with the
 * setting to raise. */
static int setup_error(const struct sl_launch *L, int rc, const int32_t m[SL_REPORT_INTS],
                       int *err, char **msg)
{
	if (rc == 1 && m[0] > 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "%s failed: %s", step_name(m[0]),
		               errname(m[1]));
	if (L->cfg->max_memory)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		               "sandboxed child was killed during setup: max_memory (%llu bytes) "
		               "is too small to start the command; raise it (a few megabytes at "
		               "least)", (unsigned long long)L->cfg->max_memory);
	return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "sandboxed child exited during setup");
}

/* Where the listener will be: fd *fdnum of the command, whose pidfd is
 * returned in *cmd_pidfd.  Or the failure the child reported. */
static int recv_announcement(struct sl_launch *L, int64_t deadline, int *fdnum,
                             int *cmd_pidfd, int *err, char **msg)
{
	struct pollfd pf = { L->sync_fd, POLLIN, 0 };
	int pr;
	do {
		int64_t left_ms = (deadline - now_ns()) / 1000000;
		pr = poll(&pf, 1, left_ms > 0 ? (int)left_ms : 0);
	} while (pr < 0 && errno == EINTR);
	if (pr == 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "sandboxed child did not finish setup");
	int32_t m[SL_REPORT_INTS] = { -1, 0, 0 };
	int rc = read_report(L->sync_fd, m, 0, NULL);
	if (rc != 1 || m[0] != ST_OK || m[1] < 0 || m[2] <= 0)
		return setup_error(L, rc, m, err, msg);
	/*
	 * The command is init's child and announced itself before seccomp(),
	 * so it is alive unless it failed since (its report is then queued)
	 * or was killed from outside; init reaps it only after that.
	 */
	*cmd_pidfd = sl_fd_high((int)syscall(__NR_pidfd_open, (pid_t)m[2], 0));
	if (*cmd_pidfd < 0) {
		int32_t f[SL_REPORT_INTS] = { -1, 0, 0 };
		return setup_error(L, read_report(L->sync_fd, f, MSG_DONTWAIT, NULL), f, err, msg);
	}
	*fdnum = m[1];
	L->cmd_pid = (pid_t)m[2];
	return 0;
}

/*
 * True if fd is a seccomp user-notification fd.  The child cannot run
 * untrusted code yet, so this is a consistency check of the fd-number
 * protocol, not a defence: a wrong fd would silently leave the sandbox
 * without a supervisor.  Only a listener knows this ioctl (ENOENT: no
 * notification 0 pending); pipes, sockets, terminals, files, rulesets
 * answer ENOTTY or EINVAL.  (No readlink of /proc/self/fd/N: it would add
 * nothing, and a process's first /proc lookup costs ~20 us.)
 */
static bool is_seccomp_listener(int fd)
{
	uint64_t id = 0;
	return ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0 && errno == ENOENT;
}

/*
 * Wait for the listener to appear at fd number fdnum in the command and
 * take a copy with pidfd_getfd.  Until seccomp() returns the slot is empty
 * (EBADF); the kernel installs the fd only once the filter is attached, so
 * success also means the command is confined.  The command's "attached"
 * report wakes us at once; the timeout (exponential backoff) only matters
 * when a handler traps that report's send().  Meanwhile watch the sync
 * socket (a seccomp failure report) and init's pidfd (the child died).
 */
static int fetch_listener(struct sl_launch *L, int cmd_pidfd, int fdnum, int64_t deadline,
                          int *err, char **msg)
{
	long wait_ns = 200000;
	for (;;) {
		int fd = (int)syscall(__NR_pidfd_getfd, cmd_pidfd, fdnum, 0);
		if (fd >= 0) {
			if (is_seccomp_listener(fd)) {
				L->listener = sl_fd_high(fd); /* pidfd_getfd sets close-on-exec */
				return L->listener >= 0 ? 0
				                        : sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
				                                  "listener: %s", strerror(errno));
			}
			close(fd);
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
			               "fd %d of the sandboxed command is not its seccomp listener",
			               fdnum);
		}
		if (errno != EBADF && errno != ESRCH && errno != EINTR)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "pidfd_getfd: %s%s",
			               errname(errno),
			               errno == EPERM ? " (ptrace access to the child is restricted: "
			                                "an LSM other than Yama?)"
			                              : "");
		struct pollfd pf[2] = { { L->sync_fd, POLLIN, 0 }, { L->pidfd, POLLIN, 0 } };
		struct timespec ts = { 0, wait_ns };
		if (ppoll(pf, 2, &ts, NULL) > 0) {
			int32_t m[SL_REPORT_INTS] = { -1, 0, 0 };
			int rc = read_report(L->sync_fd, m, MSG_DONTWAIT, NULL);
			bool attached = rc == 1 && m[0] == ST_OK;
			if (!attached && (rc != 0 || pf[1].revents))
				return setup_error(L, rc, m, err, msg);
		}
		if (now_ns() >= deadline)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
			               "sandboxed child did not finish setup");
		wait_ns = wait_ns * 2 > 5000000 ? 5000000 : wait_ns * 2;
	}
}

/*
 * listener_scm: the command's helper sends the listener with its
 * "attached" report (launch_child.c).  Meanwhile watch init's pidfd (the
 * child died: its failure report, if any, is read first).
 */
static int receive_listener(struct sl_launch *L, int64_t deadline, int *err, char **msg)
{
	for (;;) {
		struct pollfd pf[2] = { { L->sync_fd, POLLIN, 0 }, { L->pidfd, POLLIN, 0 } };
		int64_t left_ms = (deadline - now_ns()) / 1000000;
		int pr = poll(pf, 2, left_ms > 0 ? (int)left_ms : 0);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr == 0)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
			               "sandboxed child did not finish setup");
		int32_t m[SL_REPORT_INTS] = { -1, 0, 0 };
		int fd = -1;
		int rc = read_report(L->sync_fd, m, MSG_DONTWAIT, &fd);
		if (rc == 1 && m[0] == ST_OK && fd >= 0) {
			if (!is_seccomp_listener(fd)) {
				close(fd);
				return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
				               "the hand-over sent no seccomp listener");
			}
			L->listener = sl_fd_high(fd); /* received close-on-exec */
			return L->listener >= 0 ? 0
			                        : sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "listener: %s",
			                                  strerror(errno));
		}
		if (fd >= 0)
			close(fd);
		if (rc == 0 && !pf[1].revents)
			continue;
		return setup_error(L, rc, m, err, msg);
	}
}

/* The listener, or the child's failure report, within the setup timeout. */
static int get_listener(struct sl_launch *L, int *err, char **msg)
{
	int64_t deadline = now_ns() + (int64_t)SL_SETUP_TIMEOUT_MS * 1000000;
	int fdnum = -1, cmd_pidfd = -1;
	if (recv_announcement(L, deadline, &fdnum, &cmd_pidfd, err, msg) < 0)
		return -1;
	L->cmd_pidfd = cmd_pidfd; /* kept: sandlock_handle_kill before the release */
	if (L->listener_scm)
		return receive_listener(L, deadline, err, msg);
	return fetch_listener(L, cmd_pidfd, fdnum, deadline, err, msg);
}

/*
 * Build the BPF program (while the child sets itself up) and send it: the
 * child's first message.
 */
static int send_prog(struct sl_launch *L, int *err, char **msg)
{
	if (sl_launch_build_prog(L, err, msg) < 0)
		return -1;
	if (L->prog.len == 0 || L->prog.len > SL_MAX_INSNS)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "BPF program of %u instructions",
		               (unsigned)L->prog.len);
	size_t len = (size_t)L->prog.len * sizeof(L->prog.filter[0]);
	ssize_t n;
	while ((n = send(L->sync_fd, L->prog.filter, len, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)len)
		return 0;
	/* The child is gone: its own report (queued before it exited) says why. */
	int32_t m[SL_REPORT_INTS] = { -1, 0, 0 };
	return setup_error(L, read_report(L->sync_fd, m, MSG_DONTWAIT, NULL), m, err, msg);
}

/*
 * fork, born in the run's cgroup where the kernel can (clone3 with
 * CLONE_INTO_CGROUP): moving a running task there instead (a write to
 * cgroup.procs) takes the cgroups' global threadgroup lock for writing,
 * which waits for an RCU grace period: 4-12 ms of a run's start-up on a
 * host where other tenants make and remove groups.  Falls back to fork
 * on any refusal (old kernel, a filter, no permission): the child then
 * joins by writing cgroup.procs.  The child runs only async-signal-safe
 * code, so skipping glibc's fork handlers is safe; it asks its own pid.
 */
static pid_t fork_in_cgroup(const struct sl_launch *L, struct sl_child_fds *c)
{
	c->in_cgroup = false;
	if (L->cgroup_dir >= 0) {
		struct sl_clone_args ca = { .flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD,
			                        .cgroup = (uint64_t)L->cgroup_dir };
		long pid = syscall(__NR_clone3, &ca, sizeof ca);
		if (pid >= 0) {
			c->in_cgroup = true;
			return (pid_t)pid;
		}
	}
	return fork();
}

int sl_launch_start(struct sl_launch *L, int *err, char **msg)
{
	struct parent_fds p;
	if (parent_fds_open(L, &p) < 0) {
		int e = errno;
		parent_fds_close(&p);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "creating pipes: %s", strerror(e));
	}
	struct sl_child_fds c = { p.sv[1], { -1, -1, -1 }, p.devnull, getpid(), 0, false };
	for (int i = 0; i < 3; i++)
		c.stdio[i] = child_end(L, &p, i);
	L->listener_scm = !sl_mech_getfd(); /* probed once per process */
	pid_t pid = fork_in_cgroup(L, &c);
	if (pid == 0) {
		c.self = getpid();
		sl_launch_child_main(L, &c);
	}
	if (pid < 0) {
		int e = errno;
		parent_fds_close(&p);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "fork: %s", strerror(e));
	}
	L->pid = pid;
	L->sync_fd = p.sv[0];
	p.sv[0] = -1;
	take_parent_ends(L, &p);
	parent_fds_close(&p); /* the child's ends: EOF detection depends on this */
	L->pidfd = sl_fd_high((int)syscall(__NR_pidfd_open, pid, 0));
	if (L->pidfd < 0) {
		int e = errno;
		abort_child(L);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "pidfd_open: %s", strerror(e));
	}
	if (send_prog(L, err, msg) < 0) {
		abort_child(L);
		return -1;
	}
	if (get_listener(L, err, msg) < 0) {
		abort_child(L);
		return -1;
	}
	return 0;
}

int sl_launch_release(struct sl_launch *L)
{
	/* init has called setpgid(0, 0) (before the command announced its
	 * listener) and the command does not run the program yet: make its group the terminal's
	 * foreground now, so that the program's first read of it works. */
	if (sl_launch_inherits_all(L))
		sl_tty_start(&L->tty, L->pid);
	/* With a terminal, init mirrors the command's job-control stops for
	 * sl_tty_watch; without one nobody watches them, and an init stopped
	 * after a stop that someone in the sandbox undoes would stall the run. */
	char go = L->tty.fd >= 0 ? SL_READY_TTY : SL_READY;
	ssize_t n;
	while ((n = send(L->sync_fd, &go, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	/*
	 * Our end stays open until cleanup: closing a unix socket that still
	 * holds an unread message (the command's "attached" report, when the
	 * fetch found the listener first) makes the peer's next read fail
	 * with ECONNRESET instead of returning "ready".
	 */
	return n == 1 ? 0 : -1;
}

void sl_launch_cleanup(struct sl_launch *L)
{
	sl_tty_end(&L->tty); /* every path, also when the run failed */
	close_fd(&L->ruleset_fd);
	close_fd(&L->pidfd);
	close_fd(&L->cmd_pidfd);
	close_fd(&L->listener);
	close_fd(&L->out_fd);
	close_fd(&L->err_fd);
	close_fd(&L->sync_fd);
	for (int i = 0; i < 3; i++) {
		close_fd(&L->stdio_fd[i]);
		close_fd(&L->pipe_fd[i]);
	}
	free(L->keep_fds);
	L->keep_fds = NULL;
	L->nkeep = 0;
	free(L->exe);
	L->exe = NULL;
	for (char **a = L->argv; a && *a; a++)
		free(*a);
	free(L->argv);
	L->argv = NULL;
	for (char **e = L->envp; e && *e; e++)
		free(*e);
	free(L->envp);
	L->envp = NULL;
	sl_filter_free(&L->prog);
	sl_private_tmp_remove(L->tmpdir); /* every process of the run is gone by now */
	L->tmpdir = NULL;
	sl_cg_release(&L->cg); /* after the run: every process of it is gone */
}
