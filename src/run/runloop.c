/*
 * runloop.c — the run loop of one run (runloop.h): the command's output
 * captured under its cap, the deadline, ending the sandbox through init
 * (killpg after a grace), then the reaping, the sweep of what is left of
 * the group and why the run ended.  run.c owns the run and calls it.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/init.h"
#include "run/proctree.h"
#include "run/result.h"
#include "run/runloop.h"
#include "supervisor/supervisor.h"

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

/* Keep what fits under the cap, count the rest as dropped. */
static void keep(const struct sl_stream *s, const uint8_t *p, size_t n)
{
	size_t room = n;
	if (s->cap && s->buf->len + n > s->cap)
		room = s->buf->len >= s->cap ? 0 : (size_t)(s->cap - s->buf->len);
	/* Out of memory below the cap: the result says what is missing
	 * rather than the run failing (or the command blocking on a pipe). */
	if (room && sl_buf_append(s->buf, p, room) < 0)
		room = 0;
	*s->dropped += n - room;
}

/*
 * Read once from *fd; closes *fd (sets -1) at EOF.  -1 on a read error:
 * the loop cannot tell what the command wrote, so the run fails rather
 * than returning a result with output silently missing.
 */
static int pump(int *fd, const struct sl_stream *s)
{
	uint8_t chunk[SL_READ_CHUNK]; /* on the stack: no TLS in a dlopen()ed library */
	ssize_t n = read(*fd, chunk, sizeof chunk);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n < 0)
		return -1;
	if (n == 0) {
		close(*fd);
		*fd = -1;
		return 0;
	}
	keep(s, chunk, (size_t)n);
	return 0;
}

static int loop_fail(struct sl_loop_error *le, const char *what)
{
	le->e = errno;
	le->what = what;
	return -1;
}

/*
 * Poll the output pipes (and optionally the pidfd).  1 if the pidfd is
 * ready, 0 if not, -1 on a failure of poll or read (*le says which).
 * EINTR is the only poll error that means "nothing happened": EINVAL
 * (e.g. RLIMIT_NOFILE lowered under us), ENOMEM, EFAULT would repeat at
 * once, and a loop that took them for "nothing ready" would spin past
 * every deadline.
 */
static int poll_once(struct sl_launch *L, const struct sl_stream *out, const struct sl_stream *err,
                     int pidfd, int wait_ms, int *npolled, struct sl_loop_error *le)
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
		return 0;
	int pr = poll(pf, (nfds_t)n, wait_ms);
	if (pr < 0 && errno == EINTR)
		return 0;
	if (pr < 0)
		return loop_fail(le, "poll");
	*npolled = pr;
	for (int i = 0; i < n; i++)
		if (pf[i].revents & POLLNVAL) { /* one of our fds was closed under us */
			errno = EBADF;
			return loop_fail(le, "poll");
		}
	if (io >= 0 && pf[io].revents && pump(&L->out_fd, out) < 0)
		return loop_fail(le, "read(stdout)");
	if (ie >= 0 && pf[ie].revents && pump(&L->err_fd, err) < 0)
		return loop_fail(le, "read(stderr)");
	return ip >= 0 && pf[ip].revents ? 1 : 0;
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
static int loop_wait_ms(const struct sl_launch *L, int64_t deadline, const struct ending *e,
                        int64_t throttle_ms)
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
	if (throttle_ms >= 0 && !e->asked_ms && (wait < 0 || throttle_ms < wait))
		wait = throttle_ms;
	return wait < 0 ? -1 : (int)(wait > 60000 ? 60000 : wait);
}

/*
 * Capture output until the child exits; end the sandbox at the deadline.
 * With a terminal (sl_tty active), wake up regularly to notice job-control
 * stops of the child (see tty.c).  The timeout is wall-clock time, time
 * spent stopped included.  0, or -1 when the loop itself failed (*le):
 * the caller then kills the sandbox without it.
 */
