/*
 * netrules.c — parsing and matching network endpoint rules (netrules.h).
 *
 * Parsing is strict: anything that is not exactly one of the documented
 * forms is an error naming the reason, never a rule wider than asked for.
 * IP and CIDR targets match by containment (an address is a /32 or
 * /128); hostnames resolve once, here, and become address rules, so no
 * later DNS answer can widen the policy.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/netrules.h"
#include "util.h"

/* ---------------- parsing ---------------- */

struct parsed {
	struct sl_netrule rule; /* everything but the address, for a hostname */
	char host[256];         /* non-empty: a hostname to resolve */
};

static char *reason(const char *s)
{
	return sl_strdup(s);
}

/* "N" with 1 <= N <= 65535, digits only. */
static int parse_port(const char *s, size_t len, uint16_t *out, char **why)
{
	if (len == 0) {
		*why = reason("empty port");
		return -1;
	}
	unsigned long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i])) {
			*why = reason("bad port");
			return -1;
		}
		v = v * 10 + (unsigned long)(s[i] - '0');
		if (v > 65535)
			break;
	}
	if (v == 0 || v > 65535) {
		*why = reason("port out of range");
		return -1;
	}
	*out = (uint16_t)v;
	return 0;
}

/* "*" or "N[,M...]" into r. */
static int parse_ports(const char *s, struct sl_netrule *r, char **why)
{
	if (strcmp(s, "*") == 0) {
		r->all_ports = true;
		return 0;
	}
	const char *p = s;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (len == 1 && p[0] == '*') {
			*why = reason("'*' cannot be mixed with ports");
			return -1;
		}
		if (r->nports == SL_NR_MAX_PORTS) {
			*why = reason("too many ports in one rule (max 32)");
			return -1;
		}
		if (parse_port(p, len, &r->ports[r->nports], why) < 0)
			return -1;
		r->nports++;
		if (!comma)
			return 0;
		p = comma + 1;
	}
}

static bool all_port_chars(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s) && *s != ',')
			return false;
	return true;
}

/* A hostname as DNS allows it: letters, digits, '-', '.', at most 253. */
static bool valid_hostname(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 253 || s[0] == '.' || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '.')
			return false;
	return true;
}

/* IP, CIDR, "*" or "", or a hostname (copied to p->host). */
static int parse_target(const char *t, bool deny, struct parsed *p, char **why)
{
	struct sl_netrule *r = &p->rule;
	if (t[0] == '\0' || strcmp(t, "*") == 0) {
		r->any_addr = true;
		return 0;
	}
	char buf[128];
	if (strlen(t) >= sizeof buf) {
		*why = reason("target too long");
		return -1;
	}
	strcpy(buf, t);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (inet_pton(AF_INET, buf, r->addr) == 1) {
		r->family = AF_INET;
		r->prefix = 32;
	} else if (inet_pton(AF_INET6, buf, r->addr) == 1) {
		r->family = AF_INET6;
		r->prefix = 128;
	} else if (!slash && valid_hostname(buf)) {
		if (deny) {
			*why = reason("net_deny takes literal IPs or CIDRs, not hostnames");
			return -1;
		}
		strcpy(p->host, buf);
		return 0;
	} else {
		*why = reason(slash ? "bad CIDR" : "bad address or hostname");
		return -1;
	}
	if (slash) {
		const char *pl = slash + 1;
		unsigned long v = 0;
		size_t k = 0;
		for (; pl[k] && isdigit((unsigned char)pl[k]) && k < 4; k++)
			v = v * 10 + (unsigned long)(pl[k] - '0');
		if (k == 0 || pl[k] || v > r->prefix) {
			*why = reason("bad CIDR prefix length");
			return -1;
		}
		r->prefix = (uint8_t)v;
	}
	return 0;
}

