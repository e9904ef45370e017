/*
 * ctldir.h — where the CLI's named runs keep their control sockets, known
 * to the library too: no sandbox may reach one (builtins/netdest/).
 */
#ifndef SANDLOCK_CTLDIR_H
#define SANDLOCK_CTLDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define SL_CTLDIR_MAX 4   /* candidates, in the order they are tried */
#define SL_CTLDIR_LEN 108 /* a sun_path: the socket's name must fit below */

/* The candidate control directories of this user, most preferred first
 * ($XDG_RUNTIME_DIR/sandlock, /run/user/UID/sandlock, /tmp/sandlock-UID,
 * $HOME/.cache/sandlock-UID); the count. */
int sl_ctldir_candidates(char out[SL_CTLDIR_MAX][SL_CTLDIR_LEN]);

/* True if canonical path names an entry of a control directory of any
 * user (the candidates above, and /run/user/N/sandlock, /tmp/sandlock-N). */
bool sl_ctldir_holds(const char *path);

/* Is the socket file at path listened on by a socket that process pid
 * itself holds?  A control client asks it of the SO_PEERCRED pid of its
 * connection: a listen a supervisor performed on a guest's behalf
 * (netdest) shows the supervisor's pid, which holds no such socket, so a
 * guest's socket put in place of a run's is never taken for the run's. */
bool sl_ctldir_served_by(const char *path, pid_t pid);
/* The same for the abstract name (given without its leading NUL) a named
 * run also listens on (cli/control.c): no guest can delete that one. */
bool sl_ctldir_abstract_served_by(const char *name, pid_t pid);

#endif
