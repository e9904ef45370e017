/*
 * handler.c — handler objects and the action setters of the public ABI.
 *
 * A handler is a callback + user data + destructor + exception policy.
 * Ownership of handlers passes to a run, which must call each destructor
 * exactly once even when the same handler is registered on several
 * syscalls: sl_handlers_release de-duplicates for that reason.
 */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "supervisor/childmem.h"
#include "supervisor/handler.h"
#include "util.h"

SL_EXPORT sandlock_handler_t *sandlock_handler_new(sandlock_handler_fn fn, void *ud,
                                                   sandlock_ud_free_fn ud_free,
                                                   uint32_t on_exception)
{
	if (!fn || on_exception > SANDLOCK_EXCEPTION_DENY_EIO)
		return NULL; /* the caller keeps ud: ud_free is not called */
	sandlock_handler_t *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->fn = fn;
	h->ud = ud;
	h->ud_free = ud_free;
	h->on_exception = on_exception;
	return h;
}

SL_EXPORT void sandlock_handler_set_deferred(sandlock_handler_t *h, bool deferred)
{
	if (h)
		h->deferred = deferred;
}

SL_EXPORT void sandlock_handler_set_guard(sandlock_handler_t *h, sandlock_guard_fn guard)
{
	if (h)
		h->guard = guard;
}

SL_EXPORT void sandlock_handler_free(sandlock_handler_t *h)
{
	if (!h)
		return;
	/* The guard says whether the callback's runtime (e.g. a Python
	 * interpreter) still exists; if it is gone, entering ud_free would
	 * crash, so ud is leaked instead. */
	if (h->ud_free && (!h->guard || h->guard()))
		h->ud_free(h->ud);
	free(h);
}

/* Mark h released; true if no call is in progress (none can start now). */
static bool release_idle(sandlock_handler_t *h)
{
	unsigned prev = atomic_fetch_or(&h->use, SL_HANDLER_RELEASED);
	return (prev & ~SL_HANDLER_RELEASED) == 0;
}

/*
 * Handler objects of abandoned runs: never freed (a late thread may still
 * read them), but kept reachable rather than lost, so leak checkers see a
 * deliberate, bounded retention (48 bytes a handler, abandoned runs only).
 */
static pthread_mutex_t parked_lock = PTHREAD_MUTEX_INITIALIZER;
static sandlock_handler_t *parked;

static void park(sandlock_handler_t *h)
{
	pthread_mutex_lock(&parked_lock);
	h->parked_next = parked;
	parked = h;
	pthread_mutex_unlock(&parked_lock);
}

static void release_one(sandlock_handler_t *h, bool abandoned)
{
	if (!abandoned) {
		sandlock_handler_free(h); /* every thread of the run was joined */
		return;
	}
	/* Kept: a late thread may still test h->use (or finish its call). */
	if (release_idle(h) && h->ud_free && (!h->guard || h->guard()))
		h->ud_free(h->ud);
	park(h);
}

void sl_handlers_release(struct sl_handlers *hs, bool abandoned)
{
	const sandlock_registration_t *regs = hs->regs;
	/* O(n^2) is fine: registrations are a handful.  A handler is freed at
	 * its first occurrence and skipped at every later one. */
	for (size_t i = 0; regs && i < hs->n; i++) {
		sandlock_handler_t *h = regs[i].handler;
		if (!h)
			continue;
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = regs[j].handler == h;
		if (!seen)
			release_one(h, abandoned);
	}
	hs->regs = NULL;
	hs->n = 0;
}

static bool is_inject(uint32_t kind)
{
	return kind == SANDLOCK_ACTION_INJECT_FD_SEND ||
	       kind == SANDLOCK_ACTION_INJECT_FD_SEND_TRACKED;
}

void sl_action_discard(sandlock_action_t *act)
{
	if (is_inject(act->kind) && act->u.inject.srcfd >= 0) {
		close(act->u.inject.srcfd);
		act->u.inject.srcfd = -1;
	}
}

/* Start a call unless the run has released h.  Pairs with call_end. */
static bool call_begin(sandlock_handler_t *h)
{
	unsigned v = atomic_load(&h->use);
	do {
		if (v & SL_HANDLER_RELEASED)
			return false;
	} while (!atomic_compare_exchange_weak(&h->use, &v, v + 1));
	return true;
}

static void call_end(sandlock_handler_t *h)
{
	atomic_fetch_sub(&h->use, 1);
}

