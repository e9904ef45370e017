/*
 * builtin.h — the interface every builtin implements.
 *
 * A builtin is one file in src/builtins/ that defines one
 * `const struct sl_builtin` and is listed once in builtins/table.c.  The
 * dispatcher (dispatch.c) builds the trapped syscall set and every
 * syscall's chain from that table alone:
 *
 *   FIRST-phase builtins (table order)  ->  user handlers (registration
 *   order)  ->  the LAST-phase builtin of that syscall, if any
 *
 * The first one that decides ends the chain; if nobody decides, the call
 * proceeds in the kernel (CONTINUE).  A builtin never answers the kernel
 * itself: it writes a decision (a sandlock_action_t: continue, errno,
 * return value (e.g. the result of a call performed on the caller's
 * behalf), inject fd, kill) and the dispatcher turns it into the reply.
 * See docs/architecture.md, "Adding a builtin".
 */
#ifndef SANDLOCK_BUILTIN_H
#define SANDLOCK_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "config.h"
#include "trap.h"

/* What a builtin sees of one trapped call. */
struct sandlock_result;
struct sl_services;

struct sl_call {
	const sandlock_notif_t *n;
	sandlock_mem_t *mem; /* the caller's memory (childmem.h) */
	int listener;        /* for sl_notif_valid: pin a /proc object, then check */
	pid_t init;          /* the sandbox's init; its pid is the sandbox's pgid */
	/* The run's services (services.h): its chroot view, port map, proxy,
	 * connect waiter.  A builtin that hands a call to the connect waiter
	 * sets *later: the waiter answers that call, the dispatcher does not. */
	struct sl_services *sv;
	bool *later;
};

enum sl_phase {
	/* Before user handlers.  May decide (deny, ...) or pass (return false),
	 * and the chain goes on. */
	SL_PHASE_FIRST,
	/* After the user handlers, when none of them decided.  Terminal: must
	 * decide (it exists to perform or refuse a call the kernel must never
	 * see unchecked).  At most one per syscall; user handlers on its
	 * syscalls cannot be deferred (a worker's CONTINUE would skip it). */
	SL_PHASE_LAST,
};


struct sl_builtin {
	const char *name;
	enum sl_phase phase;
	/* FIRST only: also runs on every syscall trapped for any reason (the
	 * supervisor's own argument re-check), and on a notification of a
	 * syscall with no chain (an argument rule's refusal the filter sends
	 * with report_refusals), which is refused whatever it decides. */
	bool every_trapped;
	/* The user setting that turns this builtin on, as confine() and
	 * sandlock_fork name it when they refuse it (neither has a
	 * supervisor): a builtin with this set that traps any syscall for a
	 * configuration makes that configuration need a supervisor.  NULL:
	 * an always-on protection whose calls a supervisor-less filter
	 * answers by itself. */
	const char *setting;
	/* Optional, for a builtin that is on in every run, or on for more
	 * than one setting: the setting of cfg it serves that a process
	 * without a supervisor cannot honour, named as for `setting`, or
	 * NULL (uts.c: a name; netdest.c: address rules, port_remap). */
	const char *(*refusal)(const struct sandlock_sandbox *cfg);
	/* Performs opens on the caller's behalf (opener.h): the run then
	 * starts an opener even without user handlers. */
	bool needs_opener;
	/* Optional, instead: needs the opener only for configurations where
	 * this says so (netdest: unix binds it performs, when it traps bind). */
	bool (*opener_if)(const struct sandlock_sandbox *cfg);
	/* Its traps are in every filter, also one without a supervisor
	 * (confine, sandlock_fork), where the kernel answers them ENOSYS:
	 * an always-on protection that fails closed there (pids.c). */
	bool in_every_filter;
	/* Add what this builtin traps for cfg (trap.h); adding nothing leaves
	 * it out of every chain of the run.  A trap may carry conditions
	 * (SL_TRAP_IF_NONZERO, ...): the filter then traps only those calls
	 * (the chain exists either way).  If anything else traps the syscall
	 * outright (a user handler), every call reaches decide, so decide must
	 * still handle the forms the conditions leave out.  0 or -1 (OOM). */
	int (*syscalls)(const struct sandlock_sandbox *cfg, struct sl_traps *out);
	/* Per-run state (NULL: stateless), made with the run's services
	 * (services.h: take the chroot view, the proxy... from there, never a
	 * copy of one's own).  0, or -1 with *msg set (heap). */
	int (*init)(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
	            char **msg);
	/* Before the services are freed; the opener has no user left. */
	void (*free)(void *state);
	/* Optional: a file this builtin serves in place of the one the opener
	 * opened for reading for the guest (sl_opener_serve_fn, opener.h:
	 * real, *fd, caller; 0 served, an errno, -1 not this builtin's).
	 * Called for every such open of the run, whatever builtin or handler
	 * performs it, on whatever thread does (the loop, a deferred
	 * worker), outside the builtin lock: read only what init made. */
	int (*serve)(void *state, const struct sl_services *sv, const char *real, pid_t caller,
	             int *fd);
	/* Optional: add Landlock rules for what init made (the COW layer's
	 * upper directory), to the run's ruleset before the child or the
	 * opener applies it (landlock.h, sl_landlock_grant_read).  0, or -1
	 * with *msg (heap): the run fails. */
	int (*ruleset)(void *state, const struct sandlock_sandbox *cfg, int ruleset_fd, char **msg);
	/* true with *act set: decided.  false: did not intervene. */
	bool (*decide)(void *state, const struct sl_call *call, sandlock_action_t *act);
	/* Optional, FIRST only: the answer to a call of one of its syscalls
	 * has just been sent, whoever decided (policy.c thaws here the tasks
	 * it stopped to read the call's memory). */
	void (*answered)(void *state, const sandlock_notif_t *n);
	/* Optional: the run is over (r filled in), before free. */
	void (*finish)(void *state, struct sandlock_result *r);
};

/* Every builtin, in dispatch order (builtins/table.c). */
extern const struct sl_builtin *const sl_builtin_table[];
extern const size_t sl_builtin_count;
/* What each builtin of the table traps for cfg, into per[i] for
 * sl_builtin_table[i] (sl_builtin_count of them, zeroed).  0 or -1 (OOM). */
int sl_builtin_traps(const struct sandlock_sandbox *cfg, struct sl_traps *per);
/* A chain has room for one LAST builtin (it must decide): true if two of
 * them trap one syscall in per (as sl_builtin_traps fills it), with *a < *b
 * their indexes in the table.  Checked whenever a run's table is built
 * (chains.c), and by tests/c/test_builtins.c over the configurations. */
bool sl_builtin_last_clash(const struct sl_traps *per, size_t *a, size_t *b);
/* The traps of the in_every_filter builtins for cfg, for a filter without
 * a supervisor (table.c); normalized.  0 or -1 (OOM). */
int sl_builtin_unsupervised_traps(const struct sandlock_sandbox *cfg, struct sl_traps *out);

#endif /* SANDLOCK_BUILTIN_H */
