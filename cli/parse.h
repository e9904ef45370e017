/*
 * parse.h — strict parsers for the CLI's numeric option values.
 * Each returns 0 on success or -1 with a short reason in *why; they never
 * accept signs, whitespace, trailing junk or values that overflow, because
 * strtoul() silently accepts "-1" (wrapping it) and " 5".
 */
#ifndef SANDLOCK_CLI_PARSE_H
#define SANDLOCK_CLI_PARSE_H

#include <stdint.h>

/* Plain decimal integer in [min, max]. */
int cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char **why);
/* Seconds, optionally with a decimal fraction ("0.5"); returned in ms,
 * rounded up so a tiny positive value never becomes "no timeout". */
int cli_parse_seconds(const char *s, uint64_t *out_ms, const char **why);

/* A point in time: Unix seconds (optionally with a fraction) or RFC 3339
 * ("2000-01-01T00:00:00Z", "...T12:00:00.5+01:00"), not before 1970.
 * Returned as Unix nanoseconds. */
int cli_parse_time(const char *s, int64_t *out_ns, const char **why);

#endif
