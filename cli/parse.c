/*
 * parse.c — strict numeric parsing for the sandlock CLI (see parse.h).
 */
#include "parse.h"

#include <stdbool.h>
#include <stddef.h>

#include "sandlock.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Accumulate the leading run of digits of *sp into *acc; advances *sp.
 * Returns the number of digits read, or -1 on overflow. */
static int take_digits(const char **sp, uint64_t *acc)
{
	const char *s = *sp;
	int n = 0;
	for (; is_digit(*s); s++, n++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (*acc > (UINT64_MAX - d) / 10)
			return -1;
		*acc = *acc * 10 + d;
	}
	*sp = s;
	return n;
}

int cli_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out, const char **why)
{
	uint64_t v = 0;
	int n = take_digits(&s, &v);
	if (n < 0) {
		*why = "number too large";
		return -1;
	}
	if (n == 0 || *s != '\0') {
		*why = "not a non-negative whole number";
		return -1;
	}
	if (v < min || v > max) {
		*why = "out of range";
		return -1;
	}
	*out = v;
	return 0;
}

int cli_parse_seconds(const char *s, uint64_t *out_ms, const char **why)
{
	uint64_t whole = 0, frac_ms = 0;
	bool round_up = false;
	int n = take_digits(&s, &whole);
	if (n < 0 || whole > UINT64_MAX / 1000) {
		*why = "number too large";
		return -1;
	}
	int nfrac = 0;
	if (*s == '.') {
		s++;
		/* Milliseconds are the resolution: keep three digits, and
		 * remember whether anything non-zero follows them. */
		for (; is_digit(*s); s++, nfrac++) {
			if (nfrac < 3)
				frac_ms = frac_ms * 10 + (uint64_t)(*s - '0');
			else if (*s != '0')
				round_up = true;
		}
		for (int i = nfrac; i < 3; i++)
			frac_ms *= 10;
		if (nfrac == 0) {
			*why = "expected seconds such as 10 or 0.5";
			return -1;
		}
	}
	if ((n == 0 && nfrac == 0) || *s != '\0') {
		*why = "expected seconds such as 10 or 0.5";
		return -1;
	}
	uint64_t ms = whole * 1000 + frac_ms + (round_up ? 1 : 0);
	if (ms < whole * 1000) {
		*why = "number too large";
		return -1;
	}
	if (ms == 0) {
		*why = "must be greater than zero";
		return -1;
	}
	*out_ms = ms;
	return 0;
}

int cli_parse_time(const char *s, int64_t *out_ns, const char **why)
{
	if (sandlock_parse_time(s, out_ns) == 0)
		return 0;
	*why = "expected Unix seconds or an RFC 3339 time such as 2000-01-01T00:00:00Z "
	       "(a real date, from 1970)";
	return -1;
}
