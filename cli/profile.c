/*
 * profile.c — TOML profiles (see profile.h).  The TOML itself is read by
 * toml.c; this file knows the schema.
 */
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "parse.h"
#include "profile/toml.h"

#define EXIT_SANDLOCK 125

struct pctx {
	const char *path;
	struct cli_cfg *cfg;
	const char *section;
	const char *key;
	char *err;
};

__attribute__((format(printf, 3, 4))) static int perr(struct pctx *c, const struct toml_value *v,
                                                      const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (asprintf(&c->err, "%s:%d:%d: [%s] %s: %s", c->path, v->line, v->col, c->section,
		     c->key, msg) < 0)
		c->err = NULL;
	return -1;
}

static int want(struct pctx *c, const struct toml_value *v, enum toml_type t)
{
	if (v->type == t)
		return 0;
	return perr(c, v, "expected %s %s, got %s", t == TOML_INT || t == TOML_ARRAY ? "an" : "a",
		    toml_type_name(t), toml_type_name(v->type));
}

static int nomem(struct pctx *c, const struct toml_value *v)
{
	return perr(c, v, "out of memory");
}

static int str_list(struct pctx *c, const struct toml_value *v, struct cli_list *l)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		if (want(c, it, TOML_STRING) < 0)
			return -1;
		if (cli_list_add(l, it->u.s) < 0)
			return nomem(c, it);
	}
	return 0;
}

/* A heap string from fmt, or NULL. */
__attribute__((format(printf, 1, 2))) static char *heap_printf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

/* p as a path: relative ones are beside the profile (its own directory,
 * as the reference resolves them), not in the caller's cwd.  Heap. */
static char *beside_profile(const struct pctx *c, const char *p)
{
	const char *slash = strrchr(c->path, '/');
	if (p[0] == '/' || !slash)
		return strdup(p);
	return heap_printf("%.*s/%s", (int)(slash - c->path), c->path, p);
}

static int path_list(struct pctx *c, const struct toml_value *v, struct cli_list *l)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		if (want(c, it, TOML_STRING) < 0)
			return -1;
		if (!it->u.s[0])
			return perr(c, it, "empty path");
		char *p = beside_profile(c, it->u.s);
		int rc = p ? cli_list_add(l, p) : -1;
		free(p);
		if (rc < 0)
			return nomem(c, it);
	}
	return 0;
}

static int k_extra_allow(struct pctx *c, const struct toml_value *v)
{
	return str_list(c, v, &c->cfg->extra_allow);
}

static int k_read(struct pctx *c, const struct toml_value *v)
{
	return path_list(c, v, &c->cfg->read);
}

static int k_write(struct pctx *c, const struct toml_value *v)
{
	return path_list(c, v, &c->cfg->write);
}

static int k_deny(struct pctx *c, const struct toml_value *v)
{
	return path_list(c, v, &c->cfg->deny);
}

/*
 * Network rules become the matching flag's option (struct cli_op): a
 * string as written, an integer as a port.  Endpoint rules are checked
 * here (with their position); bind ports by the build.
 */
static int net_rules(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		char num[24];
		const char *spec;
		if (it->type == TOML_INT) {
			if (it->u.i < 1 || it->u.i > 65535)
				return perr(c, it, "port %lld is not in 1-65535", (long long)it->u.i);
			snprintf(num, sizeof(num), "%lld", (long long)it->u.i);
			spec = num;
		} else if (it->type == TOML_STRING) {
			spec = it->u.s;
		} else {
			return perr(c, it, "expected a rule (string) or a port (integer), got %s",
				    toml_type_name(it->type));
		}
		if (id == OPT_NET_ALLOW || id == OPT_NET_DENY) {
			char *e = sandlock_net_spec_error(spec, id == OPT_NET_DENY);
			if (e) {
				int rc = perr(c, it, "'%s': %s", spec, e);
				sandlock_string_free(e);
				return rc;
			}
		}
		if (cli_ops_add(&c->cfg->ops, id, spec) < 0)
			return nomem(c, it);
	}
	return 0;
}

static int k_net_allow(struct pctx *c, const struct toml_value *v)
{
	return net_rules(c, v, OPT_NET_ALLOW);
}

static int k_net_deny(struct pctx *c, const struct toml_value *v)
{
	return net_rules(c, v, OPT_NET_DENY);
}

static int k_net_bind(struct pctx *c, const struct toml_value *v)
{
	return net_rules(c, v, OPT_NET_ALLOW_BIND);
}

static int k_net_deny_bind(struct pctx *c, const struct toml_value *v)
{
	return net_rules(c, v, OPT_NET_DENY_BIND);
}

/* [http] allow / deny: rules checked here (with their position). */
static int http_rules(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		if (it->type != TOML_STRING)
			return perr(c, it, "expected a rule 'METHOD host/path', got %s",
				    toml_type_name(it->type));
		char *e = id == OPT_HTTP_INJECT_CA ? NULL : sandlock_http_rule_error(it->u.s);
		if (e) {
			int rc = perr(c, it, "'%s': %s", it->u.s, e);
			sandlock_string_free(e);
			return rc;
		}
		if (cli_ops_add(&c->cfg->ops, id, it->u.s) < 0)
			return nomem(c, it);
	}
	return 0;
}

