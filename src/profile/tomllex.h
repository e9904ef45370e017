/*
 * tomllex.h — the TOML reader's cursor and its tokens other than values,
 * shared by toml.c (values, tables, the document) and tomllex.c (errors,
 * strings, keys).  Nothing outside src/profile/ includes it.
 */
#ifndef SANDLOCK_PROFILE_TOMLLEX_H
#define SANDLOCK_PROFILE_TOMLLEX_H

#include <stdbool.h>

/* The parse: where it is in the text, and its first error. */
struct ps {
	const char *p;
	int line, col;
	char *err; /* first error, heap */
};

/* Record "LINE:COL: message" as the parse's error, unless one is already
 * recorded (the first error is the one reported). */
__attribute__((format(printf, 4, 5))) void toml_fail_at(struct ps *s, int line, int col,
                                                        const char *fmt, ...);
#define FAIL(s, ...) toml_fail_at((s), (s)->line, (s)->col, __VA_ARGS__)

/* The cursor's steps, per character: inline. */
static inline char cur(const struct ps *s)
{
	return *s->p;
}

static inline void adv(struct ps *s)
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

static inline void skip_blank(struct ps *s)
{
	while (cur(s) == ' ' || cur(s) == '\t')
		adv(s);
}

/* "basic" or 'literal' string, s at the opening quote: heap, or NULL
 * after FAIL. */
char *toml_parse_string(struct ps *s);
/* c may appear in a bare key (A-Z a-z 0-9 _ -). */
bool toml_bare_char(char c);
/* A bare or quoted key and the blanks after it: heap, or NULL after FAIL
 * (dotted keys are refused). */
char *toml_parse_key(struct ps *s);

#endif /* SANDLOCK_PROFILE_TOMLLEX_H */
