/*
 * profile/schema.c — the profile schema (see schema.h): the table at the end
 * has one line per key; above it, one converter per kind of value.  A
 * converter checks a TOML value and returns its normal form (a new JSON
 * value), or NULL with the error, which names the section, the key and the
 * value's line and column: a profile is refused where it is wrong, before
 * anything runs, and the CLI and the Python package refuse the same files.
 */
#include "profile/schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct sctx {
	const char *path;
	const char *section, *key;
	char *err; /* the first error, heap */
};

/* A converter's answer for a value that asks nothing of a feature this
 * version lacks: the key is left out (json_null is a singleton). */
#define NOTHING json_null()

typedef json_t *(*conv_fn)(struct sctx *, const struct toml_value *);

__attribute__((format(printf, 3, 4))) static json_t *perr(struct sctx *c, const struct toml_value *v,
                                                          const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->err)
		c->err = sl_asprintf("%s:%d:%d: [%s] %s: %s", c->path, v->line, v->col, c->section,
		                     c->key, msg);
	return NULL;
}

/* v itself, or NULL (out of memory) reported at v. */
static json_t *made(struct sctx *c, const struct toml_value *v, json_t *j)
{
	return j ? j : perr(c, v, "out of memory");
}

static bool want(struct sctx *c, const struct toml_value *v, enum toml_type t)
{
	if (v->type == t)
		return true;
	perr(c, v, "expected %s %s, got %s", t == TOML_INT || t == TOML_ARRAY ? "an" : "a",
	     toml_type_name(t), toml_type_name(v->type));
	return false;
}

/* An array whose items each pass item, as a JSON array. */
static json_t *each(struct sctx *c, const struct toml_value *v, conv_fn item)
{
	if (!want(c, v, TOML_ARRAY))
		return NULL;
	json_t *arr = json_array();
	for (size_t i = 0; arr && i < v->u.arr.n; i++) {
		json_t *j = item(c, &v->u.arr.items[i]);
		if (!j || json_array_append_new(arr, j) < 0) {
			json_decref(arr);
			return j ? made(c, v, NULL) : NULL;
		}
	}
	return made(c, v, arr);
}

static json_t *int_in(struct sctx *c, const struct toml_value *v, int64_t lo, int64_t hi)
{
	if (!want(c, v, TOML_INT))
		return NULL;
	if (v->u.i < lo || v->u.i > hi)
		return perr(c, v, "must be %lld to %lld", (long long)lo, (long long)hi);
	return made(c, v, json_integer(v->u.i));
}

/* p as a host path: a relative one is beside the profile (its own
 * directory, as the reference resolves them), not in the caller's cwd. */
static char *beside_profile(const struct sctx *c, const char *p)
{
	const char *slash = strrchr(c->path, '/');
	if (p[0] == '/' || !slash)
		return sl_strdup(p);
	return sl_asprintf("%.*s/%s", (int)(slash - c->path), c->path, p);
}

/* ---------------------------------------------------------------- values */

static json_t *v_bool(struct sctx *c, const struct toml_value *v)
{
	return want(c, v, TOML_BOOL) ? made(c, v, json_boolean(v->u.b)) : NULL;
}

static json_t *v_string(struct sctx *c, const struct toml_value *v)
{
	return want(c, v, TOML_STRING) ? made(c, v, json_string(v->u.s)) : NULL;
}

static json_t *v_strings(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_string);
}

/* A host path, beside the profile when relative. */
static json_t *v_path(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_STRING))
		return NULL;
	if (!v->u.s[0])
		return perr(c, v, "empty path");
	char *p = beside_profile(c, v->u.s);
	json_t *j = made(c, v, p ? json_string(p) : NULL);
	free(p);
	return j;
}

static json_t *v_paths(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_path);
}

/* A network rule as written (checked unless a bind rule, which the build
 * checks), or a port. */
static json_t *net_rule(struct sctx *c, const struct toml_value *v, int check_deny)
{
	char num[24];
	const char *spec = num;
	if (v->type == TOML_INT) {
		if (v->u.i < 1 || v->u.i > 65535)
			return perr(c, v, "port %lld is not in 1-65535", (long long)v->u.i);
		snprintf(num, sizeof(num), "%lld", (long long)v->u.i);
	} else if (v->type == TOML_STRING) {
		spec = v->u.s;
	} else {
		return perr(c, v, "expected a rule (string) or a port (integer), got %s",
		            toml_type_name(v->type));
	}
	char *e = check_deny >= 0 ? sandlock_net_spec_error(spec, check_deny) : NULL;
	if (e) {
		perr(c, v, "'%s': %s", spec, e);
		sandlock_string_free(e);
		return NULL;
	}
	return made(c, v, v->type == TOML_INT ? json_integer(v->u.i) : json_string(spec));
}

