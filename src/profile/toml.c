/*
 * profile/toml.c — the profile TOML subset (see toml.h for exactly what it takes).
 *
 * A recursive-descent parser over the whole text.  Every error records the
 * line and column where it was detected and stops the parse: the first
 * error is the one reported, and no partial result is ever returned.
 * This file builds values, tables and the document; the cursor, strings
 * and keys are tomllex.c's.
 */
#include "profile/toml.h"
#include "profile/tomllex.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
		toml_fail_at(s, v->line, v->col, "leading zeros are not allowed");
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
			toml_fail_at(s, v->line, v->col, "float out of range");
			return -1;
		}
		return 0;
	}
	v->type = TOML_INT;
	long long ll = strtoll(buf, NULL, 10);
	if (errno == ERANGE) {
		toml_fail_at(s, v->line, v->col, "integer out of range (64-bit)");
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
			toml_fail_at(s, line, col, "duplicate key '%s' (first defined at %d:%d)", key,
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
	char *key = toml_parse_key(s);
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
	return strncmp(s->p, w, n) == 0 && !toml_bare_char(s->p[n]);
}

static int parse_value(struct ps *s, struct toml_value *v)
{
	v->line = s->line;
	v->col = s->col;
	v->type = TOML_BOOL;
	char c = cur(s);
	if (c == '"' || c == '\'') {
		v->u.s = toml_parse_string(s);
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
	char *name = toml_parse_key(s);
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

/*
 * TOML text is UTF-8 (the spec says so): text in another encoding would be
 * read differently by other TOML readers (Python's tomllib refuses it), so
 * it is refused here too.  The first byte that does not start a
 * well-formed, shortest-form sequence of a Unicode scalar, or NULL.
 */
static const char *bad_utf8(const char *text)
{
	static const uint32_t shortest[4] = { 0, 0x80, 0x800, 0x10000 };
	const unsigned char *s = (const unsigned char *)text;
	while (*s) {
		unsigned c = *s;
		int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2
		      : (c & 0xF8) == 0xF0 ? 3 : -1;
		if (n < 0)
			return (const char *)s;
		uint32_t cp = n ? c & (0x3Fu >> n) : c;
		for (int i = 1; i <= n; i++) {
			if ((s[i] & 0xC0) != 0x80)
				return (const char *)s;
			cp = cp << 6 | (s[i] & 0x3F);
		}
		if (cp < shortest[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return (const char *)s;
		s += n + 1;
	}
	return NULL;
}

/* Refuse text that is not UTF-8, at the line and column of its first bad byte. */
static int check_utf8(struct ps *s)
{
	const char *bad = bad_utf8(s->p);
	if (!bad)
		return 0;
	while (s->p < bad)
		adv(s);
	FAIL(s, "not UTF-8 text (a TOML file is UTF-8; byte 0x%02x)", (unsigned char)*bad);
	return -1;
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
	check_utf8(&s);
	while (!s.err) {
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
