/*
 * chains.c — the chains of one run (chains.h), built once from the
 * builtin table (builtins/table.c) and the user's registrations:
 *
 *   FIRST-phase builtins (table order) -> user handlers (registration
 *   order) -> the syscall's LAST-phase builtin, if any.
 *
 * Every builtin of the table is instantiated for the run's configuration
 * (two LAST builtins on one syscall are refused: the second would never
 * run); the trapped set is every builtin's syscalls, every registered
 * syscall and, with user handlers, exec.
 */
#include <seccomp.h>
#include <stdlib.h>

#include "builtins/builtin.h"
#include "launch/filter.h"
#include "trap.h"
#include "supervisor/chains.h"
#include "syscalls.h"

static int oom(int *err, char **msg)
{
	return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
}

/* What every builtin traps for cfg, into d->insts[i].traps.  A chain has
 * room for one terminal builtin: two LAST builtins on one syscall fail
 * the run (the second would never run, its guard silently lost). */
static int collect_traps(struct sl_chains *d, const struct sandlock_sandbox *cfg, int *err,
                         char **msg)
{
	struct sl_traps *per = calloc(sl_builtin_count, sizeof(*per));
	int rc = per && sl_builtin_traps(cfg, per) == 0 ? 0 : oom(err, msg);
	size_t a, b;
	if (rc == 0 && sl_builtin_last_clash(per, &a, &b))
		rc = sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		             "internal: builtins '%s' and '%s' both guard one syscall",
		             sl_builtin_table[a]->name, sl_builtin_table[b]->name);
	for (size_t i = 0; per && i < sl_builtin_count; i++)
		d->insts[i].traps = per[i]; /* freed with the instances */
	free(per);
	return rc;
}

/* Instantiate every builtin of the table for cfg. */
static int make_builtins(struct sl_chains *d, const struct sandlock_sandbox *cfg,
                         struct sl_services *sv, int *err, char **msg)
{
	d->insts = calloc(sl_builtin_count, sizeof(*d->insts));
	if (!d->insts)
		return oom(err, msg);
	d->ninsts = sl_builtin_count;
	for (size_t i = 0; i < sl_builtin_count; i++)
		d->insts[i].b = sl_builtin_table[i];
	if (collect_traps(d, cfg, err, msg) < 0)
		return -1;
	for (size_t i = 0; i < sl_builtin_count; i++) {
		struct sl_inst *in = &d->insts[i];
		char *why = NULL;
		if (in->b->init && in->b->init(cfg, sv, &in->state, &why) < 0) {
			sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "%s: %s", in->b->name,
			        why ? why : "cannot start");
			free(why);
			return -1;
		}
		in->live = true;
	}
	return 0;
}