static int k_http_allow(struct pctx *c, const struct toml_value *v)
{
	return http_rules(c, v, OPT_HTTP_ALLOW);
}

static int k_http_deny(struct pctx *c, const struct toml_value *v)
{
	return http_rules(c, v, OPT_HTTP_DENY);
}

static int k_http_inject_ca(struct pctx *c, const struct toml_value *v)
{
	return http_rules(c, v, OPT_HTTP_INJECT_CA);
}

static int k_http_ports(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		if (it->type != TOML_INT || it->u.i < 1 || it->u.i > 65535)
			return perr(c, it, "expected a port (integer 1-65535)%s", "");
		char num[24];
		snprintf(num, sizeof num, "%lld", (long long)it->u.i);
		if (cli_ops_add(&c->cfg->ops, OPT_HTTP_PORT, num) < 0)
			return nomem(c, it);
	}
	return 0;
}

/* [config] http_ca / http_key / http_ca_out: one path each. */
static int http_path(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	return cli_ops_add(&c->cfg->ops, id, v->u.s) < 0 ? nomem(c, v) : 0;
}

static int k_http_ca(struct pctx *c, const struct toml_value *v)
{
	return http_path(c, v, OPT_HTTP_CA);
}

static int k_http_key(struct pctx *c, const struct toml_value *v)
{
	return http_path(c, v, OPT_HTTP_KEY);
}

static int k_http_ca_out(struct pctx *c, const struct toml_value *v)
{
	return http_path(c, v, OPT_HTTP_CA_OUT);
}

/* A boolean key that stands for a flag without an argument. */
static int flag_key(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_BOOL) < 0)
		return -1;
	if (v->u.b && cli_ops_add(&c->cfg->ops, id, NULL) < 0)
		return nomem(c, v);
	return 0;
}

static int k_port_remap(struct pctx *c, const struct toml_value *v)
{
	return flag_key(c, v, OPT_PORT_REMAP);
}

static int k_host_interfaces(struct pctx *c, const struct toml_value *v)
{
	return flag_key(c, v, OPT_NET_HOST_INTERFACES);
}

static int k_tmp(struct pctx *c, const struct toml_value *v)
{
	return flag_key(c, v, OPT_TMP);
}

static int k_cwd(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	free(c->cfg->cwd);
	if (!(c->cfg->cwd = strdup(v->u.s)))
		return nomem(c, v);
	return 0;
}

static int k_clean_env(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_BOOL) < 0)
		return -1;
	c->cfg->clean_env = v->u.b;
	return 0;
}

static int k_env(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_TABLE) < 0)
		return -1;
	for (size_t i = 0; i < v->u.tab->n; i++) {
		const struct toml_kv *kv = &v->u.tab->kv[i];
		if (want(c, &kv->val, TOML_STRING) < 0)
			return -1;
		if (kv->key[0] == '\0' || strchr(kv->key, '='))
			return perr(c, &kv->val, "variable name '%s' is empty or has '='", kv->key);
		char *s;
		if (asprintf(&s, "%s=%s", kv->key, kv->val.u.s) < 0)
			return nomem(c, v);
		int rc = cli_list_add(&c->cfg->env, s);
		free(s);
		if (rc < 0)
			return nomem(c, v);
	}
	return 0;
}

/* [program] exec and args become argv; args are kept until exec is seen. */
static int k_exec(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	if (v->u.s[0] == '\0')
		return perr(c, v, "empty command");
	struct cli_list *a = &c->cfg->argv;
	if (cli_list_add(a, v->u.s) < 0)
		return nomem(c, v);
	/* exec goes first, whatever order the keys came in */
	char *last = a->v[a->n - 1];
	memmove(a->v + 1, a->v, (a->n - 1) * sizeof(*a->v));
	a->v[0] = last;
	return 0;
}

static int k_args(struct pctx *c, const struct toml_value *v)
{
	return str_list(c, v, &c->cfg->argv);
}

static int k_memory(struct pctx *c, const struct toml_value *v)
{
	uint64_t bytes = 0;
	const char *why = NULL;
	if (v->type == TOML_INT) {
		if (v->u.i <= 0)
			return perr(c, v, "must be greater than zero");
		bytes = (uint64_t)v->u.i;
	} else if (v->type == TOML_STRING) {
		int pr = sandlock_parse_memory_size(v->u.s, &bytes);
		why = pr == -2 ? "must be greater than zero" : pr == -3 ? "number too large"
				: "expected a size such as 4096, 512M or 1.5G";
		if (pr < 0)
			return perr(c, v, "'%s': %s", v->u.s, why);
	} else {
		return perr(c, v, "expected bytes (integer) or a size string such as \"512M\", got %s",
			    toml_type_name(v->type));
	}
	c->cfg->has_max_memory = true;
	c->cfg->max_memory = bytes;
	return 0;
}

static int k_processes(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_INT) < 0)
		return -1;
	if (v->u.i < 0 || v->u.i > UINT32_MAX)
		return perr(c, v, "must be 0 (no limit) to %u", UINT32_MAX);
	c->cfg->has_max_processes = true;
	c->cfg->max_processes = (uint32_t)v->u.i;
	return 0;
}

static int k_random_seed(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_INT) < 0)
		return -1;
	if (v->u.i < 0)
		return perr(c, v, "must not be negative");
	c->cfg->has_random_seed = true;
	c->cfg->random_seed = (uint64_t)v->u.i;
	return 0;
}

