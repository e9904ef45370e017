/*
 * run.c — orchestrate one sandboxed run: supervisor, launch, output
 * capture with an optional timeout, reaping and process-group cleanup.
 *
 * Our child is the sandbox's init (init.c): it runs the command, ends the
 * whole sandbox when the command exits and then exits as the command did,
 * so its status is the command's.  To end a run early (timeout) we ask
 * init to do it rather than SIGKILL its process group: a SIGKILLed init
 * would leave processes that left the group (setsid) orphaned to the
 * host's init, out of reach.  killpg(SIGKILL) is only the fallback for an
 * init that does not answer within SL_KILL_GRACE_MS.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "handler.h"
#include "init.h"
#include "launch.h"
#include "proctree.h"
#include "result.h"
#include "supervisor.h"

#define SL_READ_CHUNK 32768
/* Waiting for SIGKILLed group members to die: attempts x 1 ms. */
#define SL_SWEEP_ATTEMPTS 2000
/* After the child is reaped, pipes are drained until this long passes quietly. */
#define SL_DRAIN_QUIET_MS 100
/* ...but never longer than this (an escaped writer could keep a pipe busy). */
#define SL_DRAIN_MAX_MS 2000
/* Asked to end the sandbox, init normally exits within milliseconds. */
#define SL_KILL_GRACE_MS 2000
/* How often the loop notices that a handler's KILL asked init to end the
 * sandbox (respond.c), so that the fallback above also covers it. */
#define SL_KILL_CHECK_MS 250

/* Read once from *fd into b; closes *fd (sets -1) at EOF or on error. */
static void pump(int *fd, sl_buf *b)
{
	uint8_t chunk[SL_READ_CHUNK]; /* on the stack: no TLS in a dlopen()ed library */
	ssize_t n = read(*fd, chunk, sizeof chunk);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0 || sl_buf_append(b, chunk, (size_t)n) < 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Poll the output pipes (and optionally the pidfd); returns pidfd readiness. */
static bool poll_once(struct sl_launch *L, sandlock_result_t *r, int pidfd, int wait_ms,
                      int *npolled)
{
	struct pollfd pf[3];
	int n = 0, io = -1, ie = -1, ip = -1;
	if (L->out_fd >= 0)
		io = n, pf[n++] = (struct pollfd){ L->out_fd, POLLIN, 0 };
	if (L->err_fd >= 0)
		ie = n, pf[n++] = (struct pollfd){ L->err_fd, POLLIN, 0 };
	if (pidfd >= 0)
		ip = n, pf[n++] = (struct pollfd){ pidfd, POLLIN, 0 };
	*npolled = 0;
	if (n == 0)
		return false;
	int pr = poll(pf, (nfds_t)n, wait_ms);
	if (pr <= 0)
		return false;
	*npolled = pr;
	if (io >= 0 && pf[io].revents)
		pump(&L->out_fd, &r->out);
	if (ie >= 0 && pf[ie].revents)
		pump(&L->err_fd, &r->err);
	return ip >= 0 && pf[ip].revents;
}

/* Ending the run early: init was asked at asked_ms (0: not yet). */
struct ending {
	int64_t asked_ms;
	bool forced; /* the killpg fallback was used */
};

/* Ask init to end the sandbox (once); fall back to killpg after the grace. */
static void end_sandbox(struct sl_launch *L, struct ending *e, bool ask)
{
	if (!e->asked_ms) {
		if (ask)
			sl_init_request_kill(L->pid);
		e->asked_ms = sl_now_ms();
	} else if (!e->forced && sl_now_ms() - e->asked_ms >= SL_KILL_GRACE_MS) {
		/* init is unresponsive (or was SIGKILLed): the group at least.
		 * Safe: init is unreaped, so its pgid cannot have been reused. */
		killpg(L->pid, SIGKILL);
		e->forced = true;
	}
}

/* How long the loop may sleep (-1: until something happens). */
static int loop_wait_ms(const struct sl_launch *L, int64_t deadline, const struct ending *e)
{
	int64_t wait = SL_KILL_CHECK_MS;
	if (e->asked_ms && !e->forced)
		wait = e->asked_ms + SL_KILL_GRACE_MS - sl_now_ms();
	else if (e->forced)
		wait = -1;
	if (deadline && !e->asked_ms) {
		int64_t left = deadline - sl_now_ms();
		if (wait < 0 || left < wait)
			wait = left;
	}
	if (L->tty.fd >= 0 && (wait < 0 || wait > SL_TTY_POLL_MS))
		wait = SL_TTY_POLL_MS;
	return wait < 0 ? -1 : (int)(wait > 60000 ? 60000 : wait);
}

/*
 * Capture output until the child exits; end the sandbox at the deadline.
 * With a terminal (sl_tty active), wake up regularly to notice job-control
 * stops of the child (see tty.c).  The timeout is wall-clock time, time
 * spent stopped included.
 */
static void io_loop(struct sl_launch *L, sandlock_result_t *r, struct sl_supervisor *sup,
                    uint64_t timeout_ms, bool *timed_out)
{
	int64_t deadline = timeout_ms ? sl_now_ms() + (int64_t)timeout_ms : 0;
	struct ending e = { 0, false };
	*timed_out = false;
	for (;;) {
		if (deadline && !e.asked_ms && sl_now_ms() >= deadline) {
			*timed_out = true;
			end_sandbox(L, &e, true);
		} else if (e.asked_ms || sl_supervisor_killed(sup, NULL)) {
			end_sandbox(L, &e, false); /* respond.c already asked init */
		}
		int npolled;
		if (poll_once(L, r, L->pidfd, loop_wait_ms(L, deadline, &e), &npolled))
			return;
		if (!e.asked_ms)
			sl_tty_watch(&L->tty);
	}
}

/* Bounded drain of whatever group members wrote before they died. */
static void drain(struct sl_launch *L, sandlock_result_t *r)
{
	int64_t stop = sl_now_ms() + SL_DRAIN_MAX_MS;
	while ((L->out_fd >= 0 || L->err_fd >= 0) && sl_now_ms() < stop) {
		int npolled;
		poll_once(L, r, -1, SL_DRAIN_QUIET_MS, &npolled);
		if (npolled == 0)
			break;
	}
}

static void wait_child(pid_t pid, siginfo_t *si, int flags)
{
	memset(si, 0, sizeof(*si));
	while (waitid(P_PID, (id_t)pid, si, WEXITED | flags) < 0 && errno == EINTR)
		;
}

/* True if /proc/<name>/stat shows a process of group pgid that is not a zombie. */
static bool live_member(int procfd, const char *name, pid_t pgid)
{
	char state;
	long ppid, pgrp;
	return sl_proc_stat(procfd, name, &state, &ppid, &pgrp) && pgrp == (long)pgid &&
	       state != 'Z' && state != 'X';
}

/* Does any non-zombie process remain in group pgid?  (-1: cannot tell) */
static int group_alive(pid_t pgid)
{
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	int alive = 0;
	struct dirent *e;
	while (!alive && (e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]) && live_member(dirfd(d), e->d_name, pgid))
			alive = 1;
	closedir(d);
	return alive;
}

