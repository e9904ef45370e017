/*
 * init.c — the sandbox's init: the first process of the sandbox, which
 * runs the command as its child and owns everything the command starts.
 *
 * Why: the supervising process can only see its direct child.  If the
 * command were that child, anything it started would escape us twice
 * over: a process that calls setsid()/setpgid() leaves the sandbox's
 * process group (so the end-of-run killpg and the max_processes count miss
 * it), and if the supervising process is SIGKILLed, PR_SET_PDEATHSIG takes
 * only the direct child with it; the rest is reparented to the host's init
 * and runs on, unsupervised.
 *
 * So the forked child (no capabilities, no_new_privs) starts the command,
 * which confines itself (Landlock, seccomp: launch_child.c), and stays
 * behind as init:
 *  - PR_SET_CHILD_SUBREAPER: every orphan of the sandbox is reparented to
 *    init, never to the host's init; setsid cannot change that, and the
 *    whole sandbox is always init's subtree.
 *  - It ends the subtree (SIGKILL, repeated until init has no children)
 *    when the command exits, when the parent asks (SL_INIT_SIG_KILL:
 *    timeout, a handler's KILL) and when the parent dies
 *    (PR_SET_PDEATHSIG = SL_INIT_SIG_PDEATH, catchable, unlike SIGKILL).
 *  - It then mirrors the command's status: _exit(code), or death by the
 *    same signal, so the run reports the command's exit exactly as before.
 *  - It reaps orphans as they exit, so zombies do not pile up.
 *  - On a terminal (tty.c), it mirrors the command's job-control stops so
 *    the parent, which sees only init, can mirror them in turn.
 *
 * Signals: init blocks every signal and takes them one at a time with
 * rt_sigtimedwait, so it never runs a handler (it is a fork of a possibly
 * multi-threaded caller: raw syscalls only, no malloc, no stdio) and can
 * never be interrupted half-way.  Terminal signals (SIGINT, SIGQUIT,
 * SIGTSTP, SIGTTIN, SIGTTOU, SIGHUP) reach init because it shares the
 * command's process group; it ignores them: the command receives them
 * from the terminal itself and decides, and init follows its exit or stop.
 * Every other signal is ignored too, except the two requests above, which
 * count only when the supervising process sent them (SI_USER from its
 * pid, which the kernel fills in and the sandbox cannot forge): a program
 * in the sandbox that signals its whole group (kill(0, SIGUSR1)) must not
 * end its own sandbox.  SIGKILL and SIGSTOP cannot be blocked: init stays
 * outside the command's Landlock domain, and a domain that scopes signals
 * (ABI >= 6) cannot signal a process outside it, so nothing in the
 * sandbox can send them to init.
 *
 * init is in neither the Landlock domain nor the seccomp filter (they are
 * the command's, applied after the fork): it runs only the code below,
 * so user handlers never see its calls, and the command has exactly one
 * Landlock layer.  It never calls getpid/getppid.  It reads its children
 * from /proc/thread-self/children through an fd opened at setup; without
 * it, init can kill only the command and leaves the rest of the process
 * group to the parent's sweep.
 */
#include <errno.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/init.h"

/* Bound on ending the subtree: rounds of "kill my children, reap, wait
 * up to 1 ms for the next death".  A SIGKILLed process cannot fork, so
 * each round removes at least one level of the tree. */
#define SL_INIT_KILL_ROUNDS 5000

/* The kernel's sigset (64 signals on x86_64), for the raw syscalls: glibc's
 * wrappers would keep its two internal signals unblocked. */
typedef uint64_t ksigset;
#define KSIG(sig) ((ksigset)1 << ((sig) - 1))

struct init_state {
	const struct sl_init *in;
	pid_t cmd;
	int cmd_status; /* wait status, valid once cmd_done */
	bool cmd_done;  /* reaped: its pid must not be signalled again */
};

static int sigmask_raw(int how, ksigset set)
{
	return (int)syscall(SYS_rt_sigprocmask, how, &set, NULL, sizeof(ksigset));
}

void sl_init_block_signals(void)
{
	(void)sigmask_raw(SIG_SETMASK, ~(ksigset)0); /* SIGKILL/SIGSTOP are dropped by the kernel */
}

