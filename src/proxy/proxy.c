/*
 * proxy.c — the proxy's life: its copy of the policy, the loopback
 * listeners, the accept thread, the origins the connects announced, and
 * the threads of the open connections (proxy.h).
 *
 * How a connection finds its origin: netdest connects our duplicate of
 * the guest's socket to a listener here, then calls sl_proxy_expect with
 * the socket's local address, which is the peer address accept(2) gives
 * us.  The handshake is done by the kernel before connect(2) returns, so
 * the accept may come first: the connection's thread waits (briefly) for
 * the announcement.  A connection nobody announced (the guest reaching
 * the listener's port itself, if its IP rules let it) is closed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "config.h"
#include "proxy/proxyint.h"

#define ORIGIN_WAIT_MS 2000 /* an accepted connection waits this long for its connect */
#define ORIGIN_TTL_MS 30000 /* an announcement nobody accepted is dropped */

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
}

int sl_proxy_expect(struct sl_proxy *px, int sockfd, const struct sockaddr *orig,
                    socklen_t origlen, pid_t pid)
{
	struct px_origin *o = calloc(1, sizeof *o);
	if (!o)
		return -ENOMEM;
	socklen_t len = sizeof o->from;
	if (getsockname(sockfd, (struct sockaddr *)&o->from, &len) < 0 ||
	    origlen > sizeof o->to) {
		free(o);
		return -EINVAL;
	}
	memcpy(&o->to, orig, origlen);
	o->pid = pid;
	int64_t now = sl_now_ms();
	o->expires_ms = now + ORIGIN_TTL_MS;
	pthread_mutex_lock(&px->mu);
	/* Drop stale announcements (connects that never reached accept). */
	for (struct px_origin **pp = &px->origins; *pp;) {
		struct px_origin *x = *pp;
		if (x->expires_ms < now || same_addr(&x->from, &o->from)) {
			*pp = x->next;
			free(x);
		} else {
			pp = &x->next;
		}
	}
	o->next = px->origins;
	px->origins = o;
	pthread_cond_broadcast(&px->cv);
	pthread_mutex_unlock(&px->mu);
	return 0;
}

/* The origin of a connection from peer (waits briefly for the connect's
 * sl_proxy_expect): 0, or -1 when nobody expects it. */
static int take_origin(struct sl_proxy *px, const struct sockaddr_storage *peer,
                       struct sockaddr_storage *to, pid_t *pid)
{
	int64_t deadline = sl_now_ms() + ORIGIN_WAIT_MS;
	int rc = -1;
	pthread_mutex_lock(&px->mu);
	while (!px->stopping) {
		for (struct px_origin **pp = &px->origins; *pp; pp = &(*pp)->next) {
			struct px_origin *x = *pp;
			if (!same_addr(&x->from, peer))
				continue;
			*to = x->to;
			*pid = x->pid;
			*pp = x->next;
			free(x);
			rc = 0;
			goto out;
		}
		int64_t left = deadline - sl_now_ms();
		if (left <= 0)
			break;
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += left / 1000;
		ts.tv_nsec += (left % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&px->cv, &px->mu, &ts);
	}
out:
	pthread_mutex_unlock(&px->mu);
	return rc;
}

bool sl_proxy_intercepts(const struct sl_proxy *px, uint16_t port)
{
	return sl_http_intercepts(&px->http, port);
}

int sl_proxy_target(const struct sl_proxy *px, int family, struct sockaddr_storage *to,
                    socklen_t *len)
{
	if (family == AF_INET6 && px->lfd6 >= 0) {
		*to = px->laddr6;
		*len = px->llen6;
		return 0;
	}
	if (family == AF_INET6) { /* no ::1 here: the v4-mapped listener */
		const struct sockaddr_in *v4 = (const void *)&px->laddr4;
		struct sockaddr_in6 *s6 = (void *)to;
		memset(to, 0, sizeof *to);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = v4->sin_port;
		s6->sin6_addr.s6_addr[10] = s6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&s6->sin6_addr.s6_addr[12], &v4->sin_addr, 4);
		*len = sizeof *s6;
		return 0;
	}
	*to = px->laddr4;
	*len = px->llen4;
	return 0;
}

