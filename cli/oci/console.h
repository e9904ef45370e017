/*
 * console.h — process.terminal: a pty whose slave becomes the process's
 * stdio and controlling terminal, and whose master goes to the engine
 * over --console-socket (SCM_RIGHTS, as runc sends it), so conmon or
 * containerd-shim relays it to `podman run -it` / `kubectl exec -it`.
 */
#ifndef SANDLOCK_OCI_CONSOLE_H
#define SANDLOCK_OCI_CONSOLE_H

/* In the supervisor (a session leader without a terminal): open a pty,
 * make the slave our controlling terminal and fds 0..2, size it
 * rows x cols (0: leave it), send the master to socket_path and close
 * it.  0, or -1 after saying why. */
int oci_console_setup(const char *socket_path, unsigned rows, unsigned cols);

#endif
