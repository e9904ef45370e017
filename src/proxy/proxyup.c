/*
 * proxyup.c — the proxy's connection to the upstream server.
 *
 * The host a request was judged by is resolved here, by the proxy: the
 * guest's idea of the address is never used, so a request judged as
 * "api.example.com" reaches what that name resolves to, nothing else.
 * Each address then passes the IP rules:
 *  - net_deny lists refuse their addresses;
 *  - a loopback, private, link-local (169.254.169.254, the cloud metadata
 *    address, among them), unspecified or multicast address is reached
 *    only when granted: an allow rule naming that address (net_allow
 *    "127.0.0.1:8080"), or a concrete host of the HTTP rules that
 *    resolved to it when the sandbox was built.  An any-address rule
 *    (`:80`) does not grant it, so a name that rebinds to 127.0.0.1 or
 *    the metadata address is refused.
 *  - a public address is reached: the request's host passed the HTTP
 *    rules, and CDN addresses change (pinning them would break).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxy/proxyint.h"

/* Loopback, private, link-local, CGNAT, unspecified, multicast, broadcast. */
static bool v4_special(const uint8_t *a)
{
	return a[0] == 127 || a[0] == 0 || a[0] == 10 || (a[0] == 172 && (a[1] & 0xf0) == 16) ||
	       (a[0] == 192 && a[1] == 168) || (a[0] == 169 && a[1] == 254) ||
	       (a[0] == 100 && (a[1] & 0xc0) == 64) || a[0] >= 224;
}

static bool addr_special(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return v4_special((const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr);
	const uint8_t *a = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t zero[15] = { 0 };
	if (memcmp(a, mapped, 12) == 0)
		return v4_special(a + 12);
	return memcmp(a, zero, 15) == 0 /* :: and ::1 */ || (a[0] & 0xfe) == 0xfc /* ULA */ ||
	       (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) /* link-local */ || a[0] == 0xff;
}

/* May the proxy reach this address?  NULL, or why not (static). */
static const char *addr_refused(const struct sl_proxy *px, const struct sockaddr *sa,
                                socklen_t len)
{
	if (px->net.deny_mode && !sl_netrules_permit(&px->net, SL_NP_TCP, sa, len))
		return "refused by net_deny";
	if (!addr_special(sa))
		return NULL;
	if (sl_netrules_grants(&px->net, SL_NP_TCP, sa, len) ||
	    sl_netrules_grants(&px->http.grants, SL_NP_TCP, sa, len))
		return NULL;
	return "a loopback, private or link-local address no rule grants "
	       "(name it in net_allow, or name the host in an HTTP rule)";
}

/* Non-blocking connect with a deadline: 0 or an errno. */
static int connect_timed(int fd, const struct sockaddr *sa, socklen_t len)
{
	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return errno;
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	int r;
	do
		r = poll(&p, 1, PX_CONNECT_MS);
	while (r < 0 && errno == EINTR);
	if (r == 0)
		return ETIMEDOUT;
	int e = 0;
	socklen_t el = sizeof e;
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		return errno;
	return e;
}

int px_upstream_connect(struct px_conn *c, const char *host, uint16_t port, char **why)
{
	char ports[8], name[256];
	snprintf(ports, sizeof ports, "%u", port);
	size_t hl = strlen(host);
	if (host[0] == '[' && hl > 2) /* an IPv6 literal as the authority writes it */
		snprintf(name, sizeof name, "%.*s", (int)(hl - 2), host + 1);
	else
		snprintf(name, sizeof name, "%s", host);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL;
	int g = getaddrinfo(name, ports, &hints, &res);
	if (g != 0) {
		*why = sl_asprintf("cannot resolve '%s': %s", host, gai_strerror(g));
		return 502;
	}
	const char *refused = NULL;
	int err = 0;
	char shown[INET6_ADDRSTRLEN] = "";
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		const char *no = addr_refused(c->px, ai->ai_addr, ai->ai_addrlen);
		if (no) {
			refused = no;
			const void *a = ai->ai_family == AF_INET
			                    ? (const void *)&((struct sockaddr_in *)ai->ai_addr)->sin_addr
			                    : (const void *)&((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
			inet_ntop(ai->ai_family, a, shown, sizeof shown);
			continue;
		}
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			err = errno;
			continue;
		}
		err = connect_timed(fd, ai->ai_addr, ai->ai_addrlen);
		if (err == 0) {
			int one = 1;
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
			freeaddrinfo(res);
			c->up.fd = fd;
			snprintf(c->up_host, sizeof c->up_host, "%s", host);
			c->up_port = port;
			return 0;
		}
		close(fd);
	}
	freeaddrinfo(res);
	if (!err && refused) {
		*why = sl_asprintf("'%s' resolves to %s: %s", host, shown, refused);
		return 403;
	}
	*why = sl_asprintf("cannot connect to '%s' port %u: %s", host, port,
	                   strerror(err ? err : EHOSTUNREACH));
	return err == ETIMEDOUT ? 504 : 502;
}
