/*
 * super.h — the supervisor: the long-lived process that owns one
 * sandbox (a container's, or one exec's) from create until its process
 * ends.  The runtime command forks it and exits; it is then reparented
 * to the engine's subreaper (conmon, containerd-shim), which waits for
 * it: its pid is the --pid-file pid and it exits as the process did
 * (status, or the same signal), so the engine sees the container's
 * status.  It holds the state directory's lock while alive and serves
 * the control socket (ctl.h).  An exec's supervisor instead attaches to
 * the container's and ends its process when the container is gone.
 */
#ifndef SANDLOCK_OCI_SUPER_H
#define SANDLOCK_OCI_SUPER_H

#include <stdbool.h>
#include <sys/types.h>

#include "sandlock.h"
#include "spec.h"

struct oci_run {
	const char *dir;            /* the container's state directory */
	struct oci_proc *proc;
	sandlock_sandbox_t *sb;
	const char *console_socket; /* NULL: none */
	int preserve_fds;           /* fds 3 .. 3+n-1 passed to the process */
	bool exec;                  /* an exec: no create/start, attach to dir's supervisor */
	int seccomp_fd;             /* the engine's compiled profile (seccomp.h), or -1 */
	pid_t budget;               /* an exec: its container's init, whose limits it shares */
};

/* Fork the supervisor and wait for its report: its pid once the process
 * is created (parked before exec; an exec's is running), or -1 after
 * saying why (nothing is left running). */
pid_t oci_super_fork(const struct oci_run *r);

#endif
