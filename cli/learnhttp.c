/*
 * learnhttp.c — the HTTP rules of `sandlock learn` (learnhttp.h).
 *
 * Rules are proposed per method and host, with the request path cut after
 * its first segment: "/simple/numpy/" and "/simple/six/" give one rule for
 * "/simple/" and everything below it; a request of "/" gives "GET host/".
 * TLS seen only by its server name (no CA) gives a rule for the whole host.
 * Requests the run's own deny rules refused are not proposed.
 */
#include "learnhttp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

bool cli_learn_http_wanted(const struct cli_cfg *cfg)
{
	for (size_t i = 0; i < cfg->ops.n; i++) {
		int id = cfg->ops.v[i].id;
		if (id == OPT_HTTP_PORT || id == OPT_HTTP_ALLOW || id == OPT_HTTP_DENY)
			return true;
	}
	return false;
}

int cli_learn_http_open(struct cli_cfg *run, const char *log_path)
{
	return cli_ops_add(&run->ops, OPT_HTTP_ALLOW, "* */*") < 0 ||
	               cli_ops_add(&run->ops, OPT_HTTP_LOG, log_path) < 0
	           ? -1
	           : 0;
}

/* The rule for one logged request (heap), or NULL to skip it. */
static char *rule_for(json_t *o)
{
	const char *dec = json_string_value(json_object_get(o, "decision"));
	const char *m = json_string_value(json_object_get(o, "method"));
	const char *h = json_string_value(json_object_get(o, "host"));
	const char *p = json_string_value(json_object_get(o, "path"));
	if (!dec || strcmp(dec, "allow") || !m || !h || !p)
		return NULL;
	char *r = NULL;
	if (strcmp(m, "-") == 0) { /* TLS judged by its SNI */
		return asprintf(&r, "* %s/*", h) < 0 ? NULL : r;
	}
	const char *slash = p[0] == '/' ? strchr(p + 1, '/') : NULL;
	int n = slash ? asprintf(&r, "%s %s%.*s/*", m, h, (int)(slash - p), p)
	              : asprintf(&r, "%s %s%s", m, h, p);
	return n < 0 ? NULL : r;
}

static bool has_rule(const struct cli_cfg *cfg, const char *rule)
{
	for (size_t i = 0; i < cfg->ops.n; i++)
		if (cfg->ops.v[i].id == OPT_HTTP_ALLOW && cfg->ops.v[i].arg &&
		    strcmp(cfg->ops.v[i].arg, rule) == 0)
			return true;
	return false;
}

int cli_learn_http_rules(struct cli_cfg *cfg, const char *log_path)
{
	FILE *f = fopen(log_path, "re");
	if (!f)
		return 0; /* nothing was requested */
	char *line = NULL;
	size_t cap = 0;
	int rc = 0;
	while (rc == 0 && getline(&line, &cap, f) > 0) {
		json_t *o = json_loads(line, 0, NULL);
		char *rule = o ? rule_for(o) : NULL;
		if (rule && !has_rule(cfg, rule) && cli_ops_add(&cfg->ops, OPT_HTTP_ALLOW, rule) < 0)
			rc = -1;
		free(rule);
		json_decref(o);
	}
	free(line);
	fclose(f);
	return rc;
}
