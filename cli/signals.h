/*
 * signals.h — make SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to the `sandlock`
 * command end the whole sandbox, not just the command itself.
 */
#ifndef SANDLOCK_CLI_SIGNALS_H
#define SANDLOCK_CLI_SIGNALS_H

/* Install the handlers (call before sandlock_run).  0 or -1. */
int cli_signals_install(void);
/* If one of those signals arrived, die of it now (so our own parent sees
 * the usual "killed by SIGINT"); otherwise return. */
void cli_signals_reraise(void);
/* Die of sig (default action, unblocked); returns only if that does not kill. */
void cli_die_of(int sig);

#endif
