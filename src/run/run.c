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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/cgroup.h"
#include "supervisor/handler.h"
#include "launch/init.h"
#include "launch/launch.h"
#include "run/pause.h"
#include "net/portmap.h"
#include "run/proctree.h"
#include "ref/refabi.h"
#include "run/result.h"
#include "supervisor/supervisor.h"
#include "run/throttle.h"
#include "run/usage.h"

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
/* Once the sandbox is gone, how long the run waits for handlers still
 * running (the guest that called them is dead) before it abandons their
 * threads: the timeout bounds the whole run, not only the guest. */
#define SL_HANDLER_GRACE_MS 200
/* pause waits at most this long for a just-released command to exec. */
#define SL_EXEC_WAIT_MS 2000

/* One captured stream: where it goes and how much of it may be kept. */
struct stream {
	sl_buf *buf;
	uint64_t *dropped; /* bytes read past the cap (or lost to OOM), discarded */
	uint64_t cap;      /* 0 = unlimited */
};

/* Keep what fits under the cap, count the rest as dropped. */
static void keep(const struct stream *s, const uint8_t *p, size_t n)
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
static int pump(int *fd, const struct stream *s)
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

/* Why the loop could not go on (its own poll/read failed). */
struct loop_error {
	int e;
	const char *what;
};

static int loop_fail(struct loop_error *le, const char *what)
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
static int poll_once(struct sl_launch *L, const struct stream *out, const struct stream *err,
                     int pidfd, int wait_ms, int *npolled, struct loop_error *le)
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

/* The CPU throttle of a handle (defined with the handle, below). */
static int64_t throttle_wait_ms(sandlock_handle_t *h);
static void throttle_tick(sandlock_handle_t *h);
static void thaw_for_end(sandlock_handle_t *h);

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
static int io_loop(sandlock_handle_t *h, struct sl_launch *L, const struct stream *out,
                   const struct stream *err, struct sl_supervisor *sup, uint64_t timeout_ms,
                   const atomic_bool *caller_kill, bool *timed_out, struct loop_error *le)
{
	int64_t deadline = timeout_ms ? sl_now_ms() + (int64_t)timeout_ms : 0;
	struct ending e = { 0, false };
	*timed_out = false;
	for (;;) {
		if (deadline && !e.asked_ms && sl_now_ms() >= deadline) {
			*timed_out = true;
			thaw_for_end(h);
			end_sandbox(L, &e, true);
		} else if (e.asked_ms || sl_supervisor_killed(sup, NULL) || atomic_load(caller_kill)) {
			/* respond.c or sandlock_handle_kill already asked init */
			if (!e.asked_ms)
				thaw_for_end(h);
			end_sandbox(L, &e, false);
		}
		int failed = sl_supervisor_failed(sup);
		if (failed) {
			errno = failed;
			return loop_fail(le, "supervisor");
		}
		int npolled;
		int wait = loop_wait_ms(L, deadline, &e, throttle_wait_ms(h));
		int rc = poll_once(L, out, err, L->pidfd, wait, &npolled, le);
		if (rc != 0)
			return rc > 0 ? 0 : -1;
		if (!e.asked_ms) {
			sl_tty_watch(&L->tty);
			throttle_tick(h);
		}
	}
}

/* Bounded drain of whatever group members wrote before they died. */
static void drain(struct sl_launch *L, const struct stream *out, const struct stream *err)
{
	int64_t stop = sl_now_ms() + SL_DRAIN_MAX_MS;
	struct loop_error le;
	while ((L->out_fd >= 0 || L->err_fd >= 0) && sl_now_ms() < stop) {
		int npolled;
		if (poll_once(L, out, err, -1, SL_DRAIN_QUIET_MS, &npolled, &le) < 0 ||
		    npolled == 0)
			break;
	}
}

