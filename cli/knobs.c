/*
 * knobs.c — the options `sandlock run` hands to the builder as they were
 * given (struct cli_op: open files, CPU, cores, GPUs, process settings,
 * extra denials, protections, HTTP rules, mounts), applied after the rest
 * so a later single value wins; the builder checks them.  Split from main.c.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
#include "run/control.h"
#include "run/ctldir.h"
#include "explain.h"
#include "learn.h"
#include "learnhttp.h"
#include "options.h"
#include "parse.h"
#include "profile.h"
#include "reaper.h"
#include "report.h"
#include "runcfg.h"
#include "sandlock.h"
#include "signals.h"
#include "trace.h"
#include "knobs.h"
#include "runargs.h"

/* --http-*, --credential: handed to the builder (which checks them). */
static const struct {
	int id;
	sandlock_builder_t *(*set)(sandlock_builder_t *, const char *);
} k_http_opts[] = {
	{ OPT_HTTP_ALLOW, sandlock_sandbox_builder_http_allow },
	{ OPT_HTTP_DENY, sandlock_sandbox_builder_http_deny },
	{ OPT_HTTP_CA, sandlock_sandbox_builder_http_ca },
	{ OPT_HTTP_KEY, sandlock_sandbox_builder_http_key },
	{ OPT_HTTP_INJECT_CA, sandlock_sandbox_builder_http_inject_ca },
	{ OPT_HTTP_CA_OUT, sandlock_sandbox_builder_http_ca_out },
	{ OPT_CREDENTIAL, sandlock_sandbox_builder_credential },
	{ OPT_HTTP_AUTH, sandlock_sandbox_builder_http_auth },
	{ OPT_HTTP_LOG, sandlock_sandbox_builder_http_log },
};

static int apply_http(sandlock_builder_t *b, const struct cli_op *op)
{
	if (op->id == OPT_HTTP_PORT) {
		uint64_t v = 0;
		const char *why = NULL;
		if (cli_parse_uint(op->arg, 1, 65535, &v, &why))
			return cli_bad_value(op->id, op->arg, "expected a TCP port, 1-65535");
		sandlock_sandbox_builder_http_port(b, (uint16_t)v);
		return 0;
	}
	for (size_t i = 0; i < sizeof k_http_opts / sizeof k_http_opts[0]; i++)
		if (k_http_opts[i].id == op->id)
			k_http_opts[i].set(b, op->arg);
	return 0;
}

