/*
 * signals.h — signals sent to the `sandlock` command reach the sandbox's
 * command, as they would if it ran in the terminal without us; optional
 * escalation to ending the whole sandbox (--kill-after, --timeout).
 */
#ifndef SANDLOCK_CLI_SIGNALS_H
#define SANDLOCK_CLI_SIGNALS_H

#include <stdbool.h>
#include <stdint.h>

struct cli_signal_opts {
	/* After a forwarded SIGTERM/SIGINT/SIGHUP/SIGQUIT (or the timeout's
	 * SIGTERM), end the whole sandbox if it still runs this many ms
	 * later.  0: never (the command decides; SIGKILL sandlock to force). */
	uint64_t kill_after_ms;
	/* Send SIGTERM to the command after this many ms (0: no timer; the
	 * caller sets the library's own timeout as the backstop). */
	uint64_t term_after_ms;
};

/* Install the handlers (call before sandlock_run, on the thread that runs
 * it).  0 or -1. */
int cli_signals_install(const struct cli_signal_opts *o);
/* The first terminating signal that was forwarded, or 0. */
int cli_signals_received(void);
/* True once term_after_ms expired (the command was sent SIGTERM). */
bool cli_signals_timed_out(void);
/* From another thread of this process: act as if sig had been sent to us
 * (the control socket's "stop").  0 or -1. */
int cli_signals_request(int sig);
/* Die of sig (default action, unblocked); returns only if that does not kill. */
void cli_die_of(int sig);

#endif
