/*
 * oci.c — sandlock-oci: an OCI runtime (runc's command line) over
 * libsandlock, for Podman, containerd, CRI-O and Kubernetes.
 *
 *   sandlock-oci [--root DIR] [--log FILE] [--log-format text|json]
 *                [--systemd-cgroup] COMMAND ...
 *
 * Global options come before the command, as engines pass them.  See
 * docs/oci.md for what config.json becomes.
 */
#include "cmds.h"
#include "log.h"
#include "seccomp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandlock.h"

static const char usage[] =
	"usage: sandlock-oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND\n"
	"commands:\n"
	"  create ID [--bundle DIR] [--pid-file F] [--console-socket S] [--preserve-fds N]\n"
	"  start ID | state ID | kill ID [SIGNAL] [--all] | delete ID [--force]\n"
	"  pause ID | resume ID\n"
	"  exec ID [--process F | CMD ARGS...] [--pid-file F] [--detach] [--console-socket S]\n"
	"       [--tty] [--cwd D] [--env K=V]\n"
	"  list [--format table|json] [--quiet] | features | --version\n";

static const struct {
	const char *name;
	int (*fn)(const struct oci_global *, int, char **);
} cmds[] = {
	{ "create", oci_cmd_create }, { "start", oci_cmd_start },   { "state", oci_cmd_state },
	{ "kill", oci_cmd_kill },     { "delete", oci_cmd_delete }, { "list", oci_cmd_list },
	{ "exec", oci_cmd_exec },     { "features", oci_cmd_features },
	{ "pause", oci_cmd_pause },   { "resume", oci_cmd_resume },
};

static int option_value(int argc, char **argv, int *i, const char *name, const char **out)
{
	size_t len = strlen(name);
	if (strncmp(argv[*i], name, len) != 0)
		return 0;
	if (argv[*i][len] == '=') {
		*out = argv[*i] + len + 1;
		return 1;
	}
	if (argv[*i][len] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		fprintf(stderr, "sandlock-oci: %s needs a value\n", name);
		return -1;
	}
	*out = argv[++*i];
	return 1;
}

int main(int argc, char **argv)
{
	struct oci_global g = { 0 };
	const char *log = NULL, *format = NULL, *ignored = NULL;
	bool systemd = false;
	int i = 1;
	/* The in-sandbox step of an engine's seccomp profile (seccomp.h). */
	if (argc > 1 && strcmp(argv[1], "seccomp-exec") == 0)
		return oci_seccomp_exec(argc - 1, argv + 1);
	for (; i < argc && argv[i][0] == '-'; i++) {
		int r;
		if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-v") == 0) {
			printf("sandlock-oci version %s\nspec: 1.1.0\nlibsandlock: %s\n",
			       SANDLOCK_VERSION, sandlock_version());
			return 0;
		}
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage, stdout);
			return 0;
		}
		if ((r = option_value(argc, argv, &i, "--root", &g.root)) ||
		    (r = option_value(argc, argv, &i, "--log", &log)) ||
		    (r = option_value(argc, argv, &i, "--log-format", &format)) ||
		    (r = option_value(argc, argv, &i, "--rootless", &ignored)) ||
		    (r = option_value(argc, argv, &i, "--criu", &ignored))) {
			if (r < 0)
				return 1;
			continue;
		}
		if (strcmp(argv[i], "--systemd-cgroup") == 0) {
			systemd = true;
			continue;
		}
		if (strcmp(argv[i], "--debug") == 0)
			continue;
		fprintf(stderr, "sandlock-oci: unknown global option %s\n%s", argv[i], usage);
		return 1;
	}
	if (oci_log_open(log, format) < 0)
		return 1;
	if (systemd)
		oci_info("--systemd-cgroup: ignored (sandlock makes its own cgroups, if any)");
	if (i >= argc) {
		fputs(usage, stderr);
		return 1;
	}
	for (size_t k = 0; k < sizeof cmds / sizeof *cmds; k++)
		if (strcmp(argv[i], cmds[k].name) == 0)
			return cmds[k].fn(&g, argc - i, argv + i);
	oci_error("unknown command '%s' (sandlock-oci --help)", argv[i]);
	return 1;
}
