/*
 * tomllex.c — the TOML reader's lexical tokens other than values
 * (tomllex.h): the parse's first error, basic and literal strings with
 * their escapes (UTF-8 out of \u and \U), bare and quoted keys.  Apart
 * from toml.c, which builds values, tables and the document out of them,
 * because reading one token is a mechanism of its own.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/tomllex.h"

void toml_fail_at(struct ps *s, int line, int col, const char *fmt, ...)
{
	if (s->err)
		return;
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	size_t n = strlen(msg) + 32;
	s->err = malloc(n);
	if (s->err)
		snprintf(s->err, n, "%d:%d: %s", line, col, msg);
}

/* ---------------------------------------------------------------- strings */

struct sbuf {
	char *b;
	size_t n, cap;
};

static int sb_put(struct sbuf *b, char c)
{
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 32;
		char *nb = realloc(b->b, cap);
		if (!nb)
			return -1;
		b->b = nb;
		b->cap = cap;
	}
	b->b[b->n++] = c;
	b->b[b->n] = '\0';
	return 0;
}

static int sb_utf8(struct sbuf *b, uint32_t cp)
{
	if (cp < 0x80)
		return sb_put(b, (char)cp);
	if (cp < 0x800)
		return sb_put(b, (char)(0xC0 | (cp >> 6))) | sb_put(b, (char)(0x80 | (cp & 0x3F)));
	if (cp < 0x10000)
		return sb_put(b, (char)(0xE0 | (cp >> 12))) |
		       sb_put(b, (char)(0x80 | ((cp >> 6) & 0x3F))) |
		       sb_put(b, (char)(0x80 | (cp & 0x3F)));
	return sb_put(b, (char)(0xF0 | (cp >> 18))) | sb_put(b, (char)(0x80 | ((cp >> 12) & 0x3F))) |
	       sb_put(b, (char)(0x80 | ((cp >> 6) & 0x3F))) | sb_put(b, (char)(0x80 | (cp & 0x3F)));
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* \uXXXX or \UXXXXXXXX (s at the 'u'/'U'): a Unicode scalar, never NUL. */
static int unicode_escape(struct ps *s, struct sbuf *b)
{
	int line = s->line, col = s->col - 1;
	int digits = cur(s) == 'u' ? 4 : 8;
	adv(s);
	uint32_t cp = 0;
	for (int i = 0; i < digits; i++) {
		int h = hexval(cur(s));
		if (h < 0) {
			toml_fail_at(s, line, col, "\\%c escape needs %d hex digits", digits == 4 ? 'u' : 'U',
				digits);
			return -1;
		}
		cp = cp * 16 + (uint32_t)h;
		adv(s);
	}
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
		toml_fail_at(s, line, col, "escape is not an allowed Unicode character (NUL, surrogate or "
				      "beyond U+10FFFF)");
		return -1;
	}
	return sb_utf8(b, cp);
}

static int simple_escape(char c)
{
	switch (c) {
	case 'b': return '\b';
	case 't': return '\t';
	case 'n': return '\n';
	case 'f': return '\f';
	case 'r': return '\r';
	case '"': return '"';
	case '\\': return '\\';
	default: return -1;
	}
}

/* A control character may not appear raw in a string (tab excepted). */
static bool bad_raw(char c)
{
	unsigned char u = (unsigned char)c;
	return (u < 0x20 && c != '\t') || u == 0x7F;
}

/* "basic" (quote '"') or 'literal' (quote '\''); s at the opening quote. */
char *toml_parse_string(struct ps *s)
{
	char q = cur(s);
	int line = s->line, col = s->col;
	if (s->p[1] == q && s->p[2] == q) {
		FAIL(s, "multi-line strings are not supported");
		return NULL;
	}
	adv(s);
	struct sbuf b = { 0 };
	if (sb_put(&b, 'x') < 0) /* allocate, then drop the placeholder */
		goto nomem;
	b.n = 0;
	b.b[0] = '\0';
	while (cur(s) != q) {
		char c = cur(s);
		if (c == '\0' || c == '\n' || (c == '\r' && s->p[1] == '\n')) {
			toml_fail_at(s, line, col, "unterminated string");
			goto fail;
		}
		if (bad_raw(c)) {
			FAIL(s, "control character in a string (write it as an escape)");
			goto fail;
		}
		if (q == '"' && c == '\\') {
			adv(s);
			if (cur(s) == 'u' || cur(s) == 'U') {
				if (unicode_escape(s, &b) < 0)
					goto fail;
				continue;
			}
			int e = simple_escape(cur(s));
			if (e < 0) {
				FAIL(s, "unknown escape '\\%c'", cur(s) ? cur(s) : '?');
				goto fail;
			}
			c = (char)e;
		}
		if (sb_put(&b, c) < 0)
			goto nomem;
		adv(s);
	}
	adv(s);
	return b.b;
nomem:
	FAIL(s, "out of memory");
fail:
	free(b.b);
	return NULL;
}

/* ---------------------------------------------------------------- keys */

bool toml_bare_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

char *toml_parse_key(struct ps *s)
{
	char *k;
	if (cur(s) == '"' || cur(s) == '\'') {
		k = toml_parse_string(s);
	} else {
		const char *start = s->p;
		while (toml_bare_char(cur(s)))
			adv(s);
		size_t n = (size_t)(s->p - start);
		if (n == 0) {
			if (cur(s) == '\0' || cur(s) == '\n')
				FAIL(s, "expected a key");
			else
				FAIL(s, "expected a key, found '%c'", cur(s));
			return NULL;
		}
		k = strndup(start, n);
		if (!k)
			FAIL(s, "out of memory");
	}
	if (!k)
		return NULL;
	skip_blank(s);
	if (cur(s) == '.') {
		FAIL(s, "dotted keys are not supported (use a [table] or an inline table)");
		free(k);
		return NULL;
	}
	return k;
}
