/*
 * reaper.h — the `sandlock` command as the last-resort reaper of its
 * sandbox, for hosts where the library cannot make a cgroup.
 */
#ifndef SANDLOCK_CLI_REAPER_H
#define SANDLOCK_CLI_REAPER_H

/* Become a child subreaper (before sandlock_run).  0 or -1. */
int cli_reaper_install(void);
/* After the run: SIGKILL and reap every process left below us. */
void cli_reaper_sweep(void);

#endif
