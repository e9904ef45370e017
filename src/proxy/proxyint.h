/*
 * proxyint.h — what the proxy's own files share (proxy.c, proxyconn.c,
 * proxyhttp.c, proxyinject.c, proxyup.c, proxytls.c, proxylog.c); nothing
 * else of the library includes it.
 */
#ifndef SANDLOCK_PROXYINT_H
#define SANDLOCK_PROXYINT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>

#include "net/httprules.h"
#include "net/netrules.h"
#include "proxy/proxy.h"
#include "proxy/proxyio.h"

/* Timeouts (ms).  HEAD: a request head must arrive whole in this time
 * (slowloris); IDLE: a kept-alive connection waits this long for the next
 * request; IO: any other read or write makes progress in this time. */
#define PX_HEAD_MS 15000
#define PX_IDLE_MS 60000
#define PX_IO_MS 120000
#define PX_CONNECT_MS 10000
#define PX_MAX_CONNS 512 /* open client connections; more are closed at once */

struct px_tls; /* proxytls.c */
struct px_log; /* proxylog.c */

struct sl_proxy {
	/* The policy: deep copies, the sandbox may be freed during the run. */
	struct sl_httpcfg http; /* rules, ports, credentials, grants */
	struct sl_netrules net; /* the sandbox's IP rules */
	struct px_tls *tls;     /* NULL without TLS interception */
	struct px_log *log;
	atomic_bool cred_warned; /* "credential over cleartext" said once */
	/* Listening sockets (127.0.0.1 and ::1) and the accept thread. */
	int lfd4, lfd6;
	struct sockaddr_storage laddr4, laddr6;
	socklen_t llen4, llen6;
	int stopfd; /* eventfd: the accept thread returns */
	pthread_t acceptor;
	bool acceptor_started;
	/* Pending origins and live connections, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* an origin was added; a connection ended */
	struct px_origin *origins;
	struct px_conn *conns;
	size_t nconns;
	bool stopping;
};

/* What the guest meant to reach, learnt at its connect. */
struct px_origin {
	struct px_origin *next;
	struct sockaddr_storage from; /* the guest socket's local address */
	struct sockaddr_storage to;   /* the original destination */
	pid_t pid;
	int64_t expires_ms;
};

/* One client connection, run by its own thread (proxyconn.c). */
struct px_conn {
	struct px_conn *next, *prev;
	struct sl_proxy *px;
	struct px_io client, up;
	struct sockaddr_storage peer; /* the client's address, as accepted */
	struct sockaddr_storage orig; /* the original destination */
	uint16_t orig_port;
	pid_t pid;
	bool tls;       /* the client spoke TLS to us (terminated) */
	char sni[256];  /* the TLS server name judged, "" = none */
	char up_host[256]; /* the host the upstream connection is to */
	uint16_t up_port;
};

/* proxyconn.c: serve one accepted connection whose origin proxy.c has
 * found (c->orig, c->pid): its thread's body. */
void px_conn_serve(struct px_conn *c);

/* proxyhttp.c: the HTTP/1.1 exchange of a connection, request after
 * request, until either side closes. */
void px_http_serve(struct px_conn *c);

/* proxyup.c: connect c->up to host:port (resolved by us, each address
 * checked against the IP rules).  0, or an HTTP status (403, 502, 504)
 * with *why (heap) saying what failed. */
int px_upstream_connect(struct px_conn *c, const char *host, uint16_t port, char **why);

/* proxylog.c: one line per request (and per refused TLS connection). */
struct px_logrec {
	pid_t pid;
	const char *scheme, *method, *host, *path;
	uint16_t port;
	int status;
	const char *decision; /* "allow" / "deny" / "error" */
	const char *rule;     /* the rule that decided, or NULL */
	const char *reason;   /* for deny / error, or NULL */
	uint64_t bytes_out, bytes_in;
};
struct px_log *px_log_open(const struct sl_httpcfg *h, char **msg);
void px_log_write(struct px_log *l, const struct px_logrec *r);
void px_log_close(struct px_log *l);

/* proxytls.c */
struct px_tls *px_tls_new(const struct sl_httpcfg *h, char **msg);
void px_tls_free(struct px_tls *t);
const char *px_tls_ca_pem(const struct px_tls *t);
/* The TLS client hello at the start of buf (n bytes): 1 with its SNI in
 * out, 0 when more bytes are needed, -1 when it is not one or has no
 * server name. */
int px_tls_sni(const unsigned char *buf, size_t n, char *out, size_t cap);
/* Terminate the client's TLS as c->sni (a certificate minted for it): 0 or -1. */
int px_tls_accept(struct px_tls *t, struct px_conn *c);
/* TLS to the upstream c->up (verified against the host's trust store). */
int px_tls_connect(struct px_tls *t, struct px_conn *c, const char *host, char **why);

#endif /* SANDLOCK_PROXYINT_H */
