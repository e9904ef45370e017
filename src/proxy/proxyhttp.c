/*
 * proxyhttp.c — the HTTP/1.1 exchange of one client connection: each
 * request read (http_parser, Debian's libhttp-parser), judged by method,
 * host and path, its head rebuilt for the upstream, its body streamed
 * through, and the response streamed back, one request after the other
 * (pipelined requests wait in our buffer and are each judged in turn).
 *
 * What the upstream receives is rebuilt from what was parsed, never the
 * guest's raw head: one Host (the authority judged), origin-form target,
 * no hop-by-hop headers (Connection, Keep-Alive, Proxy-*, TE, Upgrade,
 * HTTP2-Settings: an upgrade is refused by never asking for it), and the
 * body framing the parser used (chunked, or the Content-Length it
 * counted), so the upstream cannot read the body's end elsewhere than we
 * did (request smuggling).  Bodies are forwarded as they arrive, in
 * buffers of 64 KiB, whatever their size; Expect: 100-continue works
 * because the response is read while the body is still being sent.
 *
 * Refusals are answered by the proxy: 403 with a body naming the rule,
 * 400 for a request it cannot judge (no or two Host headers, a Host
 * that differs from an absolute-form target, a port other than the one
 * connected to, an undecodable path), 421 when a Host differs from the
 * TLS server name the connection was admitted by, 405 for CONNECT.
 */
#include <ctype.h>
#include <errno.h>
#include <http_parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/proxyinject.h"
#include "proxy/proxyint.h"
#include "proxy/proxyredact.h"

#define BUF_SZ 65536
#define MAX_HDRS 128
#define PATH_SZ 8192

struct hdr {
	sl_buf name, value;
};

/* One request's head as parsed. */
struct reqhead {
	sl_buf url;
	struct hdr h[MAX_HDRS];
	size_t nh;
	bool in_value, too_many;
	bool head_done, msg_done;
};

/* The client's bytes: [start, len) not yet parsed. */
struct inbuf {
	char *d;
	size_t start, len;
};

/* A response being streamed back. */
struct resp {
	bool head_req; /* HEAD: no body whatever the headers say */
	bool done;     /* the final (non-1xx) response is complete */
	int status;
	uint64_t bytes;
};

/* ---------------- parser callbacks ---------------- */

static int on_url(http_parser *p, const char *at, size_t n)
{
	struct reqhead *r = p->data;
	return sl_buf_append(&r->url, at, n) < 0 || r->url.len > PATH_SZ;
}

static int on_field(http_parser *p, const char *at, size_t n)
{
	struct reqhead *r = p->data;
	if (r->in_value || r->nh == 0) {
		if (r->nh == MAX_HDRS) {
			r->too_many = true;
			return 1;
		}
		r->nh++;
		r->in_value = false;
	}
	return sl_buf_append(&r->h[r->nh - 1].name, at, n) < 0;
}

static int on_value(http_parser *p, const char *at, size_t n)
{
	struct reqhead *r = p->data;
	r->in_value = true;
	return sl_buf_append(&r->h[r->nh - 1].value, at, n) < 0;
}

static int on_req_head(http_parser *p)
{
	((struct reqhead *)p->data)->head_done = true;
	http_parser_pause(p, 1);
	return 0;
}

static int on_req_done(http_parser *p)
{
	((struct reqhead *)p->data)->msg_done = true;
	http_parser_pause(p, 1);
	return 0;
}

static const http_parser_settings k_req = {
	.on_url = on_url,
	.on_header_field = on_field,
	.on_header_value = on_value,
	.on_headers_complete = on_req_head,
	.on_message_complete = on_req_done,
};

static int on_resp_head(http_parser *p)
{
	struct resp *r = p->data;
	return r->head_req && p->status_code >= 200 ? 1 : 0; /* 1: no body */
}

static int on_resp_done(http_parser *p)
{
	struct resp *r = p->data;
	r->status = p->status_code;
	if (p->status_code >= 200 || p->status_code == 101) {
		r->done = true;
		http_parser_pause(p, 1);
	}
	return 0;
}

static const http_parser_settings k_resp = {
	.on_headers_complete = on_resp_head,
	.on_message_complete = on_resp_done,
};

static void head_reset(struct reqhead *r)
{
	sl_buf_free(&r->url);
	for (size_t i = 0; i < r->nh; i++) {
		sl_buf_free(&r->h[i].name);
		sl_buf_free(&r->h[i].value);
	}
	memset(r, 0, sizeof *r);
}

