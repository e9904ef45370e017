/*
 * dispatch.c — deciding one notification.
 *
 * The chain for a syscall is: builtins (argument rules, process count),
 * then user handlers in registration order.  The first handler that does
 * not CONTINUE decides; if nobody intervenes the call proceeds
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE).  Builtins come first so that a user
 * handler can never CONTINUE a call the filter itself would have denied.
 *
 * Metadata calls (chmod, chown, xattr, utimes families) end differently:
 * user handlers still see them first and may deny or fake them, but when
 * nobody intervenes the metadata guard (builtin_meta.c) checks and
 * performs the call itself.  It never answers CONTINUE, so no handler can
 * let a metadata change through to the kernel unchecked.
 */
#include <errno.h>
#include <linux/audit.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>

#include "internal.h"
#include "supervisor.h"

bool sl_call_handler(const sandlock_handler_t *h, const sandlock_notif_t *n,
                     sandlock_mem_t *mem, sandlock_action_t *act)
{
	memset(act, 0, sizeof(*act));
	bool failed;
	if (h->guard && !h->guard()) {
		failed = true; /* e.g. the Python interpreter is finalizing */
	} else {
		int32_t rc = h->fn(h->ud, n, mem, act);
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

static const struct sl_chain *find_chain(const struct sl_supervisor *s, int nr)
{
	size_t lo = 0, hi = s->nchains;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->chains[mid].nr == nr)
			return &s->chains[mid];
		if (s->chains[mid].nr < nr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Builtins: an errno to deny with, or 0 to go on to the user handlers. */
static int run_builtins(const struct sl_supervisor *s, const sandlock_notif_t *n)
{
#ifdef __x86_64__
	/* The filter already kills foreign arches and x32; never trust a
	 * notification that would contradict it. */
	if (n->arch != AUDIT_ARCH_X86_64 || (n->syscall_nr & __X32_SYSCALL_BIT))
		return EPERM;
#endif
	if (sl_filter_has_arg_rules(n->syscall_nr)) {
		int e = sl_filter_arg_check(n);
		if (e)
			return e;
	}
	return sl_procs_check(s, n);
}

static void run_chain(struct sl_supervisor *s, const sandlock_notif_t *n)
{
	const struct sl_chain *c = find_chain(s, n->syscall_nr);
	bool guarded = sl_meta_is_guarded(n->syscall_nr);
	if (!c && !guarded) {
		sl_respond_continue(s, n);
		return;
	}
	sandlock_mem_t mem;
	sl_mem_init(&mem, s->listener, n, s->cache);
	sandlock_action_t act;
	bool decided = false;
	for (size_t i = 0; c && i < c->n && !decided; i++) {
		if (c->h[i]->deferred) {
			/* Deferral is terminal: the worker (or a refusal) answers.
			 * (Never on a guarded syscall: refused at registration.) */
			sl_deferred_submit(s->deferred, c->h[i], n);
			sl_mem_done(&mem);
			return;
		}
		decided = sl_call_handler(c->h[i], n, &mem, &act);
	}
	if (!decided && guarded) {
		sl_meta_decide(s, n, &mem, &act);
		decided = true;
	}
	sl_mem_done(&mem);
	if (decided)
		sl_respond(s, n, &act);
	else
		sl_respond_continue(s, n);
}

void sl_dispatch(struct sl_supervisor *s, const sandlock_notif_t *n)
{
	int e = run_builtins(s, n);
	if (e)
		sl_respond_errno(s, n, e);
	else
		run_chain(s, n);
	/* After execve the pid has a new address space; a cached fd would
	 * still read the old one (alive if shared with a vfork parent). */
	if (n->syscall_nr == __NR_execve || n->syscall_nr == __NR_execveat)
		sl_memcache_forget(s->cache, (pid_t)n->pid);
}
