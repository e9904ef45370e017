/*
 * trap.h — one description of a trap (trap.c): a syscall the seccomp
 * filter sends to the supervisor, and for which calls.  Builtins describe
 * what they trap with it (builtin.h), the dispatcher keys its chains by
 * its number (chains.c), and filter.c compiles it into the BPF program;
 * nothing else interprets a condition.  A leaf.
 */
#ifndef SANDLOCK_TRAP_H
#define SANDLOCK_TRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "syscalls.h"

enum sl_trap_op {
	SL_TRAP_NE,        /* args[arg] != val (all 64 bits) */
	SL_TRAP_MASKED_EQ, /* (args[arg] & mask) == val */
};

struct sl_trap_cond {
	uint8_t arg; /* 0-5 */
	uint8_t op;  /* enum sl_trap_op */
	uint32_t mask;
	uint64_t val;
};

#define SL_TRAP_MAX_CONDS 2

/*
 * A trap: nr goes to the supervisor when any of its conditions holds (no
 * condition: every call).  A conditional trap keeps the common form of a
 * call in the kernel (send on a connected socket, a pid that can only
 * mean the caller); where something else traps nr outright, every call
 * reaches the chain, so a builtin's decide must still handle the forms
 * its conditions leave out.
 */
struct sl_trap {
	int nr;
	uint8_t ncond;
	struct sl_trap_cond cond[SL_TRAP_MAX_CONDS];
};

/* Initializers: every call; only when argument a is nonzero; only when
 * the low 32 bits of argument a (what the kernel reads of an int) are v;
 * only when none of the bits m is set in argument a. */
#define SL_TRAP_ALWAYS(nr_) { (nr_), 0, { { 0, 0, 0, 0 } } }
#define SL_TRAP_IF_NONZERO(nr_, a) { (nr_), 1, { { (a), SL_TRAP_NE, 0, 0 } } }
#define SL_TRAP_IF_EQ32(nr_, a, v) { (nr_), 1, { { (a), SL_TRAP_MASKED_EQ, 0xffffffffu, (v) } } }
#define SL_TRAP_IF_NO_BITS(nr_, a, m) { (nr_), 1, { { (a), SL_TRAP_MASKED_EQ, (m), 0 } } }

/* A growing list of traps (duplicates are fine: sl_traps_normalize). */
struct sl_traps {
	struct sl_trap *v;
	size_t n, cap;
};
/* A trap on every call of nr (a negative nr, a syscall this ABI lacks, is
 * skipped: syscalls.h SL_NR_*).  0 or -1 (OOM). */
int sl_traps_add(struct sl_traps *s, int nr);
int sl_traps_add_all(struct sl_traps *s, const int *nrs, size_t n); /* every call; 0 or -1 */
int sl_traps_add_trap(struct sl_traps *s, const struct sl_trap *t); /* 0 or -1 (OOM) */
int sl_traps_add_traps(struct sl_traps *s, const struct sl_trap *t, size_t n);
/* Every call of every member of the classes (syscalls.h).  0 or -1 (OOM). */
int sl_traps_add_classes(struct sl_traps *s, const sl_sys_class *classes, size_t n);
/* Some trap of s is on nr (with or without conditions). */
bool sl_traps_has(const struct sl_traps *s, int nr);
/* Sorted by number, one trap per distinct (nr, conditions); a trap on
 * every call of nr replaces nr's conditional ones (it sees them all). */
void sl_traps_normalize(struct sl_traps *s);
bool sl_trap_eq(const struct sl_trap *a, const struct sl_trap *b);
void sl_traps_free(struct sl_traps *s);

#endif /* SANDLOCK_TRAP_H */