/* The value of header name (NUL-terminated in place), or NULL; *count: how many. */
static const char *hdr_get(struct reqhead *r, const char *name, int *count)
{
	const char *v = NULL;
	int k = 0;
	for (size_t i = 0; i < r->nh; i++) {
		struct hdr *h = &r->h[i];
		if (h->name.len == strlen(name) && strncasecmp((char *)h->name.data, name, h->name.len) == 0) {
			if (sl_buf_append(&h->value, "", 1) < 0)
				return NULL;
			h->value.len--; /* NUL-terminated, not counted */
			v = (const char *)h->value.data;
			k++;
		}
	}
	if (count)
		*count = k;
	return v ? v : (k ? "" : NULL);
}

/* ---------------- replies of our own ---------------- */

/* A complete response of ours (403, 400, 502) with a text body. */
static void http_reply(struct px_conn *c, int status, const char *reason, const char *body)
{
	char *msg = sl_asprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	                        "Content-Length: %zu\r\nConnection: close\r\n"
	                        "X-Sandlock: refused\r\n\r\n%s",
	                        status, reason, strlen(body), body);
	if (msg)
		px_write_all(&c->client, msg, strlen(msg), sl_now_ms() + PX_IO_MS);
	free(msg);
}

/* Same, keeping the connection open for the next request. */
static void reply_keep(struct px_conn *c, int status, const char *reason, const char *body)
{
	char *msg = sl_asprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
	                        "Content-Length: %zu\r\nX-Sandlock: refused\r\n\r\n%s",
	                        status, reason, strlen(body), body);
	if (msg)
		px_write_all(&c->client, msg, strlen(msg), sl_now_ms() + PX_IO_MS);
	free(msg);
}

/* ---------------- reading a request head ---------------- */

/* Feed the client's bytes to the parser until the head is complete:
 * 0, or an HTTP status to refuse with (400, 431), or -1 (the client left
 * or timed out: close without a word). */
static int read_head(struct px_conn *c, http_parser *p, struct reqhead *r, struct inbuf *in,
                     bool first)
{
	int64_t deadline = sl_now_ms() + (first ? PX_HEAD_MS : PX_IDLE_MS);
	bool got_any = in->start < in->len;
	for (;;) {
		if (in->start < in->len) {
			size_t n = http_parser_execute(p, &k_req, in->d + in->start, in->len - in->start);
			in->start += n;
			if (r->head_done)
				return 0;
			if (HTTP_PARSER_ERRNO(p) != HPE_OK)
				return r->too_many || r->url.len > PATH_SZ ? 431 : 400;
		}
		if (in->start > 0) { /* keep the unparsed head at the front */
			memmove(in->d, in->d + in->start, in->len - in->start);
			in->len -= in->start;
			in->start = 0;
		}
		if (in->len == BUF_SZ)
			return 431;
		ssize_t n = px_read(&c->client, in->d + in->len, BUF_SZ - in->len, deadline);
		if (n <= 0)
			return -1;
		if (!got_any) { /* the head's own budget starts at its first byte */
			got_any = true;
			deadline = sl_now_ms() + PX_HEAD_MS;
		}
		in->len += (size_t)n;
	}
}

/* ---------------- judging ---------------- */

struct target {
	char host[256];
	uint16_t port; /* 0 = none given */
	char path[PATH_SZ]; /* normalized */
	const char *origin; /* the origin-form target (into the url) */
	size_t origin_len;
};

/* "host[:port]" into t->host (lower-cased, checked) and t->port: false if malformed. */
static bool parse_authority(const char *a, size_t n, struct target *t)
{
	size_t hl = n;
	const char *colon = NULL;
	if (n && a[0] == '[') {
		const char *rb = memchr(a, ']', n);
		if (!rb)
			return false;
		hl = (size_t)(rb - a) + 1;
		colon = hl < n ? a + hl : NULL;
		if (colon && *colon != ':')
			return false;
	} else {
		colon = memchr(a, ':', n);
		if (colon)
			hl = (size_t)(colon - a);
	}
	if (hl == 0 || hl >= sizeof t->host)
		return false;
	for (size_t i = 0; i < hl; i++) {
		char ch = (char)tolower((unsigned char)a[i]);
		bool v6 = a[0] == '[';
		if (!(isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_' ||
		      (v6 && (ch == ':' || ch == '[' || ch == ']'))))
			return false;
		t->host[i] = ch;
	}
	t->host[hl] = '\0';
	if (hl > 1 && t->host[hl - 1] == '.')
		t->host[hl - 1] = '\0';
	t->port = 0;
	if (colon) {
		unsigned long v = 0;
		size_t i = (size_t)(colon - a) + 1;
		if (i == n)
			return true; /* "host:" is "host" (RFC 3986) */
		for (; i < n; i++) {
			if (!isdigit((unsigned char)a[i]) || (v = v * 10 + (unsigned)(a[i] - '0')) > 65535)
				return false;
		}
		if (v == 0)
			return false;
		t->port = (uint16_t)v;
	}
	return true;
}