/* Unix seconds (integer or float) or an RFC 3339 string. */
static int k_time_start(struct pctx *c, const struct toml_value *v)
{
	int64_t ns = 0;
	const char *why = NULL;
	if (v->type == TOML_INT) {
		if (v->u.i < 0 || v->u.i > INT64_MAX / 1000000000)
			return perr(c, v, "out of range (Unix seconds, not before 1970)");
		ns = v->u.i * 1000000000;
	} else if (v->type == TOML_FLOAT) {
		if (!(v->u.f >= 0) || v->u.f > (double)(INT64_MAX / 1000000000))
			return perr(c, v, "out of range (Unix seconds, not before 1970)");
		ns = (int64_t)(v->u.f * 1e9);
	} else if (v->type == TOML_STRING) {
		if (cli_parse_time(v->u.s, &ns, &why) < 0)
			return perr(c, v, "'%s': %s", v->u.s, why);
	} else {
		return perr(c, v, "expected Unix seconds or an RFC 3339 string, got %s",
			    toml_type_name(v->type));
	}
	c->cfg->has_time_start = true;
	c->cfg->time_start_ns = ns;
	return 0;
}

/* Knobs go to the builder as the matching flag would (struct cli_op). */
static int op(struct pctx *c, const struct toml_value *v, int id, const char *arg)
{
	return cli_ops_add(&c->cfg->ops, id, arg) < 0 ? nomem(c, v) : 0;
}

static int flag_op(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_BOOL) < 0)
		return -1;
	return v->u.b ? op(c, v, id, NULL) : 0;
}

static int k_no_coredump(struct pctx *c, const struct toml_value *v)
{
	return flag_op(c, v, OPT_NO_COREDUMP);
}

static int k_no_huge_pages(struct pctx *c, const struct toml_value *v)
{
	return flag_op(c, v, OPT_NO_HUGE_PAGES);
}

static int k_no_randomize(struct pctx *c, const struct toml_value *v)
{
	return flag_op(c, v, OPT_NO_RANDOMIZE);
}

static int int_op(struct pctx *c, const struct toml_value *v, int id, int64_t lo, int64_t hi)
{
	if (want(c, v, TOML_INT) < 0)
		return -1;
	if (v->u.i < lo || v->u.i > hi)
		return perr(c, v, "must be %lld to %lld", (long long)lo, (long long)hi);
	char num[24];
	snprintf(num, sizeof(num), "%lld", (long long)v->u.i);
	return op(c, v, id, num);
}

static int k_open_files(struct pctx *c, const struct toml_value *v)
{
	return int_op(c, v, OPT_MAX_OPEN_FILES, 1, UINT32_MAX);
}

static int k_cpu(struct pctx *c, const struct toml_value *v)
{
	return int_op(c, v, OPT_MAX_CPU, 1, 100);
}

static int k_cpu_cores(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++)
		if (int_op(c, &v->u.arr.items[i], OPT_CPU_CORES, 0, 1023) < 0)
			return -1;
	return 0;
}

static int k_num_cpus(struct pctx *c, const struct toml_value *v)
{
	return int_op(c, v, OPT_NUM_CPUS, 1, 1024);
}

static int k_deterministic_dirs(struct pctx *c, const struct toml_value *v)
{
	return flag_op(c, v, OPT_DETERMINISTIC_DIRS);
}

static int k_extra_deny(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		if (want(c, it, TOML_STRING) < 0)
			return -1;
		if (!it->u.s[0] || strchr(it->u.s, ','))
			return perr(c, it, "'%s' is not a syscall or group name", it->u.s);
		if (op(c, it, OPT_EXTRA_DENY, it->u.s) < 0)
			return -1;
	}
	return 0;
}

/* The COW workdir keys: handed over as the matching flags' values. */
static int string_op(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	if (!v->u.s[0])
		return perr(c, v, "empty path");
	return op(c, v, id, v->u.s);
}

/* A host path option (relative: beside the profile). */
static int path_op(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	if (!v->u.s[0])
		return perr(c, v, "empty path");
	char *p = beside_profile(c, v->u.s);
	if (!p)
		return nomem(c, v);
	int rc = op(c, v, id, p);
	free(p);
	return rc;
}

static int k_workdir(struct pctx *c, const struct toml_value *v)
{
	return path_op(c, v, OPT_WORKDIR);
}

static int k_chroot(struct pctx *c, const struct toml_value *v)
{
	return path_op(c, v, OPT_CHROOT);
}

/* mount = ["VIRTUAL:HOST[:ro]", ...]: each as one --fs-mount, a relative
 * HOST beside the profile. */
