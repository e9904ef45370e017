/*
 * profile_print.c — a run's options written back as a profile (see
 * cli_profile_print in profile.h): `sandlock inspect --toml` and
 * `sandlock learn`.  The inverse of the loader in profile.c; what the
 * profile grammar accepts is the library's (src/profile/schema.c).
 */
#include "profile.h"

#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "profile/toml.h"

/*
 * How a knob (struct cli_op) is written back: the inverse of its row in
 * profile.c's key table.  An option with no row here has no profile key.
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
