/*
 * explain.h — one line at the end of a run that failed for a reason the
 * sandbox caused: which limit or rule, and the flag that would allow it.
 */
#ifndef SANDLOCK_CLI_EXPLAIN_H
#define SANDLOCK_CLI_EXPLAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "runcfg.h"
#include "sandlock.h"

struct cli_explain;

/* What the run was given, to name it back. */
struct cli_explain_cfg {
	bool has_timeout, has_max_memory, workdir;
	uint64_t timeout_ms, max_memory;
	uint32_t max_processes; /* 0: the library's default */
	bool has_max_processes;
	const char *workdir_path;
	bool on_error_abort; /* a failed run's workdir changes are thrown away */
	const struct cli_cfg *run; /* the rules, for a command it could not execute */
	bool traced; /* --trace reports each refused access itself */
};

struct cli_explain *cli_explain_new(const struct cli_explain_cfg *c);
void cli_explain_free(struct cli_explain *e);
/* A sandlock_decision_fn (ud: the cli_explain); chains to next(next_ud)
 * when set (the --trace printer). */
void cli_explain_decision(void *ud, const sandlock_decision_t *d);
void cli_explain_chain(struct cli_explain *e, sandlock_decision_fn next, void *next_ud);
/* After the run, status being our exit status: the explanation lines on
 * stderr, when the run did not succeed. */
void cli_explain_end(struct cli_explain *e, const sandlock_result_t *r, int status);

#endif
