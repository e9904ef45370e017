/*
 * test_toml.c — the profile TOML-subset parser (src/profile/toml.c): every accepted
 * form yields the right values, and every refused form fails with the
 * expected LINE:COL and reason instead of being misread.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "profile/toml.h"

/* Parse text that must fail; true when the error starts with want_pos
 * ("L:C:") and contains want_why. */
static int fails_with(const char *text, const char *want_pos, const char *want_why)
{
	char *err = NULL;
	struct toml_table *t = toml_parse(text, &err);
	if (t) {
		fprintf(stderr, "  parsed, expected failure: %s\n", text);
		toml_free(t);
		return 0;
	}
	int ok = err && strncmp(err, want_pos, strlen(want_pos)) == 0 && strstr(err, want_why);
	if (!ok)
		fprintf(stderr, "  error was '%s', wanted '%s ... %s'\n", err ? err : "(null)", want_pos,
			want_why);
	free(err);
	return ok;
}

static struct toml_table *parse_ok(const char *text)
{
	char *err = NULL;
	struct toml_table *t = toml_parse(text, &err);
	if (!t)
		fprintf(stderr, "  unexpected error: %s\n", err ? err : "(null)");
	free(err);
	return t;
}

TEST(scalars_of_every_supported_type)
{
	struct toml_table *root = parse_ok("# profile\n"
					   "\n"
					   "[limits]\n"
					   "memory = \"512M\"   # trailing comment\n"
					   "processes = 1_000\n"
					   "neg = -42\n"
					   "plus = +7\n"
					   "ratio = 0.5\n"
					   "big = 1e3\n"
					   "yes = true\n"
					   "no = false\n"
					   "lit = 'C:\\path\\n'\n");
	REQUIRE(root);
	const struct toml_value *lim = toml_get(root, "limits");
	REQUIRE(lim && lim->type == TOML_TABLE);
	const struct toml_table *t = lim->u.tab;
	const struct toml_value *v = toml_get(t, "memory");
	REQUIRE(v && v->type == TOML_STRING);
	CHECK(strcmp(v->u.s, "512M") == 0);
	CHECK_EQ_INT(v->line, 4);
	CHECK_EQ_INT(v->col, 10);
	v = toml_get(t, "processes");
	REQUIRE(v && v->type == TOML_INT);
	CHECK_EQ_INT(v->u.i, 1000);
	CHECK_EQ_INT(toml_get(t, "neg")->u.i, -42);
	CHECK_EQ_INT(toml_get(t, "plus")->u.i, 7);
	v = toml_get(t, "ratio");
	REQUIRE(v && v->type == TOML_FLOAT);
	CHECK(v->u.f == 0.5);
	CHECK(toml_get(t, "big")->u.f == 1000.0);
	v = toml_get(t, "yes");
	REQUIRE(v && v->type == TOML_BOOL);
	CHECK(v->u.b);
	CHECK(!toml_get(t, "no")->u.b);
	/* literal strings take backslashes as they are */
	CHECK(strcmp(toml_get(t, "lit")->u.s, "C:\\path\\n") == 0);
	CHECK(toml_get(t, "missing") == NULL);
	toml_free(root);
}

TEST(string_escapes_decode)
{
	struct toml_table *root =
		parse_ok("s = \"a\\tb\\n\\\"q\\\" \\\\ \\u00e9 \\U0001F600\"\nq = \"x\"\n");
	REQUIRE(root);
	const struct toml_value *v = toml_get(root, "s");
	REQUIRE(v && v->type == TOML_STRING);
	CHECK(strcmp(v->u.s, "a\tb\n\"q\" \\ \xc3\xa9 \xf0\x9f\x98\x80") == 0);
	toml_free(root);
}

TEST(arrays_span_lines_and_nest)
{
	struct toml_table *root = parse_ok("[filesystem]\n"
					   "read = [\n"
					   "  \"/usr\",   # system\n"
					   "  \"/lib\",\n"
					   "]\n"
					   "empty = []\n"
					   "nested = [[1, 2], ['a']]\n");
	REQUIRE(root);
	const struct toml_table *fs = toml_get(root, "filesystem")->u.tab;
	const struct toml_value *r = toml_get(fs, "read");
	REQUIRE(r && r->type == TOML_ARRAY);
	CHECK_EQ_INT(r->u.arr.n, 2);
	CHECK(strcmp(r->u.arr.items[1].u.s, "/lib") == 0);
	CHECK_EQ_INT(r->u.arr.items[1].line, 4);
	CHECK_EQ_INT(toml_get(fs, "empty")->u.arr.n, 0);
	const struct toml_value *n = toml_get(fs, "nested");
	REQUIRE(n && n->u.arr.n == 2);
	CHECK_EQ_INT(n->u.arr.items[0].u.arr.items[1].u.i, 2);
	CHECK(strcmp(n->u.arr.items[1].u.arr.items[0].u.s, "a") == 0);
	toml_free(root);
}

TEST(inline_tables_and_quoted_keys)
{
	struct toml_table *root =
		parse_ok("[program]\nenv = { CC = \"gcc\", \"LC_ALL\" = 'C', E = {} }\n");
	REQUIRE(root);
	const struct toml_value *env = toml_get(toml_get(root, "program")->u.tab, "env");
	REQUIRE(env && env->type == TOML_TABLE);
	CHECK_EQ_INT(env->u.tab->n, 3);
	CHECK(strcmp(toml_get(env->u.tab, "CC")->u.s, "gcc") == 0);
	CHECK(strcmp(toml_get(env->u.tab, "LC_ALL")->u.s, "C") == 0);
	CHECK_EQ_INT(toml_get(env->u.tab, "E")->u.tab->n, 0);
	toml_free(root);
}

