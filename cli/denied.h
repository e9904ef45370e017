/*
 * denied.h — after a failed run, the first access Landlock refused it
 * (read from the audit log by the library) and the flag that allows it.
 */
#ifndef SANDLOCK_CLI_DENIED_H
#define SANDLOCK_CLI_DENIED_H

#include <stdbool.h>

#include "runcfg.h"

/* The line to print (without "sandlock: ") for the denial Landlock's
 * audit record names (blockers, path: sandlock_result_denied_access).
 * Heap; NULL when out of memory. */
char *cli_denied_line(const struct cli_cfg *cfg, const char *blockers, const char *path);
/* The same for an open the supervisor performed for the program and was
 * refused (refusedopen.c): read or write path. */
char *cli_denied_open_line(const struct cli_cfg *cfg, bool write, const char *path);

#endif
