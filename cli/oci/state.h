/*
 * state.h — the state store under --root: one directory per container,
 * private to the runtime's user (0700).  It holds state.json (what
 * `state` reports besides the live status), the copy of config.json an
 * exec rebuilds the sandbox from, the supervisor's lock and control
 * socket, and the scratch directories of tmpfs mounts and /dev.
 *
 * Liveness is a lock, not a pid: the supervisor holds an exclusive flock
 * on DIR/lock from before the sandbox exists until it exits, so a
 * recycled pid can never make a stopped container look alive.
 */
#ifndef SANDLOCK_OCI_STATE_H
#define SANDLOCK_OCI_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#define OCI_PATH_MAX 4096

/* The root (--root, else /run/sandlock-oci for root, else
 * $XDG_RUNTIME_DIR/sandlock-oci or /tmp/sandlock-oci-UID), made 0700 if
 * missing.  0, or -1 after saying why. */
int oci_state_root(const char *flag, char *out, size_t cap);
/* ROOT/ID for a valid id (letters, digits, '_', '+', '-', '.', not
 * starting with '.', at most 1024).  0, or -1 after saying why. */
int oci_state_dir(const char *root, const char *id, char *out, size_t cap);
/* Make DIR (EEXIST: "already exists").  0, or -1 after saying why. */
int oci_state_make(const char *dir, const char *id);
bool oci_state_exists(const char *dir);
/* The supervisor's lock, held until the returned fd is closed (at exit). */
int oci_state_lock(const char *dir);
/* Is a supervisor holding DIR's lock? */
bool oci_state_alive(const char *dir);
/* Wait up to timeout_ms for the supervisor to be gone: true if it is. */
bool oci_state_wait_dead(const char *dir, int timeout_ms);
/* state.json: written atomically / read (NULL if missing or malformed). */
int oci_state_write(const char *dir, json_t *st);
json_t *oci_state_read(const char *dir);
/* Remove DIR and everything in it (the container's scratch dirs too). */
int oci_state_remove(const char *dir);
/* DIR/name into out.  0, or -1 if too long. */
int oci_state_path(const char *dir, const char *name, char *out, size_t cap);

#endif
