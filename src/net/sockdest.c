/*
 * sockdest.c — copying, resolving and sending socket destinations for
 * calls performed on a trapped process's behalf (sockdest.h).
 *
 * Everything the later call uses is copied here exactly once; the
 * supervisor then acts on its copy and on a pidfd_getfd duplicate of the
 * caller's socket, so another thread of the caller rewriting its buffers
 * or swapping its fds changes nothing that was checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include "supervisor/childfd.h"
#include "net/sockdest.h"

#define SUN_PATH_OFF offsetof(struct sockaddr_un, sun_path)
#define SL_SD_MAX_IOV 1024 /* UIO_MAXIOV */

int sl_sd_copy_addr(sandlock_mem_t *m, uint64_t addr, uint64_t len, struct sl_sockaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (len > sizeof(out->ss))
		return EINVAL;
	if (len && sandlock_mem_peek(m, addr, &out->ss, (size_t)len) != 0)
		return EFAULT;
	out->len = (socklen_t)len;
	return 0;
}

int sl_sd_sockinfo(int fd, struct sl_sockinfo *si)
{
	socklen_t l = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &si->domain, &l) < 0)
		return errno;
	l = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &si->type, &l) < 0)
		return errno;
	l = sizeof(int);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &si->protocol, &l) < 0)
		return errno;
	return 0;
}

bool sl_sd_unix_pathname(const struct sl_sockaddr *a)
{
	const struct sockaddr_un *u = (const void *)&a->ss;
	return a->len > SUN_PATH_OFF && u->sun_family == AF_UNIX && u->sun_path[0] != '\0';
}

bool sl_sd_unix_abstract(const struct sl_sockaddr *a)
{
	const struct sockaddr_un *u = (const void *)&a->ss;
	return a->len > SUN_PATH_OFF && u->sun_family == AF_UNIX && u->sun_path[0] == '\0';
}

/* ---------------- abstract names: who is bound to one ---------------- */

#define DIAG_BUF 32768

/* What a dump looks for: the first socket m matches. */
struct diag_want {
	bool (*match)(const struct nlmsghdr *h, const struct diag_want *w);
	const char *name; /* abstract: the name and its length, the socket type */
	size_t len;
	int type;
	unsigned long vfs_dev, vfs_ino; /* by file: the kernel's dev_t, the inode */
};

/* The attribute type of m's, or NULL. */
static const struct rtattr *diag_attr(const struct nlmsghdr *h, int type)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	size_t rem = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	for (const struct rtattr *at = (const void *)(m + 1); RTA_OK(at, rem);
	     at = RTA_NEXT(at, rem))
		if (at->rta_type == type)
			return at;
	return NULL;
}

/* Does the diag message m (one socket) hold w's name and could a socket
 * of w's type reach it? */
static bool match_name(const struct nlmsghdr *h, const struct diag_want *w)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	if (m->udiag_type != w->type)
		return false;
	/* A stream listener's accepted sockets carry its name too: only the
	 * listener is what a connect reaches. */
	if (w->type != SOCK_DGRAM && m->udiag_state != TCP_LISTEN)
		return false;
	const struct rtattr *at = diag_attr(h, UNIX_DIAG_NAME);
	return at && RTA_PAYLOAD(at) == w->len && memcmp(RTA_DATA(at), w->name, w->len) == 0;
}

/* Is m a listener bound to w's socket file? */
static bool match_file(const struct nlmsghdr *h, const struct diag_want *w)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *at = diag_attr(h, UNIX_DIAG_VFS);
	struct unix_diag_vfs v;
	if (m->udiag_state != TCP_LISTEN || !at || RTA_PAYLOAD(at) < sizeof v)
		return false;
	memcpy(&v, RTA_DATA(at), sizeof v);
	return v.udiag_vfs_ino == w->vfs_ino && v.udiag_vfs_dev == w->vfs_dev;
}

/* Read the dump's answers; 0 (with *ino when found) or an errno. */
static int diag_read(int nl, const struct diag_want *w, unsigned long *ino)
{
	char *buf = malloc(DIAG_BUF);
	if (!buf)
		return ENOMEM;
	int e = 0;
	for (bool done = false; !done && !e;) {
		ssize_t n = recv(nl, buf, DIAG_BUF, 0);
		if (n <= 0) {
			e = n < 0 ? errno : EIO;
			break;
		}
		size_t rem = (size_t)n;
		for (struct nlmsghdr *h = (void *)buf; NLMSG_OK(h, rem); h = NLMSG_NEXT(h, rem)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				e = EIO;
				break;
			}
			if (!*ino && w->match(h, w))
				*ino = ((const struct unix_diag_msg *)NLMSG_DATA(h))->udiag_ino;
		}
	}
	free(buf);
	return e;
}

/* Dump every unix socket r asks for, the first that w matches: 0 with
 * *ino (0: none), or an errno. */
static int diag_find(const struct unix_diag_req *r, const struct diag_want *w,
                     unsigned long *ino)
{
	*ino = 0;
	int nl = sl_sd_unix_diag(r, true);
	if (nl < 0)
		return -nl;
	int e = diag_read(nl, w, ino);
	close(nl);
	return e;
}