/* True once the child has exited (not reaped: WNOWAIT). */
static bool child_exited(pid_t pid)
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
static void end_unsupervised(struct sl_launch *L, struct sl_cgroup *cg)
{
	sl_init_request_kill(L->pid);
	const struct timespec ms = { 0, 1000000 };
	for (int i = 0; i < SL_KILL_GRACE_MS && !child_exited(L->pid); i++)
		nanosleep(&ms, NULL);
	if (!child_exited(L->pid)) {
		killpg(L->pid, SIGKILL); /* init is unreaped: its pgid is still ours */
		sl_cgroup_kill(cg);
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
 * reused: kill every leftover of the group now, then reap.  With a
 * cgroup, cgroup.kill is the final sweep: it reaches every process of the
 * sandbox, also those that left the group and were orphaned to the
 * host's init by an init that died early.
 */
static void reap_and_sweep(struct sl_launch *L, siginfo_t *si, struct sl_cgroup *cg)
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
	bool clean = si->si_code == CLD_EXITED && sl_init_sees_children();
	if (clean)
		killpg(L->pid, SIGKILL); /* belt and braces; cheap */
	else
		sweep_group(L->pid);
	sl_cgroup_kill(cg); /* one read of cgroup.events when already empty */
	wait_child(L->pid, si, 0);
}

static void set_reason(sandlock_result_t *r, const siginfo_t *si, bool timed_out,
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

/* The run loop failed (*le): the sandbox was killed; there is no result. */
static void loop_error_report(const struct loop_error *le, int *err, char **msg)
{
	sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
	        "supervising the run failed (%s: %s); the sandbox was killed",
	        le->what ? le->what : "run loop", strerror(le->e));
}

/* ================= a run as an object ================= */

enum hstate {
	H_CREATED, /* launched, the command waits for "ready" */
	H_RUNNING, /* released; finish() runs (inline or on the I/O thread) */
};

/*
 * One run.  Lifetimes: the handlers from sandlock_spawn's entry until
 * handle_free (released there, and only there, via sl_handlers_release);
 * the supervisor and the launch until handle_free; init (L.pid) unreaped
 * until finish() reaps it.  mu guards state, reaping and finished; every
 * signal to init or its tree is sent under mu with reaping false, so it
 * can never reach a recycled pid.
 */
struct sandlock_handle {
	const sandlock_sandbox_t *sb;
	struct sl_handlers hs;
	struct sl_supervisor *sup;
	struct sl_launch L;
	bool prepared; /* L holds resources (sl_launch_cleanup) */
	bool launched; /* init exists (forked, not yet reaped by finish) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum hstate state;
	bool reaping;     /* init has exited: no more signals */
	bool finished;    /* finish() is done: r is final */
	atomic_bool caller_kill; /* sandlock_handle_kill (or free) ended it */
	bool thread;      /* the I/O thread was started */
	bool joined;
	bool taken;       /* the result went to the caller */
	pthread_t io;
	/* The run's cgroup (cgroup.c): init joins it at birth; cgroup.kill is
	 * the final sweep.  Destroyed with the handle. */
	struct sl_cgroup cg;
	bool abandoned;            /* a handler thread was left running */
	struct loop_error le;      /* the run loop failed (le.what set) */
	/* A duplicate of the sync socket kept after the release: it hangs up
	 * once the command has exec'd (or died) and init has left vfork. */
	int exec_fd;
	/* max_cpu without a CPU cgroup (throttle.c), ticked by the run loop;
	 * paused: the caller's pause, which the throttle never undoes. */
	struct sl_throttle thr;
	bool paused;
	bool frozen; /* the pause froze cg (cgroup.freeze), not the signal tree */
	sandlock_result_t *r;
	/* Called last in handle_destroy (sl_handle_on_free): what a caller
	 * made for this run only, as refspawn.c's policy under a name. */
	void (*on_free)(void *);
	void *on_free_arg;
};

static void handle_lock(sandlock_handle_t *h)
{
	pthread_mutex_lock(&h->mu);
}

static void handle_unlock(sandlock_handle_t *h)
{
	pthread_mutex_unlock(&h->mu);
}

/*
 * Capture, wait, reap, sweep and fill h->r: the whole run after release.
 * If the loop itself fails (h->le), the sandbox is killed without it and
 * h->r is dropped: the wait reports the failure instead of a result.
 */
static void finish(sandlock_handle_t *h)
{
	struct sl_launch *L = &h->L;
	const sandlock_sandbox_t *sb = h->sb;
	struct stream out = { &h->r->out, &h->r->out_dropped, sb->max_output };
	struct stream errs = { &h->r->err, &h->r->err_dropped, sb->max_output };
	bool timed_out;
	siginfo_t si;
	int rc = io_loop(h, L, &out, &errs, h->sup, sb->timeout_ms, &h->caller_kill, &timed_out,
	                 &h->le);
	if (rc < 0)
		end_unsupervised(L, &h->cg);
	handle_lock(h);
	h->reaping = true; /* init has exited; from now on nobody signals it */
	handle_unlock(h);
	/* init has exited and is not reaped yet: from now on no decision
	 * can reach the kernel or signal init's (soon free) pid. */
	sl_supervisor_close(h->sup);
	reap_and_sweep(L, &si, &h->cg);
	sl_tty_end(&L->tty); /* the group is gone: the terminal is the caller's again */
	if (rc == 0)
		drain(L, &out, &errs);
	h->abandoned = !sl_supervisor_stop(h->sup, SL_HANDLER_GRACE_MS);
	h->r->abandoned = h->abandoned;
	set_reason(h->r, &si, timed_out, h->sup, atomic_load(&h->caller_kill));
	sl_supervisor_finish(h->sup, h->r); /* e.g. commit or abort the COW workdir */
	if (rc < 0) {
		sandlock_result_free(h->r);
		h->r = NULL;
	}
	handle_lock(h);
	h->finished = true;
	pthread_cond_broadcast(&h->cv);
	handle_unlock(h);
}

static void *io_main(void *arg)
{
	finish(arg);
	return NULL;
}

/* Release the command and have the I/O thread supervise it (mu held). */
static int start_locked(sandlock_handle_t *h, bool release)
{
	if (release) {
		h->exec_fd = fcntl(h->L.sync_fd, F_DUPFD_CLOEXEC, 3);
		(void)sl_launch_release(&h->L); /* on failure the child died: finish() reports it */
	}
	h->state = H_RUNNING;
	if (release && h->sb->on_start)
		h->sb->on_start(h->sb->on_start_ud, (int32_t)h->L.pid);
	if (pthread_create(&h->io, NULL, io_main, h) != 0) {
		/* No thread: end the sandbox and finish here, so that the handle
		 * is still consistent (wait returns the killed result). */
		atomic_store(&h->caller_kill, true);
		killpg(h->L.pid, SIGKILL);
		handle_unlock(h);
		finish(h);
		handle_lock(h);
		return -1;
	}
	h->thread = true;
	return 0;
}

/* Allocate the handle and take ownership of the handlers. */
static sandlock_handle_t *handle_new(const sandlock_sandbox_t *sb,
                                     const sandlock_registration_t *regs, size_t nregs)
{
	sandlock_handle_t *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->sb = sb;
	h->hs = (struct sl_handlers){ regs, nregs };
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&h->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&h->mu, NULL);
	h->exec_fd = -1;
	h->cg.dirfd = h->cg.parentfd = h->cg.procs = -1; /* none until launch() */
	return h;
}

