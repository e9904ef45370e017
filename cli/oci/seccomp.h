/*
 * seccomp.h — the engine's seccomp profile (linux.seccomp), layered under
 * sandlock's own filter.
 *
 * The library installs sandlock's filter; the profile is compiled here
 * (libseccomp) into a BPF program in a sealed memfd, and the process is
 * started through a small exec step in the sandbox ("sandlock-oci
 * seccomp-exec FD CMD...", this binary, mapped read-only into the view)
 * that installs it as a second filter and execs CMD.  The kernel runs
 * both filters on every call and takes the strictest answer, so the
 * profile's denials hold whatever sandlock allows, and sandlock's
 * whatever the profile allows.
 */
#ifndef SANDLOCK_OCI_SECCOMP_H
#define SANDLOCK_OCI_SECCOMP_H

#include <jansson.h>

/* The compiled profile as a memfd (sealed), -1 for no profile (NULL or
 * absent), or -2 after naming the field that cannot be honoured. */
int oci_seccomp_compile(json_t *seccomp);

/* The guest directory the helper is mapped at, and the helper's name. */
#define OCI_HELPER_GUEST_DIR "/.sandlock-oci"
#define OCI_HELPER_NAME "sandlock-oci"

/* The host directory holding a copy of this binary (made or refreshed in
 * ROOT/.helper), into out.  0, or -1 after saying why. */
int oci_helper_dir(const char *root, char *out, size_t cap);

/* `sandlock-oci seccomp-exec FD CMD [ARGS...]`, inside the sandbox:
 * install the filter read from FD, close it, exec CMD.  Returns only on
 * failure (exit status 127, as a failed exec in runc). */
int oci_seccomp_exec(int argc, char **argv);

#endif