/* The request's target and authority: 0, or a status with *why (static). */
static int parse_target(struct px_conn *c, struct reqhead *r, struct target *t, const char **why)
{
	const char *url = (const char *)r->url.data;
	size_t ul = r->url.len;
	const char *auth = NULL;
	size_t al = 0;
	int nhost = 0;
	const char *host = hdr_get(r, "Host", &nhost);
	if (nhost > 1)
		return *why = "more than one Host header", 400;
	if (ul > 7 && (strncasecmp(url, "http://", 7) == 0 || strncasecmp(url, "https://", 8) == 0)) {
		size_t skip = url[4] == ':' ? 7 : 8;
		auth = url + skip;
		const char *end = auth;
		while (end < url + ul && *end != '/' && *end != '?' && *end != '#')
			end++;
		al = (size_t)(end - auth);
		if (memchr(auth, '@', al))
			return *why = "user information in the request target", 400;
		t->origin = end < url + ul ? end : "/";
		t->origin_len = end < url + ul ? (size_t)(url + ul - end) : 1;
	} else if (ul && url[0] == '/') {
		t->origin = url;
		t->origin_len = ul;
	} else {
		return *why = "the request target is neither a path nor an http URL", 400;
	}
	if (t->origin[0] == '?') /* "http://h?q": the path is "/" */
		return *why = "the request target has no path", 400;
	struct target ht;
	bool has_host = host && *host && parse_authority(host, strlen(host), &ht);
	if (host && *host && !has_host)
		return *why = "malformed Host header", 400;
	if (auth) {
		if (!parse_authority(auth, al, t))
			return *why = "malformed authority in the request target", 400;
		uint16_t hp = ht.port ? ht.port : c->orig_port, tp = t->port ? t->port : c->orig_port;
		if (has_host && (strcmp(ht.host, t->host) != 0 || hp != tp))
			return *why = "the Host header differs from the request target's host", 400;
	} else if (has_host) {
		memcpy(t->host, ht.host, sizeof t->host);
		t->port = ht.port;
	} else if (c->tls && c->sni[0]) {
		snprintf(t->host, sizeof t->host, "%s", c->sni);
		t->port = 0;
	} else {
		return *why = "no Host header", 400;
	}
	if (t->port && t->port != c->orig_port)
		return *why = "the Host port differs from the port connected to", 400;
	if (c->tls && strcmp(t->host, c->sni) != 0)
		return *why = "the Host differs from the TLS server name (SNI) of the connection", 421;
	if (!sl_http_norm_path(t->origin, t->origin_len, t->path, sizeof t->path))
		return *why = "the path cannot be decoded", 400;
	return 0;
}

/* ---------------- the head sent upstream ---------------- */

static bool hop_by_hop(const struct hdr *h)
{
	static const char *const k[] = { "connection", "keep-alive", "proxy-connection",
		                             "proxy-authorization", "proxy-authenticate", "te",
		                             "trailer", "upgrade", "http2-settings", "host",
		                             "transfer-encoding", "content-length" };
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
		if (h->name.len == strlen(k[i]) && strncasecmp((char *)h->name.data, k[i], h->name.len) == 0)
			return true;
	return false;
}

static int put(sl_buf *o, const char *s)
{
	return sl_buf_append(o, s, strlen(s));
}

