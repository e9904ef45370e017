/*
 * profile.h — TOML profiles for `sandlock run --profile/--profile-file`
 * and `sandlock profile list|show`.
 *
 * The schema is the reference's sectioned one ([config] [determinism]
 * [program] [filesystem] [network] [http] [syscalls] [limits]).  Keys whose
 * feature sandlock has are applied; keys of features it does not have yet
 * are refused ("not supported yet") unless their value asks for nothing
 * (false, an empty list or table); any other key or section is an error.
 */
#ifndef SANDLOCK_CLI_PROFILE_H
#define SANDLOCK_CLI_PROFILE_H

#include <stdio.h>

#include "runcfg.h"

/* DIR/NAME.toml for a plain NAME (no '/', not starting with '.'). */
char *cli_profile_path(const char *name, char **err);
/* Load PATH into *out (initialised here).  0, or -1 with a heap message
 * "PATH:LINE:COL: reason" in *err. */
int cli_profile_load(const char *path, struct cli_cfg *out, char **err);
/*
 * Write cfg to out as a profile in the schema above, one that
 * cli_profile_load reads back into the same policy (paths made absolute).
 * Options no profile key can hold (--timeout, --net-deny, --allow-unix,
 * --disable, ...) are written as comment lines starting with
 * CLI_PROFILE_LOST and counted: the return value.  `sandlock inspect
 * NAME --toml` prints a running sandbox's policy with it.
 */
#define CLI_PROFILE_LOST "# not expressible in a profile:"
int cli_profile_print(const struct cli_cfg *cfg, FILE *out);
/* `sandlock profile ...` (argv[0] is "profile"); returns the exit status. */
int cli_profile_command(int argc, char **argv);

#endif
