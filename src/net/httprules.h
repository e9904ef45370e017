/*
 * httprules.h — the HTTP policy of a sandbox as data: `METHOD host/path`
 * rules (http_allow / http_deny), the request they are matched against,
 * and the credential rules of --http-auth.  Pure data: no sockets, no
 * threads (the proxy, proxy*.c, applies them).
 *
 * A RULE is `METHOD host[/path]`:
 *   METHOD  `*` or a token (GET, POST, ...), compared case-sensitively
 *   host    a glob over the lower-cased host name (`*`, `*.example.com`,
 *           `api.example.com`); `host:port` restricts the port as well
 *   path    a glob (`*` matches any run of characters, `/` included)
 *           over the normalized path (below); omitted = every path
 * Deny rules are checked first and win; with allow rules, a request no
 * allow rule matches is refused; with only deny rules, it is allowed.
 */
#ifndef SANDLOCK_HTTPRULES_H
#define SANDLOCK_HTTPRULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "builder/credentials.h"
#include "net/netrules.h"
#include "util.h"

struct sl_httprule {
	char *text;   /* as given, for the 403 body and the log */
	char *method; /* "*" or a token */
	char *host;   /* lower-cased glob, no port */
	uint16_t port; /* 0 = any */
	char *path;   /* glob, starting with '/' */
};

struct sl_httprules {
	struct sl_httprule *v;
	size_t n, cap;
};

/* Parse one rule into r.  0, or -1 with *why (heap; NULL on OOM). */
int sl_httprules_add(struct sl_httprules *r, const char *text, char **why);
void sl_httprules_free(struct sl_httprules *r);
/* Does the rule's host name one host (no glob)?  Then it can be pinned. */
bool sl_httprule_concrete_host(const struct sl_httprule *x);

/* A request as the proxy judges it: path already normalized. */
struct sl_httpreq {
	const char *method;
	const char *host; /* lower-cased, no port, no trailing dot */
	uint16_t port;
	const char *path;
};
/* The first rule of r matching q, or NULL. */
const struct sl_httprule *sl_httprules_match(const struct sl_httprules *r,
                                             const struct sl_httpreq *q);
/* Does rule x's host (and port) match? */
bool sl_httprule_host_matches(const struct sl_httprule *x, const char *host, uint16_t port);
/* Host-only matching, for HTTPS judged by its SNI (no method or path to
 * see): the first rule whose host (and port) matches, whatever its method
 * and path. */
const struct sl_httprule *sl_httprules_match_host(const struct sl_httprules *r,
                                                  const char *host, uint16_t port);

/*
 * The path a rule is matched against: the request target's path (no
 * query, no fragment), percent-decoded, "//" collapsed and "." / ".."
 * resolved, so "/a/%2e%2e/admin" and "/a//../admin" are "/admin".  Into
 * out (cap bytes).  false when the target is not an origin-form path or
 * decodes to a NUL or does not fit: the request is refused (400).
 */
bool sl_http_norm_path(const char *target, size_t len, char *out, size_t cap);

/* --http-auth "METHOD HOST/PATH AUTHSPEC NAME [replace|add-only]" */
enum sl_auth_kind { SL_AUTH_BEARER, SL_AUTH_BASIC, SL_AUTH_HEADER, SL_AUTH_QUERY };
struct sl_authrule {
	char *text;               /* as given */
	struct sl_httprule match; /* the METHOD HOST/PATH part */
	enum sl_auth_kind kind;
	char *param;  /* basic: the user; header: the header name; query: the parameter */
	char *cred;   /* credential NAME */
	bool add_only; /* keep a credential of that shape the guest sent */
};
struct sl_authrules {
	struct sl_authrule *v;
	size_t n, cap;
};
int sl_authrules_add(struct sl_authrules *r, const char *text, char **why);
/* The first auth rule whose match part matches q, or NULL. */
const struct sl_authrule *sl_authrules_match(const struct sl_authrules *r,
                                             const struct sl_httpreq *q);

/* The HTTP section of a sandbox's configuration (config.h). */
struct sl_httpcfg {
	struct sl_httprules allow, deny;
	uint16_t ports[64]; /* intercepted TCP ports */
	size_t nports;
	char *ca, *key;     /* canonical paths of a CA to sign with, or NULL */
	sl_strvec inject_ca; /* trust bundles the CA is spliced into (canonical) */
	char *ca_out;       /* where the CA's certificate is written */
	char *log;          /* egress log (JSON lines), or NULL */
	int log_fd;         /* or an fd of the caller's (-1 = none) */
	bool mitm;          /* TLS on 443 is terminated (ca or inject_ca) */
	struct sl_credentials creds;
	struct sl_authrules auth;
	/* Addresses the proxy may reach although they are loopback, link-local
	 * or private: those that concrete hosts of the rules resolved to. */
	struct sl_netrules grants;
};
/* True when the sandbox runs the proxy (some allow or deny rule). */
static inline bool sl_http_active(const struct sl_httpcfg *h)
{
	return h->allow.n || h->deny.n;
}
bool sl_http_intercepts(const struct sl_httpcfg *h, uint16_t port);
void sl_httpcfg_free(struct sl_httpcfg *h);

#endif /* SANDLOCK_HTTPRULES_H */
