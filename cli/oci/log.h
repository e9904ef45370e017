/*
 * log.h — sandlock-oci's messages: to stderr while a command runs in the
 * engine's foreground, and to the --log file (text, or runc's JSON lines
 * with --log-format json) where the engine collects a runtime's errors.
 */
#ifndef SANDLOCK_OCI_LOG_H
#define SANDLOCK_OCI_LOG_H

#include <stdbool.h>

/* --log FILE (NULL: none) and --log-format ("text" or "json"). 0, or -1
 * after saying why (an unknown format). */
int oci_log_open(const char *path, const char *format);
/* Stop writing to stderr: a supervisor's fds 1 and 2 are the container's
 * streams once it runs, so its messages go to the log file only. */
void oci_log_quiet(void);
/* The log file's fd (-1: none): a forked supervisor keeps it open. */
int oci_log_fd(void);

__attribute__((format(printf, 1, 2))) void oci_error(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void oci_warn(const char *fmt, ...);
__attribute__((format(printf, 1, 2))) void oci_info(const char *fmt, ...);

#endif