int sl_io_loop(const struct sl_loop_owner *o, struct sl_launch *L, const struct sl_stream *out,
               const struct sl_stream *err, struct sl_supervisor *sup, uint64_t timeout_ms,
               const atomic_bool *caller_kill, bool *timed_out, struct sl_loop_error *le)
{
	int64_t deadline = timeout_ms ? sl_now_ms() + (int64_t)timeout_ms : 0;
	struct ending e = { 0, false };
	*timed_out = false;
	for (;;) {
		if (deadline && !e.asked_ms && sl_now_ms() >= deadline) {
			*timed_out = true;
			o->thaw_for_end(o->h);
			end_sandbox(L, &e, true);
		} else if (e.asked_ms || sl_supervisor_killed(sup, NULL) || atomic_load(caller_kill)) {
			/* respond.c or sandlock_handle_kill already asked init */
			if (!e.asked_ms)
				o->thaw_for_end(o->h);
			end_sandbox(L, &e, false);
		}
		int failed = sl_supervisor_failed(sup);
		if (failed) {
			errno = failed;
			return loop_fail(le, "supervisor");
		}
		int npolled;
		int wait = loop_wait_ms(L, deadline, &e, o->throttle_wait_ms(o->h));
		int rc = poll_once(L, out, err, L->pidfd, wait, &npolled, le);
		if (rc != 0)
			return rc > 0 ? 0 : -1;
		if (!e.asked_ms) {
			sl_tty_watch(&L->tty);
			o->throttle_tick(o->h);
		}
	}
}

/* Bounded drain of whatever group members wrote before they died. */
void sl_io_drain(struct sl_launch *L, const struct sl_stream *out, const struct sl_stream *err)
{
	int64_t stop = sl_now_ms() + SL_DRAIN_MAX_MS;
	struct sl_loop_error le;
	while ((L->out_fd >= 0 || L->err_fd >= 0) && sl_now_ms() < stop) {
		int npolled;
		if (poll_once(L, out, err, -1, SL_DRAIN_QUIET_MS, &npolled, &le) < 0 ||
		    npolled == 0)
			break;
	}
}

/* True once the child has exited (not reaped: WNOWAIT). */
bool sl_child_exited(pid_t pid)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/*
 * The loop failed: end the sandbox without it, using no new fd (the
 * failure may be fd exhaustion).  init is asked first, so it can end
 * processes that left the group; after the grace, killpg and the cgroup.
 */
void sl_end_unsupervised(struct sl_launch *L, struct sl_cgroup *cg)
{
	sl_init_request_kill(L->pid);
	const struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < SL_KILL_GRACE_MS && !sl_child_exited(L->pid); i++)
		nanosleep(&ms, NULL);
	if (!sl_child_exited(L->pid)) {
		killpg(L->pid, SIGKILL); /* init is unreaped: its pgid is still ours */
		sl_cgroup_kill(cg);
	}
}

void sl_wait_child(pid_t pid, siginfo_t *si, int flags)
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
 * reused: kill every leftover of the group now, then reap.  With a
 * cgroup, cgroup.kill is the final sweep: it reaches every process of the
 * sandbox, also those that left the group and were orphaned to the
 * host's init by an init that died early.
 */
void sl_reap_and_sweep(struct sl_launch *L, siginfo_t *si, struct sl_cgroup *cg)
{
	sl_wait_child(L->pid, si, WNOWAIT);
	/*
	 * init (init.c) ends its whole subtree and reaps it before it exits
	 * on its own, and every process of the sandbox is in that subtree (it
	 * is a subreaper).  So after a voluntary exit of an init that could
	 * see its children, nothing of the group is left, and the /proc scan
	 * below (~1 ms, a third of a run of /bin/true) is not needed.  A
	 * death by a signal may be an outside SIGKILL that gave init no
	 * chance: then sweep.
	 */
	bool clean = si->si_code == CLD_EXITED && sl_init_sees_children();
	if (clean)
		killpg(L->pid, SIGKILL); /* belt and braces; cheap */
	else
		sweep_group(L->pid);
	sl_cgroup_kill(cg); /* one read of cgroup.events when already empty */
	sl_wait_child(L->pid, si, 0);
}

void sl_set_reason(sandlock_result_t *r, const siginfo_t *si, bool timed_out,
                   struct sl_supervisor *sup, bool caller_kill)
{
	int ksig = 0;
	/* The caller ended it (sandlock_handle_kill): whatever init's status
	 * (a command killed before exec makes init exit 127), it was a kill. */
	if (caller_kill) {
		r->reason = SANDLOCK_EXIT_KILLED;
		r->signal = SIGKILL;
		r->exit_code = 128 + SIGKILL;
		return;
	}
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

/* The run loop failed (*le): the sandbox was killed; there is no result. */
void sl_loop_error_report(const struct sl_loop_error *le, int *err, char **msg)
{
	sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
	        "supervising the run failed (%s: %s); the sandbox was killed",
	        le->what ? le->what : "run loop", strerror(le->e));
}