/* The head to send upstream, into o. */
static int build_head(struct px_conn *c, http_parser *p, struct reqhead *r,
                      const struct target *t, const struct px_inject *inj, bool keep, sl_buf *o)
{
	char line[320];
	if (put(o, http_method_str((enum http_method)p->method)) < 0 || put(o, " ") < 0 ||
	    px_inject_target(o, t->origin, t->origin_len, inj) < 0)
		return -1;
	snprintf(line, sizeof line, " HTTP/%u.%u\r\nHost: %s", p->http_major, p->http_minor,
	         t->host);
	if (put(o, line) < 0)
		return -1;
	uint16_t dflt = c->tls ? 443 : 80;
	if (c->orig_port != dflt) {
		snprintf(line, sizeof line, ":%u", c->orig_port);
		if (put(o, line) < 0)
			return -1;
	}
	if (put(o, "\r\n") < 0)
		return -1;
	const char *ih = px_inject_header(inj);
	bool guest_has = ih && hdr_get(r, ih, NULL) != NULL;
	bool add = ih && !(guest_has && inj->rule->add_only);
	for (size_t i = 0; i < r->nh; i++) {
		const struct hdr *h = &r->h[i];
		if (hop_by_hop(h))
			continue;
		if (add && h->name.len == strlen(ih) && strncasecmp((char *)h->name.data, ih, h->name.len) == 0)
			continue; /* replaced by ours */
		if (sl_buf_append(o, h->name.data, h->name.len) < 0 || put(o, ": ") < 0 ||
		    sl_buf_append(o, h->value.data, h->value.len) < 0 || put(o, "\r\n") < 0)
			return -1;
	}
	if (add && (put(o, ih) < 0 || put(o, ": ") < 0 || put(o, inj->value) < 0 || put(o, "\r\n") < 0))
		return -1;
	if (p->flags & F_CHUNKED) {
		if (put(o, "Transfer-Encoding: chunked\r\n") < 0)
			return -1;
	} else if (p->flags & F_CONTENTLENGTH) {
		snprintf(line, sizeof line, "Content-Length: %llu\r\n", (unsigned long long)p->content_length);
		if (put(o, line) < 0)
			return -1;
	}
	const char *conn = !keep ? "Connection: close\r\n"
	                   : p->http_major == 1 && p->http_minor == 0 ? "Connection: keep-alive\r\n"
	                                                               : "";
	return put(o, conn) < 0 || put(o, "\r\n") < 0 ? -1 : 0;
}

/* ---------------- streaming ---------------- */

/* Pass response bytes to the client (an injected credential masked). */
static int to_client(struct px_conn *c, struct px_redact *red, const char *buf, size_t n,
                     bool last)
{
	if (!px_redact_active(red))
		return n ? px_write_all(&c->client, buf, n, sl_now_ms() + PX_IO_MS) : 0;
	const char *out;
	size_t outn;
	if (px_redact_feed(red, buf, n, last, &out, &outn) < 0)
		return -1;
	return outn ? px_write_all(&c->client, out, outn, sl_now_ms() + PX_IO_MS) : 0;
}

/* Feed upstream bytes to the response parser and pass them to the client. */
static int pump_response(struct px_conn *c, http_parser *rp, struct resp *rs, char *buf,
                         struct px_redact *red)
{
	ssize_t n = px_read(&c->up, buf, BUF_SZ, sl_now_ms() + PX_IO_MS);
	if (n < 0)
		return -1;
	size_t used = http_parser_execute(rp, &k_resp, buf, (size_t)n);
	if (n == 0) /* EOF: ends a close-delimited body, or breaks one */
		return rs->done ? to_client(c, red, buf, 0, true) : -1;
	enum http_errno e = HTTP_PARSER_ERRNO(rp);
	if (e != HPE_OK && e != HPE_PAUSED)
		return -1;
	if (rs->done && (used != (size_t)n || rs->status == 101))
		return -1; /* bytes past the response, or a protocol switch: unjudgeable */
	rs->bytes += used;
	return to_client(c, red, buf, used, rs->done);
}

/* Feed client bytes (the body) to the request parser and pass them up.
 * skip: bytes at the front that belong to the head (its last LF). */
static int pump_body(struct px_conn *c, http_parser *p, struct reqhead *r, struct inbuf *in,
                     size_t *skip, uint64_t *sent)
{
	if (in->start == in->len) {
		in->start = in->len = 0;
		ssize_t n = px_read(&c->client, in->d, BUF_SZ, sl_now_ms() + PX_IO_MS);
		if (n <= 0)
			return -1;
		in->len = (size_t)n;
	}
	size_t at = in->start;
	size_t n = http_parser_execute(p, &k_req, in->d + at, in->len - at);
	in->start += n;
	enum http_errno e = HTTP_PARSER_ERRNO(p);
	if (e != HPE_OK && e != HPE_PAUSED)
		return -1;
	size_t sk = *skip < n ? *skip : n;
	*skip -= sk;
	*sent += n - sk;
	(void)r;
	return n > sk ? px_write_all(&c->up, in->d + at + sk, n - sk, sl_now_ms() + PX_IO_MS) : 0;
}

