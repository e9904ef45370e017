/*
 * auditlog.h — the first access Landlock refused a run, read back from
 * the kernel's audit log (auditlog.c says how and why).
 */
#ifndef SANDLOCK_AUDITLOG_H
#define SANDLOCK_AUDITLOG_H

#include <stdbool.h>
#include <sys/types.h>

/* A socket on the audit log's read-only multicast group, or -1 when this
 * caller cannot read it (no CAP_AUDIT_READ, no audit in this kernel or
 * namespace, Landlock without audit: ABI < 7).  Never fails a run. */
int sl_auditlog_open(void);

/* The first denial logged for the Landlock domain process creator made:
 * *blockers ("fs.read_file", "fs.make_reg,fs.write_file", ...) and *object
 * (the path for a file access, else the record's remaining fields), both
 * heap; false when none was logged.  Waits at most wait_ms for records in
 * flight.  fd stays open (the caller closes it). */
bool sl_auditlog_first(int fd, pid_t creator, int wait_ms, char **blockers, char **object);

#endif /* SANDLOCK_AUDITLOG_H */
