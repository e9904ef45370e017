/*
 * control.h — named sandboxes: `sandlock run --name NAME` serves a control
 * socket for the run; `sandlock ps`, `inspect NAME` and `kill NAME` talk
 * to it.  Sockets live in a directory only the user can enter
 * ($XDG_RUNTIME_DIR/sandlock, else /run/user/UID/sandlock, else
 * /tmp/sandlock-UID), and the server answers only peers of the same uid.
 */
#ifndef SANDLOCK_CLI_CONTROL_H
#define SANDLOCK_CLI_CONTROL_H

#include <stdbool.h>

#include "sandlock.h"

struct cli_control;

/* NULL (after printing why) if the name is invalid or in use. */
struct cli_control *cli_control_open(const char *name);
/* Serve inspect/kill for h on a thread until cli_control_close.  policy:
 * the run's policy as a profile (cli_profile_print), answered to
 * `inspect --toml`; copied here, NULL: not available. */
int cli_control_serve(struct cli_control *c, sandlock_handle_t *h, char **cmd, int ncmd,
                      const char *policy);
/* Stop serving, remove the socket, free.  NULL is ok. */
void cli_control_close(struct cli_control *c);

/* The client subcommands; argv[0] is the subcommand.  Exit status. */
int cli_cmd_ps(int argc, char **argv);
int cli_cmd_inspect(int argc, char **argv);
int cli_cmd_kill(int argc, char **argv);
/* sandlock stop [-t SECS] NAME: SIGTERM to the command, then kill. */
int cli_cmd_stop(int argc, char **argv);

#endif