/* Everything but the result; the sandbox is gone (or never existed). */
static void handle_destroy(sandlock_handle_t *h)
{
	/* The supervisor (and its workers) before the handlers they call. */
	sl_supervisor_free(h->sup);
	if (h->prepared)
		sl_launch_cleanup(&h->L);
	if (h->exec_fd >= 0)
		close(h->exec_fd);
	sl_cgroup_destroy(&h->cg);
	sl_handlers_release(&h->hs, h->abandoned);
	pthread_mutex_destroy(&h->mu);
	pthread_cond_destroy(&h->cv);
	if (h->on_free)
		h->on_free(h->on_free_arg);
	free(h);
}

void sl_handle_on_free(sandlock_handle_t *h, void (*fn)(void *), void *arg)
{
	h->on_free = fn;
	h->on_free_arg = arg;
}

/*
 * Supervisor, prepare, fork, listener, supervisor thread: everything up to
 * (not including) the release.  On failure nothing is left running.
 */
static int launch(sandlock_handle_t *h, const char *const *argv, uint32_t argc,
                  const sandlock_spawn_opts_t *opts, int *err, char **msg)
{
	h->sup = sl_supervisor_new(h->sb, &h->hs, err, msg);
	if (!h->sup)
		return -1;
	const int *nrs = NULL;
	size_t nt = sl_supervisor_trapped(h->sup, &nrs);
	struct sl_launch *L = &h->L;
	int rc = sl_launch_prepare(L, h->sb, argv, argc, nrs, nt, err, msg);
	h->prepared = true; /* prepare initialises L first, even when it fails */
	if (rc < 0 || sl_launch_set_options(L, opts, err, msg) < 0 ||
	    sl_launch_grant_stdio(L, err, msg) < 0 ||
	    sl_supervisor_use_ruleset(h->sup, L->ruleset_fd, err, msg) < 0)
		return -1;
	/* The limits' v2 group if there is one, else one of our own; without
	 * either, init and killpg alone (README). */
	if (!sl_cgroup_adopt(&h->cg, L->cg.v2.dir) && sl_cgroup_create(&h->cg))
		L->cgroup_procs = h->cg.procs;
	L->cgroup_dir = h->cg.dirfd;
	if (sl_launch_start(L, err, msg) < 0)
		return -1;
	h->r = calloc(1, sizeof(*h->r));
	if (!h->r || sl_supervisor_start(h->sup, L->listener, L->pid, err, msg) < 0) {
		if (!h->r)
			sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		siginfo_t si;
		kill(L->pid, SIGKILL);
		wait_child(L->pid, &si, 0);
		return -1;
	}
	if (h->cg.dirfd >= 0)
		(void)sl_cgroup_confirm(&h->cg); /* the child did not join: no cgroup */
	sl_throttle_init(&h->thr, L->cg.cpu_throttle ? h->sb->max_cpu : 0, L->pid, h->cg.dirfd);
	h->launched = true;
	return 0;
}

