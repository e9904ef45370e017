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
 *
 * This file is the handle's life (spawn, start, kill, wait, free) and the
 * synchronous runs; the loop itself is runloop.c, what a caller does to a
 * running sandbox is runctl.c (run/handle.h).
 */
#include <errno.h>
#include <fcntl.h>
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

#include "compat.h"
#include "run/auditlog.h"
#include "run/cgroup.h"
#include "run/control.h"
#include "supervisor/handler.h"
#include "launch/init.h"
#include "launch/launch.h"
#include "ref/refabi.h"
#include "run/result.h"
#include "run/handle.h"
#include "run/runloop.h"
#include "supervisor/services.h"
#include "supervisor/supervisor.h"
#include "run/throttle.h"

/* Once the sandbox is gone, how long the run waits for handlers still
 * running (the guest that called them is dead) before it abandons their
 * threads: the timeout bounds the whole run, not only the guest. */
#define SL_HANDLER_GRACE_MS 200
/* How long a failed run waits for its audit records to arrive (auditlog.c:
 * usually it stops at its own marker record, long before). */
#define SL_AUDIT_WAIT_MS 200

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

/* ================= a run as an object (run/handle.h) ================= */

/* The command's own report that it never became the program (its execve
 * failed), from the sync socket, into the result's error. */
static void exec_error(sandlock_handle_t *h)
{
	int step = 0, e = h->r ? sl_launch_exec_failure(h->L.sync_fd, &step) : 0;
	if (!e)
		return;
	const char *name = strerrorname_np(e);
	char num[16];
	if (!name) {
		snprintf(num, sizeof num, "errno %d", e);
		name = num;
	}
	h->r->error = sl_asprintf("cannot %s %s: %s", step == ST_EXEC ? "execute" : "limit",
	                          h->L.exe ? h->L.exe : "the command", name);
}

/* audit_denials: listen before the command exists (its first denial may
 * come at once), and only then have Landlock log its denials. */
static void listen_audit(sandlock_handle_t *h)
{
	if (!h->sb->audit_denials || h->L.ruleset_fd < 0)
		return;
	h->audit_fd = sl_auditlog_open();
	if (h->audit_fd >= 0)
		h->L.ll_flags = LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON;
}

/* A failed run's first access Landlock refused, into the result. */
static void read_audit(sandlock_handle_t *h)
{
	if (h->audit_fd < 0 || !h->r || (h->r->exit_code == 0 && h->r->reason == SANDLOCK_EXIT_EXITED))
		return;
	(void)sl_auditlog_first(h->audit_fd, h->L.cmd_pid, SL_AUDIT_WAIT_MS, &h->r->denied,
	                        &h->r->denied_path);
	close(h->audit_fd);
	h->audit_fd = -1;
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
	struct sl_stream out = { &h->r->out, &h->r->out_dropped, sb->max_output };
	struct sl_stream errs = { &h->r->err, &h->r->err_dropped, sb->max_output };
	bool timed_out;
	siginfo_t si;
	const struct sl_loop_owner owner = { h, sl_handle_throttle_wait_ms, sl_handle_throttle_tick,
	                                      sl_handle_thaw_for_end };
	int rc = sl_io_loop(&owner, L, &out, &errs, h->sup, sb->timeout_ms, &h->caller_kill,
	                    &timed_out, &h->le);
	/* init has exited: nothing left to list or control. */
	sl_control_close(h->ctl);
	h->ctl = NULL;
	if (rc < 0)
		sl_end_unsupervised(L, &h->cg);
	handle_lock(h);
	h->reaping = true; /* init has exited; from now on nobody signals it */
	handle_unlock(h);
	/* init has exited and is not reaped yet: from now on no decision
	 * can reach the kernel or signal init's (soon free) pid. */
	sl_supervisor_close(h->sup);
	sl_reap_and_sweep(L, &si, &h->cg);
	sl_tty_end(&L->tty); /* the group is gone: the terminal is the caller's again */
	if (rc == 0)
		sl_io_drain(L, &out, &errs);
	h->abandoned = !sl_supervisor_stop(h->sup, SL_HANDLER_GRACE_MS);
	h->r->abandoned = h->abandoned;
	sl_set_reason(h->r, &si, timed_out, h->sup, atomic_load(&h->caller_kill));
	exec_error(h);
	read_audit(h);
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
	h->exec_fd = h->audit_fd = -1;
	h->cg.dirfd = h->cg.parentfd = h->cg.procs = -1; /* none until launch() */
	return h;
}