static int k_mount(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *it = &v->u.arr.items[i];
		if (want(c, it, TOML_STRING) < 0)
			return -1;
		const char *colon = strchr(it->u.s, ':');
		if (!colon || colon[1] == '/' || colon[1] == '\0' || colon[1] == ':') {
			if (string_op(c, it, OPT_FS_MOUNT) < 0) /* absolute or malformed: as written */
				return -1;
			continue;
		}
		char *host = beside_profile(c, colon + 1);
		char *spec = host ? heap_printf("%.*s:%s", (int)(colon - it->u.s), it->u.s, host)
		                  : NULL;
		free(host);
		int rc = spec ? op(c, it, OPT_FS_MOUNT, spec) : nomem(c, it);
		free(spec);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int k_fs_storage(struct pctx *c, const struct toml_value *v)
{
	return path_op(c, v, OPT_FS_STORAGE);
}

static int branch_op(struct pctx *c, const struct toml_value *v, int id)
{
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	if (strcmp(v->u.s, "commit") && strcmp(v->u.s, "abort") && strcmp(v->u.s, "keep"))
		return perr(c, v, "'%s' is not a branch action (commit, abort or keep)", v->u.s);
	return op(c, v, id, v->u.s);
}

static int k_on_exit(struct pctx *c, const struct toml_value *v)
{
	return branch_op(c, v, OPT_ON_EXIT);
}

static int k_on_error(struct pctx *c, const struct toml_value *v)
{
	return branch_op(c, v, OPT_ON_ERROR);
}

static int k_disk(struct pctx *c, const struct toml_value *v)
{
	char num[32];
	uint64_t bytes = 0;
	if (v->type == TOML_INT) {
		if (v->u.i <= 0)
			return perr(c, v, "must be greater than zero");
		snprintf(num, sizeof num, "%lld", (long long)v->u.i);
		return op(c, v, OPT_MAX_DISK, num);
	}
	if (want(c, v, TOML_STRING) < 0)
		return -1;
	if (sandlock_parse_memory_size(v->u.s, &bytes) < 0)
		return perr(c, v, "'%s': expected a size such as 4096, 100M or 1G", v->u.s);
	return op(c, v, OPT_MAX_DISK, v->u.s);
}

/* A value that asks for nothing: what omitting the key would mean. */
static bool asks_nothing(const struct toml_value *v)
{
	return (v->type == TOML_BOOL && !v->u.b) || (v->type == TOML_ARRAY && v->u.arr.n == 0) ||
	       (v->type == TOML_TABLE && v->u.tab->n == 0);
}

static int k_unsupported(struct pctx *c, const struct toml_value *v)
{
	if (asks_nothing(v))
		return 0;
	return perr(c, v, "not supported yet by this sandlock (only false or an empty list is "
			  "accepted here)");
}

/* gpu_devices = [0, 2]: those GPUs; [] every GPU (as --gpu all). */
static int k_gpu_devices(struct pctx *c, const struct toml_value *v)
{
	if (want(c, v, TOML_ARRAY) < 0)
		return -1;
	char list[64 * 4 + 1] = "all";
	size_t len = 0;
	if (v->u.arr.n > 64)
		return perr(c, v, "at most 64 GPU indices");
	for (size_t i = 0; i < v->u.arr.n; i++) {
		const struct toml_value *x = &v->u.arr.items[i];
		if (want(c, x, TOML_INT) < 0)
			return -1;
		if (x->u.i < 0 || x->u.i > 255)
			return perr(c, x, "must be 0 to 255");
		len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", i ? "," : "",
		                        (long long)x->u.i);
	}
	return op(c, v, OPT_GPU, list);
}

struct key_spec {
	const char *section;
	const char *key;
	int (*apply)(struct pctx *, const struct toml_value *);
};

/* The schema: one line per key. */
static const struct key_spec schema[] = {
	{ "config", "http_ca", k_http_ca },
	{ "config", "http_key", k_http_key },
	{ "config", "http_inject_ca", k_http_inject_ca },
	{ "config", "http_ca_out", k_http_ca_out },
	{ "config", "fs_storage", k_fs_storage },
	{ "config", "workdir", k_workdir },
	{ "determinism", "random_seed", k_random_seed },
	{ "determinism", "time_start", k_time_start },
	{ "determinism", "deterministic_dirs", k_deterministic_dirs },
	{ "determinism", "no_randomize_memory", k_no_randomize },
	{ "program", "exec", k_exec },
	{ "program", "args", k_args },
	{ "program", "env", k_env },
	{ "program", "cwd", k_cwd },
	{ "program", "clean_env", k_clean_env },
	{ "program", "uid", k_unsupported },
	{ "program", "gid", k_unsupported },
	{ "program", "no_coredump", k_no_coredump },
	{ "program", "no_huge_pages", k_no_huge_pages },
	{ "program", "no_supervisor", k_unsupported },
	{ "filesystem", "read", k_read },
	{ "filesystem", "write", k_write },
	{ "filesystem", "deny", k_deny },
	{ "filesystem", "chroot", k_chroot },
	{ "filesystem", "mount", k_mount },
	{ "filesystem", "on_exit", k_on_exit },
	{ "filesystem", "on_error", k_on_error },
	{ "filesystem", "tmp", k_tmp },
	{ "network", "allow", k_net_allow },
	{ "network", "deny", k_net_deny },
	{ "network", "allow_bind", k_net_bind },
	{ "network", "deny_bind", k_net_deny_bind },
	{ "network", "port_remap", k_port_remap },
	{ "network", "host_interfaces", k_host_interfaces },
	{ "http", "ports", k_http_ports },
	{ "http", "allow", k_http_allow },
	{ "http", "deny", k_http_deny },
	{ "syscalls", "extra_allow", k_extra_allow },
	{ "syscalls", "extra_deny", k_extra_deny },
	{ "limits", "memory", k_memory },
	{ "limits", "processes", k_processes },
	{ "limits", "open_files", k_open_files },
	{ "limits", "cpu", k_cpu },
	{ "limits", "disk", k_disk },
	{ "limits", "gpu_devices", k_gpu_devices },
	{ "limits", "cpu_cores", k_cpu_cores },
	{ "limits", "num_cpus", k_num_cpus },
	{ NULL, NULL, NULL },
};

