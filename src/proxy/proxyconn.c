/*
 * proxyconn.c — one client connection, whose origin (what the guest
 * meant to reach) proxy.c has found: tell TLS from plain HTTP by the
 * first byte, and either run the HTTP exchange (proxyhttp.c; over
 * terminated TLS when the proxy has a CA) or, for TLS without a CA,
 * judge the server name of the client hello (SNI) and splice the bytes to
 * the host it names.
 *
 * The host of an SNI-only connection is judged by its name alone: no
 * method or path can be seen, so a deny rule naming the host refuses
 * it whatever the rule's method and path (fail closed), and any allow
 * rule naming the host admits it.  The proxy connects to the address it
 * resolves for the SNI itself, never to the address the guest chose, so
 * a client hello naming an allowed host cannot reach another one.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/proxyint.h"

#define HELLO_MAX 16384 /* a client hello larger than one TLS record is refused */
#define SPLICE_IDLE_MS 300000

static uint16_t port_of(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
}

/* Peek at the client's first bytes until want(buf) decides or the head
 * deadline: > 0 bytes seen, or -1. */
static ssize_t peek_hello(int fd, unsigned char *buf, size_t cap, char *sni, size_t snicap,
                          int *verdict)
{
	int64_t deadline = sl_now_ms() + PX_HEAD_MS;
	ssize_t last = -1;
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - sl_now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -1;
		ssize_t n = recv(fd, buf, cap, MSG_PEEK);
		if (n <= 0)
			return -1;
		if (buf[0] != 0x16) {
			*verdict = 0; /* not TLS */
			return n;
		}
		int r = px_tls_sni(buf, (size_t)n, sni, snicap);
		if (r != 0) {
			*verdict = r;
			return n;
		}
		if ((size_t)n == cap)
			return -1;
		if (n == last)
			usleep(5000); /* the same partial hello: wait for the rest */
		last = n;
	}
}

static void log_tls(struct px_conn *c, const char *decision, const struct sl_httprule *rule,
                    const char *reason, uint64_t out, uint64_t in)
{
	struct px_logrec r = { .pid = c->pid, .scheme = "https", .method = "-", .host = c->sni,
		                   .path = "-", .port = c->orig_port, .status = 0,
		                   .decision = decision, .rule = rule ? rule->text : NULL,
		                   .reason = reason, .bytes_out = out, .bytes_in = in };
	px_log_write(c->px->log, &r);
}

/* A deny rule refusing every request to the host (any method, any path). */
static bool host_wide(const struct sl_httprule *x)
{
	return x && strcmp(x->method, "*") == 0 && (strcmp(x->path, "/*") == 0 || strcmp(x->path, "*") == 0);
}

/* Is the SNI host admitted (host-only judgement)?  *rule: who decided.
 * Terminated TLS judges each request afterwards: only a deny rule that
 * refuses the whole host ends it here.  SNI only: any deny rule naming
 * the host does (its method and path cannot be seen). */
static bool sni_admitted(struct px_conn *c, const struct sl_httprule **rule)
{
	const struct sl_httpcfg *h = &c->px->http;
	for (size_t i = 0; i < h->deny.n; i++) {
		const struct sl_httprule *x = &h->deny.v[i];
		if ((!c->px->tls || host_wide(x)) && sl_httprule_host_matches(x, c->sni, c->orig_port)) {
			*rule = x;
			return false;
		}
	}
	if (!h->allow.n)
		return true;
	return (*rule = sl_httprules_match_host(&h->allow, c->sni, c->orig_port)) != NULL;
}

/* Copy bytes both ways until both ends closed (or idle too long). */
static void splice_both(struct px_conn *c, uint64_t *out, uint64_t *in)
{
	char buf[65536];
	bool cl_open = true, up_open = true;
	while (cl_open || up_open) {
		struct px_io a = cl_open ? c->client : (struct px_io){ -1, NULL };
		struct px_io b = up_open ? c->up : (struct px_io){ -1, NULL };
		int w = px_wait2(&a, &b, sl_now_ms() + SPLICE_IDLE_MS);
		if (w <= 0)
			return;
		for (int side = 0; side < 2; side++) {
			if (!(w & (1 << side)))
				continue;
			struct px_io *from = side ? &c->up : &c->client;
			struct px_io *to = side ? &c->client : &c->up;
			ssize_t n = px_read(from, buf, sizeof buf, sl_now_ms() + PX_IO_MS);
			if (n < 0)
				return;
			if (n == 0) {
				shutdown(to->fd, SHUT_WR); /* pass the half-close on */
				*(side ? &up_open : &cl_open) = false;
				continue;
			}
			if (px_write_all(to, buf, (size_t)n, sl_now_ms() + PX_IO_MS) < 0)
				return;
			*(side ? in : out) += (uint64_t)n;
		}
	}
}

static void serve_tls(struct px_conn *c, int verdict)
{
	const struct sl_httprule *rule = NULL;
	if (verdict < 0) {
		strcpy(c->sni, "-");
		log_tls(c, "deny", NULL, "TLS client hello without a server name (SNI)", 0, 0);
		return;
	}
	if (!sni_admitted(c, &rule)) {
		log_tls(c, "deny", rule, rule ? "http_deny rule names the host" : "no http_allow rule names the host", 0, 0);
		return;
	}
	if (c->px->tls) { /* terminate: every request is judged (proxyhttp.c) */
		if (px_tls_accept(c->px->tls, c) == 0)
			px_http_serve(c);
		return;
	}
	char *why = NULL;
	int st = px_upstream_connect(c, c->sni, c->orig_port, &why);
	if (st) {
		log_tls(c, st == 403 ? "deny" : "error", NULL, why, 0, 0);
		free(why);
		return;
	}
	uint64_t out = 0, in = 0;
	splice_both(c, &out, &in);
	log_tls(c, "allow", rule, NULL, out, in);
}

void px_conn_serve(struct px_conn *c)
{
	c->orig_port = port_of(&c->orig);
	unsigned char hello[HELLO_MAX];
	int verdict = 0;
	if (peek_hello(c->client.fd, hello, sizeof hello, c->sni, sizeof c->sni, &verdict) < 0)
		return;
	if (hello[0] == 0x16)
		serve_tls(c, verdict);
	else
		px_http_serve(c);
}
