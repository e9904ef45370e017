/*
 * profile.c — TOML profiles for the CLI (see profile.h).  The library reads
 * and checks a profile (sandlock_profile_load: the grammar, the schema and
 * its errors live there, shared with the Python package); this file lays
 * the checked profile onto the CLI's options, and runs `sandlock profile`.
 * The printer (the inverse) is profile_print.c.
 */
#include "profile.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"

#define EXIT_SANDLOCK 125

/* ---------------------------------------------------------------- loader */

/*
 * Each key becomes what its flag would: an option for the builder (struct
 * cli_op, id: the flag), a list of the cfg (id: its offset), or a field.
 * Values arrive checked and normal (see sandlock_profile_load), so the
 * only failure left here is running out of memory (-1).
 */
typedef int (*apply_fn)(struct cli_cfg *, const json_t *, int id);

/* A string as is, an integer in decimal (a port, a size in bytes). */
static int op_value(struct cli_cfg *c, const json_t *v, int id)
{
	char num[24];
	if (json_is_integer(v))
		snprintf(num, sizeof(num), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	return cli_ops_add(&c->ops, id, json_is_string(v) ? json_string_value(v) : num);
}

static int op_flag(struct cli_cfg *c, const json_t *v, int id)
{
	return json_is_true(v) ? cli_ops_add(&c->ops, id, NULL) : 0;
}

static int op_each(struct cli_cfg *c, const json_t *v, int id)
{
	size_t i;
	const json_t *it;
	json_array_foreach(v, i, it)
		if (op_value(c, it, id) < 0)
			return -1;
	return 0;
}

static int to_list(struct cli_cfg *c, const json_t *v, int offset)
{
	struct cli_list *l = (struct cli_list *)((char *)c + offset);
	size_t i;
	const json_t *it;
	json_array_foreach(v, i, it)
		if (cli_list_add(l, json_string_value(it)) < 0)
			return -1;
	return 0;
}

/* [program] exec goes first in argv, whatever order the keys came in. */
static int k_exec(struct cli_cfg *c, const json_t *v, int id)
{
	(void)id;
	struct cli_list *a = &c->argv;
	if (cli_list_add(a, json_string_value(v)) < 0)
		return -1;
	char *last = a->v[a->n - 1];
	memmove(a->v + 1, a->v, (a->n - 1) * sizeof(*a->v));
	a->v[0] = last;
	return 0;
}

static int k_env(struct cli_cfg *c, const json_t *v, int id)
{
	(void)id;
	const char *name;
	const json_t *val;
	json_object_foreach((json_t *)v, name, val) {
		char *kv = NULL;
		if (asprintf(&kv, "%s=%s", name, json_string_value(val)) < 0)
			return -1;
		int rc = cli_list_add(&c->env, kv);
		free(kv);
		if (rc < 0)
			return -1;
	}
	return 0;
}

static int k_cwd(struct cli_cfg *c, const json_t *v, int id)
{
	(void)id;
	free(c->cwd);
	c->cwd = strdup(json_string_value(v));
	return c->cwd ? 0 : -1;
}

/* The single values the cfg keeps in fields of its own. */
enum { F_CLEAN_ENV, F_MEMORY, F_PROCESSES, F_SEED, F_TIME_START };

static int k_field(struct cli_cfg *c, const json_t *v, int id)
{
	json_int_t n = json_integer_value(v);
	switch (id) {
	case F_CLEAN_ENV:
		c->clean_env = json_is_true(v);
		break;
	case F_MEMORY:
		c->has_max_memory = true;
		c->max_memory = (uint64_t)n;
		break;
	case F_PROCESSES:
		c->has_max_processes = true;
		c->max_processes = (uint32_t)n;
		break;
	case F_SEED:
		c->has_random_seed = true;
		c->random_seed = (uint64_t)n;
		break;
	case F_TIME_START:
		c->has_time_start = true;
		c->time_start_ns = (int64_t)n;
		break;
	}
	return 0;
}

/* gpu_devices = [0, 2] as --gpu 0,2; [] as --gpu all. */
static int k_gpus(struct cli_cfg *c, const json_t *v, int id)
{
	char list[64 * 4 + 1] = "all";
	size_t len = 0, i;
	const json_t *it;
	json_array_foreach(v, i, it)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%" JSON_INTEGER_FORMAT,
		                        i ? "," : "", json_integer_value(it));
	return cli_ops_add(&c->ops, id, list);
}

/* Each mount as the --fs-mount VIRTUAL:HOST[:ro] it stands for. */
static int k_mounts(struct cli_cfg *c, const json_t *v, int id)
{
	size_t i;
	const json_t *m;
	json_array_foreach(v, i, m) {
		char *spec = NULL;
		if (asprintf(&spec, "%s:%s%s", json_string_value(json_object_get(m, "virtual")),
		             json_string_value(json_object_get(m, "host")),
		             json_is_true(json_object_get(m, "read_only")) ? ":ro" : "") < 0)
			return -1;
		int rc = cli_ops_add(&c->ops, id, spec);
		free(spec);
		if (rc < 0)
			return -1;
	}
	return 0;
}

#define LIST(field) to_list, (int)offsetof(struct cli_cfg, field)

