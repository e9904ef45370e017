/*
 * tracepath.h — paths as --trace and learn see them (tracepath.c).
 */
#ifndef SANDLOCK_CLI_TRACEPATH_H
#define SANDLOCK_CLI_TRACEPATH_H

#include <stdbool.h>
#include <stdint.h>

#include "runcfg.h"

/* path is root or lies below it (both canonical). */
bool cli_path_under(const char *path, const char *root);
/* The first of roots that path lies under, or NULL. */
const char *cli_path_first_under(const struct cli_list *roots, const char *path);
/* Canonical copies of the paths of in that resolve, added to out.  0 or -1. */
int cli_path_canon_list(struct cli_list *out, const struct cli_list *in);
/* The absolute spelling of path as process pid means it: relative to its
 * cwd or to dirfd (AT_FDCWD: the cwd), /proc/self made /proc/PID.  Heap. */
char *cli_path_absolute(uint32_t pid, int dirfd, const char *path);
/* realpath of p, or of its parent plus the last name when p does not
 * exist yet (a file being created); *exists says which.  Heap, or NULL. */
char *cli_path_canonical(const char *p, bool *exists);
/* The directory a grant for path names: its parent, or the path itself
 * when it is a directory.  Heap. */
char *cli_path_grant_dir(const char *path, bool exists);
/* A device every sandbox may open (sandlock.h), or, with tty (the CLI's
 * stdio is a terminal), /dev/tty. */
bool cli_path_default_device(bool tty, const char *path);

#endif
