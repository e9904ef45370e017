/*
 * parse.c — strict numeric parsing for the sandlock CLI (see parse.h).
 */
#include "parse.h"

#include <stdbool.h>
#include <stddef.h>

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

static int size_shift(char c)
{
	switch (c) {
	case 'k': case 'K': return 10;
	case 'm': case 'M': return 20;
	case 'g': case 'G': return 30;
	default: return -1;
	}
}

int cli_parse_size(const char *s, uint64_t *out, const char **why)
{
	uint64_t v = 0;
	int n = take_digits(&s, &v);
	if (n < 0) {
		*why = "number too large";
		return -1;
	}
	if (n == 0) {
		*why = "expected bytes with an optional K, M or G suffix";
		return -1;
	}
	if (*s != '\0') {
		int shift = size_shift(*s);
		if (shift < 0 || s[1] != '\0') {
			*why = "expected bytes with an optional K, M or G suffix";
			return -1;
		}
		if (v > (UINT64_MAX >> shift)) {
			*why = "number too large";
			return -1;
		}
		v <<= shift;
	}
	if (v == 0) {
		*why = "must be greater than zero";
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

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian), for UTC dates. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

/* Exactly n digits at *sp as a number in [lo, hi]; advances *sp. */
static bool fixed_digits(const char **sp, int n, unsigned lo, unsigned hi, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < n; i++) {
		if (!is_digit((*sp)[i]))
			return false;
		v = v * 10 + (unsigned)((*sp)[i] - '0');
	}
	*sp += n;
	*out = v;
	return v >= lo && v <= hi;
}

/* ".123456789" after the seconds: nanoseconds (more digits are dropped). */
static int64_t take_fraction(const char **sp)
{
	int64_t ns = 0, scale = 100000000;
	if (**sp != '.')
		return 0;
	for ((*sp)++; is_digit(**sp); (*sp)++, scale /= 10)
		ns += (**sp - '0') * scale;
	return ns;
}

/* "Z" or "+HH:MM" / "-HH:MM": the offset east of UTC in seconds. */
static bool take_zone(const char **sp, int64_t *off)
{
	const char *s = *sp;
	unsigned h, m;
	if (*s == 'Z' || *s == 'z') {
		*off = 0;
		*sp = s + 1;
		return true;
	}
	if (*s != '+' && *s != '-')
		return false;
	int sign = *s == '-' ? -1 : 1;
	s++;
	if (!fixed_digits(&s, 2, 0, 23, &h) || *s++ != ':' || !fixed_digits(&s, 2, 0, 59, &m))
		return false;
	*off = sign * (int64_t)(h * 3600 + m * 60);
	*sp = s;
	return true;
}

/* Days in month mo (1-12) of year y: 2000-02-30 is no date, not March 1. */
static unsigned month_days(unsigned y, unsigned mo)
{
	static const unsigned char days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return days[mo - 1] + (mo == 2 && leap);
}

static int parse_rfc3339(const char *s, int64_t *out_ns)
{
	unsigned y, mo, d, h, mi, se;
	int64_t off;
	if (!fixed_digits(&s, 4, 1970, 9999, &y) || *s++ != '-' || !fixed_digits(&s, 2, 1, 12, &mo) ||
	    *s++ != '-' || !fixed_digits(&s, 2, 1, 31, &d) || d > month_days(y, mo))
		return -1;
	if (*s != 'T' && *s != 't' && *s != ' ')
		return -1;
	s++;
	if (!fixed_digits(&s, 2, 0, 23, &h) || *s++ != ':' || !fixed_digits(&s, 2, 0, 59, &mi) ||
	    *s++ != ':' || !fixed_digits(&s, 2, 0, 60, &se))
		return -1;
	int64_t frac = take_fraction(&s);
	if (!take_zone(&s, &off) || *s != '\0')
		return -1;
	int64_t secs = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se - off;
	if (secs < 0)
		return -1;
	*out_ns = secs * 1000000000 + frac;
	return 0;
}

int cli_parse_time(const char *s, int64_t *out_ns, const char **why)
{
	const char *p = s;
	uint64_t secs = 0;
	int n = take_digits(&p, &secs);
	if (n > 0 && (*p == '\0' || *p == '.') && secs < (uint64_t)INT64_MAX / 1000000000) {
		int64_t frac = take_fraction(&p);
		if (*p == '\0') {
			*out_ns = (int64_t)secs * 1000000000 + frac;
			return 0;
		}
	}
	if (parse_rfc3339(s, out_ns) == 0)
		return 0;
	*why = "expected Unix seconds or an RFC 3339 time such as 2000-01-01T00:00:00Z "
	       "(a real date, from 1970)";
	return -1;
}
