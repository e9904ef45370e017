/*
 * tty.h — the terminal of an inherit_stdio run.
 *
 * The sandbox runs in its own process group, so it must be made the
 * terminal's foreground group or a read from the terminal stops it with
 * SIGTTIN.  The run's thread also mirrors the sandbox's job-control stops.
 */
#ifndef SANDLOCK_TTY_H
#define SANDLOCK_TTY_H

#include <stdbool.h>
#include <sys/types.h>

struct sl_tty {
	int fd;        /* our controlling terminal among fds 0..2, or -1: nothing to do */
	pid_t caller;  /* the caller's process group */
	pid_t sandbox; /* the sandbox's process group (== the child's pid, unreaped) */
	bool handed;   /* we made the sandbox the terminal's foreground group */
	int waiting;   /* stop signal the sandbox waits in for the foreground, or 0 */
	bool warned;
};
/* How often (ms) the run checks for a stopped sandbox while sl_tty is active. */
#define SL_TTY_POLL_MS 100
void sl_tty_init(struct sl_tty *t); /* inactive */
/* Before the child execs: find the terminal; if the caller is its foreground
 * group, hand the foreground to pgid. */
void sl_tty_start(struct sl_tty *t, pid_t pgid);
/* Periodically while the child runs: mirror its stops, hand the terminal over. */
void sl_tty_watch(struct sl_tty *t);
/* Give the terminal back to the caller's group if we took it; idempotent. */
void sl_tty_end(struct sl_tty *t);

#endif /* SANDLOCK_TTY_H */