/* --cpu-cores 0,2-3: a comma-separated list of cores and ranges. */
static int apply_cores(sandlock_builder_t *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return cli_out_of_memory();
	int rc = 0;
	bool any = false;
	for (char *t = strtok_r(dup, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi = 0;
		const char *why;
		char *dash = strchr(t, '-');
		if (dash)
			*dash = '\0';
		if (cli_parse_uint(t, 0, 1023, &lo, &why) ||
		    (dash && cli_parse_uint(dash + 1, 0, 1023, &hi, &why)) || (dash && hi < lo)) {
			rc = cli_bad_value(OPT_CPU_CORES, arg, "expected cores such as 0,2-3 (0-1023)");
			break;
		}
		for (uint64_t c = lo; c <= (dash ? hi : lo); c++)
			sandlock_sandbox_builder_cpu_core(b, (uint32_t)c);
		any = true;
	}
	free(dup);
	if (!rc && !any)
		rc = cli_bad_value(OPT_CPU_CORES, arg, "expected cores such as 0,2-3");
	return rc;
}

/* --gpu all | 0,2: every GPU, or these indices. */
static int apply_gpu(sandlock_builder_t *b, const char *arg)
{
	const char *hint = "expected all, or GPU indices such as 0,2 (0-255)";
	if (strcmp(arg, "all") == 0) {
		sandlock_sandbox_builder_gpu_devices(b, NULL, 0);
		return 0;
	}
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return cli_out_of_memory();
	uint32_t ids[64], n = 0;
	int rc = 0;
	for (char *t = strtok_r(dup, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		uint64_t v = 0;
		const char *why = NULL;
		if (n == 64 || cli_parse_uint(t, 0, 255, &v, &why))
			rc = cli_bad_value(OPT_GPU, arg, hint);
		else
			ids[n++] = (uint32_t)v;
	}
	free(dup);
	if (!rc && n == 0)
		rc = cli_bad_value(OPT_GPU, arg, hint);
	if (!rc)
		sandlock_sandbox_builder_gpu_devices(b, ids, n);
	return rc;
}

/* --extra-deny-syscalls a,b: each a syscall or a group; the library checks. */
static int apply_extra_deny(sandlock_builder_t *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return cli_out_of_memory();
	bool any = false;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		sandlock_sandbox_builder_extra_deny_syscalls(b, t);
		any = true;
	}
	free(dup);
	return any ? 0 : cli_bad_value(OPT_EXTRA_DENY, arg, "expected syscall or group names");
}

/* --allow-degraded / --disable PROT: a protection's name (- or _, any case). */
static int apply_protection(sandlock_builder_t *b, int id, const char *arg)
{
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++) {
		const char *name = sandlock_protection_name(p);
		size_t i = 0;
		for (; name[i] && arg[i]; i++) {
			char a = arg[i] == '-' ? '_' : (char)tolower((unsigned char)arg[i]);
			if (a != name[i])
				break;
		}
		if (name[i] || arg[i])
			continue;
		if (id == OPT_ALLOW_DEGRADED)
			sandlock_sandbox_builder_allow_degraded(b, p);
		else
			sandlock_sandbox_builder_disable(b, p);
		return 0;
	}
	return cli_bad_value(id, arg, "unknown protection (see 'sandlock run --help')");
}

/* --on-exit / --on-error ACTION, --max-disk SIZE. */
static int apply_branch(sandlock_builder_t *b, const struct cli_op *op)
{
	static const char *const names[] = { "commit", "abort", "keep" };
	if (op->id == OPT_MAX_DISK) {
		uint64_t v = 0;
		int rc = cli_size_value(op->id, op->arg, "4096, 100M or 1G", &v);
		if (rc)
			return rc;
		sandlock_sandbox_builder_max_disk(b, v);
		return 0;
	}
	for (int a = SANDLOCK_BRANCH_COMMIT; a <= SANDLOCK_BRANCH_KEEP; a++) {
		if (strcmp(op->arg, names[a]) != 0)
			continue;
		if (op->id == OPT_ON_EXIT)
			sandlock_sandbox_builder_on_exit(b, a);
		else
			sandlock_sandbox_builder_on_error(b, a);
		return 0;
	}
	return cli_bad_value(op->id, op->arg, "expected commit, abort or keep");
}

/* --fs-mount VIRT:HOST[:ro] (":rw" is the default, also accepted). */
static int apply_fs_mount(sandlock_builder_t *b, const char *arg)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || !colon[1]) {
		fprintf(stderr, "sandlock: --fs-mount '%s': expected VIRTUAL:HOST[:ro], e.g. "
		                "--fs-mount /work:/home/me/project\n", arg);
		return EXIT_SANDLOCK;
	}
	char *virt = strndup(arg, (size_t)(colon - arg));
	char *host = strdup(colon + 1);
	if (!virt || !host) {
		free(virt);
		free(host);
		return cli_out_of_memory();
	}
	size_t n = strlen(host);
	bool ro = n > 3 && strcmp(host + n - 3, ":ro") == 0;
	if (ro || (n > 3 && strcmp(host + n - 3, ":rw") == 0))
		host[n - 3] = '\0';
	if (ro)
		sandlock_sandbox_builder_fs_mount_ro(b, virt, host);
	else
		sandlock_sandbox_builder_fs_mount(b, virt, host);
	free(virt);
	free(host);
	return 0;
}