/* Split "target[:ports]" / "[v6]:ports" / bare IPv6 into its two parts. */
static int split_target(char *rest, char **target, char **ports, char **why)
{
	*ports = NULL;
	if (rest[0] == '[') {
		char *close = strchr(rest, ']');
		if (!close) {
			*why = reason("missing ']'");
			return -1;
		}
		*close = '\0';
		*target = rest + 1;
		if (close[1] == '\0')
			return 0;
		if (close[1] != ':') {
			*why = reason("expected ':' after ']'");
			return -1;
		}
		*ports = close + 2;
		return 0;
	}
	char *first = strchr(rest, ':');
	if (first && strchr(first + 1, ':')) { /* an unbracketed IPv6: no ports */
		*target = rest;
		return 0;
	}
	*target = rest;
	if (first) {
		*first = '\0';
		*ports = first + 1;
	}
	return 0;
}

static int parse_spec(const char *spec, bool deny, struct parsed *p, char **why)
{
	memset(p, 0, sizeof(*p));
	struct sl_netrule *r = &p->rule;
	if (!spec || !*spec) {
		*why = reason("empty rule");
		return -1;
	}
	const char *rest = spec;
	r->protos = SL_NP_TCP | SL_NP_UDP;
	const char *sep = strstr(spec, "://");
	if (sep) {
		size_t n = (size_t)(sep - spec);
		if (n == 3 && strncmp(spec, "tcp", 3) == 0)
			r->protos = SL_NP_TCP;
		else if (n == 3 && strncmp(spec, "udp", 3) == 0)
			r->protos = SL_NP_UDP;
		else if (n == 4 && strncmp(spec, "icmp", 4) == 0)
			r->protos = SL_NP_ICMP;
		else {
			*why = reason("unknown scheme (tcp://, udp:// or icmp://)");
			return -1;
		}
		rest = sep + 3;
	}
	char *copy = sl_strdup(rest);
	if (!copy)
		return -1;
	char *target, *ports;
	int rc;
	if (all_port_chars(copy)) { /* a bare port list: any address */
		r->any_addr = true;
		rc = parse_ports(copy, r, why);
		ports = copy;
	} else {
		rc = split_target(copy, &target, &ports, why);
		if (rc == 0)
			rc = parse_target(target, deny, p, why);
		if (rc == 0 && ports)
			rc = parse_ports(ports, r, why);
	}
	if (rc == 0 && r->protos == SL_NP_ICMP && ports) {
		*why = reason("icmp:// rules take no port");
		rc = -1;
	}
	if (rc == 0 && (!ports || r->protos == SL_NP_ICMP))
		r->all_ports = true;
	free(copy);
	return rc;
}

static int push(struct sl_netrules *r, const struct sl_netrule *x)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		struct sl_netrule *v = realloc(r->v, cap * sizeof(*v));
		if (!v)
			return -1;
		r->v = v;
		r->cap = cap;
	}
	r->v[r->n++] = *x;
	return 0;
}

/* Append "addr host\n" to the hosts text unless that line is there. */
static int add_hosts_line(struct sl_netrules *r, int family, const void *addr, const char *host)
{
	char ip[INET6_ADDRSTRLEN], line[INET6_ADDRSTRLEN + 260];
	if (!inet_ntop(family, addr, ip, sizeof ip))
		return 0;
	int n = snprintf(line, sizeof line, "%s %s\n", ip, host);
	size_t len = (size_t)n;
	for (size_t at = 0; at < r->hosts.len;) { /* line by line: exact duplicates only */
		const char *nl = memchr(r->hosts.data + at, '\n', r->hosts.len - at);
		size_t l = (size_t)(nl - (r->hosts.data + at)) + 1;
		if (l == len && memcmp(r->hosts.data + at, line, len) == 0)
			return 0;
		at += l;
	}
	if (r->hosts.len + len + 1 > r->hosts.cap) {
		size_t cap = r->hosts.cap ? r->hosts.cap * 2 : 256;
		while (cap < r->hosts.len + len + 1)
			cap *= 2;
		char *d = realloc(r->hosts.data, cap);
		if (!d)
			return -1;
		r->hosts.data = d;
		r->hosts.cap = cap;
	}
	memcpy(r->hosts.data + r->hosts.len, line, len + 1);
	r->hosts.len += len;
	return 0;
}