/* Everything but the result; the sandbox is gone (or never existed). */
static void handle_destroy(sandlock_handle_t *h)
{
	sl_control_close(h->ctl); /* a run that never started: it uses h */
	/* The supervisor (and its workers) before the handlers they call. */
	sl_supervisor_free(h->sup);
	if (h->prepared)
		sl_launch_cleanup(&h->L);
	if (h->exec_fd >= 0)
		close(h->exec_fd);
	if (h->audit_fd >= 0)
		close(h->audit_fd);
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
	const struct sl_trap *nrs = NULL;
	size_t nt = sl_supervisor_trapped(h->sup, &nrs);
	struct sl_launch *L = &h->L;
	int rc = sl_launch_prepare(L, h->sb, sl_supervisor_services(h->sup)->view, argv, argc, nrs,
	                           nt, err, msg);
	h->prepared = true; /* prepare initialises L first, even when it fails */
	if (rc < 0 || sl_launch_set_options(L, opts, err, msg) < 0 ||
	    sl_launch_grant_stdio(L, err, msg) < 0 ||
	    sl_supervisor_use_ruleset(h->sup, L->ruleset_fd, err, msg) < 0)
		return -1;
	/* The limits' v2 group if there is one, else one of our own; without
	 * either, init and killpg alone (README). */
	if (!sl_cgroup_adopt(&h->cg, L->cg.v2.dir) && sl_cgroup_create(&h->cg, h->sb->budget_pid))
		L->cgroup_procs = h->cg.procs;
	/* share_budget: without a v2 group below the other sandbox's, the two
	 * budgets would silently be separate. */
	if (h->sb->budget_pid && h->cg.dirfd < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
		               "share_budget: no cgroup can be made below process %d's (cgroup v2 "
		               "writable there, Linux 5.14+, needed)", (int)h->sb->budget_pid);
	L->cgroup_dir = h->cg.dirfd;
	listen_audit(h);
	if (sl_launch_start(L, err, msg) < 0)
		return -1;
	h->r = calloc(1, sizeof(*h->r));
	if (!h->r || sl_supervisor_start(h->sup, L->listener, L->pid, err, msg) < 0) {
		if (!h->r)
			sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		siginfo_t si;
		kill(L->pid, SIGKILL);
		sl_wait_child(L->pid, &si, 0);
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

/*
 * The control socket of a run whose name must be its own (the CLI's
 * --name): taken before anything starts, so a name in use fails the run.
 * 0, or -1 with *err, *msg.
 */
static int control_early(sandlock_handle_t *h, int *err, char **msg)
{
	const struct sl_control_opts *co = h->sb ? h->sb->control : NULL;
	if (!co || !co->strict)
		return 0;
	char *why = NULL;
	h->ctl = sl_control_open(h->sb->name, 0, true, &why);
	if (h->ctl)
		return 0;
	sl_fail(err, msg, SANDLOCK_ERR_INVALID, "%s", why ? why : "out of memory");
	free(why);
	return -1;
}

/* Any other run: listed under its name, or "sandbox-INIT" (its
 * hostname), when a control directory is usable; silently not, else. */
static void control_serve(sandlock_handle_t *h, const char *const *argv, uint32_t argc)
{
	const struct sl_control_opts *co = h->sb->control;
	if (!h->ctl) {
		char *why = NULL;
		h->ctl = sl_control_open(h->sb->name, h->L.pid, false, &why);
		free(why);
	}
	if (h->ctl && sl_control_serve(h->ctl, h, sandlock_handle_kill, argv, argc, co) < 0) {
		sl_control_close(h->ctl);
		h->ctl = NULL;
	}
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
	if (validate(sb, argv, argc, err, msg) < 0 || control_early(h, err, msg) < 0 ||
	    launch(h, argv, argc, opts, err, msg) < 0) {
		free(h->r);
		h->r = NULL;
		handle_destroy(h);
		return NULL;
	}
	control_serve(h, argv, argc);
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
	} else if (sl_handle_signalable(h)) {
		atomic_store(&h->caller_kill, true);
		sl_handle_thaw_locked(h);
		sl_init_request_kill(h->L.pid);
	} else {
		errno = ESRCH;
		rc = -1;
	}
	handle_unlock(h);
	return rc;
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
		sl_loop_error_report(&h->le, err, err_msg);
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
		sl_loop_error_report(&h->le, err, err_msg);
	handle_destroy(h);
	return r;
}

SL_EXPORT sandlock_result_t *sandlock_run_err(const sandlock_sandbox_t *sb,
                                              const char *const *argv, uint32_t argc, int *err,
                                              char **err_msg)
{
	return sandlock_run_with_handlers_err(sb, argv, argc, NULL, 0, err, err_msg);
}
