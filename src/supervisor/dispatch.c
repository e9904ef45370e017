/*
 * dispatch.c — deciding one notification, and the one place that
 * answers the kernel.
 *
 * At construction the dispatcher instantiates every builtin of the table
 * (builtins/table.c) for the run's configuration, resolves the user
 * registrations, and builds one chain per trapped syscall (chains.c):
 *
 *   FIRST-phase builtins (table order) -> user handlers (registration
 *   order) -> the syscall's LAST-phase builtin, if any.
 *
 * The first link that decides ends the chain; nobody deciding means
 * CONTINUE.  Builtins come first so that a user handler can never let
 * through a call the filter itself would have denied; a LAST builtin
 * (the metadata guard) performs or refuses what no handler decided, so no
 * handler can let such a call reach the kernel unchecked.
 *
 * Deferred user handlers run on the worker pool (deferred.c); their
 * decisions come back through deferred_done and are answered here too,
 * as are blocking connects netdest hands to the connect waiter
 * (connwait.c, connwait_done).  A deferred handler that does not
 * intervene on a syscall with a LAST builtin resumes the chain there:
 * the builtin runs on the worker, under builtin_lock (the loop holds it
 * while it runs a chain), so builtins never run two at a time.
 *
 * Lifetime: the dispatcher is reference-counted.  The run holds one
 * reference, the supervisor thread one, every deferred worker one; the
 * last to let go frees it.  So when the run stops waiting for a handler
 * that does not return (the run's timeout bounds the whole run), the
 * abandoned thread still finds its dispatcher, its builtins' state and
 * its own duplicate of the listener (never a recycled fd number).  Once
 * the run declares itself over (sl_dispatch_close, before init is
 * reaped) nothing more is answered: a late decision is dropped, and no
 * KILL can signal a pid that may have been recycled.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtins/builtin.h"
#include "supervisor/chains.h"
#include "supervisor/childmem.h"
#include "net/connwait.h"
#include "supervisor/deferred.h"
#include "supervisor/dispatch.h"
#include "launch/filter.h"
#include "supervisor/respond.h"
#include "supervisor/services.h"
#include "syscalls.h"

struct sl_dispatch {
	struct sl_services sv; /* what the builtins share (services.h) */
	struct sl_chains ch; /* the builtins and the chains (chains.h) */
	int listener;
	pid_t init;
	struct sl_memcache *cache; /* supervisor thread only */
	struct sl_deferred *deferred;
	struct sl_responder resp;
	const struct sandlock_sandbox *cfg; /* the sandbox's: valid until the launch is over */
	bool wants_opener;         /* handlers or builtins open on the caller's behalf */
	struct sl_connwait *connwait; /* blocking connects performed on behalf (connwait.h) */
	atomic_int refs;
	atomic_int failed; /* errno that stopped the supervisor thread */
	/* Answers are sent under the read side; sl_dispatch_close takes the
	 * write side to set closed, so no answer is in flight after it. */
	pthread_rwlock_t answer_lock;
	bool closed;
	/* Held while builtins run: by the loop around a chain, by a deferred
	 * worker around the LAST builtin its CONTINUE resumes. */
	pthread_mutex_t builtin_lock;
	sandlock_decision_fn on_decision; /* tracing hook (sandlock.h), or NULL */
	void *on_decision_ud;
};

static int oom(int *err, char **msg)
{
	return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
}

/* The one way out to the kernel: nothing once the run is over. */
static void answer(struct sl_dispatch *d, const sandlock_notif_t *n, sandlock_action_t *act)
{
	pthread_rwlock_rdlock(&d->answer_lock);
	if (d->closed)
		sl_action_discard(act);
	else
		sl_respond(&d->resp, n, act);
	pthread_rwlock_unlock(&d->answer_lock);
}

/* The tracing hook sees every answer, in this one place, before it goes out. */
static void report(const struct sl_dispatch *d, const sandlock_notif_t *n,
                   const sandlock_action_t *act, const char *by)
{
	if (d->on_decision) {
		sandlock_decision_t dec = { n, act, by };
		d->on_decision(d->on_decision_ud, &dec);
	}
}

