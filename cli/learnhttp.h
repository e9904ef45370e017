/*
 * learnhttp.h — `sandlock learn` for HTTP: with an --http-port (or HTTP
 * rules) the learning run lets every request through its proxy and logs
 * them; the profile then gets the http_allow rules those requests need.
 */
#ifndef SANDLOCK_CLI_LEARNHTTP_H
#define SANDLOCK_CLI_LEARNHTTP_H

#include <stdbool.h>

#include "runcfg.h"

/* Does cfg ask for the HTTP proxy (a port or a rule)? */
bool cli_learn_http_wanted(const struct cli_cfg *cfg);
/* Make the learning run's cfg admit and log every request to log_path. */
int cli_learn_http_open(struct cli_cfg *run, const char *log_path);
/* Add to cfg one http_allow rule per (method, host, first path segment)
 * the log shows was served.  0, or -1 (out of memory). */
int cli_learn_http_rules(struct cli_cfg *cfg, const char *log_path);

#endif