static json_t *v_allow_rule(struct sctx *c, const struct toml_value *v)
{
	return net_rule(c, v, 0);
}

static json_t *v_deny_rule(struct sctx *c, const struct toml_value *v)
{
	return net_rule(c, v, 1);
}

static json_t *v_bind_rule(struct sctx *c, const struct toml_value *v)
{
	return net_rule(c, v, -1);
}

static json_t *v_allow_rules(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_allow_rule);
}

static json_t *v_deny_rules(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_deny_rule);
}

static json_t *v_bind_rules(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_bind_rule);
}

static json_t *v_http_rule(struct sctx *c, const struct toml_value *v)
{
	if (v->type != TOML_STRING)
		return perr(c, v, "expected a rule 'METHOD host/path', got %s", toml_type_name(v->type));
	char *e = sandlock_http_rule_error(v->u.s);
	if (e) {
		perr(c, v, "'%s': %s", v->u.s, e);
		sandlock_string_free(e);
		return NULL;
	}
	return made(c, v, json_string(v->u.s));
}

static json_t *v_http_rules(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_http_rule);
}

static json_t *v_port(struct sctx *c, const struct toml_value *v)
{
	if (v->type != TOML_INT || v->u.i < 1 || v->u.i > 65535)
		return perr(c, v, "expected a port (integer 1-65535)");
	return made(c, v, json_integer(v->u.i));
}

static json_t *v_ports(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_port);
}

static json_t *v_env(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_TABLE))
		return NULL;
	json_t *env = json_object();
	for (size_t i = 0; env && i < v->u.tab->n; i++) {
		const struct toml_kv *kv = &v->u.tab->kv[i];
		const char *bad = kv->key[0] == '\0' || strchr(kv->key, '=') ? kv->key : NULL;
		if (!want(c, &kv->val, TOML_STRING) ||
		    (bad && !perr(c, &kv->val, "variable name '%s' is empty or has '='", bad)) ||
		    json_object_set_new(env, kv->key, made(c, &kv->val, json_string(kv->val.u.s))) < 0) {
			json_decref(env);
			return NULL;
		}
	}
	return made(c, v, env);
}

static json_t *v_command(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_STRING))
		return NULL;
	return v->u.s[0] ? made(c, v, json_string(v->u.s)) : perr(c, v, "empty command");
}

/* Bytes, or a size string ("512M", "1.5G") made bytes. */
static json_t *v_size(struct sctx *c, const struct toml_value *v)
{
	if (v->type == TOML_INT)
		return v->u.i > 0 ? made(c, v, json_integer(v->u.i))
		                  : perr(c, v, "must be greater than zero");
	if (v->type != TOML_STRING)
		return perr(c, v, "expected bytes (integer) or a size string such as \"512M\", got %s",
		            toml_type_name(v->type));
	uint64_t bytes = 0;
	int pr = sandlock_parse_memory_size(v->u.s, &bytes);
	if (pr == 0 && bytes > INT64_MAX) /* JSON integers are signed 64-bit */
		pr = -3;
	if (pr < 0)
		return perr(c, v, "'%s': %s", v->u.s,
		            pr == -2   ? "must be greater than zero"
		            : pr == -3 ? "number too large"
		                       : "expected a size such as 4096, 512M or 1.5G");
	return made(c, v, json_integer((json_int_t)bytes));
}

static json_t *v_processes(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_INT))
		return NULL;
	if (v->u.i < 0 || v->u.i > UINT32_MAX)
		return perr(c, v, "must be 0 (no limit) to %u", UINT32_MAX);
	return made(c, v, json_integer(v->u.i));
}

static json_t *v_seed(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_INT))
		return NULL;
	return v->u.i < 0 ? perr(c, v, "must not be negative") : made(c, v, json_integer(v->u.i));
}

/* Unix seconds (integer or float) or an RFC 3339 string, as Unix ns. */
static json_t *v_time(struct sctx *c, const struct toml_value *v)
{
	const double most = (double)(INT64_MAX / 1000000000);
	int64_t ns = 0;
	if (v->type == TOML_INT) {
		if (v->u.i < 0 || v->u.i > INT64_MAX / 1000000000)
			return perr(c, v, "out of range (Unix seconds, not before 1970)");
		ns = v->u.i * 1000000000;
	} else if (v->type == TOML_FLOAT) {
		if (!(v->u.f >= 0) || v->u.f > most)
			return perr(c, v, "out of range (Unix seconds, not before 1970)");
		ns = (int64_t)(v->u.f * 1e9);
	} else if (v->type == TOML_STRING) {
		if (sandlock_parse_time(v->u.s, &ns) < 0)
			return perr(c, v, "'%s': expected Unix seconds or an RFC 3339 time such as "
			                  "2000-01-01T00:00:00Z (a real date, from 1970)", v->u.s);
	} else {
		return perr(c, v, "expected Unix seconds or an RFC 3339 string, got %s",
		            toml_type_name(v->type));
	}
	return made(c, v, json_integer(ns));
}