/* Every A/AAAA address of host, as one rule each (and a hosts line). */
static int resolve_host(struct sl_netrules *r, const struct parsed *p, char **why)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	int e = getaddrinfo(p->host, NULL, &hints, &res);
	if (e) {
		*why = sl_asprintf("cannot resolve host: %s", gai_strerror(e));
		return -1;
	}
	int rc = 0;
	for (struct addrinfo *a = res; a && rc == 0; a = a->ai_next) {
		struct sl_netrule x = p->rule;
		x.family = a->ai_family;
		if (a->ai_family == AF_INET) {
			memcpy(x.addr, &((struct sockaddr_in *)a->ai_addr)->sin_addr, 4);
			x.prefix = 32;
		} else if (a->ai_family == AF_INET6) {
			memcpy(x.addr, &((struct sockaddr_in6 *)a->ai_addr)->sin6_addr, 16);
			x.prefix = 128;
		} else {
			continue;
		}
		rc = push(r, &x);
		if (rc == 0)
			rc = add_hosts_line(r, x.family, x.addr, p->host);
	}
	freeaddrinfo(res);
	return rc;
}

int sl_netrules_add(struct sl_netrules *r, const char *spec, bool deny, char **why)
{
	*why = NULL;
	struct parsed p;
	if (parse_spec(spec, deny, &p, why) < 0)
		return -1;
	if (p.host[0])
		return resolve_host(r, &p, why);
	return push(r, &p.rule);
}

char *sl_netrules_check(const char *spec, bool deny)
{
	struct parsed p;
	char *why = NULL;
	if (parse_spec(spec, deny, &p, &why) < 0)
		return why ? why : sl_strdup("out of memory");
	return NULL;
}

void sl_netrules_free(struct sl_netrules *r)
{
	free(r->v);
	r->v = NULL;
	r->n = r->cap = 0;
	free(r->hosts.data);
	r->hosts.data = NULL;
	r->hosts.len = r->hosts.cap = 0;
}

/* The loopback names every resolver expects, then the pinned hosts. */
char *sl_netrules_hosts_file(const struct sl_netrules *r, bool *oom)
{
	static const char head[] = "127.0.0.1 localhost\n::1 localhost\n";
	*oom = false;
	if (r->hosts.len == 0)
		return NULL;
	char *s = malloc(sizeof head + r->hosts.len);
	if (!s) {
		*oom = true;
		return NULL;
	}
	memcpy(s, head, sizeof head - 1);
	memcpy(s + sizeof head - 1, r->hosts.data, r->hosts.len + 1);
	return s;
}

/* ---------------- matching ---------------- */

/* The destination as family, 16 address bytes and port; IPv4-mapped IPv6
 * becomes IPv4 (it reaches the IPv4 host).  False if not AF_INET/6. */
static bool dest_of(const struct sockaddr *sa, size_t len, int *fam, uint8_t *addr,
                    uint16_t *port)
{
	static const uint8_t mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	if (sa->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const void *)sa;
		*fam = AF_INET;
		memcpy(addr, &in->sin_addr, 4);
		*port = ntohs(in->sin_port);
		return true;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const void *)sa;
		*port = ntohs(in6->sin6_port);
		if (memcmp(in6->sin6_addr.s6_addr, mapped, 12) == 0) {
			*fam = AF_INET;
			memcpy(addr, in6->sin6_addr.s6_addr + 12, 4);
		} else {
			*fam = AF_INET6;
			memcpy(addr, in6->sin6_addr.s6_addr, 16);
		}
		return true;
	}
	return false;
}