static bool known_section(const char *name)
{
	for (const struct key_spec *k = schema; k->section; k++)
		if (strcmp(k->section, name) == 0)
			return true;
	return false;
}

static int apply_section(struct pctx *c, const struct toml_kv *sec)
{
	c->section = sec->key;
	for (size_t i = 0; i < sec->val.u.tab->n; i++) {
		const struct toml_kv *kv = &sec->val.u.tab->kv[i];
		const struct key_spec *k = schema;
		while (k->section && (strcmp(k->section, sec->key) || strcmp(k->key, kv->key)))
			k++;
		c->key = kv->key;
		if (!k->section) {
			if (asprintf(&c->err, "%s:%d:%d: unknown key '%s' in [%s]", c->path, kv->line,
				     kv->col, kv->key, sec->key) < 0)
				c->err = NULL;
			return -1;
		}
		if (k->apply(c, &kv->val) < 0)
			return -1;
	}
	return 0;
}

static int apply_root(struct pctx *c, const struct toml_table *root)
{
	for (size_t i = 0; i < root->n; i++) {
		const struct toml_kv *kv = &root->kv[i];
		const char *what = NULL;
		if (kv->val.type != TOML_TABLE)
			what = "top-level key '%s': profile keys belong in a section such as "
			       "[filesystem] or [limits]";
		else if (!known_section(kv->key))
			what = "unknown section [%s]";
		if (what) {
			char msg[256];
			snprintf(msg, sizeof(msg), what, kv->key);
			if (asprintf(&c->err, "%s:%d:%d: %s", c->path, kv->line, kv->col, msg) < 0)
				c->err = NULL;
			return -1;
		}
		if (apply_section(c, kv) < 0)
			return -1;
	}
	if (c->cfg->argv.n && !toml_get(toml_get(root, "program")->u.tab, "exec")) {
		if (asprintf(&c->err, "%s: [program] args without exec", c->path) < 0)
			c->err = NULL;
		return -1;
	}
	return 0;
}

/*
 * A profile decides what the sandbox may do, so, like ssh's StrictModes,
 * it must be the user's (or root's) and writable by nobody else, nor be
 * replaceable in its directory (writable by others without the sticky
 * bit).  0, or -1 with *err naming the fix.
 */
static int trusted_file(const char *path, int fd, char **err)
{
	struct stat st, dst;
	uid_t me = getuid();
	char *dir = strdup(path), *slash = dir ? strrchr(dir, '/') : NULL;
	if (slash)
		slash[slash == dir] = '\0';
	int dr = dir ? stat(slash ? dir : ".", &dst) : -1;
	free(dir);
	int rc = -1;
	if (fstat(fd, &st) < 0 || dr < 0)
		rc = asprintf(err, "%s: %s", path, strerror(errno));
	else if (st.st_uid != me && st.st_uid != 0)
		rc = asprintf(err, "%s is owned by uid %u, not by you or root: a profile must be "
		                   "yours (copy it, or chown it)", path, (unsigned)st.st_uid);
	else if (st.st_mode & (S_IWGRP | S_IWOTH))
		rc = asprintf(err, "%s is writable by other users (mode %04o): chmod go-w %s", path,
		              (unsigned)(st.st_mode & 07777), path);
	else if ((dst.st_mode & S_IWOTH) && !(dst.st_mode & S_ISVTX))
		rc = asprintf(err, "%s is in a directory others may write to (mode %04o): move it "
		                   "to a directory of yours", path, (unsigned)(dst.st_mode & 07777));
	else
		return 0;
	if (rc < 0)
		*err = NULL;
	return -1;
}