static json_t *v_open_files(struct sctx *c, const struct toml_value *v)
{
	return int_in(c, v, 1, UINT32_MAX);
}

static json_t *v_cpu(struct sctx *c, const struct toml_value *v)
{
	return int_in(c, v, 1, 100);
}

static json_t *v_num_cpus(struct sctx *c, const struct toml_value *v)
{
	return int_in(c, v, 1, 1024);
}

static json_t *v_core(struct sctx *c, const struct toml_value *v)
{
	return int_in(c, v, 0, 1023);
}

static json_t *v_cores(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_core);
}

static json_t *v_gpu(struct sctx *c, const struct toml_value *v)
{
	return int_in(c, v, 0, 255);
}

/* gpu_devices = [0, 2]: those GPUs; [] every GPU. */
static json_t *v_gpus(struct sctx *c, const struct toml_value *v)
{
	if (v->type == TOML_ARRAY && v->u.arr.n > 64)
		return perr(c, v, "at most 64 GPU indices");
	return each(c, v, v_gpu);
}

static json_t *v_syscall_name(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_STRING))
		return NULL;
	if (!v->u.s[0] || strchr(v->u.s, ','))
		return perr(c, v, "'%s' is not a syscall or group name", v->u.s);
	return made(c, v, json_string(v->u.s));
}

static json_t *v_syscall_names(struct sctx *c, const struct toml_value *v)
{
	return each(c, v, v_syscall_name);
}

static json_t *v_branch(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_STRING))
		return NULL;
	if (strcmp(v->u.s, "commit") && strcmp(v->u.s, "abort") && strcmp(v->u.s, "keep"))
		return perr(c, v, "'%s' is not a branch action (commit, abort or keep)", v->u.s);
	return made(c, v, json_string(v->u.s));
}

/* "VIRTUAL:HOST[:ro|:rw]" as {"virtual", "host", "read_only"}; a relative
 * HOST beside the profile. */
static json_t *v_mount(struct sctx *c, const struct toml_value *v)
{
	if (!want(c, v, TOML_STRING))
		return NULL;
	const char *s = v->u.s, *colon = strchr(s, ':');
	if (!colon || colon == s || !colon[1])
		return perr(c, v, "'%s': expected \"VIRTUAL:HOST\" or \"VIRTUAL:HOST:ro\"", s);
	if (s[0] != '/')
		return perr(c, v, "'%s': the virtual path must be absolute", s);
	const char *host = colon + 1;
	size_t n = strlen(host);
	bool ro = n > 3 && strcmp(host + n - 3, ":ro") == 0;
	bool rw = n > 3 && strcmp(host + n - 3, ":rw") == 0;
	char *h = strndup(host, ro || rw ? n - 3 : n);
	char *abs = h ? beside_profile(c, h) : NULL;
	json_t *m = abs ? json_pack("{s:s%,s:s,s:b}", "virtual", s, (size_t)(colon - s), "host", abs,
	                            "read_only", ro)
	                : NULL;
	free(h);
	free(abs);
	return made(c, v, m);
}

static json_t *v_mounts(struct sctx *c, const struct toml_value *v)
{
	json_t *arr = each(c, v, v_mount);
	for (size_t i = 1; arr && i < json_array_size(arr); i++) {
		const char *vi = json_string_value(json_object_get(json_array_get(arr, i), "virtual"));
		for (size_t j = 0; j < i; j++) {
			json_t *vj = json_object_get(json_array_get(arr, j), "virtual");
			if (strcmp(vi, json_string_value(vj)) == 0) {
				perr(c, &v->u.arr.items[i], "'%s' is mounted twice", vi);
				json_decref(arr);
				return NULL;
			}
		}
	}
	return arr;
}

/* A value that asks nothing: what omitting the key would mean. */
static bool asks_nothing(const struct toml_value *v)
{
	return (v->type == TOML_BOOL && !v->u.b) || (v->type == TOML_ARRAY && v->u.arr.n == 0) ||
	       (v->type == TOML_TABLE && v->u.tab->n == 0);
}

static json_t *v_unsupported(struct sctx *c, const struct toml_value *v)
{
	if (asks_nothing(v))
		return NOTHING;
	return perr(c, v, "not supported yet by this sandlock (only false or an empty list is "
	                  "accepted here)");
}

/* ---------------------------------------------------------------- schema */

struct key_spec {
	const char *section;
	const char *key;
	conv_fn conv;
};