/* Default disposition through the raw syscall (glibc refuses signals 32, 33). */
static void set_default(int sig)
{
	struct {
		void *handler;
		unsigned long flags;
		void *restorer;
		ksigset mask;
	} ksa = { SIG_DFL, 0, NULL, 0 };
	(void)syscall(SYS_rt_sigaction, sig, &ksa, NULL, sizeof(ksigset));
}

/* Wait for a signal (at most timeout, or forever when NULL); 0 on timeout. */
static int wait_signal(ksigset set, siginfo_t *si, const struct timespec *timeout)
{
	long sig = syscall(SYS_rt_sigtimedwait, &set, si, timeout, sizeof(ksigset));
	return sig < 0 ? 0 : (int)sig;
}

/* ---------------- ending the subtree ---------------- */

/*
 * SIGKILL every child of init listed in /proc/thread-self/children.
 * Returns how many were listed, or -1 when the list cannot be read.  The
 * pids are init's unreaped children, so none of them can have been reused.
 */
static int kill_children(int fd)
{
	if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	char buf[512];
	long pid = 0; /* digits so far; a number may span two reads */
	int listed = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		for (ssize_t i = 0; i <= n; i++) {
			char ch = i < n ? buf[i] : ' '; /* EOF ends the last number */
			if (i == n && n > 0)
				break;
			if (ch >= '0' && ch <= '9') {
				if (pid < INT32_MAX)
					pid = pid * 10 + (ch - '0');
				continue;
			}
			if (pid > 0 && pid < INT32_MAX) {
				(void)kill((pid_t)pid, SIGKILL);
				listed++;
			}
			pid = 0;
		}
		if (n == 0)
			return listed;
	}
}

static void note_cmd(struct init_state *st, pid_t pid, int status)
{
	if (pid == st->cmd && !st->cmd_done) {
		st->cmd_status = status;
		st->cmd_done = true;
	}
}

/* Reap every child that has exited.  True while children remain. */
static bool reap_exited(struct init_state *st)
{
	for (;;) {
		int status = 0;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid > 0) {
			note_cmd(st, pid, status);
			continue;
		}
		if (pid < 0 && errno == EINTR)
			continue;
		return !(pid < 0 && errno == ECHILD);
	}
}

/*
 * Kill the whole subtree.  Invariant: the topmost live descendants are
 * always init's own children (an orphan is reparented to the nearest
 * subreaper, init or one below it that is itself alive), so killing the
 * children until there are none ends every descendant.
 */
static void kill_tree(struct init_state *st)
{
	const struct timespec ms = { 0, 1000000 };
	for (int round = 0; round < SL_INIT_KILL_ROUNDS; round++) {
		if (!st->cmd_done)
			(void)kill(st->cmd, SIGKILL);
		int listed = kill_children(st->in->children_fd);
		if (!reap_exited(st))
			return;
		/* Blind without /proc: the parent's group sweep kills the rest
		 * of the process group once init is gone. */
		if (listed < 0 && st->cmd_done)
			return;
		siginfo_t si;
		(void)wait_signal(KSIG(SIGCHLD), &si, &ms);
	}
}

/* ---------------- mirroring the command ---------------- */

/*
 * End init the way the command ended: same exit code, or death by the
 * same signal.  No core file of init's own (RLIMIT_CORE 0; the filter
 * denies PR_SET_DUMPABLE); the command dumped its own if it was allowed to.
 */
static __attribute__((noreturn)) void mirror_exit(const struct init_state *st)
{
	int status = st->cmd_done ? st->cmd_status : SIGKILL; /* unknown: as if killed */
	if (WIFEXITED(status))
		_exit(WEXITSTATUS(status));
	int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
	struct rlimit none = { 0, 0 };
	(void)setrlimit(RLIMIT_CORE, &none);
	set_default(sig);
	(void)kill(st->in->self, sig);
	(void)sigmask_raw(SIG_UNBLOCK, KSIG(sig)); /* delivered here */
	_exit(128 + sig); /* only if sig cannot kill: keep the shell convention */
}

static __attribute__((noreturn)) void finish(struct init_state *st)
{
	kill_tree(st);
	mirror_exit(st);
}

