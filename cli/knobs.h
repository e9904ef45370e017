/*
 * knobs.h — options handed to the builder as given (knobs.c).
 */
#ifndef SANDLOCK_CLI_KNOBS_H
#define SANDLOCK_CLI_KNOBS_H

#include "runcfg.h"
#include "sandlock.h"

/* Apply one knob to b: 0, or the exit status of a refusal (already said). */
int cli_apply_knob(sandlock_builder_t *b, const struct cli_op *op);

#endif