int cli_apply_knob(sandlock_builder_t *b, const struct cli_op *op)
{
	uint64_t v = 0;
	const char *why = NULL;
	switch (op->id) {
	case OPT_MAX_OPEN_FILES:
		if (cli_parse_uint(op->arg, 1, UINT32_MAX, &v, &why))
			return cli_bad_value(op->id, op->arg, why);
		sandlock_sandbox_builder_max_open_files(b, (uint32_t)v);
		return 0;
	case OPT_MAX_CPU:
		if (cli_parse_uint(op->arg, 1, 100, &v, &why))
			return cli_bad_value(op->id, op->arg, "expected a percentage of one core, 1-100");
		sandlock_sandbox_builder_max_cpu(b, (uint32_t)v);
		return 0;
	case OPT_CPU_CORES:
		return apply_cores(b, op->arg);
	case OPT_GPU:
		return apply_gpu(b, op->arg);
	case OPT_NO_COREDUMP:
		sandlock_sandbox_builder_no_coredump(b, true);
		return 0;
	case OPT_NO_HUGE_PAGES:
		sandlock_sandbox_builder_no_huge_pages(b, true);
		return 0;
	case OPT_NO_RANDOMIZE:
		sandlock_sandbox_builder_no_randomize_memory(b, true);
		return 0;
	case OPT_DETERMINISTIC_DIRS:
		sandlock_sandbox_builder_deterministic_dirs(b, true);
		return 0;
	case OPT_NUM_CPUS:
		if (cli_parse_uint(op->arg, 1, 1024, &v, &why))
			return cli_bad_value(op->id, op->arg, "expected a CPU count, 1-1024");
		sandlock_sandbox_builder_num_cpus(b, (uint32_t)v);
		return 0;
	case OPT_EXTRA_DENY:
		return apply_extra_deny(b, op->arg);
	case OPT_NET_ALLOW:
		sandlock_sandbox_builder_net_allow_spec(b, op->arg);
		return 0;
	case OPT_NET_DENY:
		sandlock_sandbox_builder_net_deny(b, op->arg);
		return 0;
	case OPT_NET_ALLOW_BIND:
		sandlock_sandbox_builder_net_allow_bind_spec(b, op->arg);
		return 0;
	case OPT_NET_DENY_BIND:
		sandlock_sandbox_builder_net_deny_bind(b, op->arg);
		return 0;
	case OPT_ALLOW_UNIX:
		sandlock_sandbox_builder_net_allow_unix(b, op->arg);
		return 0;
	case OPT_UNIX_READABLE:
		sandlock_sandbox_builder_net_unix_readable(b, true);
		return 0;
	case OPT_WORKDIR:
		sandlock_sandbox_builder_workdir(b, op->arg);
		return 0;
	case OPT_CHROOT:
		sandlock_sandbox_builder_chroot(b, op->arg);
		return 0;
	case OPT_IMAGE:
		sandlock_sandbox_builder_image(b, op->arg);
		return 0;
	case OPT_FS_MOUNT:
		return apply_fs_mount(b, op->arg);
	case OPT_FS_STORAGE:
		sandlock_sandbox_builder_fs_storage(b, op->arg);
		return 0;
	case OPT_ON_EXIT:
	case OPT_ON_ERROR:
	case OPT_MAX_DISK:
		return apply_branch(b, op);
	case OPT_PORT_REMAP:
		sandlock_sandbox_builder_port_remap(b, true);
		return 0;
	case OPT_NET_HOST_INTERFACES:
		sandlock_sandbox_builder_net_host_interfaces(b, true);
		return 0;
	case OPT_TMP:
		sandlock_sandbox_builder_private_tmp(b, true);
		return 0;
	case OPT_HTTP_ALLOW:
	case OPT_HTTP_DENY:
	case OPT_HTTP_PORT:
	case OPT_HTTP_CA:
	case OPT_HTTP_KEY:
	case OPT_HTTP_INJECT_CA:
	case OPT_HTTP_CA_OUT:
	case OPT_CREDENTIAL:
	case OPT_HTTP_AUTH:
	case OPT_HTTP_LOG:
		return apply_http(b, op);
	default: /* OPT_ALLOW_DEGRADED, OPT_DISABLE */
		return apply_protection(b, op->id, op->arg);
	}
}
