/*
 * runargs.h — a `sandlock run`/`learn` command line, parsed (runargs.c).
 */
#ifndef SANDLOCK_CLI_RUNARGS_H
#define SANDLOCK_CLI_RUNARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "learn.h"
#include "report.h"
#include "runcfg.h"

/* Status for "sandlock itself failed", as timeout(1)/env(1) use 125. */
#define EXIT_SANDLOCK 125
#define EXIT_NOT_FOUND 127

/* Everything `run` was told, before the profile is merged in. */
struct run_args {
	struct cli_cfg flags;
	const char *profile;      /* --profile NAME */
	const char *profile_file; /* --profile-file PATH */
	struct cli_report rep;
	struct cli_learn_opts learn; /* learn only: -o, --merge, --collapse */
	int learn_flag;              /* the first learn-only option given, or 0 */
	bool trace;
	bool help;
	bool image; /* --image: the command may come from the image */
};

/* Parse the options of `run` or `learn` (argv[0] is the subcommand) into
 * ra: 0, or the exit status of a usage error (already said). */
int cli_parse_run(int argc, char **argv, struct run_args *ra);
/* The profile ra names, with ra's flags laid over it, into out: 0 or an
 * exit status (already said). */
int cli_resolve_config(const struct run_args *ra, struct cli_cfg *out);

/* "sandlock: <fmt with a, b>" and the --help hint on stderr: EXIT_SANDLOCK. */
int cli_usage_error(const char *fmt, const char *a, const char *b);
/* An option's value refused, naming the option: EXIT_SANDLOCK. */
int cli_bad_value(int id, const char *arg, const char *why);
/* A size option's value (4096, 100M, 1.5G: sandlock_parse_memory_size)
 * into *v: 0, or cli_bad_value's status with the reason (examples: the
 * sizes the hint shows). */
int cli_size_value(int id, const char *arg, const char *examples, uint64_t *v);
/* "sandlock: out of memory": EXIT_SANDLOCK. */
int cli_out_of_memory(void);

#endif
