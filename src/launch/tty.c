/*
 * tty.c — the terminal's foreground process group during an inherit_stdio run.
 *
 * Why: the child calls setpgid(0, 0) so that the whole sandbox can be
 * killed by process group.  A process outside its terminal's foreground
 * group is stopped by SIGTTIN when it reads the terminal (SIGTTOU when it
 * changes the terminal's modes), so an interactive program would stop
 * forever.  A job-control shell solves the same problem for its jobs with
 * tcsetpgrp(); we do the same for the sandbox's group, on behalf of the
 * caller, and give the terminal back when the run ends.
 *
 * Stops: with the sandbox in the foreground, Ctrl-Z stops the sandbox's
 * group only.  The caller (typically the `sandlock` command, itself a job of
 * the user's shell) would keep waiting for a stopped child while the
 * terminal belongs to a stopped group: a silent hang.  So the run mirrors
 * the stop: it takes the terminal back and stops itself with the same
 * signal, so the shell sees its job stop.  (The caller's disposition
 * applies: if it ignores or handles the signal, or its process group is
 * orphaned so the kernel discards the stop, the run simply goes on.)  Once
 * the caller runs again, the sandbox gets the terminal back if the caller
 * is in the foreground, and is continued.  A sandbox stopped by SIGTTIN or
 * SIGTTOU while the caller is in the background stays stopped (with one
 * warning) until the caller is in the foreground again.
 *
 * Only the direct child's stops are watched (waitid(WSTOPPED) reports only
 * children), by polling every SL_TTY_POLL_MS: a SIGCHLD handler is not
 * ours to install in the caller's process.  The direct child is the
 * sandbox's init (init.c), which ignores the terminal's stop signals
 * itself but, told by the "ready" byte that a terminal is involved,
 * mirrors the command's stops with the same signal and continues the
 * command when it is continued (resume() continues the whole group).
 *
 * Every tcsetpgrp() runs with SIGTTOU blocked: a process that is not in
 * the foreground group and changes it is otherwise stopped by SIGTTOU.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "launch/tty.h"
#include "util.h"

void sl_tty_init(struct sl_tty *t)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
}

static bool caller_is_foreground(const struct sl_tty *t)
{
	return tcgetpgrp(t->fd) == t->caller;
}

static bool set_foreground(const struct sl_tty *t, pid_t pgrp)
{
	sigset_t ttou, old;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	pthread_sigmask(SIG_BLOCK, &ttou, &old);
	int rc = tcsetpgrp(t->fd, pgrp);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc == 0;
}

static void hand_over(struct sl_tty *t)
{
	if (!t->handed && set_foreground(t, t->sandbox))
		t->handed = true;
}

/*
 * Give the terminal back, but never take it from someone else: only while
 * the sandbox's group holds it, or a group that no longer exists does (a
 * program in the sandbox may have passed it on to a group of its own).
 * If the user's shell took it meanwhile, it stays with the shell.
 */
static void take_back(struct sl_tty *t)
{
	if (!t->handed)
		return;
	t->handed = false;
	pid_t fg = tcgetpgrp(t->fd);
	if (fg == t->caller || fg <= 0)
		return;
	if (fg == t->sandbox || (kill(-fg, 0) < 0 && errno == ESRCH))
		set_foreground(t, t->caller);
}

/* The sandbox's group is ours: its leader is an unreaped child, so the
 * pgid cannot have been reused. */
static void resume(struct sl_tty *t)
{
	t->waiting = 0;
	t->warned = false;
	killpg(t->sandbox, SIGCONT);
}

static const char *sig_name(int sig)
{
	const char *n = sigabbrev_np(sig);
	return n ? n : "?";
}

/* The child stopped with signal sig: mirror the stop (see the top comment). */
static void on_stop(struct sl_tty *t, int sig)
{
	take_back(t);
	bool needs_tty = sig == SIGTTIN || sig == SIGTTOU;
	/* Stopped only for lack of the terminal, which we own: no stop to mirror. */
	if (!(needs_tty && caller_is_foreground(t)))
		raise(sig); /* returns once we are continued */
	if (caller_is_foreground(t))
		hand_over(t);
	if (t->handed || !needs_tty) {
		resume(t);
		return;
	}
	t->waiting = sig;
	if (!t->warned) {
		t->warned = true;
		sl_warn("the sandboxed command is stopped (SIG%s): it needs the terminal and "
		        "continues once this process is in the terminal's foreground",
		        sig_name(sig));
	}
}

void sl_tty_start(struct sl_tty *t, pid_t pgid)
{
	sl_tty_init(t);
	/* tcgetpgrp() fails (ENOTTY) unless the fd is our controlling terminal. */
	for (int fd = 0; fd <= 2 && t->fd < 0; fd++)
		if (isatty(fd) && tcgetpgrp(fd) > 0)
			t->fd = fd;
	if (t->fd < 0)
		return;
	t->caller = getpgrp();
	t->sandbox = pgid;
	if (caller_is_foreground(t))
		hand_over(t);
}

void sl_tty_watch(struct sl_tty *t)
{
	if (t->fd < 0)
		return;
	/* One event per call: a sandbox that keeps stopping cannot spin us. */
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	int rc = waitid(P_PID, (id_t)t->sandbox, &si, WSTOPPED | WCONTINUED | WNOHANG);
	if (rc == 0 && si.si_pid == t->sandbox) {
		if (si.si_code == CLD_STOPPED)
			on_stop(t, si.si_status);
		else if (si.si_code == CLD_CONTINUED && t->waiting)
			t->waiting = 0; /* someone else continued it */
	}
	/* Started in the background and brought to the foreground since. */
	if (!t->handed && caller_is_foreground(t)) {
		hand_over(t);
		if (t->handed && t->waiting)
			resume(t);
	}
}

void sl_tty_end(struct sl_tty *t)
{
	if (t->fd < 0)
		return;
	take_back(t);
	t->fd = -1;
}