/*
 * SIGKILL is asynchronous: wait (bounded) until every member of the group
 * has actually died, so nothing of the sandbox runs after sandlock_run.
 */
static void sweep_group(pid_t pgid)
{
	for (int i = 0; i < SL_SWEEP_ATTEMPTS; i++) {
		if (killpg(pgid, SIGKILL) < 0 && errno == ESRCH)
			return;
		if (group_alive(pgid) <= 0)
			return;
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
}

/*
 * The child has exited but is not reaped, so its pid (== pgid) cannot be
 * reused: kill every leftover of the group now, then reap.
 */
static void reap_and_sweep(struct sl_launch *L, siginfo_t *si)
{
	wait_child(L->pid, si, WNOWAIT);
	/*
	 * init (init.c) ends its whole subtree and reaps it before it exits
	 * on its own, and every process of the sandbox is in that subtree (it
	 * is a subreaper).  So after a voluntary exit of an init that could
	 * see its children, nothing of the group is left, and the /proc scan
	 * below (~1 ms, a third of a run of /bin/true) is not needed.  A
	 * death by a signal may be an outside SIGKILL that gave init no
	 * chance: then sweep.
	 */
	if (si->si_code == CLD_EXITED && sl_init_sees_children()) {
		killpg(L->pid, SIGKILL); /* belt and braces; cheap */
		wait_child(L->pid, si, 0);
		return;
	}
	sweep_group(L->pid);
	wait_child(L->pid, si, 0);
}

static void set_reason(sandlock_result_t *r, const siginfo_t *si, bool timed_out,
                       struct sl_supervisor *sup)
{
	int ksig = 0;
	if (si->si_code == CLD_EXITED) {
		r->reason = SANDLOCK_EXIT_EXITED;
		r->exit_code = si->si_status;
		return;
	}
	r->signal = si->si_status;
	r->exit_code = 128 + si->si_status;
	if (sl_supervisor_killed(sup, &ksig))
		r->reason = SANDLOCK_EXIT_KILLED;
	else if (timed_out) {
		r->reason = SANDLOCK_EXIT_TIMEOUT;
		r->exit_code = 124;
	} else
		r->reason = SANDLOCK_EXIT_SIGNALED;
}

static int validate(const sandlock_sandbox_t *sb, const char *const *argv, uint32_t argc,
                    int *err, char **msg)
{
	if (!sb)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "NULL sandbox");
	if (!argv || argc == 0)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "empty command (argv NULL or argc 0)");
	for (uint32_t i = 0; i < argc; i++)
		if (!argv[i])
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "argv[%u] is NULL", i);
	if (!*argv[0])
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "empty command name");
	return 0;
}