/* The whole file as a string; NULL with *err. */
static char *slurp(const char *path, char **err)
{
	FILE *f = fopen(path, "re");
	if (!f) {
		if (asprintf(err, "%s: %s", path, strerror(errno)) < 0)
			*err = NULL;
		return NULL;
	}
	if (trusted_file(path, fileno(f), err) < 0) {
		fclose(f);
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[4096];
	size_t n;
	while (m && (n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	bool bad = ferror(f);
	fclose(f);
	if (m)
		fclose(m);
	if (!m || bad || memchr(buf, '\0', len)) {
		if (asprintf(err, "%s: %s", path, !m ? "out of memory" : bad ? "read error"
										 : "contains a NUL byte") < 0)
			*err = NULL;
		free(buf);
		return NULL;
	}
	return buf;
}

int cli_profile_load(const char *path, struct cli_cfg *out, char **err)
{
	cli_cfg_init(out);
	*err = NULL;
	char *text = slurp(path, err);
	if (!text)
		return -1;
	char *terr = NULL;
	struct toml_table *root = toml_parse(text, &terr);
	free(text);
	if (!root) {
		if (asprintf(err, "%s:%s", path, terr ? terr : " out of memory") < 0)
			*err = NULL;
		free(terr);
		return -1;
	}
	struct pctx c = { path, out, "", "", NULL };
	int rc = apply_root(&c, root);
	toml_free(root);
	if (rc < 0) {
		*err = c.err;
		cli_cfg_free(out);
	}
	return rc;
}

char *cli_profile_dir(char **err)
{
	char *dir = NULL;
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	/* The XDG spec says a relative XDG_CONFIG_HOME is invalid: ignore it. */
	if (xdg && xdg[0] == '/') {
		if (asprintf(&dir, "%s/sandlock/profiles", xdg) < 0)
			dir = NULL;
	} else if (home && home[0] == '/') {
		if (asprintf(&dir, "%s/.config/sandlock/profiles", home) < 0)
			dir = NULL;
	} else {
		*err = strdup("cannot find the profiles directory: neither XDG_CONFIG_HOME nor HOME "
			      "is an absolute path");
		return NULL;
	}
	if (!dir)
		*err = strdup("out of memory");
	return dir;
}

char *cli_profile_path(const char *name, char **err)
{
	if (!name[0] || name[0] == '.' || strchr(name, '/')) {
		if (asprintf(err, "invalid profile name '%s' (use --profile-file for a path)", name) < 0)
			*err = NULL;
		return NULL;
	}
	char *dir = cli_profile_dir(err);
	if (!dir)
		return NULL;
	char *path = NULL;
	if (asprintf(&path, "%s/%s.toml", dir, name) < 0) {
		path = NULL;
		*err = strdup("out of memory");
	}
	free(dir);
	return path;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the DIR/NAME.toml files, sorted, one per line.  A missing dir lists nothing. */
static int profile_list(void)
{
	char *err = NULL;
	char *dir = cli_profile_dir(&err);
	if (!dir) {
		fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
		free(err);
		return EXIT_SANDLOCK;
	}
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		free(dir);
		if (e == ENOENT)
			return 0;
		fprintf(stderr, "sandlock: cannot list profiles: %s\n", strerror(e));
		return EXIT_SANDLOCK;
	}
	struct cli_list names = { 0 };
	struct dirent *de;
	int rc = 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 || strcmp(de->d_name + len - 5, ".toml"))
			continue;
		de->d_name[len - 5] = '\0';
		if (cli_list_add(&names, de->d_name) < 0)
			rc = EXIT_SANDLOCK;
	}
	closedir(d);
	free(dir);
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), cmp_str);
	for (size_t i = 0; i < names.n; i++) {
		puts(names.v[i]);
		free(names.v[i]);
	}
	free(names.v);
	return rc;
}

/* Validate NAME's profile, then print it as written. */
static int profile_show(const char *name)
{
	char *err = NULL;
	char *path = cli_profile_path(name, &err);
	struct cli_cfg cfg;
	if (!path || cli_profile_load(path, &cfg, &err) < 0) {
		fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
		free(err);
		free(path);
		return EXIT_SANDLOCK;
	}
	cli_cfg_free(&cfg);
	char *text = NULL;
	text = slurp(path, &err);
	free(path);
	if (!text) {
		fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
		free(err);
		return EXIT_SANDLOCK;
	}
	fputs(text, stdout);
	free(text);
	return 0;
}

/* Remove NAME's profile file. */
static int profile_delete(const char *name)
{
	char *err = NULL;
	char *path = cli_profile_path(name, &err);
	if (!path) {
		fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
		free(err);
		return EXIT_SANDLOCK;
	}
	int rc = 0;
	if (unlink(path) < 0) {
		fprintf(stderr, "sandlock: profile '%s' %s (%s)\n", name,
		        errno == ENOENT ? "not found" : strerror(errno), path);
		rc = EXIT_SANDLOCK;
	} else {
		printf("Deleted profile '%s'\n", name);
	}
	free(path);
	return rc;
}

static const char usage_profile[] =
	"Usage: sandlock profile list\n"
	"       sandlock profile show NAME\n"
	"       sandlock profile delete NAME\n"
	"\n"
	"Profiles are TOML files NAME.toml in $XDG_CONFIG_HOME/sandlock/profiles\n"
	"(default ~/.config/sandlock/profiles); use one with 'sandlock run -p NAME'.\n";

int cli_profile_command(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_profile, stdout);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "list"))
		return profile_list();
	if (argc == 3 && !strcmp(argv[1], "show"))
		return profile_show(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "delete"))
		return profile_delete(argv[2]);
	fputs("sandlock: usage: sandlock profile list | show NAME | delete NAME\n", stderr);
	return EXIT_SANDLOCK;
}

/* ---------------------------------------------------------------- printer */

/*
 * How a knob (struct cli_op) is written back: the inverse of its key_spec
 * above.  An option with no row here has no profile key.
 */
enum pkind {
	PK_FLAG,  /* key = true */
	PK_INT,   /* a number as the flag took it */
	PK_STR,   /* a string as given */
	PK_RULES, /* one array of every such op's arg */
	PK_NAMES, /* the same, a flag's "a,b" split into items */
	PK_INTS,  /* the same, as integers */
};