static void clear_err(int *err, char **msg)
{
	if (err)
		*err = SANDLOCK_OK;
	if (msg)
		*msg = NULL;
}

/* A handle up to the release; NULL (handlers released) on failure. */
static sandlock_handle_t *spawn_created(const sandlock_sandbox_t *sb, const char *const *argv,
                                        uint32_t argc, const sandlock_registration_t *regs,
                                        size_t nregs, const sandlock_spawn_opts_t *opts,
                                        int *err, char **msg)
{
	/* The run owns the handlers from here on, whatever happens: they are
	 * released once, in handle_destroy (sl_handlers_release). */
	sandlock_handle_t *h = handle_new(sb, regs, nregs);
	if (!h) {
		struct sl_handlers hs = { regs, nregs };
		sl_handlers_release(&hs, false); /* the one other place: no handle to own them */
		sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		return NULL;
	}
	if (argc == 0 && sb && sb->image_argv.n) { /* the image's own command */
		argv = (const char *const *)sb->image_argv.v;
		argc = (uint32_t)sb->image_argv.n;
	}
	if (validate(sb, argv, argc, err, msg) < 0 || launch(h, argv, argc, opts, err, msg) < 0) {
		free(h->r);
		h->r = NULL;
		handle_destroy(h);
		return NULL;
	}
	h->state = H_CREATED;
	return h;
}

SL_EXPORT sandlock_handle_t *sandlock_spawn(const sandlock_sandbox_t *sb, const char *const *argv,
                                            uint32_t argc, const sandlock_registration_t *regs,
                                            size_t nregs, const sandlock_spawn_opts_t *opts,
                                            int *err, char **err_msg)
{
	clear_err(err, err_msg);
	sandlock_handle_t *h = spawn_created(sb, argv, argc, regs, nregs, opts, err, err_msg);
	if (h && !(opts && (opts->flags & SANDLOCK_SPAWN_CREATE))) {
		handle_lock(h);
		int rc = start_locked(h, true);
		handle_unlock(h);
		if (rc < 0) {
			sl_fail(err, err_msg, SANDLOCK_ERR_SYSTEM, "cannot start the I/O thread");
			sandlock_handle_free(h);
			return NULL;
		}
	}
	return h;
}

