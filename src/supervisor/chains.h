/*
 * chains.h — what runs for each trapped syscall of one run (chains.c),
 * for the dispatcher: the builtins instantiated for the run, one chain per
 * trapped syscall, and the set the seccomp filter traps.
 */
#ifndef SANDLOCK_CHAINS_H
#define SANDLOCK_CHAINS_H

#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "supervisor/handler.h"
#include "trap.h"

struct sl_builtin;
struct sl_services;

/* One builtin of the table, instantiated for this run. */
struct sl_inst {
	const struct sl_builtin *b;
	void *state;
	struct sl_traps traps; /* what it traps in this run */
	bool live;           /* init succeeded: free its state */
};

/* Everything that runs for one trapped syscall, in order. */
struct sl_chain {
	int nr;
	struct sl_inst **first;   /* FIRST-phase builtins */
	size_t nfirst;
	sandlock_handler_t **h; /* user handlers */
	size_t nh;
	struct sl_inst *last;     /* LAST-phase builtin, or NULL */
};

struct sl_chains {
	const struct sandlock_sandbox *cfg;
	struct sl_inst *insts; /* every builtin of the table, in its order */
	size_t ninsts;
	struct sl_chain *chains; /* sorted by nr */
	size_t nchains;
	struct sl_traps trapped; /* what the filter traps (sl_traps_normalize) */
	int *chained; /* sorted, unique: the numbers of trapped, one chain each */
	size_t nchained;
	/* For a notification of a syscall with no chain (an argument rule's
	 * refusal sent by the filter's prefix, report_refusals): the FIRST
	 * builtins that look at every trapped call.  Never continued. */
	struct sl_chain unchained;
};

/* Instantiate the builtins for cfg with the run's services sv and build
 * the chains for hs into *d (zeroed).  0, or -1 with *err, *msg;
 * sl_chains_free frees either way (before the services). */
int sl_chains_build(struct sl_chains *d, const struct sandlock_sandbox *cfg,
                    struct sl_services *sv, const struct sl_handlers *hs, int *err, char **msg);
/* The chain of syscall nr, or NULL. */
const struct sl_chain *sl_chains_find(const struct sl_chains *d, int nr);
void sl_chains_free(struct sl_chains *d);

#endif