const char *sl_proxy_ca_pem(const struct sl_proxy *px)
{
	return px->tls ? px_tls_ca_pem(px->tls) : NULL;
}

/* ---------------- connections ---------------- */

static void conn_end(struct px_conn *c)
{
	struct sl_proxy *px = c->px;
	px_close(&c->client);
	px_close(&c->up);
	pthread_mutex_lock(&px->mu);
	if (c->prev)
		c->prev->next = c->next;
	else
		px->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	px->nconns--;
	pthread_cond_broadcast(&px->cv);
	pthread_mutex_unlock(&px->mu);
	free(c);
}

static void *conn_thread(void *arg)
{
	struct px_conn *c = arg;
	/* A connection nobody connected here through us is closed unserved. */
	if (take_origin(c->px, &c->peer, &c->orig, &c->pid) == 0)
		px_conn_serve(c);
	conn_end(c);
	return NULL;
}

/* Take an accepted fd into a new connection thread (or close it). */
static void conn_start(struct sl_proxy *px, int fd, const struct sockaddr_storage *peer)
{
	struct px_conn *c = calloc(1, sizeof *c);
	if (!c || px_nonblock(fd) < 0) {
		free(c);
		close(fd);
		return;
	}
	int one = 1; /* our head and body go in separate writes: no Nagle wait */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->px = px;
	c->client.fd = fd;
	c->up.fd = -1;
	c->peer = *peer;
	pthread_mutex_lock(&px->mu);
	bool full = px->stopping || px->nconns >= PX_MAX_CONNS;
	if (!full) {
		c->next = px->conns;
		if (px->conns)
			px->conns->prev = c;
		px->conns = c;
		px->nconns++;
	}
	pthread_mutex_unlock(&px->mu);
	if (full) {
		close(fd);
		free(c);
		return;
	}
	pthread_attr_t at;
	pthread_t t;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	if (pthread_create(&t, &at, conn_thread, c) != 0)
		conn_end(c);
	pthread_attr_destroy(&at);
}

static void *accept_thread(void *arg)
{
	struct sl_proxy *px = arg;
	struct pollfd p[3] = { { .fd = px->stopfd, .events = POLLIN },
		                   { .fd = px->lfd4, .events = POLLIN },
		                   { .fd = px->lfd6, .events = POLLIN } };
	for (;;) {
		if (poll(p, 3, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents)
			break;
		for (int i = 1; i < 3; i++) {
			if (!(p[i].revents & POLLIN))
				continue;
			struct sockaddr_storage peer;
			socklen_t len = sizeof peer;
			int fd = accept4(p[i].fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
			if (fd >= 0)
				conn_start(px, fd, &peer);
			else if (errno == EMFILE || errno == ENFILE)
				usleep(10000); /* out of fds: let connections end */
		}
	}
	return NULL;
}

/* ---------------- life ---------------- */

static int listen_on(int family, struct sockaddr_storage *ss, socklen_t *len)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	memset(ss, 0, sizeof *ss);
	if (family == AF_INET) {
		struct sockaddr_in *a = (void *)ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof *a;
	} else {
		struct sockaddr_in6 *a = (void *)ss;
		int one = 1;
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*len = sizeof *a;
	}
	if (bind(fd, (struct sockaddr *)ss, *len) < 0 || listen(fd, 1024) < 0 ||
	    getsockname(fd, (struct sockaddr *)ss, len) < 0) {
		close(fd);
		return -1;
	}
	return sl_fd_high(fd);
}

/* The netrules copy (a flat array: the rules hold no pointers). */
static int copy_netrules(struct sl_netrules *to, const struct sl_netrules *from)
{
	to->deny_mode = from->deny_mode;
	if (!from->n)
		return 0;
	if (!(to->v = malloc(from->n * sizeof *to->v)))
		return -1;
	memcpy(to->v, from->v, from->n * sizeof *to->v);
	to->n = to->cap = from->n;
	return 0;
}

static int copy_rules(struct sl_httprules *to, const struct sl_httprules *from)
{
	char *why = NULL;
	for (size_t i = 0; i < from->n; i++)
		if (sl_httprules_add(to, from->v[i].text, &why) < 0) {
			free(why); /* parsed once already: only OOM here */
			return -1;
		}
	return 0;
}

/* Our own copy of what the proxy applies. */
static int copy_policy(struct sl_proxy *px, const struct sandlock_sandbox *cfg)
{
	const struct sl_httpcfg *h = &cfg->http;
	struct sl_httpcfg *m = &px->http;
	char *why = NULL;
	if (copy_rules(&m->allow, &h->allow) < 0 || copy_rules(&m->deny, &h->deny) < 0 ||
	    copy_netrules(&px->net, &cfg->net) < 0 || copy_netrules(&m->grants, &h->grants) < 0)
		return -1;
	memcpy(m->ports, h->ports, sizeof m->ports);
	m->nports = h->nports;
	m->mitm = h->mitm;
	for (size_t i = 0; i < h->auth.n; i++)
		if (sl_authrules_add(&m->auth, h->auth.v[i].text, &why) < 0) {
			free(why);
			return -1;
		}
	return sl_credentials_copy(&m->creds, &h->creds);
}

static void stop_all(struct sl_proxy *px)
{
	pthread_mutex_lock(&px->mu);
	px->stopping = true;
	/* Cut every connection: its thread wakes from poll and ends. */
	for (struct px_conn *c = px->conns; c; c = c->next) {
		if (c->client.fd >= 0)
			shutdown(c->client.fd, SHUT_RDWR);
		if (c->up.fd >= 0)
			shutdown(c->up.fd, SHUT_RDWR);
	}
	pthread_cond_broadcast(&px->cv);
	int64_t deadline = sl_now_ms() + 2000;
	while (px->nconns && sl_now_ms() < deadline) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 20000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&px->cv, &px->mu, &ts);
	}
	pthread_mutex_unlock(&px->mu);
}