bool sl_handler_call(sandlock_handler_t *h, const sandlock_notif_t *n, sandlock_mem_t *mem,
                     sandlock_action_t *act)
{
	memset(act, 0, sizeof(*act));
	bool failed;
	if (!call_begin(h)) {
		failed = true; /* the run is over and released it */
	} else if (h->guard && !h->guard()) {
		failed = true; /* e.g. the Python interpreter is finalizing */
		call_end(h);
	} else {
		int32_t rc = h->fn(h->ud, n, mem, act);
		call_end(h);
		failed = rc != 0 || act->kind == SANDLOCK_ACTION_UNSET ||
		         act->kind > SANDLOCK_ACTION_KILL;
	}
	if (!failed)
		return act->kind != SANDLOCK_ACTION_CONTINUE;

	/* The failing handler may still have handed us an fd to inject. */
	sl_action_discard(act);
	switch (h->on_exception) {
	case SANDLOCK_EXCEPTION_CONTINUE:
		memset(act, 0, sizeof(*act));
		return false; /* "did not intervene": the next handler runs */
	case SANDLOCK_EXCEPTION_DENY_EIO:
		sandlock_action_set_errno(act, EIO);
		return true;
	case SANDLOCK_EXCEPTION_DENY_EPERM:
		sandlock_action_set_errno(act, EPERM);
		return true;
	case SANDLOCK_EXCEPTION_KILL:
	default:
		sandlock_action_set_kill(act, SIGKILL, 0);
		return true;
	}
}

/* ---- action setters ---- */

static void action_reset(sandlock_action_t *out, uint32_t kind)
{
	memset(out, 0, sizeof(*out));
	out->kind = kind;
}

SL_EXPORT void sandlock_action_set_continue(sandlock_action_t *out)
{
	if (out)
		action_reset(out, SANDLOCK_ACTION_CONTINUE);
}

SL_EXPORT void sandlock_action_set_errno(sandlock_action_t *out, int32_t errno_value)
{
	if (!out)
		return;
	action_reset(out, SANDLOCK_ACTION_ERRNO);
	out->u.errno_value = errno_value;
}

SL_EXPORT void sandlock_action_set_return_value(sandlock_action_t *out, int64_t value)
{
	if (!out)
		return;
	action_reset(out, SANDLOCK_ACTION_RETURN_VALUE);
	out->u.return_value = value;
}

/* Both inject kinds share the fd fields; only TRACKED adds a tracker. */
static void action_inject(sandlock_action_t *out, uint32_t kind, int srcfd,
                          uint32_t newfd_flags)
{
	action_reset(out, kind);
	out->u.inject.srcfd = srcfd;
	out->u.inject.newfd_flags = newfd_flags;
}

SL_EXPORT void sandlock_action_set_inject_fd_send(sandlock_action_t *out, int srcfd,
                                                  uint32_t newfd_flags)
{
	if (out)
		action_inject(out, SANDLOCK_ACTION_INJECT_FD_SEND, srcfd, newfd_flags);
}

SL_EXPORT void sandlock_action_set_inject_fd_send_tracked(sandlock_action_t *out, int srcfd,
                                                          uint32_t newfd_flags,
                                                          uint64_t tracker)
{
	if (!out)
		return;
	action_inject(out, SANDLOCK_ACTION_INJECT_FD_SEND_TRACKED, srcfd, newfd_flags);
	out->u.inject.tracker = tracker;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

SL_EXPORT void sandlock_action_set_inject_bytes(sandlock_action_out_t *out, const uint8_t *data,
                                                uintptr_t len, uint32_t flags)
{
	if (!out)
		return;
	int fd = -1;
	if (!data && len > 0)
		goto fail;
	fd = memfd_create("sandlock-inject", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		goto fail;
	if (write_all(fd, data, len) < 0 || lseek(fd, 0, SEEK_SET) != 0)
		goto fail;
	/* Sealed by default so the guest cannot alter or resize content that
	 * the handler (or another reader of the same fd) relies on. */
	if (!(flags & SANDLOCK_INJECT_WRITABLE) &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0)
		goto fail;
	sandlock_action_set_inject_fd_send(out, fd,
	                                   (flags & SANDLOCK_INJECT_NO_CLOEXEC) ? 0 : O_CLOEXEC);
	return;
fail:
	if (fd >= 0)
		close(fd);
	sandlock_action_set_errno(out, EIO);
}

SL_EXPORT void sandlock_action_set_hold(sandlock_action_t *out)
{
	if (out)
		action_reset(out, SANDLOCK_ACTION_HOLD);
}

SL_EXPORT void sandlock_action_set_kill(sandlock_action_t *out, int32_t sig, int32_t pgid)
{
	if (!out)
		return;
	action_reset(out, SANDLOCK_ACTION_KILL);
	out->u.kill.sig = sig;
	out->u.kill.pgid = pgid; /* recorded, never trusted (see respond.c) */
}