SL_EXPORT int sandlock_handle_start(sandlock_handle_t *h)
{
	if (!h)
		return -1;
	handle_lock(h);
	int rc = h->state == H_CREATED ? start_locked(h, true) : -1;
	handle_unlock(h);
	return rc;
}

SL_EXPORT int32_t sandlock_handle_pid(const sandlock_handle_t *h)
{
	return h ? (int32_t)h->L.cmd_pid : 0; /* the reference's "not available" */
}

SL_EXPORT int sandlock_handle_ports(sandlock_handle_t *h, uint16_t *virt, uint16_t *real,
                                   size_t max)
{
	if (!h)
		return -1;
	struct sl_portmap *m = h->sup ? sl_supervisor_ports(h->sup) : NULL;
	if (!m || ((!virt || !real) && max))
		return m ? -1 : 0;
	return (int)sl_portmap_remapped(m, virt, real, max);
}

SL_EXPORT int sandlock_handle_init_pid(const sandlock_handle_t *h)
{
	return h ? (int)h->L.pid : -1;
}

/* Is init alive and signalable?  Caller holds mu. */
static bool signalable(const sandlock_handle_t *h)
{
	return !h->reaping && !h->finished && !child_exited(h->L.pid);
}

SL_EXPORT bool sandlock_handle_is_running(sandlock_handle_t *h)
{
	if (!h)
		return false;
	handle_lock(h);
	bool running = signalable(h);
	handle_unlock(h);
	return running;
}

/*
 * A command stopped between its release and its execve would keep init
 * suspended in vfork, unable to end the sandbox when asked.  So pause
 * only once the command has exec'd: the sync socket hangs up then (its
 * last copies, the command's and init's, are closed by exec and right
 * after vfork).  Bounded: a wedged start is paused anyway.
 */
static bool exec_seen(sandlock_handle_t *h, int64_t wait_ms)
{
	if (h->exec_fd < 0)
		return true;
	struct pollfd pf = { h->exec_fd, POLLRDHUP, 0 };
	int64_t stop = sl_now_ms() + wait_ms;
	for (;;) {
		int left = (int)(stop - sl_now_ms());
		int pr = poll(&pf, 1, left > 0 ? left : 0);
		if (pr > 0 && (pf.revents & (POLLHUP | POLLRDHUP | POLLERR))) {
			close(h->exec_fd); /* answered for good */
			h->exec_fd = -1;
			return true;
		}
		if (pr == 0 || (pr < 0 && errno != EINTR))
			return false;
	}
}

static void wait_exec(sandlock_handle_t *h)
{
	(void)exec_seen(h, SL_EXEC_WAIT_MS);
}

static int64_t throttle_wait_ms(sandlock_handle_t *h)
{
	return sl_throttle_wait_ms(&h->thr);
}

/* Under mu, like every signal to the tree, and only once the command has
 * exec'd (for the reason above): until then the throttle starts afresh. */
static void throttle_tick(sandlock_handle_t *h)
{
	if (!h->thr.pct || sl_throttle_wait_ms(&h->thr) > 0)
		return;
	handle_lock(h);
	if (!exec_seen(h, 0))
		sl_throttle_init(&h->thr, h->thr.pct, h->thr.init, h->thr.cg_dirfd);
	else if (!h->reaping)
		sl_throttle_tick(&h->thr, h->paused);
	handle_unlock(h);
}

/*
 * Pause: the run's v2 group frozen where it has one (cgroup.c; init is
 * frozen too, see thaw_locked), else every descendant of init SIGSTOPped
 * (pause.c).  Under mu.
 */
static int pause_locked(sandlock_handle_t *h)
{
	if (h->frozen)
		return 0;
	/* Not before the release: a frozen init could not wake from vfork. */
	if (sl_pause_freezer && h->state == H_RUNNING && sl_cgroup_freeze(&h->cg, true) == 0) {
		h->frozen = true;
		return 0;
	}
	return sl_pause_tree(h->L.pid, true);
}

/*
 * Resume.  The throttle may still hold the tree SIGSTOPped: then it
 * continues it at its time; a throttle that let go while the sandbox was
 * paused left its stop in place (throttle.c never continues a paused
 * sandbox), so the thaw sends that SIGCONT.  Under mu.
 */
