/*
 * profile/instant.c — a point in time as a user writes one: Unix seconds
 * (optionally with a fraction) or RFC 3339.  One parser for the CLI's
 * --time-start, a profile's [determinism] time_start and any binding.
 */
#include <stdbool.h>
#include <stdint.h>

#include "util.h"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
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

SL_EXPORT int sandlock_parse_time(const char *s, int64_t *out_ns)
{
	if (!s || !out_ns)
		return -1;
	const char *p = s;
	uint64_t secs = 0;
	int n = 0;
	for (; is_digit(*p) && secs < (uint64_t)INT64_MAX / 1000000000; p++, n++)
		secs = secs * 10 + (uint64_t)(*p - '0');
	if (n > 0 && (*p == '\0' || *p == '.') && secs < (uint64_t)INT64_MAX / 1000000000) {
		int64_t frac = take_fraction(&p);
		if (*p == '\0') {
			*out_ns = (int64_t)secs * 1000000000 + frac;
			return 0;
		}
	}
	return parse_rfc3339(s, out_ns);
}