static bool run_last(const struct sl_inst *last, const struct sl_call *call, sandlock_action_t *act,
                     const char **by);

/*
 * A deferred handler's decision.  CONTINUE on a syscall with a LAST
 * builtin is not the kernel's yet: the builtin performs or refuses the
 * call as it would have on the loop (with a memory handle of this
 * thread's own; a connect it hands to the waiter is answered there).
 */
static void deferred_done(void *ctx, const sandlock_notif_t *n, sandlock_action_t *act)
{
	struct sl_dispatch *d = ctx;
	const struct sl_chain *c = sl_chains_find(&d->ch, n->syscall_nr);
	const char *by = "handler";
	if (c && c->last && act->kind == SANDLOCK_ACTION_CONTINUE) {
		bool later = false;
		sandlock_mem_t mem;
		sl_mem_init(&mem, d->listener, n, NULL);
		struct sl_call call = { n, &mem, d->listener, d->init, &d->sv, &later };
		pthread_mutex_lock(&d->builtin_lock);
		(void)run_last(c->last, &call, act, &by);
		pthread_mutex_unlock(&d->builtin_lock);
		sl_mem_done(&mem);
		if (later)
			return; /* the connect waiter answers */
	}
	report(d, n, act, by);
	answer(d, n, act);
}

/* A connect netdest handed to the waiter is over (connwait.h). */
static void connwait_done(void *ctx, const sandlock_notif_t *n, sandlock_action_t *act)
{
	struct sl_dispatch *d = ctx;
	report(d, n, act, "socket destinations");
	answer(d, n, act);
}

void sl_dispatch_ref(struct sl_dispatch *d)
{
	atomic_fetch_add(&d->refs, 1);
}

static void deferred_hold(void *ctx)
{
	sl_dispatch_ref(ctx);
}

static void deferred_drop(void *ctx)
{
	sl_dispatch_unref(ctx);
}

struct sl_dispatch *sl_dispatch_new(const struct sandlock_sandbox *cfg,
                                    const struct sl_handlers *hs, int *err, char **msg)
{
	if (!hs->regs && hs->n > 0) {
		sl_fail(err, msg, SANDLOCK_ERR_INVALID, "registrations missing");
		return NULL;
	}
	struct sl_dispatch *d = calloc(1, sizeof(*d));
	if (!d) {
		oom(err, msg);
		return NULL;
	}
	sl_responder_init(&d->resp);
	d->cfg = cfg;
	atomic_init(&d->refs, 1);
	pthread_rwlock_init(&d->answer_lock, NULL);
	pthread_mutex_init(&d->builtin_lock, NULL);
	d->on_decision = cfg->on_decision;
	d->on_decision_ud = cfg->on_decision_ud;
	d->listener = -1;
	d->cache = sl_memcache_new();
	uint64_t dto = cfg->deferred_timeout_ms ? cfg->deferred_timeout_ms : 30000;
	d->deferred = sl_deferred_new(dto, deferred_done, d, deferred_hold, deferred_drop);
	/* Its thread is joined in destroy, before anything it answers through. */
	d->connwait = sl_connwait_new(connwait_done, d);
	if (!d->cache || !d->deferred || !d->connwait) {
		oom(err, msg);
		goto fail;
	}
	if (sl_services_init(&d->sv, cfg, err, msg) < 0)
		goto fail;
	d->sv.connwait = d->connwait;
	if (sl_chains_build(&d->ch, cfg, &d->sv, hs, err, msg) < 0)
		goto fail;
	d->wants_opener = hs->n > 0; /* sandlock_open_on_behalf needs one */
	for (size_t i = 0; i < d->ch.ninsts; i++)
		if ((d->ch.insts[i].b->needs_opener ||
		     (d->ch.insts[i].b->opener_if && d->ch.insts[i].b->opener_if(cfg))) &&
		    d->ch.insts[i].traps.n > 0)
			d->wants_opener = true;
	return d;
fail:
	sl_dispatch_unref(d);
	return NULL;
}

