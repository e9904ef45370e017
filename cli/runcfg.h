/*
 * runcfg.h — what `sandlock run` will ask of the library, gathered from a
 * profile and from the command line before anything is applied.
 *
 * A profile and the flags each fill one of these; cli_cfg_merge() lays the
 * flags over the profile (lists are concatenated, single values replaced)
 * and cli_cfg_apply() hands the result to a builder.
 */
#ifndef SANDLOCK_CLI_RUNCFG_H
#define SANDLOCK_CLI_RUNCFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sandlock.h"

struct cli_list {
	char **v; /* heap strings */
	size_t n;
};

/* An option handed to the builder as it was given (the knobs: open files,
 * CPU, cores, process settings, extra denials, protections); applied after
 * the rest, a profile's first, so a later single value wins. */
struct cli_op {
	int id;    /* enum cli_opt_id */
	char *arg; /* NULL for a flag */
};

struct cli_ops {
	struct cli_op *v;
	size_t n;
};

struct cli_cfg {
	struct cli_list read, write, deny;
	struct cli_list env; /* "K=V", in order: a later K wins */
	struct cli_list extra_allow; /* syscall group names */
	char *cwd;
	char *name; /* hostname inside the sandbox, or NULL */
	int clean_env; /* -1: not set */
	bool has_max_memory, has_max_processes, has_timeout, has_kill_after, has_random_seed, has_time_start;
	uint64_t max_memory;
	uint32_t max_processes;
	uint64_t timeout_ms;
	uint64_t kill_after_ms; /* --kill-after: CLI only, never in a profile */
	uint64_t random_seed;
	int64_t time_start_ns; /* Unix time, ns */
	struct cli_list argv; /* [program] exec + args; empty: none */
	struct cli_ops ops;
};

void cli_cfg_init(struct cli_cfg *c);
void cli_cfg_free(struct cli_cfg *c);
/* 0, or -1 when out of memory. */
int cli_list_add(struct cli_list *l, const char *s);
/* Free every string of l and l's array; l is left empty. */
void cli_list_free(struct cli_list *l);
int cli_ops_add(struct cli_ops *o, int id, const char *arg); /* 0 or -1 (OOM) */
/* "K=V" with a non-empty K; -1 with *why otherwise. */
int cli_env_add(struct cli_list *env, const char *kv, const char **why);
/* *out = profile overlaid with flags (both left intact).  -1: no memory. */
int cli_cfg_merge(struct cli_cfg *out, const struct cli_cfg *profile, const struct cli_cfg *flags);
/* Apply c to b.  The library validates paths and ports at build time. */
void cli_cfg_apply(const struct cli_cfg *c, sandlock_builder_t *b);

#endif
