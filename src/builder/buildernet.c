/*
 * buildernet.c — the builder's network and HTTP setters: rule strings
 * and ports recorded as given, parsed and checked at build (build.c,
 * builderhttp.c) so that every rule error names the rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder/builder.h"

/* A numeric port from the C ABI: 1..65535 (b is not NULL). */
static bool b_port_ok(sandlock_builder_t *b, uint32_t port)
{
	if (port == 0 || port > 65535) {
		char num[16];
		snprintf(num, sizeof num, "%u", port);
		sl_b_error(b, SANDLOCK_ERR_BAD_PORT, "bad TCP port %s (must be 1..65535)", num);
		return false;
	}
	return true;
}

/* Record a rule string, checked at build (b is not NULL). */
static sandlock_builder_t *b_add_spec(sandlock_builder_t *b, sl_strvec *v, const char *spec,
                                      const char *what)
{
	if (!spec) {
		sl_b_error(b, SANDLOCK_ERR_INVALID, "%s: NULL rule", what);
		return b;
	}
	if (sl_strvec_push(v, spec) < 0)
		sl_b_oom(b);
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_allow_port(sandlock_builder_t *b,
                                                                      uint32_t port)
{
	if (!b || !b_port_ok(b, port))
		return b;
	char spec[32];
	snprintf(spec, sizeof spec, "tcp://:%u", port); /* TCP only, as this call always meant */
	return b_add_spec(b, &b->raw_net_allow, spec, "net_allow");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_allow_bind_port(sandlock_builder_t *b,
                                                                           uint32_t port)
{
	if (!b || !b_port_ok(b, port))
		return b;
	char spec[16];
	snprintf(spec, sizeof spec, "%u", port);
	return b_add_spec(b, &b->raw_bind_allow, spec, "net_allow_bind");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_allow_spec(sandlock_builder_t *b,
                                                                      const char *spec)
{
	return b ? b_add_spec(b, &b->raw_net_allow, spec, "net_allow") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_deny(sandlock_builder_t *b,
                                                                const char *spec)
{
	return b ? b_add_spec(b, &b->raw_net_deny, spec, "net_deny") : NULL;
}

SL_EXPORT sandlock_builder_t *
sandlock_sandbox_builder_net_allow_bind_spec(sandlock_builder_t *b, const char *spec)
{
	return b ? b_add_spec(b, &b->raw_bind_allow, spec, "net_allow_bind") : NULL;
}

/* The reference's names: a rule, as the _spec spellings above. */
SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_allow(sandlock_builder_t *b,
                                                                 const char *spec)
{
	return sandlock_sandbox_builder_net_allow_spec(b, spec);
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_allow_bind(sandlock_builder_t *b,
                                                                      const char *spec)
{
	return sandlock_sandbox_builder_net_allow_bind_spec(b, spec);
}

/* ---------------- HTTP (parsed at build: builderhttp.c) ---------------- */

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_allow(sandlock_builder_t *b,
                                                                  const char *rule)
{
	return b ? b_add_spec(b, &b->raw_http_allow, rule, "http_allow") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_deny(sandlock_builder_t *b,
                                                                 const char *rule)
{
	return b ? b_add_spec(b, &b->raw_http_deny, rule, "http_deny") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_port(sandlock_builder_t *b,
                                                                 uint16_t port)
{
	if (!b || !b_port_ok(b, port))
		return b;
	struct sl_httpcfg *h = &b->cfg.http;
	if (sl_http_intercepts(h, port))
		return b;
	if (h->nports == sizeof h->ports / sizeof h->ports[0])
		sl_b_error(b, SANDLOCK_ERR_INVALID, "http_port: too many ports (at most 64)%s", "");
	else
		h->ports[h->nports++] = port;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_ca(sandlock_builder_t *b,
                                                               const char *path)
{
	return sl_b_raw_path(b, b ? &b->raw_http_ca : NULL, path, "http_ca");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_key(sandlock_builder_t *b,
                                                                const char *path)
{
	return sl_b_raw_path(b, b ? &b->raw_http_key : NULL, path, "http_key");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_inject_ca(sandlock_builder_t *b,
                                                                      const char *path)
{
	return b ? b_add_spec(b, &b->raw_inject_ca, path, "http_inject_ca") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_ca_out(sandlock_builder_t *b,
                                                                   const char *path)
{
	return sl_b_raw_path(b, b ? &b->cfg.http.ca_out : NULL, path, "http_ca_out");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_credential(sandlock_builder_t *b,
                                                                  const char *spec)
{
	return b ? b_add_spec(b, &b->raw_creds, spec, "credential") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_auth(sandlock_builder_t *b,
                                                                 const char *spec)
{
	return b ? b_add_spec(b, &b->raw_auth, spec, "http_auth") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_log(sandlock_builder_t *b,
                                                                const char *path)
{
	return sl_b_raw_path(b, b ? &b->cfg.http.log : NULL, path, "http_log");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_http_log_fd(sandlock_builder_t *b, int fd)
{
	if (b && fd < 0)
		sl_b_error(b, SANDLOCK_ERR_INVALID, "http_log_fd: bad fd%s", "");
	else if (b)
		b->cfg.http.log_fd = fd;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_deny_bind(sandlock_builder_t *b,
                                                                     const char *spec)
{
	return b ? b_add_spec(b, &b->raw_bind_deny, spec, "net_deny_bind") : NULL;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_allow_unix(sandlock_builder_t *b,
                                                                      const char *path)
{
	if (!b)
		return NULL;
	return sl_b_add_path(b, &b->raw_unix, path, "net_allow_unix");
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_port_remap(sandlock_builder_t *b, bool on)
{
	if (b)
		b->cfg.port_remap = on;
	return b;
}

SL_EXPORT sandlock_builder_t *sandlock_sandbox_builder_net_host_interfaces(sandlock_builder_t *b,
                                                                          bool show)
{
	if (b)
		b->cfg.net_host_interfaces = show;
	return b;
}

SL_EXPORT sandlock_builder_t *
sandlock_sandbox_builder_net_unix_readable(sandlock_builder_t *b, bool allow)
{
	if (b)
		b->cfg.unix_readable = allow;
	return b;
}

SL_EXPORT char *sandlock_net_spec_error(const char *spec, int deny)
{
	return sl_netrules_check(spec, deny != 0);
}