int sl_sd_unix_diag(const struct unix_diag_req *r, bool dump)
{
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0)
		return -errno;
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = (__u16)(NLM_F_REQUEST | (dump ? NLM_F_DUMP : 0)) },
		.r = *r,
	};
	req.r.sdiag_family = AF_UNIX;
	if (send(nl, &req, sizeof req, 0) != (ssize_t)sizeof req) {
		int e = errno;
		close(nl);
		return -e;
	}
	return nl;
}

int sl_sd_abstract_inode(const struct sl_sockaddr *a, int type, unsigned long *ino)
{
	const struct sockaddr_un *u = (const void *)&a->ss;
	/* the name: every byte, NULs included */
	struct diag_want w = { .match = match_name, .name = u->sun_path,
		                   .len = a->len - SUN_PATH_OFF, .type = type };
	struct unix_diag_req r = { .udiag_states = ~0u, .udiag_show = UDIAG_SHOW_NAME };
	return diag_find(&r, &w, ino);
}

int sl_sd_unix_listener_at(dev_t dev, ino_t ino, unsigned long *sock)
{
	/* sock_diag gives the superblock's kernel dev_t: MAJOR << 20 | MINOR */
	struct diag_want w = { .match = match_file,
		                   .vfs_dev = (unsigned long)major(dev) << 20 | minor(dev),
		                   .vfs_ino = (unsigned long)ino };
	struct unix_diag_req r = { .udiag_states = 1u << TCP_LISTEN, .udiag_show = UDIAG_SHOW_VFS };
	return diag_find(&r, &w, sock);
}

int sl_sd_unix_path(const struct sl_sockaddr *a, const sandlock_notif_t *nf, char *out,
                    size_t cap)
{
	const struct sockaddr_un *u = (const void *)&a->ss;
	size_t max = a->len - SUN_PATH_OFF;
	if (max > sizeof(u->sun_path))
		max = sizeof(u->sun_path);
	size_t n = strnlen(u->sun_path, max);
	if (n + 1 > cap)
		return ENAMETOOLONG;
	memcpy(out, u->sun_path, n);
	out[n] = '\0';
	return -sl_child_self_path(out, cap, nf);
}

int sl_sd_unix_open(int listener, const sandlock_notif_t *n, const struct sl_sockaddr *a,
                    int *fd, char *canon, size_t cap)
{
	char path[160];
	int e = sl_sd_unix_path(a, n, path, sizeof path);
	if (e)
		return e;
	/* The kernel resolves a relative sun_path against the caller's cwd,
	 * not ours. */
	int base = AT_FDCWD;
	if (path[0] != '/') {
		base = sl_child_dirfd(listener, n, AT_FDCWD);
		if (base < 0)
			return -base;
	}
	*fd = openat(base, path, O_PATH | O_CLOEXEC);
	e = *fd < 0 ? errno : 0;
	if (base >= 0)
		close(base);
	if (e)
		return e;
	e = sl_sd_fd_canon(*fd, canon, cap);
	if (e) {
		close(*fd);
		*fd = -1;
	}
	return e;
}

int sl_sd_fd_canon(int fd, char *canon, size_t cap)
{
	char link[32];
	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	ssize_t len = readlink(link, canon, cap);
	if (len <= 0 || (size_t)len >= cap || canon[0] != '/')
		return EACCES; /* no canonical path: in no granted tree */
	canon[len] = '\0';
	return 0;
}

void sl_sd_unix_via_fd(struct sl_sockaddr *a, int fd)
{
	struct sockaddr_un *u = (void *)&a->ss;
	memset(&a->ss, 0, sizeof(a->ss));
	u->sun_family = AF_UNIX;
	int w = snprintf(u->sun_path, sizeof(u->sun_path), "/proc/self/fd/%d", fd);
	a->len = (socklen_t)(SUN_PATH_OFF + (size_t)w + 1);
}

/* ---------------- messages ---------------- */

/* The kernel's struct msghdr as the caller laid it out (x86_64). */
struct child_msghdr {
	uint64_t name;
	uint32_t namelen;
	uint32_t pad0;
	uint64_t iov;
	uint64_t iovlen;
	uint64_t control;
	uint64_t controllen;
	int32_t flags;
	uint32_t pad1;
};
struct child_iovec {
	uint64_t base;
	uint64_t len;
};