size_t sl_dispatch_trapped(const struct sl_dispatch *d, const struct sl_trap **traps)
{
	*traps = d->ch.trapped.v;
	return d->ch.trapped.n;
}

/* The opener's serve (opener.h): the files the builtins serve in place
 * of those opened, in table order (builtin.h, serve). */
static int serve_builtins(void *ud, const char *real, pid_t caller, int *fd)
{
	const struct sl_dispatch *d = ud;
	for (size_t i = 0; i < d->ch.ninsts; i++) {
		const struct sl_inst *in = &d->ch.insts[i];
		int e = in->live && in->b->serve ? in->b->serve(in->state, &d->sv, real, caller, fd) : -1;
		if (e >= 0)
			return e;
	}
	return -1;
}

int sl_dispatch_use_ruleset(struct sl_dispatch *d, int ruleset_fd, int *err, char **msg)
{
	for (size_t i = 0; i < d->ch.ninsts; i++) {
		const struct sl_inst *in = &d->ch.insts[i];
		if (in->live && in->b->ruleset && in->b->ruleset(in->state, d->cfg, ruleset_fd, msg) < 0) {
			if (err)
				*err = SANDLOCK_ERR_SYSTEM;
			return -1;
		}
	}
	if (!d->wants_opener)
		return 0;
	return sl_services_start_opener(&d->sv, ruleset_fd, serve_builtins, d, err, msg);
}

int sl_dispatch_bind(struct sl_dispatch *d, int listener, pid_t init)
{
	/* Our own: the run closes its copy when it returns, and a thread it
	 * abandoned may still answer (or read memory) through ours.  Handlers
	 * see this number too, so the opener is found by it. */
	d->listener = fcntl(listener, F_DUPFD_CLOEXEC, 3);
	if (d->listener < 0)
		return -1;
	sl_services_bind(&d->sv, d->listener, init);
	d->init = init;
	sl_responder_bind(&d->resp, d->listener, init);
	return 0;
}

int sl_dispatch_listener(const struct sl_dispatch *d)
{
	return d->listener;
}

void sl_dispatch_fail(struct sl_dispatch *d, int e)
{
	atomic_store(&d->failed, e ? e : EIO);
}

int sl_dispatch_failed(struct sl_dispatch *d)
{
	return atomic_load(&d->failed);
}

void sl_dispatch_close(struct sl_dispatch *d)
{
	pthread_rwlock_wrlock(&d->answer_lock);
	d->closed = true;
	pthread_rwlock_unlock(&d->answer_lock);
}

/* ---------------- deciding ---------------- */

/* LAST builtins must decide; one that does not is refused, never continued. */
static bool run_last(const struct sl_inst *last, const struct sl_call *call, sandlock_action_t *act,
                     const char **by)
{
	*by = last->b->name;
	if (!last->b->decide(last->state, call, act))
		sandlock_action_set_errno(act, EPERM);
	return true;
}

/*
 * Run c for n: true with *act decided, false for CONTINUE.  *deferred is
 * set when a deferred handler took the call, or a builtin handed it to
 * the connect waiter (call.later): their completions answer.
 */
static bool run_chain(struct sl_dispatch *d, const struct sl_chain *c,
                      const sandlock_notif_t *n, sandlock_mem_t *mem, sandlock_action_t *act,
                      bool *deferred, const char **by)
{
	struct sl_call call = { n, mem, d->listener, d->init, &d->sv, deferred };
	for (size_t i = 0; i < c->nfirst; i++)
		if (c->first[i]->b->decide(c->first[i]->state, &call, act)) {
			*by = c->first[i]->b->name;
			return true;
		}
	*by = "handler";
	for (size_t i = 0; i < c->nh; i++) {
		if (c->h[i]->deferred) {
			/* Deferral ends the user handlers; a LAST builtin runs
			 * after a CONTINUE (deferred_done). */
			int e = sl_deferred_submit(d->deferred, c->h[i], n, d->listener);
			*deferred = e == 0;
			if (e)
				sandlock_action_set_errno(act, e);
			return e != 0;
		}
		if (sl_handler_call(c->h[i], n, mem, act))
			return true;
	}
	return c->last ? run_last(c->last, &call, act, by) : false;
}

