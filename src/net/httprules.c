/*
 * httprules.c — parsing and matching the HTTP rules (httprules.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/httprules.h"

/* A glob match: `*` matches any run of characters (none included). */
static bool glob_match(const char *pat, const char *s)
{
	/* Iterative with one backtrack point: linear for the patterns rules use. */
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*pat == '*') {
			star = pat++;
			resume = s;
		} else if (*pat == *s) {
			pat++;
			s++;
		} else if (star) {
			pat = star + 1;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*pat == '*')
		pat++;
	return *pat == '\0';
}

static bool is_token_char(char c)
{
	return isalnum((unsigned char)c) || strchr("!#$%&'*+-.^_`|~", c);
}

static bool host_char_ok(char c)
{
	return isalnum((unsigned char)c) || c == '.' || c == '-' || c == '*' || c == '_' ||
	       c == '[' || c == ']' || c == ':';
}

/* "host[:port]" of a rule into x (host lower-cased). */
static int parse_rule_host(struct sl_httprule *x, const char *h, size_t n, char **why)
{
	if (n == 0) {
		*why = sl_strdup("no host (use '*' for any host)");
		return -1;
	}
	const char *colon = NULL;
	if (h[0] == '[') { /* [v6]:port */
		const char *rb = memchr(h, ']', n);
		if (!rb) {
			*why = sl_strdup("unclosed '[' in the host");
			return -1;
		}
		colon = (size_t)(rb + 1 - h) < n && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		colon = memchr(h, ':', n);
	}
	size_t hl = colon ? (size_t)(colon - h) : n;
	if (colon) {
		char *end;
		errno = 0;
		unsigned long p = strtoul(colon + 1, &end, 10);
		if (end != h + n || end == colon + 1 || p == 0 || p > 65535) {
			*why = sl_strdup("bad port after the host (1..65535)");
			return -1;
		}
		x->port = (uint16_t)p;
	}
	if (!(x->host = malloc(hl + 1)))
		return -1;
	for (size_t i = 0; i < hl; i++) {
		if (!host_char_ok(h[i])) {
			*why = sl_asprintf("bad character '%c' in the host", h[i]);
			return -1;
		}
		x->host[i] = (char)tolower((unsigned char)h[i]);
	}
	x->host[hl] = '\0';
	if (hl > 1 && x->host[hl - 1] == '.')
		x->host[hl - 1] = '\0';
	return 0;
}

/* "METHOD host[/path]" into x (x zeroed first).  0 or -1 (*why). */
static int parse_rule(struct sl_httprule *x, const char *text, char **why)
{
	memset(x, 0, sizeof *x);
	*why = NULL;
	while (isspace((unsigned char)*text))
		text++;
	const char *sp = text;
	while (*sp && !isspace((unsigned char)*sp))
		sp++;
	if (sp == text || !*sp) {
		*why = sl_strdup("expected 'METHOD host/path' (e.g. 'GET example.com/*')");
		return -1;
	}
	size_t ml = (size_t)(sp - text);
	for (size_t i = 0; i < ml; i++)
		if (!is_token_char(text[i])) {
			*why = sl_strdup("bad METHOD (a token such as GET, or '*')");
			return -1;
		}
	if (!(x->method = strndup(text, ml)))
		return -1;
	const char *h = sp;
	while (isspace((unsigned char)*h))
		h++;
	size_t rest = strlen(h);
	while (rest && isspace((unsigned char)h[rest - 1]))
		rest--;
	if (memchr(h, ' ', rest) || memchr(h, '\t', rest)) {
		*why = sl_strdup("expected 'METHOD host/path' (no spaces in host/path)");
		return -1;
	}
	const char *slash = memchr(h, '/', rest);
	size_t hl = slash ? (size_t)(slash - h) : rest;
	if (parse_rule_host(x, h, hl, why) < 0)
		return -1;
	x->path = slash ? strndup(slash, rest - hl) : sl_strdup("/*");
	if (!x->path || !(x->text = sl_strdup(text)))
		return -1;
	/* The rule's path is matched as written against normalized request
	 * paths: a rule with "//", "/./" or "/../" could never match. */
	if (strstr(x->path, "//") || strstr(x->path, "/./") || strstr(x->path, "/../")) {
		*why = sl_strdup("the path must be normalized (no '//', '.' or '..' segments)");
		return -1;
	}
	return 0;
}

