/*
 * trap.c — lists of traps (trap.h): what each builtin traps (builtin.h)
 * and the run's trapped set (chains.c), as filter.c compiles it.  A leaf.
 */
#include <stdlib.h>

#include "trap.h"

int sl_traps_add_trap(struct sl_traps *s, const struct sl_trap *t)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct sl_trap *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = *t;
	return 0;
}

int sl_traps_add_traps(struct sl_traps *s, const struct sl_trap *t, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sl_traps_add_trap(s, &t[i]) < 0)
			return -1;
	return 0;
}

int sl_traps_add(struct sl_traps *s, int nr)
{
	if (nr < 0)
		return 0; /* a syscall this ABI lacks (syscalls.h SL_NR_*) */
	const struct sl_trap t = SL_TRAP_ALWAYS(nr);
	return sl_traps_add_trap(s, &t);
}

int sl_traps_add_all(struct sl_traps *s, const int *nrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sl_traps_add(s, nrs[i]) < 0)
			return -1;
	return 0;
}

int sl_traps_add_classes(struct sl_traps *s, const sl_sys_class *classes, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const int *nrs;
		size_t k = classes[i](&nrs);
		if (sl_traps_add_all(s, nrs, k) < 0)
			return -1;
	}
	return 0;
}

bool sl_traps_has(const struct sl_traps *s, int nr)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].nr == nr)
			return true;
	return false;
}

bool sl_trap_eq(const struct sl_trap *a, const struct sl_trap *b)
{
	if (a->nr != b->nr || a->ncond != b->ncond)
		return false;
	for (size_t i = 0; i < a->ncond; i++)
		if (a->cond[i].arg != b->cond[i].arg || a->cond[i].op != b->cond[i].op ||
		    a->cond[i].mask != b->cond[i].mask || a->cond[i].val != b->cond[i].val)
			return false;
	return true;
}

/* By number, unconditional first, then by conditions (any fixed order). */
static int cmp_trap(const void *pa, const void *pb)
{
	const struct sl_trap *a = pa, *b = pb;
	if (a->nr != b->nr)
		return (a->nr > b->nr) - (a->nr < b->nr);
	if (a->ncond != b->ncond)
		return (a->ncond > b->ncond) - (a->ncond < b->ncond);
	for (size_t i = 0; i < a->ncond; i++) {
		const struct sl_trap_cond *x = &a->cond[i], *y = &b->cond[i];
		if (x->arg != y->arg)
			return (x->arg > y->arg) - (x->arg < y->arg);
		if (x->op != y->op)
			return (x->op > y->op) - (x->op < y->op);
		if (x->mask != y->mask)
			return (x->mask > y->mask) - (x->mask < y->mask);
		if (x->val != y->val)
			return (x->val > y->val) - (x->val < y->val);
	}
	return 0;
}

void sl_traps_normalize(struct sl_traps *s)
{
	if (s->n == 0)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_trap);
	size_t u = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct sl_trap *t = &s->v[i];
		if (u > 0 && s->v[u - 1].nr == t->nr &&
		    (s->v[u - 1].ncond == 0 || sl_trap_eq(&s->v[u - 1], t)))
			continue; /* a duplicate, or shadowed by the trap on every call */
		s->v[u++] = *t;
	}
	s->n = u;
}

void sl_traps_free(struct sl_traps *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
