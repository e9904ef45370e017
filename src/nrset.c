/*
 * nrset.c — a growing set of syscall numbers: what each builtin traps
 * (builtin.h) and the run's trapped set (dispatch.c).  A leaf.
 */
#include <stdlib.h>

#include "nrset.h"

int sl_nrset_add(struct sl_nrset *s, int nr)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		int *v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = nr;
	return 0;
}

int sl_nrset_add_all(struct sl_nrset *s, const int *nrs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (sl_nrset_add(s, nrs[i]) < 0)
			return -1;
	return 0;
}