static void rule_free(struct sl_httprule *x)
{
	free(x->text);
	free(x->method);
	free(x->host);
	free(x->path);
	memset(x, 0, sizeof *x);
}

static bool grow(void **v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 8;
	void *p = realloc(*v, c * size);
	if (!p)
		return false;
	*v = p;
	*cap = c;
	return true;
}

int sl_httprules_add(struct sl_httprules *r, const char *text, char **why)
{
	*why = NULL;
	if (!grow((void **)&r->v, &r->cap, r->n, sizeof *r->v))
		return -1;
	struct sl_httprule x;
	if (parse_rule(&x, text, why) < 0) {
		rule_free(&x);
		return -1;
	}
	r->v[r->n++] = x;
	return 0;
}

void sl_httprules_free(struct sl_httprules *r)
{
	for (size_t i = 0; i < r->n; i++)
		rule_free(&r->v[i]);
	free(r->v);
	memset(r, 0, sizeof *r);
}

bool sl_httprule_concrete_host(const struct sl_httprule *x)
{
	return !strchr(x->host, '*');
}

bool sl_httprule_host_matches(const struct sl_httprule *x, const char *host, uint16_t port)
{
	return (!x->port || x->port == port) && glob_match(x->host, host);
}

static bool rule_matches(const struct sl_httprule *x, const struct sl_httpreq *q)
{
	return (strcmp(x->method, "*") == 0 || strcmp(x->method, q->method) == 0) &&
	       sl_httprule_host_matches(x, q->host, q->port) && glob_match(x->path, q->path);
}

const struct sl_httprule *sl_httprules_match(const struct sl_httprules *r,
                                             const struct sl_httpreq *q)
{
	for (size_t i = 0; i < r->n; i++)
		if (rule_matches(&r->v[i], q))
			return &r->v[i];
	return NULL;
}

