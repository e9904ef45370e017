/*
 * annot.c — sandlock.* annotations.  Lists are space-separated (a network
 * rule may itself hold commas: "github.com:22,443"); HTTP rules, which
 * hold a space ("GET example.com/any"), are separated by ';' or newlines.
 */
#include "annot.h"
#include "log.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef sandlock_builder_t *(*spec_fn)(sandlock_builder_t *, const char *);
typedef sandlock_builder_t *(*u32_fn)(sandlock_builder_t *, uint32_t);
typedef sandlock_builder_t *(*bool_fn)(sandlock_builder_t *, bool);

enum kind { LIST, RULES, U32, BOOL, MEMORY, U64 };

static const struct annot {
	const char *key;
	enum kind kind;
	void (*fn)(void);
} annots[] = {
	{ "sandlock.net-allow", LIST, (void (*)(void))sandlock_sandbox_builder_net_allow_spec },
	{ "sandlock.net-deny", LIST, (void (*)(void))sandlock_sandbox_builder_net_deny },
	{ "sandlock.net-allow-bind", LIST,
	  (void (*)(void))sandlock_sandbox_builder_net_allow_bind_spec },
	{ "sandlock.net-deny-bind", LIST,
	  (void (*)(void))sandlock_sandbox_builder_net_deny_bind },
	{ "sandlock.deny-syscalls", LIST,
	  (void (*)(void))sandlock_sandbox_builder_extra_deny_syscalls },
	{ "sandlock.allow-syscalls", LIST,
	  (void (*)(void))sandlock_sandbox_builder_extra_allow_syscalls },
	{ "sandlock.http-allow", RULES, (void (*)(void))sandlock_sandbox_builder_http_allow },
	{ "sandlock.http-deny", RULES, (void (*)(void))sandlock_sandbox_builder_http_deny },
	{ "sandlock.workdir", LIST, (void (*)(void))sandlock_sandbox_builder_workdir },
	{ "sandlock.max-cpu", U32, (void (*)(void))sandlock_sandbox_builder_max_cpu },
	{ "sandlock.max-processes", U32, (void (*)(void))sandlock_sandbox_builder_max_processes },
	{ "sandlock.max-open-files", U32,
	  (void (*)(void))sandlock_sandbox_builder_max_open_files },
	{ "sandlock.num-cpus", U32, (void (*)(void))sandlock_sandbox_builder_num_cpus },
	{ "sandlock.port-remap", BOOL, (void (*)(void))sandlock_sandbox_builder_port_remap },
	{ "sandlock.deterministic-dirs", BOOL,
	  (void (*)(void))sandlock_sandbox_builder_deterministic_dirs },
	{ "sandlock.no-coredump", BOOL, (void (*)(void))sandlock_sandbox_builder_no_coredump },
	{ "sandlock.max-memory", MEMORY, (void (*)(void))sandlock_sandbox_builder_max_memory },
	{ "sandlock.max-disk", MEMORY, (void (*)(void))sandlock_sandbox_builder_max_disk },
	{ "sandlock.random-seed", U64, (void (*)(void))sandlock_sandbox_builder_random_seed },
};

static int apply_list(sandlock_builder_t *b, const struct annot *a, const char *v,
                      const char *sep)
{
	char *copy = strdup(v), *save = NULL;
	if (!copy)
		return -1;
	for (char *t = strtok_r(copy, sep, &save); t; t = strtok_r(NULL, sep, &save)) {
		while (*t == ' ')
			t++;
		if (*t)
			((spec_fn)a->fn)(b, t);
	}
	free(copy);
	return 0;
}

static int apply_one(sandlock_builder_t *b, const struct annot *a, const char *v)
{
	char *end = NULL;
	errno = 0;
	switch (a->kind) {
	case LIST:
		return apply_list(b, a, v, " \t\n");
	case RULES: /* "METHOD host/path" rules hold a space: ';' or newline between */
		return apply_list(b, a, v, ";\n");
	case U32: {
		unsigned long long n = strtoull(v, &end, 10);
		if (errno || end == v || *end || n > UINT32_MAX)
			break;
		((u32_fn)a->fn)(b, (uint32_t)n);
		return 0;
	}
	case U64: {
		unsigned long long n = strtoull(v, &end, 10);
		if (errno || end == v || *end)
			break;
		((sandlock_builder_t * (*)(sandlock_builder_t *, uint64_t)) a->fn)(b, n);
		return 0;
	}
	case BOOL:
		if (strcmp(v, "true") && strcmp(v, "false"))
			break;
		((bool_fn)a->fn)(b, strcmp(v, "true") == 0);
		return 0;
	case MEMORY: {
		uint64_t bytes;
		if (sandlock_parse_memory_size(v, &bytes) < 0)
			break;
		((sandlock_builder_t * (*)(sandlock_builder_t *, uint64_t)) a->fn)(b, bytes);
		return 0;
	}
	}
	oci_error("annotation %s='%s': not a valid value", a->key, v);
	return -1;
}

int oci_annot_apply(sandlock_builder_t *b, json_t *annotations)
{
	const char *key;
	json_t *val;
	json_object_foreach(annotations, key, val) {
		if (strncmp(key, "sandlock.", 9) != 0)
			continue;
		const struct annot *a = NULL;
		for (size_t i = 0; i < sizeof annots / sizeof *annots; i++)
			if (strcmp(annots[i].key, key) == 0)
				a = &annots[i];
		if (!a) {
			oci_error("annotation %s: unknown sandlock option (docs/oci.md lists them)",
			          key);
			return -1;
		}
		const char *v = json_string_value(val);
		if (!v || apply_one(b, a, v) < 0) {
			if (!v)
				oci_error("annotation %s: not a string", key);
			return -1;
		}
	}
	return 0;
}
