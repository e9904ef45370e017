/*
 * profile/toml.c — the profile TOML subset (see toml.h for exactly what it takes).
 *
 * A recursive-descent parser over the whole text.  Every error records the
 * line and column where it was detected and stops the parse: the first
 * error is the one reported, and no partial result is ever returned.
 */
#include "profile/toml.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ps {
	const char *p;
	int line, col;
	char *err; /* first error, heap */
};

__attribute__((format(printf, 4, 5))) static void fail_at(struct ps *s, int line, int col,
                                                          const char *fmt, ...)
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

#define FAIL(s, ...) fail_at((s), (s)->line, (s)->col, __VA_ARGS__)

static char cur(const struct ps *s)
{
	return *s->p;
}

static void adv(struct ps *s)
{
	if (*s->p == '\n') {
		s->line++;
		s->col = 1;
	} else if (*s->p) {
		s->col++;
	}
	if (*s->p)
		s->p++;
}

static void skip_blank(struct ps *s)
{
	while (cur(s) == ' ' || cur(s) == '\t')
		adv(s);
}

static void skip_comment(struct ps *s)
{
	if (cur(s) == '#')
		while (cur(s) && cur(s) != '\n')
			adv(s);
}

/* Blanks, comments and newlines (inside arrays). */
static void skip_space_nl(struct ps *s)
{
	for (;;) {
		skip_blank(s);
		skip_comment(s);
		if (cur(s) == '\r' && s->p[1] == '\n')
			adv(s);
		if (cur(s) != '\n')
			return;
		adv(s);
	}
}

