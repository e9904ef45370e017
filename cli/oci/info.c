/*
 * info.c — list and features: what runs under --root, and what this
 * runtime implements (the runtime spec's features document).
 */
#include "cmds.h"
#include "ctl.h"
#include "log.h"
#include "state.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static json_t *entry(const char *root, const char *id)
{
	char dir[OCI_PATH_MAX], reply[128], status[16] = "stopped";
	int pid = 0;
	if (oci_state_dir(root, id, dir, sizeof dir) < 0)
		return NULL;
	json_t *st = oci_state_read(dir);
	if (!st)
		return NULL;
	if (oci_state_alive(dir) && oci_ctl_request(dir, "status", reply, sizeof reply) == 0)
		sscanf(reply, "%15s %d", status, &pid);
	json_object_set_new(st, "status", json_string(status));
	json_object_set_new(st, "pid", json_integer(pid));
	return st;
}

int oci_cmd_list(const struct oci_global *g, int argc, char **argv)
{
	const char *format = "table";
	bool quiet = false;
	const struct oci_opt opts[] = {
		{ "format", 'f', true, &format, NULL, NULL, NULL },
		{ "quiet", 'q', false, NULL, &quiet, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL, NULL },
	};
	char root[OCI_PATH_MAX];
	if (oci_parse(argc, argv, opts, NULL, 0, false) < 0 ||
	    oci_state_root(g->root, root, sizeof root) < 0)
		return 1;
	bool json = strcmp(format, "json") == 0;
	if (!json && strcmp(format, "table") != 0) {
		oci_error("list --format %s: use table or json", format);
		return 1;
	}
	json_t *all = json_array();
	DIR *d = opendir(root);
	struct dirent *e;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.') {
			json_t *st = entry(root, e->d_name);
			if (st)
				json_array_append_new(all, st);
		}
	if (d)
		closedir(d);
	if (json) {
		char *out = json_dumps(all, JSON_COMPACT);
		puts(out ? out : "[]");
		free(out);
	} else {
		if (!quiet)
			printf("%-24s %-8s %-10s %-40s %s\n", "ID", "PID", "STATUS", "BUNDLE",
			       "CREATED");
		size_t i;
		json_t *st;
		json_array_foreach(all, i, st) {
			const char *id = json_string_value(json_object_get(st, "id"));
			if (quiet) {
				puts(id);
				continue;
			}
			printf("%-24s %-8lld %-10s %-40s %s\n", id,
			       (long long)json_integer_value(json_object_get(st, "pid")),
			       json_string_value(json_object_get(st, "status")),
			       json_string_value(json_object_get(st, "bundle")),
			       json_string_value(json_object_get(st, "created")));
		}
	}
	json_decref(all);
	return 0;
}

int oci_cmd_features(const struct oci_global *g, int argc, char **argv)
{
	(void)g;
	(void)argc;
	(void)argv;
	json_t *f = json_pack(
		"{s:s, s:s, s:[], s:[s,s,s,s,s,s,s,s,s,s], s:{s:[s,s,s,s,s], s:[], "
		"s:{s:b, s:b, s:b, s:b}, s:{s:b, s:[s,s,s,s,s,s,s], s:[s,s,s,s,s,s,s], s:[s]}, "
		"s:{s:b}, s:{s:b}}, s:{s:s, s:s}}",
		"ociVersionMin", "1.0.0", "ociVersionMax", "1.1.0", "hooks", "mountOptions", "ro",
		"rw", "bind", "rbind", "nosuid", "nodev", "noexec", "mode", "size", "rprivate",
		"linux", "namespaces", "mount", "pid", "uts", "ipc", "network", "capabilities",
		"cgroup", "v1", 0, "v2", 0, "systemd", 0, "systemdUser", 0, "seccomp", "enabled", 1,
		"actions", "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL",
		"SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRAP",
		"operators", "SCMP_CMP_EQ", "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE",
		"SCMP_CMP_GT", "SCMP_CMP_GE", "SCMP_CMP_MASKED_EQ", "archs", "SCMP_ARCH_X86_64",
		"apparmor", "enabled", 0, "selinux", "enabled", 0, "annotations",
		"org.opencontainers.runtime.name", "sandlock-oci", "io.sandlock.annotations",
		"sandlock.* (docs/oci.md)");
	char *out = f ? json_dumps(f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	if (out)
		puts(out);
	free(out);
	json_decref(f);
	return out ? 0 : 1;
}