const struct sl_chain *sl_chains_find(const struct sl_chains *d, int nr)
{
	size_t lo = 0, hi = d->nchains;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (d->chains[mid].nr == nr)
			return &d->chains[mid];
		if (d->chains[mid].nr < nr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The LAST-phase builtin guarding nr, or NULL. */
static struct sl_inst *last_for(const struct sl_chains *d, int nr)
{
	for (size_t i = 0; i < d->ninsts; i++)
		if (d->insts[i].b->phase == SL_PHASE_LAST && sl_traps_has(&d->insts[i].traps, nr))
			return &d->insts[i];
	return NULL;
}

/* Resolve and check one registration; its number, or -1 with *err, *msg. */
static int registration_nr(const struct sl_chains *d, const sandlock_registration_t *r,
                           int *err, char **msg)
{
	const char *name = r->syscall;
	int nr = name ? seccomp_syscall_resolve_name(name) : -1;
	if (nr < 0) /* libseccomp uses negative pseudo numbers for other arches */
		return sl_fail(err, msg, SANDLOCK_ERR_SYSCALL, "unknown syscall '%s'",
		               name ? name : "(null)");
	if (sl_filter_denies(d->cfg, nr))
		return sl_fail(err, msg, SANDLOCK_ERR_SYSCALL,
		               "syscall '%s' is denied by the sandbox and cannot be handled", name);
	if (!r->handler)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "NULL handler for syscall '%s'",
		               name);
	/* A deferred handler may sit before a LAST builtin: its CONTINUE
	 * resumes the chain there (deferred_done). */
	return nr;
}

/* Syscalls with a chain: the numbers of the trapped set (sorted, unique). */
static int build_chained(struct sl_chains *d)
{
	d->chained = malloc((d->trapped.n ? d->trapped.n : 1) * sizeof(int));
	if (!d->chained)
		return -1;
	for (size_t i = 0; i < d->trapped.n; i++)
		if (d->nchained == 0 || d->chained[d->nchained - 1] != d->trapped.v[i].nr)
			d->chained[d->nchained++] = d->trapped.v[i].nr;
	return 0;
}

/*
 * The trapped set: every builtin's syscalls, every registered syscall,
 * and, with user handlers, exec: the /proc/PID/mem cache must learn of
 * every exec (a vfork child shares, then leaves, its parent's address
 * space).
 */
static int build_trapped(struct sl_chains *d, const struct sl_handlers *hs, int *err,
                         char **msg)
{
	struct sl_traps *t = &d->trapped;
	for (size_t i = 0; i < d->ninsts; i++)
		if (sl_traps_add_traps(t, d->insts[i].traps.v, d->insts[i].traps.n) < 0)
			return oom(err, msg);
	for (size_t i = 0; i < hs->n; i++) {
		int nr = registration_nr(d, &hs->regs[i], err, msg);
		if (nr < 0)
			return -1;
		if (sl_traps_add(t, nr) < 0)
			return oom(err, msg);
	}
	if (hs->n > 0) {
		const int *ex;
		size_t nex = sl_sys_exec_like(&ex);
		if (sl_traps_add_all(t, ex, nex) < 0)
			return oom(err, msg);
	}
	sl_traps_normalize(t);
	if (build_chained(d) < 0)
		return oom(err, msg);
	return 0;
}

/* The builtin links of every chain. */
static int link_builtins(struct sl_chains *d, struct sl_chain *c)
{
	c->first = calloc(d->ninsts ? d->ninsts : 1, sizeof(*c->first));
	if (!c->first)
		return -1;
	for (size_t i = 0; i < d->ninsts; i++) {
		struct sl_inst *in = &d->insts[i];
		if (in->b->phase == SL_PHASE_FIRST &&
		    (in->b->every_trapped || sl_traps_has(&in->traps, c->nr)))
			c->first[c->nfirst++] = in;
	}
	c->last = last_for(d, c->nr);
	return 0;
}

static int append_handler(struct sl_chain *c, sandlock_handler_t *h)
{
	sandlock_handler_t **v = realloc(c->h, (c->nh + 1) * sizeof(*v));
	if (!v)
		return -1;
	v[c->nh++] = h;
	c->h = v;
	return 0;
}

/* The chain of a syscall nothing traps: the every_trapped builtins. */
static int link_unchained(struct sl_chains *d)
{
	struct sl_chain *c = &d->unchained;
	c->nr = -1;
	c->first = calloc(d->ninsts ? d->ninsts : 1, sizeof(*c->first));
	if (!c->first)
		return -1;
	for (size_t i = 0; i < d->ninsts; i++)
		if (d->insts[i].b->phase == SL_PHASE_FIRST && d->insts[i].b->every_trapped)
			c->first[c->nfirst++] = &d->insts[i];
	return 0;
}

/* One chain per chained syscall (the set is sorted: so are they). */
static int build_chains(struct sl_chains *d, const struct sl_handlers *hs, int *err,
                        char **msg)
{
	d->chains = calloc(d->nchained ? d->nchained : 1, sizeof(*d->chains));
	if (!d->chains || link_unchained(d) < 0)
		return oom(err, msg);
	for (size_t i = 0; i < d->nchained; i++) {
		d->chains[i].nr = d->chained[i];
		d->nchains++;
		if (link_builtins(d, &d->chains[i]) < 0)
			return oom(err, msg);
	}
	/* Names were checked by build_trapped: resolving again cannot fail. */
	for (size_t i = 0; i < hs->n; i++) {
		struct sl_chain *c = (struct sl_chain *)sl_chains_find(d, seccomp_syscall_resolve_name(hs->regs[i].syscall));
		if (!c || append_handler(c, hs->regs[i].handler) < 0)
			return oom(err, msg);
	}
	return 0;
}

int sl_chains_build(struct sl_chains *d, const struct sandlock_sandbox *cfg,
                    struct sl_services *sv, const struct sl_handlers *hs, int *err, char **msg)
{
	d->cfg = cfg;
	if (make_builtins(d, cfg, sv, err, msg) < 0 || build_trapped(d, hs, err, msg) < 0 ||
	    build_chains(d, hs, err, msg) < 0)
		return -1;
	return 0;
}

void sl_chains_free(struct sl_chains *d)
{
	for (size_t i = 0; i < d->nchains; i++) {
		free(d->chains[i].first);
		free(d->chains[i].h);
	}
	free(d->chains);
	free(d->unchained.first);
	for (size_t i = 0; i < d->ninsts; i++) {
		struct sl_inst *in = &d->insts[i];
		if (in->live && in->b->free)
			in->b->free(in->state);
		free(in->traps.v);
	}
	free(d->insts);
	sl_traps_free(&d->trapped);
	free(d->chained);
}