/* After a statement: only blanks and a comment may follow on the line. */
static int end_of_line(struct ps *s)
{
	skip_blank(s);
	skip_comment(s);
	if (cur(s) == '\r' && s->p[1] == '\n')
		adv(s);
	if (cur(s) == '\n') {
		adv(s);
		return 0;
	}
	if (cur(s) == '\0')
		return 0;
	FAIL(s, "unexpected '%c' after the value (one key = value per line)", cur(s));
	return -1;
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
			fail_at(s, line, col, "\\%c escape needs %d hex digits", digits == 4 ? 'u' : 'U',
				digits);
			return -1;
		}
		cp = cp * 16 + (uint32_t)h;
		adv(s);
	}
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
		fail_at(s, line, col, "escape is not an allowed Unicode character (NUL, surrogate or "
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
static char *parse_string(struct ps *s)
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
			fail_at(s, line, col, "unterminated string");
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

static bool bare_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

static char *parse_key(struct ps *s)
{
	char *k;
	if (cur(s) == '"' || cur(s) == '\'') {
		k = parse_string(s);
	} else {
		const char *start = s->p;
		while (bare_char(cur(s)))
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

/* ---------------------------------------------------------------- values */

static int parse_value(struct ps *s, struct toml_value *v);
static void value_release(struct toml_value *v);

static void table_free(struct toml_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->n; i++) {
		free(t->kv[i].key);
		value_release(&t->kv[i].val);
	}
	free(t->kv);
	free(t);
}

static void value_release(struct toml_value *v)
{
	switch (v->type) {
	case TOML_STRING:
		free(v->u.s);
		break;
	case TOML_ARRAY:
		for (size_t i = 0; i < v->u.arr.n; i++)
			value_release(&v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case TOML_TABLE:
		table_free(v->u.tab);
		break;
	default:
		break;
	}
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Copy a run of digits (with '_' allowed only between digits) into out.
 * Returns the number of digits, or -1 after an error.
 */
static int digit_run(struct ps *s, char *out, size_t *on, size_t cap)
{
	int n = 0;
	while (is_digit(cur(s)) || cur(s) == '_') {
		if (cur(s) == '_') {
			if (n == 0 || !is_digit(s->p[1])) {
				FAIL(s, "'_' in a number must sit between digits");
				return -1;
			}
			adv(s);
			continue;
		}
		if (*on + 2 >= cap) {
			FAIL(s, "number too long");
			return -1;
		}
		out[(*on)++] = cur(s);
		n++;
		adv(s);
	}
	out[*on] = '\0';
	return n;
}

static int number_tail(struct ps *s, char *buf, size_t *n, size_t cap, bool *is_float)
{
	if (cur(s) == '.') {
		*is_float = true;
		buf[(*n)++] = '.';
		adv(s);
		int d = digit_run(s, buf, n, cap);
		if (d < 0)
			return -1;
		if (d == 0) {
			FAIL(s, "expected digits after the decimal point");
			return -1;
		}
	}
	if (cur(s) == 'e' || cur(s) == 'E') {
		*is_float = true;
		buf[(*n)++] = 'e';
		adv(s);
		if (cur(s) == '+' || cur(s) == '-') {
			buf[(*n)++] = cur(s);
			adv(s);
		}
		int d = digit_run(s, buf, n, cap);
		if (d < 0)
			return -1;
		if (d == 0) {
			FAIL(s, "expected digits in the exponent");
			return -1;
		}
	}
	return 0;
}

static int parse_number(struct ps *s, struct toml_value *v)
{
	char buf[128];
	size_t n = 0;
	if (cur(s) == '+' || cur(s) == '-') {
		buf[n++] = cur(s);
		adv(s);
	}
	if (strncmp(s->p, "inf", 3) == 0 || strncmp(s->p, "nan", 3) == 0) {
		FAIL(s, "inf and nan are not supported");
		return -1;
	}
	if (cur(s) == '0' && (s->p[1] == 'x' || s->p[1] == 'o' || s->p[1] == 'b')) {
		FAIL(s, "hexadecimal, octal and binary integers are not supported");
		return -1;
	}
	size_t first = n;
	int d = digit_run(s, buf, &n, sizeof(buf));
	if (d < 0)
		return -1;
	if (d == 0) {
		FAIL(s, "expected a value (string, number, true, false, array or inline table)");
		return -1;
	}
	if (cur(s) == '-' || cur(s) == ':') {
		FAIL(s, "dates and times are not supported (write them as strings)");
		return -1;
	}
	if (d > 1 && buf[first] == '0') {
		fail_at(s, v->line, v->col, "leading zeros are not allowed");
		return -1;
	}
	bool is_float = false;
	if (number_tail(s, buf, &n, sizeof(buf), &is_float) < 0)
		return -1;
	buf[n] = '\0';
	errno = 0;
	if (is_float) {
		v->type = TOML_FLOAT;
		v->u.f = strtod(buf, NULL);
		if (errno == ERANGE && isinf(v->u.f)) {
			fail_at(s, v->line, v->col, "float out of range");
			return -1;
		}
		return 0;
	}
	v->type = TOML_INT;
	long long ll = strtoll(buf, NULL, 10);
	if (errno == ERANGE) {
		fail_at(s, v->line, v->col, "integer out of range (64-bit)");
		return -1;
	}
	v->u.i = (int64_t)ll;
	return 0;
}

static int parse_array(struct ps *s, struct toml_value *v)
{
	v->type = TOML_ARRAY;
	v->u.arr.items = NULL;
	v->u.arr.n = 0;
	adv(s); /* '[' */
	size_t cap = 0;
	for (;;) {
		skip_space_nl(s);
		if (cur(s) == ']')
			break;
		if (v->u.arr.n == cap) {
			cap = cap ? cap * 2 : 8;
			struct toml_value *ni = realloc(v->u.arr.items, cap * sizeof(*ni));
			if (!ni) {
				FAIL(s, "out of memory");
				return -1;
			}
			v->u.arr.items = ni;
		}
		/* Counted before it is parsed so a half-built item is freed too. */
		struct toml_value *it = &v->u.arr.items[v->u.arr.n++];
		it->type = TOML_BOOL;
		if (parse_value(s, it) < 0)
			return -1;
		skip_space_nl(s);
		if (cur(s) == ',') {
			adv(s);
			continue;
		}
		if (cur(s) != ']') {
			if (cur(s) == '\0')
				FAIL(s, "unterminated array (missing ']')");
			else
				FAIL(s, "expected ',' or ']' in the array, found '%c'", cur(s));
			return -1;
		}
	}
	adv(s); /* ']' */
	return 0;
}

/* Add key (taking ownership) to t; refuses a duplicate.  Returns the slot. */
static struct toml_kv *table_add(struct ps *s, struct toml_table *t, char *key, int line, int col)
{
	for (size_t i = 0; i < t->n; i++) {
		if (strcmp(t->kv[i].key, key) == 0) {
			fail_at(s, line, col, "duplicate key '%s' (first defined at %d:%d)", key,
				t->kv[i].line, t->kv[i].col);
			free(key);
			return NULL;
		}
	}
	struct toml_kv *nkv = realloc(t->kv, (t->n + 1) * sizeof(*nkv));
	if (!nkv) {
		FAIL(s, "out of memory");
		free(key);
		return NULL;
	}
	t->kv = nkv;
	struct toml_kv *kv = &t->kv[t->n++];
	memset(kv, 0, sizeof(*kv));
	kv->key = key;
	kv->line = line;
	kv->col = col;
	kv->val.type = TOML_BOOL; /* harmless until parsed */
	return kv;
}

/* key = value (s at the key); the value goes into t. */
static int parse_keyval(struct ps *s, struct toml_table *t)
{
	int line = s->line, col = s->col;
	char *key = parse_key(s);
	if (!key)
		return -1;
	if (cur(s) != '=') {
		FAIL(s, "expected '=' after the key '%s'", key);
		free(key);
		return -1;
	}
	adv(s);
	skip_blank(s);
	struct toml_kv *kv = table_add(s, t, key, line, col);
	if (!kv)
		return -1;
	return parse_value(s, &kv->val);
}

static int parse_inline_table(struct ps *s, struct toml_value *v)
{
	v->type = TOML_TABLE;
	v->u.tab = calloc(1, sizeof(*v->u.tab));
	if (!v->u.tab) {
		FAIL(s, "out of memory");
		return -1;
	}
	adv(s); /* '{' */
	skip_blank(s);
	if (cur(s) == '}') {
		adv(s);
		return 0;
	}
	for (;;) {
		skip_blank(s);
		if (parse_keyval(s, v->u.tab) < 0)
			return -1;
		skip_blank(s);
		if (cur(s) == ',') {
			adv(s);
			continue;
		}
		if (cur(s) == '}') {
			adv(s);
			return 0;
		}
		if (cur(s) == '\n' || cur(s) == '\0' || cur(s) == '#')
			FAIL(s, "an inline table must close with '}' on the same line");
		else
			FAIL(s, "expected ',' or '}' in the inline table, found '%c'", cur(s));
		return -1;
	}
}

static bool word_at(const struct ps *s, const char *w)
{
	size_t n = strlen(w);
	return strncmp(s->p, w, n) == 0 && !bare_char(s->p[n]);
}

static int parse_value(struct ps *s, struct toml_value *v)
{
	v->line = s->line;
	v->col = s->col;
	v->type = TOML_BOOL;
	char c = cur(s);
	if (c == '"' || c == '\'') {
		v->u.s = parse_string(s);
		if (!v->u.s)
			return -1;
		v->type = TOML_STRING;
		return 0;
	}
	if (c == '[')
		return parse_array(s, v);
	if (c == '{')
		return parse_inline_table(s, v);
	if (word_at(s, "true") || word_at(s, "false")) {
		v->u.b = c == 't';
		for (int i = v->u.b ? 4 : 5; i > 0; i--)
			adv(s);
		return 0;
	}
	if (c == '+' || c == '-' || is_digit(c) || word_at(s, "inf") || word_at(s, "nan"))
		return parse_number(s, v);
	if (c == '\0' || c == '\n' || c == '#')
		FAIL(s, "expected a value");
	else
		FAIL(s, "expected a value (string, number, true, false, array or inline table), "
			"found '%c'", c);
	return -1;
}

/* ---------------------------------------------------------------- document */

/* [name] (s at '['): returns the new table, added to root. */
static struct toml_table *parse_header(struct ps *s, struct toml_table *root)
{
	int line = s->line, col = s->col;
	if (s->p[1] == '[') {
		FAIL(s, "arrays of tables ([[...]]) are not supported");
		return NULL;
	}
	adv(s);
	skip_blank(s);
	char *name = parse_key(s);
	if (!name)
		return NULL;
	if (cur(s) != ']') {
		FAIL(s, "expected ']' to close the table header");
		free(name);
		return NULL;
	}
	adv(s);
	struct toml_kv *kv = table_add(s, root, name, line, col);
	if (!kv)
		return NULL;
	kv->val.type = TOML_TABLE;
	kv->val.line = line;
	kv->val.col = col;
	kv->val.u.tab = calloc(1, sizeof(struct toml_table));
	if (!kv->val.u.tab)
		FAIL(s, "out of memory");
	return kv->val.u.tab;
}

struct toml_table *toml_parse(const char *text, char **err)
{
	struct ps s = { text, 1, 1, NULL };
	struct toml_table *root = calloc(1, sizeof(*root));
	if (!root) {
		*err = strdup("out of memory");
		return NULL;
	}
	struct toml_table *cur_t = root;
	for (;;) {
		skip_space_nl(&s);
		if (cur(&s) == '\0')
			break;
		if (cur(&s) == '[') {
			cur_t = parse_header(&s, root);
			if (!cur_t)
				break;
		} else if (parse_keyval(&s, cur_t) < 0) {
			break;
		}
		if (end_of_line(&s) < 0)
			break;
	}
	if (s.err) {
		table_free(root);
		*err = s.err;
		return NULL;
	}
	*err = NULL;
	return root;
}

void toml_free(struct toml_table *t)
{
	table_free(t);
}

const struct toml_value *toml_get(const struct toml_table *t, const char *key)
{
	for (size_t i = 0; t && i < t->n; i++)
		if (strcmp(t->kv[i].key, key) == 0)
			return &t->kv[i].val;
	return NULL;
}

const char *toml_type_name(enum toml_type t)
{
	switch (t) {
	case TOML_STRING: return "string";
	case TOML_INT: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "boolean";
	case TOML_ARRAY: return "array";
	case TOML_TABLE: return "table";
	}
	return "value";
}

void toml_write_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}