/* The schema: one line per key (sandlock(1) PROFILES lists them all). */
static const struct key_spec schema[] = {
	{ "config", "http_ca", v_string },
	{ "config", "http_key", v_string },
	{ "config", "http_inject_ca", v_strings },
	{ "config", "http_ca_out", v_string },
	{ "config", "fs_storage", v_path },
	{ "config", "workdir", v_path },
	{ "determinism", "random_seed", v_seed },
	{ "determinism", "time_start", v_time },
	{ "determinism", "deterministic_dirs", v_bool },
	{ "determinism", "no_randomize_memory", v_bool },
	{ "program", "exec", v_command },
	{ "program", "args", v_strings },
	{ "program", "env", v_env },
	{ "program", "cwd", v_string },
	{ "program", "clean_env", v_bool },
	{ "program", "uid", v_unsupported },
	{ "program", "gid", v_unsupported },
	{ "program", "no_coredump", v_bool },
	{ "program", "no_huge_pages", v_bool },
	{ "program", "no_supervisor", v_unsupported },
	{ "filesystem", "read", v_paths },
	{ "filesystem", "write", v_paths },
	{ "filesystem", "deny", v_paths },
	{ "filesystem", "chroot", v_path },
	{ "filesystem", "mount", v_mounts },
	{ "filesystem", "on_exit", v_branch },
	{ "filesystem", "on_error", v_branch },
	{ "filesystem", "tmp", v_bool },
	{ "network", "allow", v_allow_rules },
	{ "network", "deny", v_deny_rules },
	{ "network", "allow_bind", v_bind_rules },
	{ "network", "deny_bind", v_bind_rules },
	{ "network", "port_remap", v_bool },
	{ "network", "host_interfaces", v_bool },
	{ "http", "ports", v_ports },
	{ "http", "allow", v_http_rules },
	{ "http", "deny", v_http_rules },
	{ "syscalls", "extra_allow", v_strings },
	{ "syscalls", "extra_deny", v_syscall_names },
	{ "limits", "memory", v_size },
	{ "limits", "processes", v_processes },
	{ "limits", "open_files", v_open_files },
	{ "limits", "cpu", v_cpu },
	{ "limits", "disk", v_size },
	{ "limits", "gpu_devices", v_gpus },
	{ "limits", "cpu_cores", v_cores },
	{ "limits", "num_cpus", v_num_cpus },
	{ NULL, NULL, NULL },
};

static const struct key_spec *find_key(const char *section, const char *key)
{
	for (const struct key_spec *k = schema; k->section; k++)
		if (strcmp(k->section, section) == 0 && (!key || strcmp(k->key, key) == 0))
			return k;
	return NULL;
}

__attribute__((format(printf, 3, 4))) static int fail_at(struct sctx *c, const struct toml_kv *kv,
                                                         const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->err = sl_asprintf("%s:%d:%d: %s", c->path, kv->line, kv->col, msg);
	return -1;
}

static int check_section(struct sctx *c, const struct toml_kv *sec, json_t *out)
{
	json_t *obj = json_object();
	if (!obj || json_object_set_new(out, sec->key, obj) < 0)
		return -1;
	c->section = sec->key;
	for (size_t i = 0; i < sec->val.u.tab->n; i++) {
		const struct toml_kv *kv = &sec->val.u.tab->kv[i];
		const struct key_spec *k = find_key(sec->key, kv->key);
		if (!k)
			return fail_at(c, kv, "unknown key '%s' in [%s]", kv->key, sec->key);
		c->key = kv->key;
		json_t *j = k->conv(c, &kv->val);
		if (!j || (j != NOTHING && json_object_set_new(obj, kv->key, j) < 0))
			return -1;
	}
	return 0;
}

static int check_root(struct sctx *c, const struct toml_table *root, json_t *out)
{
	for (size_t i = 0; i < root->n; i++) {
		const struct toml_kv *kv = &root->kv[i];
		if (kv->val.type != TOML_TABLE)
			return fail_at(c, kv, "top-level key '%s': profile keys belong in a section "
			                      "such as [filesystem] or [limits]", kv->key);
		if (!find_key(kv->key, NULL))
			return fail_at(c, kv, "unknown section [%s]", kv->key);
		if (check_section(c, kv, out) < 0)
			return -1;
	}
	const struct toml_value *prog = toml_get(root, "program");
	const struct toml_table *p = prog ? prog->u.tab : NULL;
	for (size_t i = 0; p && i < p->n; i++)
		if (strcmp(p->kv[i].key, "args") == 0 && !toml_get(p, "exec"))
			return fail_at(c, &p->kv[i], "[program] args without exec");
	return 0;
}

json_t *sl_profile_check(const struct toml_table *root, const char *path, char **err)
{
	struct sctx c = { path, "", "", NULL };
	json_t *out = json_object();
	if (!out || check_root(&c, root, out) < 0) {
		json_decref(out);
		*err = c.err ? c.err : sl_asprintf("%s: out of memory", path);
		return NULL;
	}
	*err = NULL;
	return out;
}
