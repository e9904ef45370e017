/*
 * ctldir.h — where the CLI's named runs keep their control sockets, known
 * to the library too: no sandbox may reach one (builtins/netdest.c).
 */
#ifndef SANDLOCK_CTLDIR_H
#define SANDLOCK_CTLDIR_H

#include <stdbool.h>
#include <stddef.h>

#define SL_CTLDIR_MAX 4   /* candidates, in the order they are tried */
#define SL_CTLDIR_LEN 108 /* a sun_path: the socket's name must fit below */

/* The candidate control directories of this user, most preferred first
 * ($XDG_RUNTIME_DIR/sandlock, /run/user/UID/sandlock, /tmp/sandlock-UID,
 * $HOME/.cache/sandlock-UID); the count. */
int sl_ctldir_candidates(char out[SL_CTLDIR_MAX][SL_CTLDIR_LEN]);

/* True if canonical path names an entry of a control directory of any
 * user (the candidates above, and /run/user/N/sandlock, /tmp/sandlock-N). */
bool sl_ctldir_holds(const char *path);

#endif
