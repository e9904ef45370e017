/*
 * learn.h — where `sandlock learn` writes the profile it learned:
 * stdout, -o/--output PATH, or --merge PATH (the learned grants added to
 * the profile already there); --collapse N grants a directory whole where
 * N or more of its entries were used.
 */
#ifndef SANDLOCK_CLI_LEARN_H
#define SANDLOCK_CLI_LEARN_H

#include "runcfg.h"
#include "trace.h"

struct cli_learn_opts {
	const char *output; /* -o/--output PATH, or NULL: stdout */
	const char *merge;  /* --merge PATH, or NULL */
	unsigned collapse;  /* --collapse N, 0: off */
};

/* Check the options before the run (a --merge profile must load).  0, or
 * an exit status after printing why. */
int cli_learn_check(const struct cli_learn_opts *o);
/* Write the profile of what the run used.  0, or an exit status after
 * printing why.  A file is replaced atomically: never left half written. */
int cli_learn_emit(const struct cli_trace *t, const struct cli_cfg *cfg,
                   const struct cli_learn_opts *o);

#endif
