/*
 * builderhttp.h — the build step of the HTTP section (builder.c calls
 * it before the network rules are parsed: HTTP rules add to them).
 */
#ifndef SANDLOCK_BUILDERHTTP_H
#define SANDLOCK_BUILDERHTTP_H

#include "config.h"

/* Parse and check b's HTTP options into b->cfg.http, load credentials,
 * and extend b's net_allow with what the proxy's ports need.  0 or -1. */
int sl_build_http(sandlock_builder_t *b, int *err, char **msg);

#endif /* SANDLOCK_BUILDERHTTP_H */
