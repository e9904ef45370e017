/*
 * nrset.h — a growing set of syscall numbers (nrset.c).
 */
#ifndef SANDLOCK_NRSET_H
#define SANDLOCK_NRSET_H

#include <stddef.h>

/* Duplicates are fine. */
struct sl_nrset {
	int *v;
	size_t n, cap;
};
int sl_nrset_add(struct sl_nrset *s, int nr);                      /* 0 or -1 (OOM) */
int sl_nrset_add_all(struct sl_nrset *s, const int *nrs, size_t n); /* 0 or -1 (OOM) */

#endif /* SANDLOCK_NRSET_H */