/* Gather the iovecs into one buffer (a datagram stays one message). */
static int copy_payload(sandlock_mem_t *m, const struct child_msghdr *h, bool stream,
                        struct sl_sd_msg *out)
{
	if (h->iovlen > SL_SD_MAX_IOV)
		return EMSGSIZE;
	size_t niov = (size_t)h->iovlen;
	struct child_iovec *iov = niov ? calloc(niov, sizeof(*iov)) : NULL;
	if (niov && !iov)
		return ENOMEM;
	int e = niov && sandlock_mem_peek(m, h->iov, iov, niov * sizeof(*iov)) ? EFAULT : 0;
	size_t total = 0;
	for (size_t i = 0; !e && i < niov; i++) {
		if (iov[i].len > SSIZE_MAX || total + iov[i].len > SSIZE_MAX)
			e = EINVAL;
		else
			total += (size_t)iov[i].len;
	}
	if (!e && total > SL_SD_MAX_PAYLOAD && !stream)
		e = EMSGSIZE;
	if (!e && total > SL_SD_MAX_PAYLOAD)
		total = SL_SD_MAX_PAYLOAD;
	out->data = !e ? malloc(total ? total : 1) : NULL;
	if (!e && !out->data)
		e = ENOMEM;
	size_t at = 0;
	for (size_t i = 0; !e && i < niov && at < total; i++) {
		size_t k = (size_t)iov[i].len < total - at ? (size_t)iov[i].len : total - at;
		if (k && sandlock_mem_peek(m, iov[i].base, (char *)out->data + at, k))
			e = EFAULT;
		at += k;
	}
	out->len = total;
	free(iov);
	return e;
}

/* A control message that routes the packet (filter.c refuses the same
 * options by setsockopt): the kernel would send to the route's first
 * hop, not to the destination checked. */
static bool routes(const struct cmsghdr *c)
{
	if (c->cmsg_level == IPPROTO_IPV6)
		return c->cmsg_type == IPV6_RTHDR || c->cmsg_type == IPV6_2292RTHDR ||
		       c->cmsg_type == IPV6_2292PKTOPTIONS;
	return c->cmsg_level == IPPROTO_IP &&
	       (c->cmsg_type == IP_RETOPTS || c->cmsg_type == IP_OPTIONS);
}

/* Replace the caller's fd numbers in SCM_RIGHTS with our duplicates;
 * refuse SCM_CREDENTIALS (the kernel would check them against us) and
 * source routes (EPERM, as the filter answers their setsockopt). */
static int translate_control(int listener, const sandlock_notif_t *n, struct sl_sd_msg *out)
{
	struct msghdr mh = { .msg_control = out->control, .msg_controllen = out->controllen };
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_len >= CMSG_LEN(0) && routes(c))
			return EPERM;
		if (c->cmsg_len < CMSG_LEN(0) || c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS)
			return EPERM;
		if (c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *fds = (int *)CMSG_DATA(c);
		for (size_t i = 0; i < k; i++) {
			if (out->nfds == sizeof(out->fds) / sizeof(out->fds[0]))
				return EINVAL;
			int ours = sl_child_getfd(listener, n, fds[i]);
			if (ours < 0)
				return -ours;
			out->fds[out->nfds++] = ours;
			fds[i] = ours;
		}
	}
	return 0;
}

int sl_sd_copy_msg(sandlock_mem_t *m, int listener, const sandlock_notif_t *n, uint64_t addr,
                   bool stream, struct sl_sd_msg *out)
{
	memset(out, 0, sizeof(*out));
	struct child_msghdr h;
	if (sandlock_mem_peek(m, addr, &h, sizeof h))
		return EFAULT;
	if (h.name && h.namelen) {
		int e = sl_sd_copy_addr(m, h.name, h.namelen, &out->name);
		if (e)
			return e;
		out->has_name = true;
	}
	int e = copy_payload(m, &h, stream, out);
	if (e)
		return e;
	if (h.control && h.controllen) {
		if (h.controllen > SL_SD_MAX_CONTROL)
			return ENOBUFS;
		out->controllen = (size_t)h.controllen;
		out->control = malloc(out->controllen);
		if (!out->control)
			return ENOMEM;
		if (sandlock_mem_peek(m, h.control, out->control, out->controllen))
			return EFAULT;
		return translate_control(listener, n, out);
	}
	return 0;
}

int sl_sd_copy_buf(sandlock_mem_t *m, uint64_t addr, uint64_t len, bool stream,
                   struct sl_sd_msg *out)
{
	memset(out, 0, sizeof(*out));
	if (len > SSIZE_MAX)
		return EINVAL;
	if (len > SL_SD_MAX_PAYLOAD && !stream)
		return EMSGSIZE;
	size_t k = len > SL_SD_MAX_PAYLOAD ? SL_SD_MAX_PAYLOAD : (size_t)len;
	out->data = malloc(k ? k : 1);
	if (!out->data)
		return ENOMEM;
	out->len = k;
	if (k && sandlock_mem_peek(m, addr, out->data, k))
		return EFAULT;
	return 0;
}

void sl_sd_msg_free(struct sl_sd_msg *msg)
{
	for (size_t i = 0; i < msg->nfds; i++)
		close(msg->fds[i]);
	msg->nfds = 0;
	free(msg->data);
	free(msg->control);
	msg->data = msg->control = NULL;
}

ssize_t sl_sd_sendmsg(int fd, const struct sl_sd_msg *msg, int flags)
{
	struct iovec iov = { msg->data, msg->len };
	struct msghdr mh = {
		.msg_name = msg->has_name ? (void *)&msg->name.ss : NULL,
		.msg_namelen = msg->has_name ? msg->name.len : 0,
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = msg->control,
		.msg_controllen = msg->controllen,
	};
	ssize_t r = sendmsg(fd, &mh, flags | MSG_NOSIGNAL);
	return r < 0 ? -errno : r;
}