static bool prefix_match(const uint8_t *a, const uint8_t *b, unsigned bits)
{
	unsigned full = bits / 8, rest = bits % 8;
	if (memcmp(a, b, full) != 0)
		return false;
	if (!rest)
		return true;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

static bool rule_matches(const struct sl_netrule *x, int proto, int fam, const uint8_t *addr,
                         uint16_t port)
{
	if (!(x->protos & proto))
		return false;
	if (!x->any_addr && (x->family != fam || !prefix_match(x->addr, addr, x->prefix)))
		return false;
	if (x->all_ports || proto == SL_NP_ICMP)
		return true;
	for (size_t i = 0; i < x->nports; i++)
		if (x->ports[i] == port)
			return true;
	return false;
}

bool sl_netrules_permit(const struct sl_netrules *r, int proto, const struct sockaddr *sa,
                        size_t salen)
{
	int fam;
	uint8_t addr[16];
	uint16_t port;
	if (!dest_of(sa, salen, &fam, addr, &port))
		return false;
	bool hit = false;
	for (size_t i = 0; i < r->n && !hit; i++)
		hit = rule_matches(&r->v[i], proto, fam, addr, port);
	return r->deny_mode ? !hit : hit;
}

bool sl_netrules_grants(const struct sl_netrules *r, int proto, const struct sockaddr *sa,
                        size_t salen)
{
	int fam;
	uint8_t addr[16];
	uint16_t port;
	if (r->deny_mode || !dest_of(sa, salen, &fam, addr, &port))
		return false;
	for (size_t i = 0; i < r->n; i++)
		if (!r->v[i].any_addr && rule_matches(&r->v[i], proto, fam, addr, port))
			return true;
	return false;
}

bool sl_netrules_has_proto(const struct sl_netrules *r, int proto)
{
	if (r->deny_mode)
		return proto != SL_NP_ICMP; /* default-allow covers TCP and UDP */
	for (size_t i = 0; i < r->n; i++)
		if (r->v[i].protos & proto)
			return true;
	return false;
}

bool sl_netrules_landlock_only(const struct sl_netrules *r)
{
	if (r->deny_mode)
		return false;
	for (size_t i = 0; i < r->n; i++) {
		const struct sl_netrule *x = &r->v[i];
		if (x->protos != SL_NP_TCP || !x->any_addr || x->all_ports)
			return false;
	}
	return true;
}

/* ---------------- bind port ranges ---------------- */

static int range_push(struct sl_portranges *p, uint16_t lo, uint16_t hi)
{
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 8;
		void *v = realloc(p->v, cap * sizeof(*p->v));
		if (!v)
			return -1;
		p->v = v;
		p->cap = cap;
	}
	p->v[p->n].lo = lo;
	p->v[p->n].hi = hi;
	p->n++;
	return 0;
}

int sl_portranges_add(struct sl_portranges *p, const char *spec, char **why)
{
	*why = NULL;
	if (!spec || !*spec) {
		*why = reason("empty port");
		return -1;
	}
	if (strcmp(spec, "*") == 0) {
		if (p->n) {
			*why = reason("'*' cannot be mixed with ports");
			return -1;
		}
		p->all = true;
		return 0;
	}
	if (p->all) {
		*why = reason("'*' cannot be mixed with ports");
		return -1;
	}
	const char *s = spec;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		const char *dash = memchr(s, '-', len);
		uint16_t lo, hi;
		if (dash) {
			if (parse_port(s, (size_t)(dash - s), &lo, why) < 0 ||
			    parse_port(dash + 1, len - (size_t)(dash - s) - 1, &hi, why) < 0)
				return -1;
			if (lo > hi) {
				*why = reason("empty port range (lo > hi)");
				return -1;
			}
		} else if (parse_port(s, len, &lo, why) < 0) {
			return -1;
		} else {
			hi = lo;
		}
		if (range_push(p, lo, hi) < 0)
			return -1;
		if (!comma)
			return 0;
		s = comma + 1;
	}
}

bool sl_portranges_has(const struct sl_portranges *p, uint16_t port)
{
	if (p->all)
		return true;
	for (size_t i = 0; i < p->n; i++)
		if (port >= p->v[i].lo && port <= p->v[i].hi)
			return true;
	return false;
}

void sl_portranges_free(struct sl_portranges *p)
{
	free(p->v);
	p->v = NULL;
	p->n = p->cap = 0;
	p->all = false;
}
