/*
 * sockopts.c — options noted per socket inode (sockopts.h): a ring of
 * the last NOTES setsockopt calls of the options we carry over.
 */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "net/sockopts.h"

#define NOTES 1024
#define VAL_MAX 64

struct note {
	unsigned long ino; /* 0: free */
	int level, name;
	socklen_t len;
	unsigned char val[VAL_MAX];
};

struct sl_sockopts {
	struct note v[NOTES];
	size_t next; /* the slot the next note takes (the oldest one) */
};

/* The options a server or client sets for how its socket behaves. */
static const int k_socket[] = { SO_REUSEADDR, SO_REUSEPORT, SO_KEEPALIVE, SO_SNDBUF,
	                            SO_RCVBUF, SO_LINGER, SO_BROADCAST, SO_OOBINLINE,
	                            SO_RCVTIMEO, SO_SNDTIMEO, SO_RCVLOWAT, SO_PRIORITY,
	                            SO_BINDTODEVICE, SO_PASSCRED, SO_TIMESTAMP };
static const int k_tcp[] = { TCP_NODELAY, TCP_MAXSEG, TCP_CORK, TCP_KEEPIDLE,
	                         TCP_KEEPINTVL, TCP_KEEPCNT, TCP_SYNCNT, TCP_LINGER2,
	                         TCP_DEFER_ACCEPT, TCP_WINDOW_CLAMP, TCP_QUICKACK,
	                         TCP_CONGESTION, TCP_USER_TIMEOUT, TCP_FASTOPEN,
	                         TCP_NOTSENT_LOWAT };
static const int k_ip[] = { IP_TOS, IP_TTL, IP_FREEBIND, IP_BIND_ADDRESS_NO_PORT,
	                        IP_MTU_DISCOVER, IP_RECVERR, IP_PKTINFO, IP_MULTICAST_TTL,
	                        IP_MULTICAST_LOOP };
static const int k_ipv6[] = { IPV6_V6ONLY, IPV6_TCLASS, IPV6_UNICAST_HOPS,
	                          IPV6_RECVPKTINFO, IPV6_MTU_DISCOVER, IPV6_RECVERR,
	                          IPV6_MULTICAST_HOPS, IPV6_MULTICAST_LOOP };

static bool listed(const int *v, size_t n, int name)
{
	for (size_t i = 0; i < n; i++)
		if (v[i] == name)
			return true;
	return false;
}

#define LISTED(v, name) listed((v), sizeof(v) / sizeof((v)[0]), (name))

bool sl_sockopts_carried(int level, int name, size_t len)
{
	if (len > VAL_MAX)
		return false;
	switch (level) {
	case SOL_SOCKET:
		return LISTED(k_socket, name);
	case IPPROTO_TCP:
		return LISTED(k_tcp, name);
	case IPPROTO_IP:
		return LISTED(k_ip, name);
	case IPPROTO_IPV6:
		return LISTED(k_ipv6, name);
	default:
		return false;
	}
}

struct sl_sockopts *sl_sockopts_new(void)
{
	return calloc(1, sizeof(struct sl_sockopts));
}

void sl_sockopts_free(struct sl_sockopts *t)
{
	free(t);
}

void sl_sockopts_note(struct sl_sockopts *t, unsigned long ino, int level, int name,
                      const void *val, size_t len)
{
	if (!ino || !sl_sockopts_carried(level, name, len))
		return;
	struct note *n = &t->v[t->next];
	t->next = (t->next + 1) % NOTES;
	*n = (struct note){ ino, level, name, (socklen_t)len, { 0 } };
	memcpy(n->val, val, len);
}

size_t sl_sockopts_apply(struct sl_sockopts *t, unsigned long ino, int fd)
{
	size_t set = 0;
	for (size_t i = 0; ino && i < NOTES; i++) {
		struct note *n = &t->v[(t->next + i) % NOTES]; /* oldest first */
		if (n->ino != ino)
			continue;
		if (setsockopt(fd, n->level, n->name, n->val, n->len) == 0)
			set++;
	}
	return set;
}

void sl_sockopts_forget(struct sl_sockopts *t, unsigned long ino)
{
	for (size_t i = 0; ino && i < NOTES; i++)
		if (t->v[i].ino == ino)
			t->v[i].ino = 0;
}
