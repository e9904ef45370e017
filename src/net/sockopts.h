/*
 * sockopts.h — the options a guest set on its sockets, noted where its
 * socket cannot be had (no pidfd_getfd, mechs.h), for the socket made
 * like it (sockremake.h) to get them too.
 *
 * Without the socket itself its options cannot be read (getsockopt
 * needs the socket; neither /proc nor sock_diag report most of them).
 * So in that mode setsockopt is trapped: the value is copied from the
 * caller's memory, noted under the sockfs inode its fd links to, and
 * the call continued to the kernel.  When a bind or connect remakes the
 * socket, the options noted for its inode are set on ours, in the order
 * they were set, as the caller (no capability), and forgotten once ours
 * replaced the caller's (a call that failed leaves them noted).
 *
 * The options matter for behaviour (SO_REUSEADDR lets a restarted server
 * bind its port past a TIME_WAIT; IPV6_V6ONLY decides which families a
 * listener takes), not for security: the bind or connect sandlock
 * performs is checked on the address it copied, whatever the options.
 * A value a racing thread changes after the copy, or a call the kernel
 * refused, only makes ours differ from the guest's; an option we set
 * fails where the caller's would.  Only the options listed in
 * sockopts.c are noted (the common SOL_SOCKET, IP, IPv6 and TCP ones,
 * values up to 64 bytes); at most 1024 are held, the oldest dropped
 * first.  Used under the dispatcher's builtin lock (netdest).
 */
#ifndef SANDLOCK_SOCKOPTS_H
#define SANDLOCK_SOCKOPTS_H

#include <stdbool.h>
#include <stddef.h>

struct sl_sockopts;

struct sl_sockopts *sl_sockopts_new(void);
void sl_sockopts_free(struct sl_sockopts *t);

/* Is this option one we carry over (and its value short enough)? */
bool sl_sockopts_carried(int level, int name, size_t len);

/* Note option (level, name) = val[len] set on the socket with inode ino. */
void sl_sockopts_note(struct sl_sockopts *t, unsigned long ino, int level, int name,
                      const void *val, size_t len);

/* Set the options noted for ino on our socket fd, oldest first (errors
 * ignored: the kernel answered the caller already).  The caller lowers
 * our capabilities first.  How many were set.  They stay noted: a bind
 * or connect that fails on fd leaves the caller's socket, and the next
 * socket made like it needs them again. */
size_t sl_sockopts_apply(struct sl_sockopts *t, unsigned long ino, int fd);

/* Forget the options noted for ino: ours took the caller's socket's place. */
void sl_sockopts_forget(struct sl_sockopts *t, unsigned long ino);

#endif /* SANDLOCK_SOCKOPTS_H */
