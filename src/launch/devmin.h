/*
 * devmin.h — the minimal /dev every sandbox gets: the data sinks and
 * sources (null, zero, full, random, urandom), the files behind its own
 * stdin/stdout/stderr, and /dev/tty when one of those is a terminal.  No
 * other device node is reachable unless a -r/-w grant names it.
 */
#ifndef SANDLOCK_DEVMIN_H
#define SANDLOCK_DEVMIN_H

#include <stdbool.h>
#include <stdint.h>

/* Grant the five data devices that exist on this host (a missing one is
 * skipped) to a ruleset being built.  0, or -1 with *err, *msg. */
int sl_devmin_grant(int ruleset, uint64_t handled, int *err, char **msg);
/*
 * Grant the file behind fd, one of the command's stdin/stdout/stderr, with
 * the access that fd already has (so a reopen of /dev/stdout or
 * /proc/self/fd/1 works and grants nothing the open fd does not): a
 * regular file, or a terminal (plus its ioctls).  Pipes, sockets and other
 * devices get no rule (Landlock does not check pipes and sockets).  Sets
 * *tty when fd is a terminal.  0 or -errno.
 */
int sl_devmin_grant_stdio(int ruleset, uint64_t handled, int fd, bool *tty);
/* /dev/tty (the controlling terminal), for a sandbox whose stdio is a
 * terminal.  0 or -errno. */
int sl_devmin_grant_tty(int ruleset, uint64_t handled);

#endif /* SANDLOCK_DEVMIN_H */