/* Launch, supervise and wait; the child is released only once supervised. */
static sandlock_result_t *supervise(struct sl_launch *L, struct sl_supervisor *sup,
                                    const sandlock_sandbox_t *sb, int *err, char **msg)
{
	if (sl_launch_start(L, err, msg) < 0)
		return NULL;
	sandlock_result_t *r = calloc(1, sizeof(*r));
	if (!r || sl_supervisor_start(sup, L->listener, L->pid, err, msg) < 0) {
		if (!r)
			sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		siginfo_t si;
		kill(L->pid, SIGKILL);
		wait_child(L->pid, &si, 0);
		free(r);
		return NULL;
	}
	/* If this fails the child already died; the loop below reports it. */
	(void)sl_launch_release(L);
	if (sb->on_start)
		sb->on_start(sb->on_start_ud, (int32_t)L->pid);
	bool timed_out;
	siginfo_t si;
	io_loop(L, r, sup, sb->timeout_ms, &timed_out);
	reap_and_sweep(L, &si);
	sl_tty_end(&L->tty); /* the group is gone: the terminal is the caller's again */
	drain(L, r);
	sl_supervisor_stop(sup);
	set_reason(r, &si, timed_out, sup);
	return r;
}

/* Build the supervisor and the child, run, and free both (not the handlers). */
static sandlock_result_t *run_supervised(const sandlock_sandbox_t *sb, const char *const *argv,
                                         uint32_t argc, const struct sl_handlers *hs, int *err,
                                         char **msg)
{
	struct sl_supervisor *sup = sl_supervisor_new(sb, hs, err, msg);
	if (!sup)
		return NULL;
	const int *nrs = NULL;
	size_t nt = sl_supervisor_trapped(sup, &nrs);
	struct sl_launch L;
	sandlock_result_t *r = NULL;
	if (sl_launch_prepare(&L, sb, argv, argc, nrs, nt, err, msg) == 0 &&
	    sl_supervisor_use_ruleset(sup, L.ruleset_fd, err, msg) == 0)
		r = supervise(&L, sup, sb, err, msg);
	/* The supervisor (and its workers) before the handlers they call. */
	sl_supervisor_free(sup);
	sl_launch_cleanup(&L);
	return r;
}

SL_EXPORT sandlock_result_t *sandlock_run_with_handlers(const sandlock_sandbox_t *sb,
                                                        const char *const *argv, uint32_t argc,
                                                        const sandlock_registration_t *regs,
                                                        size_t nregs, int *err, char **err_msg)
{
	if (err)
		*err = SANDLOCK_OK;
	if (err_msg)
		*err_msg = NULL;
	/* The run owns the handlers from here on, whatever happens: they are
	 * released once, at the end (sl_handlers_release). */
	struct sl_handlers hs = { regs, nregs };
	sandlock_result_t *r = NULL;
	if (validate(sb, argv, argc, err, err_msg) == 0)
		r = run_supervised(sb, argv, argc, &hs, err, err_msg);
	sl_handlers_release(&hs);
	return r;
}

SL_EXPORT sandlock_result_t *sandlock_run(const sandlock_sandbox_t *sb, const char *const *argv,
                                          uint32_t argc, int *err, char **err_msg)
{
	return sandlock_run_with_handlers(sb, argv, argc, NULL, 0, err, err_msg);
}