/* The FIRST builtins of the chain that want to know the call was answered. */
static void after_answer(const struct sl_chain *c, const sandlock_notif_t *n)
{
	for (size_t i = 0; i < c->nfirst; i++)
		if (c->first[i]->b->answered)
			c->first[i]->b->answered(c->first[i]->state, n);
}

void sl_dispatch_one(struct sl_dispatch *d, const sandlock_notif_t *n)
{
	const struct sl_chain *c = sl_chains_find(&d->ch, n->syscall_nr);
	bool chained = c != NULL;
	if (!c) /* an argument rule's refusal (report_refusals): args.c names it */
		c = &d->ch.unchained;
	sandlock_action_t act;
	bool deferred = false, decided;
	const char *by;
	sandlock_mem_t mem;
	sl_mem_init(&mem, d->listener, n, d->cache);
	pthread_mutex_lock(&d->builtin_lock);
	decided = run_chain(d, c, n, &mem, &act, &deferred, &by);
	pthread_mutex_unlock(&d->builtin_lock);
	sl_mem_done(&mem);
	if (!chained && (!decided || act.kind == SANDLOCK_ACTION_CONTINUE)) {
		/* The filter traps only the chains' syscalls and the argument
		 * rules' refusals: never continue a notification that
		 * contradicts it. */
		sandlock_action_set_errno(&act, EPERM);
		by = "dispatcher";
		decided = true;
	}
	if (!deferred) {
		if (!decided) {
			sandlock_action_set_continue(&act);
			by = NULL;
		}
		report(d, n, &act, by);
		answer(d, n, &act);
		after_answer(c, n);
	}
	/* After execve the pid has a new address space; a cached fd would
	 * still read the old one (alive if shared with a vfork parent). */
	if (sl_sys_is_exec_like(n->syscall_nr))
		sl_memcache_forget(d->cache, (pid_t)n->pid);
}

int sl_dispatch_expire(struct sl_dispatch *d)
{
	int next = sl_deferred_expire(d->deferred);
	if (!d->sv.adopted) /* the only timed service: no lock taken without it */
		return next;
	pthread_mutex_lock(&d->builtin_lock); /* the builtins use the services */
	int sv = sl_services_expire(&d->sv);
	pthread_mutex_unlock(&d->builtin_lock);
	return next < 0 || (sv >= 0 && sv < next) ? sv : next;
}

int sl_dispatch_killed(struct sl_dispatch *d, int *sig)
{
	return sl_responder_killed(&d->resp, sig);
}

bool sl_dispatch_quiesce(struct sl_dispatch *d, const struct timespec *at)
{
	return sl_deferred_stop(d->deferred, at);
}

struct sl_services *sl_dispatch_services(struct sl_dispatch *d)
{
	return &d->sv;
}

void sl_dispatch_finish(struct sl_dispatch *d, struct sandlock_result *r)
{
	for (size_t i = 0; i < d->ch.ninsts; i++)
		if (d->ch.insts[i].live && d->ch.insts[i].b->finish)
			d->ch.insts[i].b->finish(d->ch.insts[i].state, r);
}

static void destroy(struct sl_dispatch *d)
{
	sl_connwait_free(d->connwait); /* its thread answers through d: first */
	sl_deferred_free(d->deferred); /* no worker left: each held a reference */
	sl_chains_free(&d->ch);        /* no call can reach a builtin any more */
	sl_services_free(&d->sv);      /* the builtins' and the opener's: after them */
	sl_memcache_free(d->cache);
	sl_responder_destroy(&d->resp);
	pthread_rwlock_destroy(&d->answer_lock);
	pthread_mutex_destroy(&d->builtin_lock);
	if (d->listener >= 0)
		close(d->listener);
	free(d);
}

void sl_dispatch_unref(struct sl_dispatch *d)
{
	if (d && atomic_fetch_sub(&d->refs, 1) == 1)
		destroy(d);
}
