/*
 * ctl.h — the supervisor's control socket (DIR/ctl.sock, in the 0700
 * state directory) and its one-line protocol:
 *
 *   status          -> "created PID" | "running PID" | "paused PID" | "stopped PID"
 *   start           -> "ok" | "error WHY"
 *   pause, resume   -> "ok" | "error WHY" (the whole sandbox stopped/continued)
 *   kill SIG [all]  -> "ok" | "error WHY"
 *   attach          -> "ok", then the connection stays open: an exec's
 *                      supervisor holds it, receives "kill SIG" lines for
 *                      `kill --all`, and ends its process when it closes
 *                      (the container is gone).
 */
#ifndef SANDLOCK_OCI_CTL_H
#define SANDLOCK_OCI_CTL_H

#include <stddef.h>

/* The listening socket, or -1 after saying why. */
int oci_ctl_listen(const char *dir);
/* A connection to DIR's supervisor, or -1 (errno) when none answers. */
int oci_ctl_connect(const char *dir);
/* Send req, read one reply line into reply (without '\n').  0, or -1. */
int oci_ctl_request(const char *dir, const char *req, char *reply, size_t cap);
/* Read one line from fd (at most cap-1 bytes, waiting at most timeout_ms):
 * its length, 0 at EOF, -1 on error or timeout. */
int oci_ctl_read_line(int fd, char *buf, size_t cap, int timeout_ms);
/* Write a line (a '\n' is appended).  0, or -1. */
int oci_ctl_write_line(int fd, const char *line);
/* Is the peer of a connection ours to serve (our uid, or root)? */
int oci_ctl_peer_ok(int fd);

#endif