static const struct {
	int id;
	const char *section, *key;
	enum pkind kind;
} op_keys[] = {
	{ OPT_FS_STORAGE, "config", "fs_storage", PK_STR },
	{ OPT_WORKDIR, "config", "workdir", PK_STR },
	{ OPT_HTTP_CA, "config", "http_ca", PK_STR },
	{ OPT_HTTP_KEY, "config", "http_key", PK_STR },
	{ OPT_HTTP_INJECT_CA, "config", "http_inject_ca", PK_RULES },
	{ OPT_HTTP_CA_OUT, "config", "http_ca_out", PK_STR },
	{ OPT_HTTP_PORT, "http", "ports", PK_INTS },
	{ OPT_HTTP_ALLOW, "http", "allow", PK_RULES },
	{ OPT_HTTP_DENY, "http", "deny", PK_RULES },
	{ OPT_DETERMINISTIC_DIRS, "determinism", "deterministic_dirs", PK_FLAG },
	{ OPT_NO_RANDOMIZE, "determinism", "no_randomize_memory", PK_FLAG },
	{ OPT_NO_COREDUMP, "program", "no_coredump", PK_FLAG },
	{ OPT_NO_HUGE_PAGES, "program", "no_huge_pages", PK_FLAG },
	{ OPT_ON_EXIT, "filesystem", "on_exit", PK_STR },
	{ OPT_ON_ERROR, "filesystem", "on_error", PK_STR },
	{ OPT_TMP, "filesystem", "tmp", PK_FLAG },
	{ OPT_NET_ALLOW, "network", "allow", PK_RULES },
	{ OPT_NET_DENY, "network", "deny", PK_RULES },
	{ OPT_NET_ALLOW_BIND, "network", "allow_bind", PK_RULES },
	{ OPT_NET_DENY_BIND, "network", "deny_bind", PK_RULES },
	{ OPT_PORT_REMAP, "network", "port_remap", PK_FLAG },
	{ OPT_NET_HOST_INTERFACES, "network", "host_interfaces", PK_FLAG },
	{ OPT_EXTRA_DENY, "syscalls", "extra_deny", PK_NAMES },
	{ OPT_MAX_OPEN_FILES, "limits", "open_files", PK_INT },
	{ OPT_MAX_CPU, "limits", "cpu", PK_INT },
	{ OPT_MAX_DISK, "limits", "disk", PK_STR },
	{ OPT_CPU_CORES, "limits", "cpu_cores", PK_INTS },
	{ OPT_NUM_CPUS, "limits", "num_cpus", PK_INT },
	{ OPT_GPU, "limits", "gpu_devices", PK_INTS },
};
#define N_OP_KEYS (sizeof(op_keys) / sizeof(op_keys[0]))

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Can op's value be written as its key's kind?  (A flag's "0-3" core
 * range, say, has no integer-array spelling.) */
static bool op_printable(const struct cli_op *o, enum pkind kind)
{
	if (kind == PK_INT)
		return o->arg && all_digits(o->arg);
	if (kind == PK_INTS) {
		char *dup = o->arg ? strdup(o->arg) : NULL, *save = NULL;
		bool ok = dup != NULL;
		for (char *t = dup ? strtok_r(dup, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save))
			ok = ok && all_digits(t);
		free(dup);
		return ok;
	}
	return kind == PK_FLAG || o->arg;
}

static int op_row(int id)
{
	for (size_t k = 0; k < N_OP_KEYS; k++)
		if (op_keys[k].id == id)
			return (int)k;
	return -1;
}

struct printer {
	FILE *out;
	const char *open; /* the section whose header was written last */
};

static void key(struct printer *p, const char *section, const char *k)
{
	if (!p->open || strcmp(p->open, section)) {
		fprintf(p->out, "%s[%s]\n", p->open ? "\n" : "", section);
		p->open = section;
	}
	fprintf(p->out, "%s = ", k);
}

/* Up to three items on the key's line, more one per line. */
static void str_array(FILE *out, const struct cli_list *l, bool resolve)
{
	bool tall = l->n > 3;
	fputc('[', out);
	for (size_t i = 0; i < l->n; i++) {
		/* absolute, so the profile means the same from any directory */
		char *abs = resolve ? realpath(l->v[i], NULL) : NULL;
		fputs(tall ? "\n    " : i ? ", " : "", out);
		toml_write_str(out, abs ? abs : l->v[i]);
		if (tall)
			fputc(',', out);
		free(abs);
	}
	fputs(tall ? "\n]\n" : "]\n", out);
}

/* The section's knobs (ops), each key once, in the order of op_keys. */
static void print_ops(struct printer *p, const struct cli_cfg *cfg, const char *section)
{
	for (size_t k = 0; k < N_OP_KEYS; k++) {
		if (strcmp(op_keys[k].section, section))
			continue;
		enum pkind kind = op_keys[k].kind;
		const struct cli_op *last = NULL;
		size_t items = 0;
		for (size_t i = 0; i < cfg->ops.n; i++) {
			const struct cli_op *o = &cfg->ops.v[i];
			if (o->id != op_keys[k].id || !op_printable(o, kind))
				continue;
			if (kind < PK_RULES) { /* single values: the last one wins */
				last = o;
				continue;
			}
			if (items == 0) {
				key(p, section, op_keys[k].key);
				fputc('[', p->out);
			}
			char *dup = strdup(o->arg), *save = NULL;
			bool split = kind != PK_RULES;
			for (char *t = dup && split ? strtok_r(dup, ",", &save) : dup; t;
			     t = split ? strtok_r(NULL, ",", &save) : NULL) {
				fputs(items++ ? ", " : "", p->out);
				if (kind == PK_INTS)
					fputs(t, p->out);
				else
					toml_write_str(p->out, t);
			}
			free(dup);
		}
		if (items)
			fputs("]\n", p->out);
		if (!last)
			continue;
		key(p, section, op_keys[k].key);
		if (kind == PK_FLAG)
			fputs("true\n", p->out);
		else if (kind == PK_INT)
			fprintf(p->out, "%s\n", last->arg);
		else {
			toml_write_str(p->out, last->arg);
			fputc('\n', p->out);
		}
	}
}

