/*
 * cmds.h — the runtime's subcommands (runc's command line).  Each takes
 * the global options and its own argv (argv[0] is the subcommand) and
 * returns the exit status.
 */
#ifndef SANDLOCK_OCI_CMDS_H
#define SANDLOCK_OCI_CMDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

struct oci_global {
	const char *root; /* --root, NULL: the default */
};

/* One option of a subcommand: "--name VALUE", "--name=VALUE", "-s VALUE",
 * or a flag ("--name", "-s"). */
struct oci_opt {
	const char *name;
	char shortname;
	bool takes_value;
	const char **value; /* set for options with a value */
	bool *flag;         /* set for flags */
	const char **list;  /* a repeatable option's values (at most 64) */
	int *nlist;
};

/* Parse argv[1..] into opts and positionals (at most maxpos; with
 * stop_at_second true, everything after the second positional is
 * positional too: exec's command).  -1 after saying why. */
int oci_parse(int argc, char **argv, const struct oci_opt *opts, const char **pos, int maxpos,
              bool stop_at_second);

int oci_cmd_create(const struct oci_global *g, int argc, char **argv);
int oci_cmd_start(const struct oci_global *g, int argc, char **argv);
int oci_cmd_pause(const struct oci_global *g, int argc, char **argv);
int oci_cmd_resume(const struct oci_global *g, int argc, char **argv);
int oci_cmd_state(const struct oci_global *g, int argc, char **argv);
int oci_cmd_kill(const struct oci_global *g, int argc, char **argv);
int oci_cmd_delete(const struct oci_global *g, int argc, char **argv);
int oci_cmd_list(const struct oci_global *g, int argc, char **argv);
int oci_cmd_exec(const struct oci_global *g, int argc, char **argv);
int oci_cmd_features(const struct oci_global *g, int argc, char **argv);

/* The state directory of an existing container (argv's id) into dir.
 * -1 after saying why. */
int oci_container_dir(const struct oci_global *g, const char *id, char *dir, size_t cap);
struct oci_run;
struct oci_proc;
/* The sandbox of run (run->sb) and the engine's compiled seccomp profile
 * (run->seccomp_fd, -1: none) for config and proc.  make: create the
 * scratch directories (create; exec reuses them).  0, or -1 after saying
 * why (nothing to free then). */
int oci_prepare(const char *root, json_t *config, const struct oci_proc *proc,
                const char *bundle, const char *dir, bool make, struct oci_run *run);
/* Write pid to path atomically (a temporary renamed over it, as runc). */
int oci_write_pid_file(const char *path, int pid);

#endif
