/*
 * proxyinject.c — the credential an --http-auth rule attaches to a
 * request (proxyinject.h): its value as the rule's kind sends it (Bearer,
 * Basic, a header of its own, a query parameter) and the request target
 * with a query credential added or replaced.  Apart from proxyhttp.c,
 * which rebuilds the head around it, because it is the one place a
 * secret is encoded and wiped.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/proxyinject.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *base64(const char *s, size_t n)
{
	char *o = malloc(4 * ((n + 2) / 3) + 1), *p = o;
	for (size_t i = 0; o && i < n; i += 3) {
		uint32_t v = (uint32_t)(unsigned char)s[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)(unsigned char)s[i + 1] << 8;
		if (i + 2 < n)
			v |= (unsigned char)s[i + 2];
		*p++ = b64[(v >> 18) & 63];
		*p++ = b64[(v >> 12) & 63];
		*p++ = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		*p++ = i + 2 < n ? b64[v & 63] : '=';
	}
	if (o)
		*p = '\0';
	return o;
}

static char *url_encode(const char *s)
{
	char *o = malloc(3 * strlen(s) + 1), *p = o;
	for (; o && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (isalnum(ch) || strchr("-._~", ch))
			*p++ = (char)ch;
		else
			p += sprintf(p, "%%%02X", ch);
	}
	if (o)
		*p = '\0';
	return o;
}

const char *px_inject_header(const struct px_inject *inj)
{
	if (!inj->value || inj->rule->kind == SL_AUTH_QUERY)
		return NULL;
	return inj->rule->kind == SL_AUTH_HEADER ? inj->rule->param : "Authorization";
}

void px_inject_prepare(struct px_conn *c, const struct sl_httpreq *q, struct px_inject *inj)
{
	memset(inj, 0, sizeof *inj);
	const struct sl_authrule *a = sl_authrules_match(&c->px->http.auth, q);
	const struct sl_credential *cr = a ? sl_credentials_find(&c->px->http.creds, a->cred) : NULL;
	if (!cr)
		return;
	inj->rule = a;
	inj->cred = cr;
	if (a->kind == SL_AUTH_BEARER) {
		inj->value = sl_asprintf("Bearer %s", cr->value);
	} else if (a->kind == SL_AUTH_BASIC) {
		char *up = sl_asprintf("%s:%s", a->param, cr->value);
		char *enc = up ? base64(up, strlen(up)) : NULL;
		inj->value = enc ? sl_asprintf("Basic %s", enc) : NULL;
		if (up)
			explicit_bzero(up, strlen(up));
		free(up);
		free(enc);
	} else if (a->kind == SL_AUTH_HEADER) {
		inj->value = sl_strdup(cr->value);
	} else {
		inj->value = url_encode(cr->value);
	}
	if (!c->tls && !atomic_exchange(&c->px->cred_warned, true))
		sl_warn("http_auth: credential '%s' sent to %s over cleartext HTTP", a->cred, q->host);
}

void px_inject_free(struct px_inject *inj)
{
	if (inj->value) {
		explicit_bzero(inj->value, strlen(inj->value));
		free(inj->value);
	}
}

/* Does the query of target carry param=...? */
static bool query_has(const char *target, size_t n, const char *param)
{
	const char *q = memchr(target, '?', n);
	size_t pl = strlen(param);
	while (q && q < target + n) {
		q++;
		if ((size_t)(target + n - q) > pl && strncmp(q, param, pl) == 0 && q[pl] == '=')
			return true;
		q = memchr(q, '&', (size_t)(target + n - q));
	}
	return false;
}

int px_inject_target(sl_buf *o, const char *origin, size_t len, const struct px_inject *inj)
{
	if (!inj->value || inj->rule->kind != SL_AUTH_QUERY)
		return sl_buf_append(o, origin, len);
	const char *param = inj->rule->param;
	size_t pl = strlen(param);
	bool has = query_has(origin, len, param);
	if (has && inj->rule->add_only)
		return sl_buf_append(o, origin, len);
	/* Copy the target without any param=..., then add ours. */
	const char *q = memchr(origin, '?', len);
	const char *end = origin + len;
	const char *hash = memchr(origin, '#', len);
	if (hash)
		end = hash;
	if (sl_buf_append(o, origin, (size_t)((q ? q : end) - origin)) < 0)
		return -1;
	char sep = '?';
	for (const char *p = q ? q + 1 : end; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		bool ours = (size_t)(e - p) > pl && strncmp(p, param, pl) == 0 && p[pl] == '=';
		if (!ours && e > p) {
			if (sl_buf_append(o, &sep, 1) < 0 || sl_buf_append(o, p, (size_t)(e - p)) < 0)
				return -1;
			sep = '&';
		}
		p = amp ? amp + 1 : end;
	}
	return sl_buf_append(o, &sep, 1) < 0 || sl_buf_append(o, param, pl) < 0 ||
	               sl_buf_append(o, "=", 1) < 0 ||
	               sl_buf_append(o, inj->value, strlen(inj->value)) < 0
	           ? -1
	           : 0;
}