static void print_program(struct printer *p, const struct cli_cfg *cfg)
{
	if (cfg->argv.n) {
		key(p, "program", "exec");
		toml_write_str(p->out, cfg->argv.v[0]);
		fputc('\n', p->out);
		struct cli_list args = { cfg->argv.v + 1, cfg->argv.n - 1 };
		key(p, "program", "args");
		str_array(p->out, &args, false);
	}
	if (cfg->env.n) {
		key(p, "program", "env");
		fputs("{ ", p->out);
		for (size_t i = 0; i < cfg->env.n; i++) {
			const char *kv = cfg->env.v[i], *eq = strchr(kv, '=');
			char *name = strndup(kv, (size_t)(eq - kv));
			fputs(i ? ", " : "", p->out);
			toml_write_str(p->out, name ? name : "");
			fputs(" = ", p->out);
			toml_write_str(p->out, eq + 1);
			free(name);
		}
		fputs(" }\n", p->out);
	}
	if (cfg->cwd) {
		key(p, "program", "cwd");
		toml_write_str(p->out, cfg->cwd);
		fputc('\n', p->out);
	}
	if (cfg->clean_env > 0) {
		key(p, "program", "clean_env");
		fputs("true\n", p->out);
	}
	print_ops(p, cfg, "program");
}

static void print_determinism(struct printer *p, const struct cli_cfg *cfg)
{
	if (cfg->has_random_seed) {
		key(p, "determinism", "random_seed");
		fprintf(p->out, "%llu\n", (unsigned long long)cfg->random_seed);
	}
	if (cfg->has_time_start) {
		key(p, "determinism", "time_start");
		long long s = (long long)(cfg->time_start_ns / 1000000000);
		long long ns = (long long)(cfg->time_start_ns % 1000000000);
		if (ns)
			fprintf(p->out, "%lld.%09lld\n", s, ns);
		else
			fprintf(p->out, "%lld\n", s);
	}
	print_ops(p, cfg, "determinism");
}

static void print_network(struct printer *p, const struct cli_cfg *cfg)
{
	/* Ports given to the builder directly (not flags today) are rules too. */
	const struct cli_ports *ports[2] = { &cfg->connect, &cfg->bind };
	const char *keys[2] = { "allow", "allow_bind" };
	for (int k = 0; k < 2; k++) {
		if (!ports[k]->n)
			continue;
		key(p, "network", keys[k]);
		fputc('[', p->out);
		for (size_t i = 0; i < ports[k]->n; i++)
			fprintf(p->out, "%s%u", i ? ", " : "", ports[k]->v[i]);
		fputs("]\n", p->out);
	}
	print_ops(p, cfg, "network");
}

/* The options no key can hold, as comments naming their flags. */
static int print_unexpressible(struct printer *p, const struct cli_cfg *cfg)
{
	int n = 0;
	if (cfg->has_timeout) {
		fprintf(p->out, "%s%s --timeout %llums\n", n++ ? "" : "\n", CLI_PROFILE_LOST,
			(unsigned long long)cfg->timeout_ms);
	}
	for (size_t i = 0; i < cfg->ops.n; i++) {
		const struct cli_op *o = &cfg->ops.v[i];
		int row = op_row(o->id);
		if (row >= 0 && op_printable(o, op_keys[row].kind))
			continue;
		char label[64];
		fprintf(p->out, "%s%s %s%s%s\n", n++ ? "" : "\n", CLI_PROFILE_LOST,
			cli_opt_label(o->id, label, sizeof label), o->arg ? " " : "",
			o->arg ? o->arg : "");
	}
	return n;
}

int cli_profile_print(const struct cli_cfg *cfg, FILE *out)
{
	struct printer p = { out, NULL };
	print_ops(&p, cfg, "config");
	print_determinism(&p, cfg);
	print_program(&p, cfg);
	key(&p, "filesystem", "read");
	str_array(out, &cfg->read, true);
	if (cfg->write.n) {
		key(&p, "filesystem", "write");
		str_array(out, &cfg->write, true);
	}
	if (cfg->deny.n) {
		key(&p, "filesystem", "deny");
		str_array(out, &cfg->deny, true);
	}
	print_ops(&p, cfg, "filesystem");
	print_network(&p, cfg);
	print_ops(&p, cfg, "http");
	if (cfg->extra_allow.n) {
		key(&p, "syscalls", "extra_allow");
		str_array(out, &cfg->extra_allow, false);
	}
	print_ops(&p, cfg, "syscalls");
	if (cfg->has_max_memory) {
		key(&p, "limits", "memory");
		fprintf(out, "%llu\n", (unsigned long long)cfg->max_memory);
	}
	if (cfg->has_max_processes) {
		key(&p, "limits", "processes");
		fprintf(out, "%u\n", cfg->max_processes);
	}
	print_ops(&p, cfg, "limits");
	return print_unexpressible(&p, cfg);
}
