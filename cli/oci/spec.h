/*
 * spec.h — config.json (OCI runtime spec) translated by intent into a
 * sandlock sandbox and the process settings the supervisor applies to
 * itself before it spawns (user, rlimits, umask: inherited by the
 * sandbox's processes).
 *
 * Every setting the spec says a runtime must honour and sandlock cannot
 * is an error naming the field; settings the spec leaves optional (and
 * those with a documented sandlock equivalent, see docs/oci.md) are
 * logged as a warning when not applied as asked.
 */
#ifndef SANDLOCK_OCI_SPEC_H
#define SANDLOCK_OCI_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

#include "sandlock.h"

#define OCI_MAX_RLIMITS 16

struct oci_rlimit {
	int resource;
	uint64_t soft, hard;
};

/* The "process" object: of config.json, or an exec's --process file. */
struct oci_proc {
	char **argv; /* NULL-terminated */
	size_t argc;
	char **env; /* "K=V", NULL-terminated */
	const char *cwd;
	bool terminal;
	unsigned rows, cols; /* consoleSize, 0: none */
	uid_t uid;
	gid_t gid;
	gid_t gids[64];
	size_t ngids;
	bool has_umask;
	mode_t umask;
	struct oci_rlimit rl[OCI_MAX_RLIMITS];
	size_t nrl;
	bool has_oom;
	int oom;
	json_t *json; /* owns the strings above */
};

/* Parse config.json's "process" (or an exec's process.json).  0, or -1
 * after naming the field.  Free with oci_proc_free. */
int oci_proc_parse(json_t *process, const char *what, struct oci_proc *out);
void oci_proc_free(struct oci_proc *p);
/* Apply to the calling process (the supervisor, before it spawns):
 * rlimits, umask, oom score.  0, or -1 after naming the field. */
int oci_proc_apply_self(const struct oci_proc *p);

/* Load and check a bundle's config.json (ociVersion 1.x, root, process).
 * NULL after saying why. */
json_t *oci_spec_load(const char *path);

/*
 * The sandbox for config (root, mounts, hostname, resources, namespaces,
 * seccomp, annotations) and proc (cwd, env).  bundle: relative paths are
 * relative to it.  scratch: the state directory holding tmpfs and /dev
 * scratch dirs; make: create and fill them (create) or reuse them (exec).
 * helper_dir: the seccomp step's host directory, mapped read-only at
 * OCI_HELPER_GUEST_DIR (NULL: no engine profile).  budget: an exec's
 * container (a process of its sandbox): its limits are shared, not
 * repeated (0: none).  NULL after saying why.
 */
sandlock_sandbox_t *oci_spec_sandbox(json_t *config, const struct oci_proc *proc,
                                     const char *bundle, const char *scratch, bool make,
                                     const char *helper_dir, pid_t budget);

#endif
