/*
 * control.h — `sandlock ps`, `inspect NAME`, `kill NAME` and `stop NAME`:
 * clients of the control socket every run serves (the library's
 * run/control.h; `sandlock run --name NAME` names its run, others are
 * "sandbox-PID").  Sockets live in a directory only the user can enter
 * ($XDG_RUNTIME_DIR/sandlock, else /run/user/UID/sandlock, else
 * /tmp/sandlock-UID), and the server answers only peers of the same uid.
 */
#ifndef SANDLOCK_CLI_CONTROL_H
#define SANDLOCK_CLI_CONTROL_H

#include <stdbool.h>

#include "sandlock.h"

/* The client subcommands; argv[0] is the subcommand.  Exit status. */
int cli_cmd_ps(int argc, char **argv);
int cli_cmd_inspect(int argc, char **argv);
int cli_cmd_kill(int argc, char **argv);
/* sandlock stop [-t SECS] NAME: SIGTERM to the command, then kill. */
int cli_cmd_stop(int argc, char **argv);

#endif
