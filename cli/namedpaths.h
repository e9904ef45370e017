/*
 * namedpaths.h — after a failed run, a file its command line names that
 * the rules refuse, and the flag that allows it.
 */
#ifndef SANDLOCK_CLI_NAMEDPATHS_H
#define SANDLOCK_CLI_NAMEDPATHS_H

#include <stdbool.h>

#include "runcfg.h"

/* The line to print (without "sandlock: "), or NULL when every path the
 * command names is allowed (or the run has a chroot/image: guest paths).
 * Heap. */
char *cli_named_path_hint(const struct cli_cfg *cfg);
/* Guest paths (chroot, image) are not the host's: the rules do not apply. */
bool cli_host_paths(const struct cli_cfg *cfg);

#endif
