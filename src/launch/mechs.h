/*
 * mechs.h — which of the kernel's ways into a sandboxed process this
 * process may use, probed once.
 *
 * Container runtimes refuse some of them: Docker's and Kubernetes'
 * default seccomp profiles allow pidfd_getfd, ptrace and
 * process_vm_readv/writev only with CAP_SYS_PTRACE, which a container
 * does not have by default; Yama's ptrace_scope 2 asks for that
 * capability too, 3 refuses everyone.  The library picks, per mechanism,
 * one that works (fast one first) and refuses only the feature that has
 * none, naming the missing permission (sl_mech_getfd_why).
 */
#ifndef SANDLOCK_MECHS_H
#define SANDLOCK_MECHS_H

#include <stdbool.h>

struct sl_mechs {
	/* pidfd_getfd on our own processes works (seccomp profile, kernel). */
	bool getfd;
	int getfd_errno; /* what the probe got when it does not */
	/* Yama's ptrace_scope, -1 without Yama; and CAP_SYS_PTRACE, which
	 * scope 2 asks for. */
	int yama;
	bool cap_ptrace;
	/* Whether a child's memory (/proc/PID/mem) and fds (pidfd_getfd) can
	 * be reached at all: both are ptrace "attach" checks. */
	bool attach;
};

/* The probe's result (the first call probes; thread-safe). */
const struct sl_mechs *sl_mechs(void);

/* True when this process can duplicate a sandboxed process's fds. */
bool sl_mech_getfd(void);

/* Why it cannot, and how to grant it: a sentence for an error message
 * or `sandlock check` (static storage). */
const char *sl_mech_getfd_why(void);

/* Why a child's memory cannot be reached, or NULL when it can. */
const char *sl_mech_attach_why(void);

#endif /* SANDLOCK_MECHS_H */
