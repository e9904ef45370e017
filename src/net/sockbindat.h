/*
 * sockbindat.h — bind a unix socket at a name inside a directory fd
 * (sockbindat.c): there is no bindat(2), and the directory's path may
 * not fit in sun_path's 108 bytes (the COW layer's upper copy of a
 * workdir path is longer than the path the guest named).
 */
#ifndef SANDLOCK_SOCKBINDAT_H
#define SANDLOCK_SOCKBINDAT_H

#include <sys/types.h>

/* Bind sock to name (one component) in directory dirfd, the file's mode
 * masked by umask as the caller's would be, with no effective
 * capability.  0 or -errno (ENAMETOOLONG past sun_path). */
int sl_sock_bind_at(int sock, int dirfd, const char *name, mode_t umask);

#endif