static const struct {
	const char *section, *key;
	apply_fn apply;
	int id;
} keys[] = {
	{ "config", "http_ca", op_value, OPT_HTTP_CA },
	{ "config", "http_key", op_value, OPT_HTTP_KEY },
	{ "config", "http_inject_ca", op_each, OPT_HTTP_INJECT_CA },
	{ "config", "http_ca_out", op_value, OPT_HTTP_CA_OUT },
	{ "config", "fs_storage", op_value, OPT_FS_STORAGE },
	{ "config", "workdir", op_value, OPT_WORKDIR },
	{ "determinism", "random_seed", k_field, F_SEED },
	{ "determinism", "time_start", k_field, F_TIME_START },
	{ "determinism", "deterministic_dirs", op_flag, OPT_DETERMINISTIC_DIRS },
	{ "determinism", "no_randomize_memory", op_flag, OPT_NO_RANDOMIZE },
	{ "program", "exec", k_exec, 0 },
	{ "program", "args", LIST(argv) },
	{ "program", "env", k_env, 0 },
	{ "program", "cwd", k_cwd, 0 },
	{ "program", "clean_env", k_field, F_CLEAN_ENV },
	{ "program", "no_coredump", op_flag, OPT_NO_COREDUMP },
	{ "program", "no_huge_pages", op_flag, OPT_NO_HUGE_PAGES },
	{ "filesystem", "read", LIST(read) },
	{ "filesystem", "write", LIST(write) },
	{ "filesystem", "deny", LIST(deny) },
	{ "filesystem", "chroot", op_value, OPT_CHROOT },
	{ "filesystem", "mount", k_mounts, OPT_FS_MOUNT },
	{ "filesystem", "on_exit", op_value, OPT_ON_EXIT },
	{ "filesystem", "on_error", op_value, OPT_ON_ERROR },
	{ "filesystem", "tmp", op_flag, OPT_TMP },
	{ "network", "allow", op_each, OPT_NET_ALLOW },
	{ "network", "deny", op_each, OPT_NET_DENY },
	{ "network", "allow_bind", op_each, OPT_NET_ALLOW_BIND },
	{ "network", "deny_bind", op_each, OPT_NET_DENY_BIND },
	{ "network", "port_remap", op_flag, OPT_PORT_REMAP },
	{ "network", "host_interfaces", op_flag, OPT_NET_HOST_INTERFACES },
	{ "http", "ports", op_each, OPT_HTTP_PORT },
	{ "http", "allow", op_each, OPT_HTTP_ALLOW },
	{ "http", "deny", op_each, OPT_HTTP_DENY },
	{ "syscalls", "extra_allow", LIST(extra_allow) },
	{ "syscalls", "extra_deny", op_each, OPT_EXTRA_DENY },
	{ "limits", "memory", k_field, F_MEMORY },
	{ "limits", "processes", k_field, F_PROCESSES },
	{ "limits", "open_files", op_value, OPT_MAX_OPEN_FILES },
	{ "limits", "cpu", op_value, OPT_MAX_CPU },
	{ "limits", "disk", op_value, OPT_MAX_DISK },
	{ "limits", "gpu_devices", k_gpus, OPT_GPU },
	{ "limits", "cpu_cores", op_each, OPT_CPU_CORES },
	{ "limits", "num_cpus", op_value, OPT_NUM_CPUS },
};

/* One checked key onto c.  A key the library knows and this table does
 * not would be a build of mismatched halves: refused, never dropped. */
static int apply_key(struct cli_cfg *c, const char *section, const char *key, const json_t *v,
                     const char *path, char **err)
{
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strcmp(keys[i].section, section) || strcmp(keys[i].key, key))
			continue;
		if (keys[i].apply(c, v, keys[i].id) == 0)
			return 0;
		*err = strdup("out of memory");
		return -1;
	}
	if (asprintf(err, "%s: [%s] %s: not handled by this sandlock command", path, section,
	             key) < 0)
		*err = NULL;
	return -1;
}

static int apply_profile(struct cli_cfg *c, const json_t *prof, const char *path, char **err)
{
	const char *section, *key;
	json_t *keys_of, *v;
	json_object_foreach((json_t *)prof, section, keys_of)
		json_object_foreach(keys_of, key, v)
			if (apply_key(c, section, key, v, path, err) < 0)
				return -1;
	return 0;
}

int cli_profile_load(const char *path, struct cli_cfg *out, char **err)
{
	cli_cfg_init(out);
	*err = NULL;
	char *text = sandlock_profile_load(path, NULL, err);
	json_t *prof = text ? json_loads(text, 0, NULL) : NULL;
	sandlock_string_free(text);
	if (!prof) {
		if (!*err)
			*err = strdup("out of memory");
		return -1;
	}
	int rc = apply_profile(out, prof, path, err);
	json_decref(prof);
	if (rc < 0)
		cli_cfg_free(out);
	return rc;
}

/* The profiles directory: $XDG_CONFIG_HOME/sandlock/profiles, else
 * $HOME/.config/sandlock/profiles.  Heap string, or NULL with *err. */
static char *profile_dir(char **err)
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
	char *dir = profile_dir(err);
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
	char *dir = profile_dir(&err);
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
	FILE *f = NULL;
	if (path && cli_profile_load(path, &cfg, &err) == 0) {
		cli_cfg_free(&cfg);
		if (!(f = fopen(path, "re")) && asprintf(&err, "%s: %s", path, strerror(errno)) < 0)
			err = NULL;
	}
	free(path);
	if (!f) {
		fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
		free(err);
		return EXIT_SANDLOCK;
	}
	char chunk[4096];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, stdout);
	fclose(f);
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
