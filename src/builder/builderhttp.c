/*
 * builderhttp.c — the HTTP section of a sandbox, checked and completed
 * at build time (builderhttp.h).
 *
 * Intercepted ports: http_port's, else 80; 443 is added when TLS is
 * terminated (http_ca or http_inject_ca).  The guest's connect to such a
 * port still passes the IP rules before it is redirected, so each
 * http_allow rule extends net_allow (when net_deny is not used) the way
 * the reference does: a concrete host with `tcp://host:PORT` on every
 * intercepted port (resolved now, pinned in the synthetic /etc/hosts),
 * a wildcard host with `tcp://:PORT`.  With only http_deny rules, every
 * intercepted port is opened (`tcp://:PORT`): the proxy judges them.
 * The addresses concrete hosts resolve to are also the proxy's grants
 * (proxyup.c): loopback or private addresses it may reach.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "builder/builderhttp.h"

static int bad(int *err, char **msg, int code, const char *what, const char *arg, char *why)
{
	sl_fail(err, msg, why ? code : SANDLOCK_ERR_NOMEM, "%s '%s': %s", what, arg,
	        why ? why : "out of memory");
	free(why);
	return -1;
}

static int parse_rules(const sl_strvec *raw, struct sl_httprules *out, const char *what,
                       int *err, char **msg)
{
	char *why = NULL;
	for (size_t i = 0; i < raw->n; i++)
		if (sl_httprules_add(out, raw->v[i], &why) < 0)
			return bad(err, msg, SANDLOCK_ERR_INVALID, what, raw->v[i], why);
	return 0;
}

/* realpath of an existing file into *out. */
static int canon(const char *path, char **out, const char *what, int *err, char **msg)
{
	if (!(*out = realpath(path, NULL)))
		return sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "%s '%s': %s", what, path,
		               strerror(errno));
	return 0;
}

static int add_port(struct sl_httpcfg *h, uint16_t port)
{
	if (sl_http_intercepts(h, port))
		return 0;
	if (h->nports == sizeof h->ports / sizeof h->ports[0])
		return -1;
	h->ports[h->nports++] = port;
	return 0;
}

/* What needs a rule, named for the error (NULL: nothing). */
static const char *needs_rules(const sandlock_builder_t *b)
{
	const struct sl_httpcfg *h = &b->cfg.http;
	return b->raw_http_ca ? "http_ca" : b->raw_http_key ? "http_key"
	       : b->raw_inject_ca.n ? "http_inject_ca" : h->ca_out ? "http_ca_out"
	       : b->raw_creds.n ? "credential" : b->raw_auth.n ? "http_auth"
	       : h->nports ? "http_port" : h->log ? "http_log" : h->log_fd >= 0 ? "http_log_fd"
	                                                              : NULL;
}

static int tls_options(sandlock_builder_t *b, int *err, char **msg)
{
	struct sl_httpcfg *h = &b->cfg.http;
	if (!b->raw_http_ca != !b->raw_http_key)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "%s is set without %s: give both (a PEM CA certificate and its key)",
		               b->raw_http_ca ? "http_ca" : "http_key",
		               b->raw_http_ca ? "http_key" : "http_ca");
	if (b->raw_http_ca && (canon(b->raw_http_ca, &h->ca, "http_ca", err, msg) < 0 ||
	                       canon(b->raw_http_key, &h->key, "http_key", err, msg) < 0))
		return -1;
	for (size_t i = 0; i < b->raw_inject_ca.n; i++) {
		char *p = NULL;
		if (canon(b->raw_inject_ca.v[i], &p, "http_inject_ca", err, msg) < 0)
			return -1;
		int rc = sl_strvec_push(&h->inject_ca, p);
		free(p);
		if (rc < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	h->mitm = h->ca || h->inject_ca.n;
	return 0;
}

static int credentials(sandlock_builder_t *b, int *err, char **msg)
{
	struct sl_httpcfg *h = &b->cfg.http;
	char *why = NULL;
	for (size_t i = 0; i < b->raw_creds.n; i++) {
		if (sl_credentials_add(&h->creds, b->raw_creds.v[i], &why) < 0) {
			/* Name the credential, never its value. */
			const char *eq = strchr(b->raw_creds.v[i], '=');
			char *name = eq ? strndup(b->raw_creds.v[i], (size_t)(eq - b->raw_creds.v[i]))
			                : sl_strdup(b->raw_creds.v[i]);
			bad(err, msg, SANDLOCK_ERR_INVALID, "credential", name ? name : "?", why);
			free(name);
			return -1;
		}
	}
	for (size_t i = 0; i < b->raw_auth.n; i++) {
		if (sl_authrules_add(&h->auth, b->raw_auth.v[i], &why) < 0)
			return bad(err, msg, SANDLOCK_ERR_INVALID, "http_auth", b->raw_auth.v[i], why);
		const struct sl_authrule *a = &h->auth.v[h->auth.n - 1];
		if (!sl_credentials_find(&h->creds, a->cred))
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
			               "http_auth '%s': no credential named '%s' (add --credential %s=SOURCE)",
			               b->raw_auth.v[i], a->cred, a->cred);
	}
	return 0;
}