static int resume_locked(sandlock_handle_t *h)
{
	if (h->frozen) {
		if (sl_cgroup_freeze(&h->cg, false) < 0)
			return -1;
		h->frozen = false;
		return h->thr.pct && !h->thr.stopped ? sl_pause_tree(h->L.pid, false) : 0;
	}
	if (h->thr.stopped)
		return 0; /* the throttle holds it stopped and continues it at its time */
	return sl_pause_tree(h->L.pid, false);
}

/* Before ending a frozen sandbox: init must run to end its tree (and a
 * timeout to be noticed), so the group is thawed first.  Under mu. */
static void thaw_locked(sandlock_handle_t *h)
{
	if (h->frozen && sl_cgroup_freeze(&h->cg, false) == 0)
		h->frozen = false;
}

static void thaw_for_end(sandlock_handle_t *h)
{
	handle_lock(h);
	thaw_locked(h);
	handle_unlock(h);
}

static int tree_signal(sandlock_handle_t *h, bool stop)
{
	if (!h) {
		errno = EINVAL;
		return -1;
	}
	handle_lock(h);
	int rc = -1;
	if (stop && h->state == H_RUNNING)
		wait_exec(h);
	if (!signalable(h))
		errno = ESRCH;
	else
		rc = stop ? pause_locked(h) : resume_locked(h);
	if (rc == 0)
		h->paused = stop;
	handle_unlock(h);
	return rc;
}

/* A reading of the running sandbox, under mu: init's pid names it. */
static int64_t usage(sandlock_handle_t *h, bool cpu)
{
	if (!h) {
		errno = EINVAL;
		return -1;
	}
	handle_lock(h);
	int64_t v = -1;
	errno = 0;
	if (h->state != H_RUNNING || !signalable(h))
		errno = ESRCH;
	else if (cpu)
		v = sl_usage_cpu_ns(h->L.pid, h->cg.dirfd);
	else
		v = sl_usage_memory_bytes(h->L.pid, h->L.cg.mem_dir);
	if (v < 0 && errno == 0)
		errno = EIO;
	handle_unlock(h);
	return v;
}

SL_EXPORT int64_t sandlock_handle_cpu_time_ns(sandlock_handle_t *h)
{
	return usage(h, true);
}

SL_EXPORT int64_t sandlock_handle_memory_bytes(sandlock_handle_t *h)
{
	return usage(h, false);
}

SL_EXPORT int sandlock_handle_pause(sandlock_handle_t *h)
{
	return tree_signal(h, true);
}

SL_EXPORT int sandlock_handle_resume(sandlock_handle_t *h)
{
	return tree_signal(h, false);
}

/*
 * Before the release only our own code runs in the sandbox (init and the
 * command waiting for "ready").  After it, ask init to end its whole subtree; the
 * loop falls back to killpg if init does not answer (end_sandbox).
 */
SL_EXPORT int sandlock_handle_kill(sandlock_handle_t *h)
{
	if (!h) {
		errno = EINVAL;
		return -1;
	}
	handle_lock(h);
	int rc = 0;
	if (h->state == H_CREATED) {
		/* The command still waits for "ready" (init, suspended in
		 * vfork, cannot have reaped it: the pidfd is exact).  init
		 * wakes up when it dies, mirrors its death and is reaped the
		 * usual way. */
		atomic_store(&h->caller_kill, true);
		(void)syscall(__NR_pidfd_send_signal, h->L.cmd_pidfd, SIGKILL, NULL, 0);
		(void)start_locked(h, false);
	} else if (signalable(h)) {
		atomic_store(&h->caller_kill, true);
		thaw_locked(h);
		sl_init_request_kill(h->L.pid);
	} else {
		errno = ESRCH;
		rc = -1;
	}
	handle_unlock(h);
	return rc;
}

static int take_fd(sandlock_handle_t *h, int i)
{
	if (!h)
		return -1;
	handle_lock(h);
	int fd = h->L.pipe_fd[i];
	h->L.pipe_fd[i] = -1;
	handle_unlock(h);
	return fd;
}

SL_EXPORT int sandlock_handle_stdin_fd(sandlock_handle_t *h)
{
	return take_fd(h, 0);
}