struct sl_proxy *sl_proxy_new(const struct sandlock_sandbox *cfg, char **msg)
{
	struct sl_proxy *px = calloc(1, sizeof *px);
	if (!px) {
		*msg = sl_strdup("out of memory");
		return NULL;
	}
	px->lfd4 = px->lfd6 = px->stopfd = -1;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&px->cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&px->mu, NULL);
	if (copy_policy(px, cfg) < 0) {
		*msg = sl_strdup("out of memory");
		goto fail;
	}
	if (cfg->http.mitm && !(px->tls = px_tls_new(&cfg->http, msg)))
		goto fail;
	if (!(px->log = px_log_open(&cfg->http, msg)))
		goto fail;
	px->lfd4 = listen_on(AF_INET, &px->laddr4, &px->llen4);
	px->lfd6 = listen_on(AF_INET6, &px->laddr6, &px->llen6); /* optional */
	px->stopfd = sl_fd_high(eventfd(0, EFD_CLOEXEC));
	if (px->lfd4 < 0 || px->stopfd < 0) {
		*msg = sl_asprintf("http proxy: cannot listen on 127.0.0.1: %s", strerror(errno));
		goto fail;
	}
	if (pthread_create(&px->acceptor, NULL, accept_thread, px) != 0) {
		*msg = sl_strdup("http proxy: cannot start its thread");
		goto fail;
	}
	px->acceptor_started = true;
	return px;
fail:
	sl_proxy_free(px);
	return NULL;
}

void sl_proxy_free(struct sl_proxy *px)
{
	if (!px)
		return;
	if (px->acceptor_started) {
		uint64_t one = 1;
		if (write(px->stopfd, &one, sizeof one) != sizeof one)
			pthread_cancel(px->acceptor);
		pthread_join(px->acceptor, NULL);
	}
	stop_all(px);
	if (px->nconns) /* a thread that would not end: it keeps what it uses */
		return;
	while (px->origins) {
		struct px_origin *o = px->origins;
		px->origins = o->next;
		free(o);
	}
	if (px->lfd4 >= 0)
		close(px->lfd4);
	if (px->lfd6 >= 0)
		close(px->lfd6);
	if (px->stopfd >= 0)
		close(px->stopfd);
	px_tls_free(px->tls);
	px_log_close(px->log);
	sl_httpcfg_free(&px->http);
	sl_netrules_free(&px->net);
	pthread_mutex_destroy(&px->mu);
	pthread_cond_destroy(&px->cv);
	free(px);
}