/* One net_allow spec for the proxy's sake (and the grant it implies). */
static int extend(sandlock_builder_t *b, const char *host, uint16_t port, bool concrete,
                  int *err, char **msg)
{
	bool v6 = host && strchr(host, ':') && host[0] != '[';
	char *spec = concrete ? sl_asprintf(v6 ? "tcp://[%s]:%u" : "tcp://%s:%u", host, port)
	                      : sl_asprintf("tcp://:%u", port);
	if (!spec)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	char *why = NULL;
	int rc = 0;
	if (concrete && sl_netrules_add(&b->cfg.http.grants, spec, false, &why) < 0)
		rc = bad(err, msg, SANDLOCK_ERR_INVALID, "http_allow host", host, why);
	else if (!b->raw_net_deny.n && sl_strvec_push(&b->raw_net_allow, spec) < 0)
		rc = sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	free(spec);
	return rc;
}

static int extend_net(sandlock_builder_t *b, int *err, char **msg)
{
	const struct sl_httpcfg *h = &b->cfg.http;
	for (size_t p = 0; p < h->nports; p++) {
		if (!h->allow.n && extend(b, NULL, h->ports[p], false, err, msg) < 0)
			return -1;
		for (size_t i = 0; i < h->allow.n; i++) {
			const struct sl_httprule *x = &h->allow.v[i];
			if (x->port && x->port != h->ports[p])
				continue;
			if (extend(b, x->host, h->ports[p], sl_httprule_concrete_host(x), err, msg) < 0)
				return -1;
		}
	}
	return 0;
}

int sl_build_http(sandlock_builder_t *b, int *err, char **msg)
{
	struct sl_httpcfg *h = &b->cfg.http;
	if (parse_rules(&b->raw_http_allow, &h->allow, "http_allow", err, msg) < 0 ||
	    parse_rules(&b->raw_http_deny, &h->deny, "http_deny", err, msg) < 0)
		return -1;
	if (!sl_http_active(h)) {
		const char *what = needs_rules(b);
		if (what)
			return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
			               "%s needs at least one http_allow or http_deny rule "
			               "(the proxy runs only with rules)", what);
		return 0;
	}
	if (tls_options(b, err, msg) < 0 || credentials(b, err, msg) < 0)
		return -1;
	if ((!h->nports && add_port(h, 80) < 0) || (h->mitm && add_port(h, 443) < 0))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "http_port: too many ports");
	return extend_net(b, err, msg);
}

SL_EXPORT char *sandlock_http_rule_error(const char *rule)
{
	if (!rule)
		return sl_strdup("NULL rule");
	struct sl_httprules r = { 0 };
	char *why = NULL;
	if (sl_httprules_add(&r, rule, &why) < 0 && !why)
		why = sl_strdup("out of memory");
	sl_httprules_free(&r);
	return why;
}