/* ---------------- one request ---------------- */

struct exchange {
	struct px_conn *c;
	http_parser p;
	struct reqhead r;
	struct inbuf in;
	char *ubuf;
	struct px_redact red; /* the credential injected into this request */
};

static void log_req(struct exchange *x, const struct target *t, int status, const char *decision,
                    const struct sl_httprule *rule, const char *reason, uint64_t out, uint64_t in)
{
	struct px_logrec rec = { .pid = x->c->pid, .scheme = x->c->tls ? "https" : "http",
		                     .method = http_method_str((enum http_method)x->p.method),
		                     .host = t->host[0] ? t->host : "-", .path = t->path[0] ? t->path : "-",
		                     .port = x->c->orig_port, .status = status, .decision = decision,
		                     .rule = rule ? rule->text : NULL, .reason = reason,
		                     .bytes_out = out, .bytes_in = in };
	px_log_write(x->c->px->log, &rec);
}

/* Refuse the request: keep the connection when it has no body to skip. */
static bool refuse(struct exchange *x, const struct target *t, int status, const char *reason,
                   const char *body, const struct sl_httprule *rule)
{
	bool bodyless = !(x->p.flags & F_CHUNKED) && !(x->p.flags & F_CONTENTLENGTH && x->p.content_length);
	log_req(x, t, status, status == 403 ? "deny" : "error", rule, body, 0, 0);
	char *text = sl_asprintf("sandlock: %s\n", body);
	if (bodyless && http_should_keep_alive(&x->p)) {
		reply_keep(x->c, status, reason, text ? text : "refused\n");
		free(text);
		/* Step over the head's end: the parser completes the message. */
		http_parser_pause(&x->p, 0);
		size_t n = http_parser_execute(&x->p, &k_req, x->in.d + x->in.start, x->in.len - x->in.start);
		x->in.start += n;
		return x->r.msg_done;
	}
	http_reply(x->c, status, reason, text ? text : "refused\n");
	free(text);
	return false;
}

/* Judge the request: NULL to go on, else the refusal's body (heap). */
static char *judge(struct exchange *x, const struct target *t, const struct sl_httprule **rule)
{
	const struct sl_httpcfg *h = &x->c->px->http;
	struct sl_httpreq q = { http_method_str((enum http_method)x->p.method), t->host,
		                    x->c->orig_port, t->path };
	if ((*rule = sl_httprules_match(&h->deny, &q)))
		return sl_asprintf("%s %s%s refused by http_deny rule '%s'", q.method, q.host, q.path,
		                   (*rule)->text);
	if (h->allow.n && !(*rule = sl_httprules_match(&h->allow, &q)))
		return sl_asprintf("%s %s%s refused: no http_allow rule matches it", q.method, q.host,
		                   q.path);
	return NULL;
}

/* The upstream connection for t (reused while the host stays the same). */
static int upstream_for(struct exchange *x, const struct target *t, char **why)
{
	struct px_conn *c = x->c;
	if (c->up.fd >= 0 && strcmp(c->up_host, t->host) == 0)
		return 0;
	px_close(&c->up);
	int st = px_upstream_connect(c, t->host, c->orig_port, why);
	if (st == 0 && c->tls && px_tls_connect(c->px->tls, c, t->host, why) < 0) {
		px_close(&c->up);
		st = 502;
	}
	return st;
}

/* Stream the body up and the response down until both are done.
 * true when the connection may carry another request. */
static bool stream(struct exchange *x, const struct target *t, const struct sl_httprule *rule,
                   size_t skip)
{
	struct px_conn *c = x->c;
	http_parser rp;
	struct resp rs = { .head_req = x->p.method == HTTP_HEAD };
	http_parser_init(&rp, HTTP_RESPONSE);
	rp.data = &rs;
	uint64_t out = 0;
	bool ok = true;
	while (ok && !(x->r.msg_done && rs.done)) {
		struct px_io none = { -1, NULL };
		bool body_wait = !x->r.msg_done && x->in.start == x->in.len;
		int w = !x->r.msg_done && !body_wait ? 1
		        : px_wait2(x->r.msg_done ? &none : &c->client, rs.done ? &none : &c->up,
		                   sl_now_ms() + PX_IO_MS);
		if (w <= 0)
			ok = false;
		if (ok && (w & 1) && !x->r.msg_done)
			ok = pump_body(c, &x->p, &x->r, &x->in, &skip, &out) == 0;
		if (ok && (w & 2) && !rs.done)
			ok = pump_response(c, &rp, &rs, x->ubuf, &x->red) == 0;
		if (rs.done && !x->r.msg_done)
			ok = false; /* answered before the body ended: cannot resync */
	}
	log_req(x, t, rs.status, "allow", rule, ok ? NULL : "connection cut", out, rs.bytes);
	return ok && http_should_keep_alive(&rp) && http_should_keep_alive(&x->p);
}

