/*
 * ndcheck.c — the policies of the socket destinations builtin: may this
 * socket reach this address (a pathname unix socket's file, an abstract
 * name, an IP endpoint; netdest.c says why each), and the helpers every
 * part uses to name the address it checks.  It decides
 * only: the calls are performed by ndconnect.c, ndsend.c and ndbind.c.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builtins/netdest/ndint.h"
#include "proxy/proxy.h"
#include "run/ctldir.h"
#include "run/proctree.h"
#include "supervisor/childfd.h"
#include "supervisor/services.h"

static bool under_any(const sl_strvec *v, const char *path)
{
	for (size_t i = 0; i < v->n; i++)
		if (sl_path_under(path, v->v[i]))
			return true;
	return false;
}

static bool unix_allowed(const struct nd_state *st, const char *canon)
{
	if (under_any(&st->deny, canon))
		return false;
	return under_any(&st->unix_allow, canon) || under_any(&st->write, canon) ||
	       (st->unix_readable && under_any(&st->read, canon));
}

int nd_proto_of(const struct sl_sockinfo *si)
{
	if (si->type == SOCK_STREAM && si->protocol == IPPROTO_TCP)
		return SL_NP_TCP;
	if (si->type == SOCK_DGRAM && si->protocol == IPPROTO_UDP)
		return SL_NP_UDP;
	if (si->type == SOCK_DGRAM &&
	    (si->protocol == IPPROTO_ICMP || si->protocol == IPPROTO_ICMPV6))
		return SL_NP_ICMP;
	return 0;
}

/*
 * The file a pathname destination reaches, opened (O_PATH) into *hold
 * with its canonical path.  Under a COW workdir the merged view says
 * which (services.h): *own when it is a socket the run bound in the
 * layer (its own: no rule to check), else a real file.
 */
static int open_unix(const struct sl_call *call, const struct sl_sockaddr *a, int *hold,
                     char *canon, size_t cap, bool *own)
{
	const struct sl_socklayer *l = &call->sv->socklayer;
	*own = false;
	if (!l->state)
		return sl_sd_unix_open(call->listener, call->n, a, hold, canon, cap);
	struct sl_sockplace *p = malloc(sizeof(*p));
	char path[160];
	int e = p ? sl_sd_unix_path(a, call->n, path, sizeof path) : ENOMEM;
	int k = e ? -e : l->place(l->state, call, path, false, p);
	if (k == 0)
		e = sl_sd_unix_open(call->listener, call->n, a, hold, canon, cap);
	else if (k < 0)
		e = -k;
	else {
		*hold = p->fd;
		*own = p->layer;
		e = sl_sd_fd_canon(*hold, canon, cap);
		if (e) {
			close(*hold);
			*hold = -1;
		}
	}
	free(p);
	return e;
}

/* A pathname destination: open the file reached, check it, and make a
 * point at that very file.  *hold: our O_PATH fd (close after the call). */
static int check_unix(const struct nd_state *st, const struct sl_call *call,
                      struct sl_sockaddr *a, int *hold)
{
	char canon[PATH_MAX];
	bool own;
	int e = open_unix(call, a, hold, canon, sizeof canon, &own);
	if (e)
		return e;
	struct stat sb;
	if ((!own && !unix_allowed(st, canon)) || sl_ctldir_holds(canon))
		e = EACCES; /* a named run's control socket: never from a sandbox */
	else if (fstat(*hold, &sb) < 0 || !S_ISSOCK(sb.st_mode))
		e = ECONNREFUSED; /* the kernel's answer for a file that is no socket */
	if (e) {
		close(*hold);
		*hold = -1;
		return e;
	}
	sl_sd_unix_via_fd(a, *hold);
	return 0;
}

/* An abstract name: only a socket held by a process of this sandbox, the
 * scope Landlock gives the calls a sandboxed process makes itself.  The
 * kernel's answers: ECONNREFUSED for a name nobody has bound, EPERM (the
 * scope's) for a socket outside. */
static int check_abstract(const struct sl_call *call, const struct nd_sock *s,
                          const struct sl_sockaddr *a)
{
	unsigned long ino;
	int e = sl_sd_abstract_inode(a, s->si.type, &ino);
	if (e)
		return EPERM; /* cannot tell where it leads: refused */
	if (!ino)
		return ECONNREFUSED;
	return sl_tree_holds_socket(call->init, ino) ? 0 : EPERM;
}

/*
 * May socket s reach a?  0 (a possibly rewritten, *hold set for a unix
 * path) or the errno to deny with.  sending: the address of a send, where
 * AF_UNSPEC on a UDP socket means AF_INET (udp_sendmsg), not "disconnect".
 */
int nd_check_dest(const struct nd_state *st, const struct sl_call *call,
                      const struct nd_sock *s, struct sl_sockaddr *a, bool sending, int *hold)
{
	*hold = -1;
	int fam = a->len >= sizeof(sa_family_t) ? a->ss.ss_family : AF_UNSPEC;
	switch (s->si.domain) {
	case AF_UNIX:
		if (sl_sd_unix_abstract(a))
			return check_abstract(call, s, a);
		return sl_sd_unix_pathname(a) ? check_unix(st, call, a, hold) : 0;
	case AF_INET:
	case AF_INET6: {
		if (fam == AF_UNSPEC && !sending)
			return 0; /* connect(AF_UNSPEC): dissolve an association */
		if (fam != AF_INET && fam != AF_INET6)
			return sending ? EACCES : 0; /* the kernel refuses other families */
		int proto = nd_proto_of(&s->si);
		if (proto == SL_NP_TCP && st->tcp_disabled)
			return 0;
		if (!proto || !sl_netrules_permit(&st->net, proto, (const struct sockaddr *)&a->ss,
		                                  a->len))
			return EACCES;
		return 0;
	}
	default: /* netlink (filter-restricted): no destinations to guard */
		return 0;
	}
}

uint16_t *nd_port_field(struct sl_sockaddr *a)
{
	if (a->ss.ss_family == AF_INET && a->len >= sizeof(struct sockaddr_in))
		return &((struct sockaddr_in *)&a->ss)->sin_port;
	if (a->ss.ss_family == AF_INET6 && a->len >= sizeof(struct sockaddr_in6))
		return &((struct sockaddr_in6 *)&a->ss)->sin6_port;
	return NULL;
}

bool nd_to_proxy(const struct sl_call *call, const struct nd_sock *s, struct sl_sockaddr *sa)
{
	if (!call->sv->proxy || nd_proto_of(&s->si) != SL_NP_TCP)
		return false;
	uint16_t *p = nd_port_field(sa);
	return p && sl_proxy_intercepts(call->sv->proxy, ntohs(*p));
}