const struct sl_httprule *sl_httprules_match_host(const struct sl_httprules *r,
                                                  const char *host, uint16_t port)
{
	for (size_t i = 0; i < r->n; i++)
		if (sl_httprule_host_matches(&r->v[i], host, port))
			return &r->v[i];
	return NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

bool sl_http_norm_path(const char *target, size_t len, char *out, size_t cap)
{
	if (len == 0 || target[0] != '/' || cap < 2)
		return false;
	size_t o = 0;
	for (size_t i = 0; i < len && target[i] != '?' && target[i] != '#'; i++) {
		char c = target[i];
		if (c == '%') {
			int hi = i + 2 < len ? hexval(target[i + 1]) : -1;
			int lo = hi >= 0 ? hexval(target[i + 2]) : -1;
			if (lo < 0)
				return false; /* a stray '%': servers disagree on it */
			c = (char)(hi * 16 + lo);
			i += 2;
			if (c == '\0')
				return false;
		}
		if (o + 1 >= cap)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	/* A trailing "/." or "/.." must resolve too: sl_path_normalize does
	 * both, and keeps a trailing '/' only as "/". */
	bool trailing = o > 1 && out[o - 1] == '/';
	sl_path_normalize(out);
	size_t n = strlen(out);
	if (trailing && n > 1 && n + 1 < cap) {
		out[n++] = '/';
		out[n] = '\0';
	}
	return true;
}

/* ---------------- --http-auth ---------------- */

static int parse_authspec(struct sl_authrule *a, const char *spec, char **why)
{
	static const struct {
		const char *prefix;
		enum sl_auth_kind kind;
	} k[] = { { "basic:", SL_AUTH_BASIC },   { "header:", SL_AUTH_HEADER },
		      { "apikey:", SL_AUTH_HEADER }, { "query:", SL_AUTH_QUERY } };
	if (strcmp(spec, "bearer") == 0) {
		a->kind = SL_AUTH_BEARER;
		return 0;
	}
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
		size_t pl = strlen(k[i].prefix);
		if (strncmp(spec, k[i].prefix, pl) != 0)
			continue;
		a->kind = k[i].kind;
		const char *p = spec + pl;
		if (!*p) {
			*why = sl_asprintf("'%s' needs a name after the ':'", k[i].prefix);
			return -1;
		}
		for (const char *c = p; *c; c++) {
			bool ok = a->kind == SL_AUTH_BASIC ? (*c != ':' && (unsigned char)*c > ' ')
			                                   : is_token_char(*c);
			if (!ok) {
				*why = a->kind == SL_AUTH_BASIC
				           ? sl_strdup("the basic: user may not contain ':' (RFC 7617)")
				           : sl_asprintf("bad character '%c' in '%s'", *c, spec);
				return -1;
			}
		}
		return (a->param = sl_strdup(p)) ? 0 : -1;
	}
	*why = sl_asprintf("unknown AUTHSPEC '%s' (bearer, basic:USER, header:NAME, "
	                   "apikey:NAME or query:PARAM)", spec);
	return -1;
}

/* "METHOD HOST/PATH AUTHSPEC NAME [replace|add-only]" */
static int parse_auth(struct sl_authrule *a, const char *text, char **why)
{
	memset(a, 0, sizeof *a);
	char *copy = sl_strdup(text);
	if (!copy)
		return -1;
	char *w[6], *save = NULL;
	size_t n = 0;
	for (char *t = strtok_r(copy, " \t", &save); t && n < 6; t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	int rc = -1;
	if (n < 4 || n > 5) {
		*why = sl_strdup("expected 'METHOD HOST/PATH AUTHSPEC NAME [replace|add-only]'");
	} else if (n == 5 && strcmp(w[4], "replace") && strcmp(w[4], "add-only")) {
		*why = sl_asprintf("'%s': the last word must be 'replace' or 'add-only'", w[4]);
	} else {
		char *rule = sl_asprintf("%s %s", w[0], w[1]);
		rc = rule ? parse_rule(&a->match, rule, why) : -1;
		free(rule);
		if (rc == 0)
			rc = parse_authspec(a, w[2], why);
		if (rc == 0 && !(a->cred = sl_strdup(w[3])))
			rc = -1;
		a->add_only = n == 5 && strcmp(w[4], "add-only") == 0;
		if (rc == 0 && !(a->text = sl_strdup(text)))
			rc = -1;
	}
	free(copy);
	return rc;
}

static void auth_free(struct sl_authrule *a)
{
	free(a->text);
	rule_free(&a->match);
	free(a->param);
	free(a->cred);
}

int sl_authrules_add(struct sl_authrules *r, const char *text, char **why)
{
	*why = NULL;
	if (!grow((void **)&r->v, &r->cap, r->n, sizeof *r->v))
		return -1;
	struct sl_authrule a;
	if (parse_auth(&a, text, why) < 0) {
		auth_free(&a);
		return -1;
	}
	r->v[r->n++] = a;
	return 0;
}

static void authrules_free(struct sl_authrules *r)
{
	for (size_t i = 0; i < r->n; i++)
		auth_free(&r->v[i]);
	free(r->v);
	memset(r, 0, sizeof *r);
}

const struct sl_authrule *sl_authrules_match(const struct sl_authrules *r,
                                             const struct sl_httpreq *q)
{
	for (size_t i = 0; i < r->n; i++)
		if (rule_matches(&r->v[i].match, q))
			return &r->v[i];
	return NULL;
}

bool sl_http_intercepts(const struct sl_httpcfg *h, uint16_t port)
{
	for (size_t i = 0; i < h->nports; i++)
		if (h->ports[i] == port)
			return true;
	return false;
}

void sl_httpcfg_free(struct sl_httpcfg *h)
{
	sl_httprules_free(&h->allow);
	sl_httprules_free(&h->deny);
	free(h->ca);
	free(h->key);
	free(h->ca_out);
	free(h->log);
	sl_strvec_free(&h->inject_ca);
	sl_credentials_free(&h->creds);
	authrules_free(&h->auth);
	sl_netrules_free(&h->grants);
	h->ca = h->key = h->ca_out = h->log = NULL;
	h->nports = 0;
}
