/*
 * refusedopen.h — an open the supervisor performed for the program and
 * Landlock refused: which file, read or written.
 */
#ifndef SANDLOCK_CLI_REFUSEDOPEN_H
#define SANDLOCK_CLI_REFUSEDOPEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandlock.h"

/* Copy len bytes at addr of pid (process_vm_readv, else /proc/PID/mem). */
bool cli_read_caller(pid_t pid, uint64_t addr, void *out, size_t len);
/* For a held open/openat/openat2/creat call (call: its name): the path
 * it names, made absolute from its directory fd or cwd, and whether it
 * opens for writing.  False for another call or when it cannot be read. */
bool cli_refused_open(const sandlock_notif_t *n, const char *call, char *path, size_t size,
                      bool *write);

#endif