/* One request: true when the connection goes on. */
static bool one_request(struct exchange *x, bool first)
{
	struct px_conn *c = x->c;
	head_reset(&x->r);
	struct target t = { .host = "", .path = "" };
	int st = read_head(c, &x->p, &x->r, &x->in, first);
	if (st < 0)
		return false;
	if (st) {
		log_req(x, &t, st, "error", NULL, "malformed request", 0, 0);
		http_reply(c, st, st == 431 ? "Request Header Fields Too Large" : "Bad Request",
		              "sandlock: malformed request\n");
		return false;
	}
	const char *why = NULL;
	if (x->p.method == HTTP_CONNECT)
		return refuse(x, &t, 405, "Method Not Allowed", "CONNECT is not proxied here", NULL);
	if ((st = parse_target(c, &x->r, &t, &why)))
		return refuse(x, &t, st, st == 421 ? "Misdirected Request" : "Bad Request", why, NULL);
	const struct sl_httprule *rule = NULL;
	char *no = judge(x, &t, &rule);
	if (no) {
		bool go = refuse(x, &t, 403, "Forbidden", no, rule);
		free(no);
		return go;
	}
	char *uwhy = NULL;
	if ((st = upstream_for(x, &t, &uwhy))) {
		bool go = refuse(x, &t, st, st == 403 ? "Forbidden" : st == 504 ? "Gateway Timeout" : "Bad Gateway",
		                 uwhy ? uwhy : "upstream failed", NULL);
		free(uwhy);
		return go;
	}
	struct sl_httpreq q = { http_method_str((enum http_method)x->p.method), t.host, c->orig_port,
		                    t.path };
	struct px_inject inj;
	px_inject_prepare(c, &q, &inj);
	sl_buf head = { 0 };
	bool keep = http_should_keep_alive(&x->p);
	int rc = build_head(c, &x->p, &x->r, &t, &inj, keep, &head);
	/* Whatever form the secret took upstream is masked on the way back. */
	const char *forms[] = { inj.cred ? inj.cred->value : NULL,
		                    inj.value && inj.rule->kind == SL_AUTH_BASIC ? inj.value + 6 : inj.value };
	if (rc == 0)
		rc = px_redact_init(&x->red, forms, 2);
	px_inject_free(&inj);
	if (rc == 0)
		rc = px_write_all(&c->up, head.data, head.len, sl_now_ms() + PX_IO_MS);
	if (head.data)
		explicit_bzero(head.data, head.len);
	sl_buf_free(&head);
	if (rc < 0) {
		px_redact_free(&x->red);
		return false;
	}
	/* Resume: the parser's next byte is the head's last LF. */
	http_parser_pause(&x->p, 0);
	bool go = stream(x, &t, rule, 1) && keep;
	px_redact_free(&x->red);
	return go;
}

void px_http_serve(struct px_conn *c)
{
	struct exchange *x = calloc(1, sizeof *x);
	if (!x || !(x->in.d = malloc(BUF_SZ)) || !(x->ubuf = malloc(BUF_SZ))) {
		if (x)
			free(x->in.d);
		free(x);
		return;
	}
	x->c = c;
	http_parser_init(&x->p, HTTP_REQUEST);
	x->p.data = &x->r;
	for (bool first = true; one_request(x, first); first = false) {
		/* The parser paused at the message's end: on to the next one. */
		http_parser_pause(&x->p, 0);
		if (x->p.upgrade) /* an upgrade request ends the parser: start afresh */
			http_parser_init(&x->p, HTTP_REQUEST);
		x->p.data = &x->r;
	}
	head_reset(&x->r);
	free(x->in.d);
	free(x->ubuf);
	free(x);
}

unsigned long sl_http_parser_version(void)
{
	return http_parser_version();
}