SL_EXPORT int sandlock_handle_stdout_fd(sandlock_handle_t *h)
{
	return take_fd(h, 1);
}

SL_EXPORT int sandlock_handle_stderr_fd(sandlock_handle_t *h)
{
	return take_fd(h, 2);
}

/* Wait for finished (mu held); false at the timeout. */
static bool wait_finished(sandlock_handle_t *h, int64_t timeout_ms)
{
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	if (timeout_ms > 0) {
		until.tv_sec += timeout_ms / 1000;
		until.tv_nsec += (timeout_ms % 1000) * 1000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
	}
	while (!h->finished) {
		if (timeout_ms < 0)
			pthread_cond_wait(&h->cv, &h->mu);
		else if (timeout_ms == 0 || pthread_cond_timedwait(&h->cv, &h->mu, &until) == ETIMEDOUT)
			return h->finished;
	}
	return true;
}

/* The I/O thread is done once finished is set; join it (once). */
static void join_io(sandlock_handle_t *h)
{
	if (h->thread && !h->joined) {
		pthread_join(h->io, NULL);
		h->joined = true;
	}
}

SL_EXPORT sandlock_result_t *sandlock_handle_wait_ms(sandlock_handle_t *h, int64_t timeout_ms,
                                                     int *err, char **err_msg)
{
	clear_err(err, err_msg);
	if (!h) {
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "NULL handle");
		return NULL;
	}
	handle_lock(h);
	if (h->state == H_CREATED) {
		handle_unlock(h);
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "the run was created but not started");
		return NULL;
	}
	bool done = wait_finished(h, timeout_ms);
	bool taken = h->taken;
	h->taken = h->taken || done;
	handle_unlock(h);
	if (!done) {
		sl_fail(err, err_msg, SANDLOCK_ERR_RUNNING, "still running");
		return NULL;
	}
	join_io(h);
	if (taken) {
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "the result was already taken");
		return NULL;
	}
	sandlock_result_t *r = h->r;
	h->r = NULL;
	if (!r)
		loop_error_report(&h->le, err, err_msg);
	return r;
}

SL_EXPORT void sandlock_handle_free(sandlock_handle_t *h)
{
	if (!h)
		return;
	handle_lock(h);
	bool created = h->state == H_CREATED, running = h->thread && !h->finished;
	handle_unlock(h);
	if (created || running) /* nothing of the run may outlive its handle */
		(void)sandlock_handle_kill(h);
	handle_lock(h);
	if (h->launched)
		(void)wait_finished(h, -1);
	handle_unlock(h);
	join_io(h);
	sandlock_result_free(h->r);
	handle_destroy(h);
}

SL_EXPORT sandlock_result_t *sandlock_run_with_handlers_err(const sandlock_sandbox_t *sb,
                                                            const char *const *argv,
                                                            uint32_t argc,
                                                            const sandlock_registration_t *regs,
                                                            size_t nregs, int *err,
                                                            char **err_msg)
{
	clear_err(err, err_msg);
	/* A handle without an I/O thread: this thread runs the loop itself. */
	sandlock_handle_t *h = spawn_created(sb, argv, argc, regs, nregs, NULL, err, err_msg);
	if (!h)
		return NULL;
	if (h->thr.pct) /* the throttle waits for the exec, as pause does */
		h->exec_fd = fcntl(h->L.sync_fd, F_DUPFD_CLOEXEC, 3);
	(void)sl_launch_release(&h->L); /* on failure the child died: finish() reports it */
	h->state = H_RUNNING;
	if (sb->on_start)
		sb->on_start(sb->on_start_ud, (int32_t)h->L.pid);
	finish(h);
	sandlock_result_t *r = h->r;
	h->r = NULL;
	if (!r)
		loop_error_report(&h->le, err, err_msg);
	handle_destroy(h);
	return r;
}

SL_EXPORT sandlock_result_t *sandlock_run_err(const sandlock_sandbox_t *sb,
                                              const char *const *argv, uint32_t argc, int *err,
                                              char **err_msg)
{
	return sandlock_run_with_handlers_err(sb, argv, argc, NULL, 0, err, err_msg);
}
