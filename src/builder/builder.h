/*
 * builder.h — what the builder's files share: the first-error rule and
 * the raw-value helpers of the setters (builder.c), the release of a
 * configuration (builder.c; the builder and sandlock_sandbox_free use it).
 * sandlock_builder and the configuration are in config.h.
 */
#ifndef SANDLOCK_BUILDER_H
#define SANDLOCK_BUILDER_H

#include "config.h"

/* Remember only the first error: later ones are usually consequences. */
void sl_b_error(sandlock_builder_t *b, int code, const char *fmt, const char *arg);
void sl_b_oom(sandlock_builder_t *b);
/* Keep a copy of a path option in *slot (resolved at build). */
sandlock_builder_t *sl_b_raw_path(sandlock_builder_t *b, char **slot, const char *path,
                                  const char *what);
/* Append a path to v (b is not NULL); an empty path is an error. */
sandlock_builder_t *sl_b_add_path(sandlock_builder_t *b, sl_strvec *v, const char *path,
                                  const char *what);
/* The default COW storage we made, then its owner lock. */
void sl_b_remove_storage(int lock, const char *path);

#endif
