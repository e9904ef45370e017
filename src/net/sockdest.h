/*
 * sockdest.h — socket destinations of a trapped call, copied once and
 * used from the supervisor's side: the destination address, the socket's
 * kind (from our pidfd_getfd duplicate), a pathname AF_UNIX socket
 * resolved as the caller would reach it, and a sendmsg message copied
 * into our memory.  The policy lives in builtins/netdest/; this file
 * only moves bytes and resolves names, so that the call performed on
 * the duplicate uses exactly what was checked (nothing is re-read from
 * the caller's memory afterwards).
 */
#ifndef SANDLOCK_SOCKDEST_H
#define SANDLOCK_SOCKDEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "sandlock.h"

/* Payload copied for one on-behalf send: a datagram larger than this
 * fails with EMSGSIZE, a stream send is partial (as the kernel may do). */
#define SL_SD_MAX_PAYLOAD (256 * 1024)
#define SL_SD_MAX_CONTROL 4096 /* control bytes of one message */

struct sl_sockaddr {
	struct sockaddr_storage ss;
	socklen_t len;
};

/* Copy len bytes at addr (len > sizeof(ss): EINVAL, as the kernel).
 * 0 or an errno. */
int sl_sd_copy_addr(sandlock_mem_t *m, uint64_t addr, uint64_t len, struct sl_sockaddr *out);

struct sl_sockinfo {
	int domain, type, protocol;
};
/* SO_DOMAIN/SO_TYPE/SO_PROTOCOL of our fd.  0 or an errno (ENOTSOCK). */
int sl_sd_sockinfo(int fd, struct sl_sockinfo *si);

/* AF_UNIX address kinds: a path, an abstract name, or neither (unnamed,
 * autobind, or not AF_UNIX at all). */
bool sl_sd_unix_pathname(const struct sl_sockaddr *a);
bool sl_sd_unix_abstract(const struct sl_sockaddr *a);

/* The inode of the socket an abstract address a reaches from a socket
 * of type (SOCK_STREAM/SOCK_SEQPACKET: the listener bound to the name;
 * SOCK_DGRAM: the socket bound to it), found with sock_diag in our
 * network namespace (the sandbox's).  0 with *ino (0: no such socket),
 * or an errno. */
int sl_sd_abstract_inode(const struct sl_sockaddr *a, int type, unsigned long *ino);

/* The sockfs inode of the listening unix socket bound to the socket file
 * (dev, ino) (stat(2)'s), found with sock_diag: 0 with *sock (0: none
 * listens there), or an errno. */
int sl_sd_unix_listener_at(dev_t dev, ino_t ino, unsigned long *sock);

/* A sock_diag request r for AF_UNIX sockets (one, or with dump all that
 * match), sent: the netlink socket to read the answers from, or -errno. */
struct unix_diag_req;
int sl_sd_unix_diag(const struct unix_diag_req *r, bool dump);

/* The path of a pathname address, NUL-terminated (the kernel stops at
 * the first NUL or the address length).  /proc/self and
 * /proc/thread-self name the caller: rewritten (childfd.h).  0 or an
 * errno. */
int sl_sd_unix_path(const struct sl_sockaddr *a, const sandlock_notif_t *nf, char *out,
                    size_t cap);
/* The canonical path of our fd (its /proc/self/fd link): 0 or EACCES. */
int sl_sd_fd_canon(int fd, char *canon, size_t cap);
/* Open the pathname socket of a as the caller reaches it (a relative
 * path from its cwd, /proc/self meaning the caller) with O_PATH, and give
 * its canonical path.  0 with *fd, or an errno (ENOENT, ENOTDIR, ...). */
int sl_sd_unix_open(int listener, const sandlock_notif_t *n, const struct sl_sockaddr *a,
                    int *fd, char *canon, size_t cap);
/* Make a name that very file: /proc/self/fd/N (the kernel follows it). */
void sl_sd_unix_via_fd(struct sl_sockaddr *a, int fd);

/* A struct msghdr of the caller, copied. */
struct sl_sd_msg {
	struct sl_sockaddr name;
	bool has_name;
	void *data;
	size_t len;
	void *control;
	size_t controllen;
	int fds[SL_SD_MAX_CONTROL / sizeof(int)]; /* our duplicates of SCM_RIGHTS fds */
	size_t nfds;
};
/* Copy the msghdr at addr.  stream: payload over the cap is cut (a
 * partial send), else EMSGSIZE.  SCM_RIGHTS fds are duplicated into ours;
 * SCM_CREDENTIALS is refused (EPERM: it would carry our pid).  0 or an
 * errno; free with sl_sd_msg_free either way. */
int sl_sd_copy_msg(sandlock_mem_t *m, int listener, const sandlock_notif_t *n, uint64_t addr,
                   bool stream, struct sl_sd_msg *out);
/* A plain buffer (sendto) as a message without name or control. */
int sl_sd_copy_buf(sandlock_mem_t *m, uint64_t addr, uint64_t len, bool stream,
                   struct sl_sd_msg *out);
void sl_sd_msg_free(struct sl_sd_msg *msg);
/* sendmsg(fd, msg, flags) with the copy; bytes sent or -errno. */
ssize_t sl_sd_sendmsg(int fd, const struct sl_sd_msg *msg, int flags);

#endif /* SANDLOCK_SOCKDEST_H */
