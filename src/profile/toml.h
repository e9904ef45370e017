/*
 * toml.h — a parser for the subset of TOML that sandlock profiles use.
 *
 * Debian packages no C TOML parser (bookworm has only C++ ones: cpptoml,
 * toml11, toml++), so the library carries this small one, in the library
 * so that the CLI and the Python package can read one grammar.  It
 * accepts exactly:
 *   - comments (#...), blank lines;
 *   - table headers [name] with a bare name (each table at most once);
 *   - key = value, with bare keys (A-Z a-z 0-9 _ -) or "quoted" keys;
 *   - values: basic "strings" (escapes \b \t \n \f \r \" \\ \uXXXX
 *     \UXXXXXXXX), 'literal strings', decimal integers (optional sign,
 *     '_' between digits), decimal floats (fraction and/or exponent), true,
 *     false, [arrays] of those (may span lines, trailing comma allowed) and
 *     { inline = "tables" } on one line.
 * Everything else TOML has (dotted keys, [[arrays of tables]], multi-line
 * strings, dates, hex/octal/binary integers, inf/nan) is refused with a
 * "LINE:COL: ... not supported" error rather than misread.
 */
#ifndef SANDLOCK_PROFILE_TOML_H
#define SANDLOCK_PROFILE_TOML_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

enum toml_type { TOML_STRING, TOML_INT, TOML_FLOAT, TOML_BOOL, TOML_ARRAY, TOML_TABLE };

struct toml_table;

struct toml_value {
	enum toml_type type;
	int line, col; /* where the value starts, 1-based */
	union {
		char *s; /* STRING, NUL-terminated (a \u0000 escape is refused) */
		int64_t i;
		double f;
		bool b;
		struct {
			struct toml_value *items;
			size_t n;
		} arr;
		struct toml_table *tab;
	} u;
};

struct toml_kv {
	char *key;
	int line, col; /* where the key starts */
	struct toml_value val;
};

struct toml_table {
	struct toml_kv *kv; /* in file order */
	size_t n;
};

/*
 * Parse text (NUL-terminated).  Returns the root table, whose keys are the
 * top-level keys and the [table] headers (as TOML_TABLE values), or NULL
 * with a heap message "LINE:COL: reason" in *err (free it).
 */
struct toml_table *toml_parse(const char *text, char **err);
void toml_free(struct toml_table *t);
/* The value of key in t, or NULL. */
const struct toml_value *toml_get(const struct toml_table *t, const char *key);
/* "string", "integer", ... for messages. */
const char *toml_type_name(enum toml_type t);
/* Write s as a TOML basic string (quoted, escaped) to out: the one writer
 * the profile printers (profile.c, trace.c) share. */
void toml_write_str(FILE *out, const char *s);

#endif
