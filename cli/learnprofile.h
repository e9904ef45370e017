/*
 * learnprofile.h — learn's profile: the files a run used as grants
 * (learnprofile.c), for trace.c.
 */
#ifndef SANDLOCK_CLI_LEARNPROFILE_H
#define SANDLOCK_CLI_LEARNPROFILE_H

#include <stdbool.h>
#include <stdio.h>

#include "runcfg.h"

/* Print cfg with the paths read (used_read) and written (used_write) as
 * its -r/-w grants.  tty: the run's stdio was a terminal (/dev/tty needs
 * no grant).  base, collapse: as cli_trace_print_profile (trace.h).  0, or
 * -1 (out of memory). */
int cli_learn_print_profile(const struct cli_list *used_read, const struct cli_list *used_write,
                            bool tty, const struct cli_cfg *cfg, const struct cli_cfg *base,
                            unsigned collapse, FILE *out);

#endif