/*
 * The command stopped (job control on a terminal): stop init with the same
 * signal so the parent sees the stop (tty.c), and continue the command
 * once init is continued.  A stop signal other than SIGSTOP is raised and
 * briefly unblocked, so the kernel applies its default action: it stops
 * init exactly as it stopped the command (or, in an orphaned process
 * group, discards it as it did for the command).
 */
static void mirror_stop(const struct init_state *st, int sig)
{
	(void)kill(st->in->self, sig);
	if (sig != SIGSTOP) {
		(void)sigmask_raw(SIG_UNBLOCK, KSIG(sig));
		(void)sigmask_raw(SIG_BLOCK, KSIG(sig));
	}
	if (!st->cmd_done)
		(void)kill(st->cmd, SIGCONT);
}

/* SIGCHLD: reap what exited, mirror the command's stops.  True once the
 * command has exited. */
static bool on_child(struct init_state *st)
{
	int flags = WNOHANG | (st->in->mirror_stops ? WUNTRACED : 0);
	for (;;) {
		int status = 0;
		pid_t pid = waitpid(-1, &status, flags);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return st->cmd_done;
		if (!WIFSTOPPED(status))
			note_cmd(st, pid, status);
		else if (pid == st->cmd && WSTOPSIG(status) != SIGSTOP)
			mirror_stop(st, WSTOPSIG(status));
		/* SIGSTOP is not job control: it is how the supervisor pauses
		 * and throttles (max_cpu) the sandbox; mirrored, it would stop
		 * the caller's own job every time. */
	}
}

/* Sent with kill() by the supervising process: only it can end the sandbox. */
static bool from_parent(const struct init_state *st, const siginfo_t *si)
{
	return si->si_code == SI_USER && si->si_pid == st->in->parent;
}

/*
 * The caller's SL_INIT_SIG_FORWARD: send si_value's signal to our process
 * group, which is the sandbox's (init ignores its own copy: it is not from
 * the parent).  A sigqueue's sender pid can be forged, so the request is
 * not trusted: only signals the sandbox could send its own group anyway
 * (kill(0, sig)) are passed — never SIGKILL or SIGSTOP, which would reach
 * init, which the sandbox itself cannot signal.
 */
static void forward(const siginfo_t *si)
{
	static const int ok[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
		                  SIGUSR1, SIGUSR2, SIGWINCH, SIGCONT };
	if (si->si_code != SI_QUEUE)
		return;
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
		if (si->si_value.sival_int == ok[i])
			(void)kill(0, ok[i]);
}

void sl_init_main(const struct sl_init *in, pid_t cmd)
{
	struct init_state st = { in, cmd, 0, false };
	if (in->mirror_stops) {
		/* Inherited from the caller they might be ignored: then init
		 * could not stop like the command.  (The command has its own.) */
		set_default(SIGTSTP);
		set_default(SIGTTIN);
		set_default(SIGTTOU);
	}
	for (;;) {
		siginfo_t si;
		int sig = wait_signal(~(ksigset)0, &si, NULL);
		if (sig == SIGCHLD) {
			if (on_child(&st))
				finish(&st);
		} else if (sig == SL_INIT_SIG_KILL || sig == SL_INIT_SIG_PDEATH) {
			if (from_parent(&st, &si))
				finish(&st);
		} else if (sig == SL_INIT_SIG_FORWARD) {
			forward(&si);
		}
		/* Anything else (terminal signals included) is for the command. */
	}
}

/* ---------------- parent side ---------------- */

void sl_init_request_kill(pid_t init)
{
	if (init <= 1)
		return;
	/* The request first: if init is stopped (mirroring a stop), SIGCONT
	 * lets it act on the request at once. */
	(void)kill(init, SL_INIT_SIG_KILL);
	(void)kill(init, SIGCONT);
}

bool sl_init_sees_children(void)
{
	static atomic_int known; /* 0 unknown, 1 yes, 2 no */
	int k = atomic_load(&known);
	if (k == 0) {
		k = access("/proc/thread-self/children", R_OK) == 0 ? 1 : 2;
		atomic_store(&known, k);
	}
	return k == 1;
}
