/*
 * profile/schema.h — what a profile may say: its sections, their keys, each
 * key's type and range, and the normal form a checked profile is handed
 * over in (the JSON object described at sandlock_profile_load).
 */
#ifndef SANDLOCK_PROFILE_SCHEMA_H
#define SANDLOCK_PROFILE_SCHEMA_H

#include <jansson.h>

#include "profile/toml.h"

/*
 * Check root (a parsed profile) against the schema.  path is the profile's
 * own path: messages start with it, and relative host paths are placed in
 * its directory.  The normalized object (json_decref it), or NULL with a
 * heap message "PATH:LINE:COL: [section] key: reason" in *err.
 */
json_t *sl_profile_check(const struct toml_table *root, const char *path, char **err);

#endif