TEST(empty_document_and_crlf)
{
	struct toml_table *root = parse_ok("");
	REQUIRE(root);
	CHECK_EQ_INT(root->n, 0);
	toml_free(root);
	root = parse_ok("[a]\r\nx = 1\r\n");
	REQUIRE(root);
	CHECK_EQ_INT(toml_get(toml_get(root, "a")->u.tab, "x")->u.i, 1);
	toml_free(root);
}

TEST(unsupported_forms_are_refused_with_position)
{
	CHECK(fails_with("a.b = 1\n", "1:2:", "dotted keys are not supported"));
	CHECK(fails_with("[[x]]\n", "1:1:", "arrays of tables"));
	CHECK(fails_with("[a.b]\n", "1:3:", "dotted keys"));
	CHECK(fails_with("s = \"\"\"x\"\"\"\n", "1:5:", "multi-line strings"));
	CHECK(fails_with("s = '''x'''\n", "1:5:", "multi-line strings"));
	CHECK(fails_with("d = 2026-01-01\n", "1:9:", "dates and times"));
	CHECK(fails_with("t = 07:32:00\n", "1:7:", "dates and times"));
	CHECK(fails_with("h = 0xff\n", "1:5:", "hexadecimal"));
	CHECK(fails_with("f = inf\n", "1:5:", "inf and nan"));
	CHECK(fails_with("f = -nan\n", "1:6:", "inf and nan"));
}

TEST(malformed_input_is_refused_with_position)
{
	CHECK(fails_with("x = 1\nx = 2\n", "2:1:", "duplicate key 'x' (first defined at 1:1)"));
	CHECK(fails_with("[a]\n[a]\n", "2:1:", "duplicate key 'a'"));
	CHECK(fails_with("x = \"abc\n", "1:5:", "unterminated string"));
	CHECK(fails_with("x = [1, 2\n", "2:1:", "unterminated array"));
	CHECK(fails_with("x = [1 2]\n", "1:8:", "expected ',' or ']'"));
	CHECK(fails_with("x = 1 2\n", "1:7:", "after the value"));
	CHECK(fails_with("x =\n", "1:4:", "expected a value"));
	CHECK(fails_with("x = yes\n", "1:5:", "expected a value"));
	CHECK(fails_with("x 1\n", "1:3:", "expected '='"));
	CHECK(fails_with("= 1\n", "1:1:", "expected a key"));
	CHECK(fails_with("x = \"\\q\"\n", "1:7:", "unknown escape"));
	CHECK(fails_with("x = \"\\u12\"\n", "1:6:", "4 hex digits"));
	CHECK(fails_with("x = \"\\u0000\"\n", "1:6:", "not an allowed Unicode"));
	CHECK(fails_with("x = \"\\uD800\"\n", "1:6:", "not an allowed Unicode"));
	CHECK(fails_with("x = \"a\x01\"\n", "1:7:", "control character"));
	CHECK(fails_with("x = 012\n", "1:5:", "leading zeros"));
	CHECK(fails_with("x = 1__0\n", "1:6:", "'_' in a number"));
	CHECK(fails_with("x = 1_\n", "1:6:", "'_' in a number"));
	CHECK(fails_with("x = 1.\n", "1:7:", "digits after the decimal point"));
	CHECK(fails_with("x = 1e\n", "1:7:", "digits in the exponent"));
	CHECK(fails_with("x = 99999999999999999999\n", "1:5:", "integer out of range"));
	CHECK(fails_with("x = { a = 1,\n b = 2 }\n", "1:13:", "expected a key"));
	CHECK(fails_with("x = { a = 1\n}\n", "1:12:", "same line"));
	CHECK(fails_with("x = { a = 1, a = 2 }\n", "1:14:", "duplicate key 'a'"));
	CHECK(fails_with("[a\n", "1:3:", "expected ']'"));
	CHECK(fails_with("[a] x = 1\n", "1:5:", "after the value"));
}

/* TOML is UTF-8: a stray byte, an overlong form, a surrogate or a cut
 * sequence is refused where it is, in a string or a comment alike. */
TEST(text_that_is_not_utf8_is_refused_with_position)
{
	CHECK(fails_with("x = \"\xff\"\n", "1:6:", "not UTF-8"));
	CHECK(fails_with("x = 1\n# caf\xe9\n", "2:6:", "byte 0xe9"));
	CHECK(fails_with("x = '\xc0\xaf'\n", "1:6:", "not UTF-8"));         /* overlong '/' */
	CHECK(fails_with("x = '\xed\xa0\x80'\n", "1:6:", "not UTF-8"));     /* U+D800 */
	CHECK(fails_with("x = '\xf4\x90\x80\x80'\n", "1:6:", "not UTF-8")); /* > U+10FFFF */
	CHECK(fails_with("x = 'a\xe2\x82'\n", "1:7:", "not UTF-8"));         /* cut short */
	char *err = NULL;
	struct toml_table *t = toml_parse("x = \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92\"\n", &err);
	CHECK(t && strcmp(toml_get(t, "x")->u.s, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92") == 0);
	toml_free(t);
	free(err);
}

TEST(nested_failure_frees_partial_values)
{
	/* Under ASan this also proves nothing leaks from half-built values. */
	CHECK(fails_with("x = [[1, [2, \"a\"], {b = 'c'}], [3, 1.]]\n", "1:38:",
			 "digits after the decimal point"));
	CHECK(fails_with("x = { a = [1, 2], b = { c = \"d\" }, e = [ }\n", "1:42:", "expected a value"));
}
