/*
 * netrules.h — network endpoint rules: parsing the rule strings of
 * net_allow / net_deny / net_allow_bind / net_deny_bind, and matching a
 * destination against them.  Pure data: no sockets, no supervisor.
 *
 * An endpoint SPEC is `[scheme://]target[:ports]`:
 *   scheme  none = TCP and UDP, `tcp://`, `udp://`, `icmp://` (no ports)
 *   target  `*` or empty (any address), IPv4, IPv6 (bracketed when ports
 *           follow), a CIDR, or a hostname (resolved once, at build time)
 *   ports   `N`, `N,M,...`, `*` or omitted (all ports)
 * A bare port list (`443`, `80,443`) means `:443` (TCP and UDP, any address).
 */
#ifndef SANDLOCK_NETRULES_H
#define SANDLOCK_NETRULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

enum { SL_NP_TCP = 1, SL_NP_UDP = 2, SL_NP_ICMP = 4 };

#define SL_NR_MAX_PORTS 32 /* ports of one rule (comma-separated) */

struct sl_netrule {
	uint8_t protos;  /* SL_NP_* */
	bool any_addr;   /* `*` / empty target */
	int family;      /* AF_INET or AF_INET6 when !any_addr */
	uint8_t addr[16];
	uint8_t prefix;  /* 32/128 for one address */
	bool all_ports;  /* `*`, omitted, and always for ICMP */
	size_t nports;
	uint16_t ports[SL_NR_MAX_PORTS];
};

struct sl_netrules {
	struct sl_netrule *v;
	size_t n, cap;
	bool deny_mode; /* rules are net_deny: everything else is allowed */
	/* "ADDR NAME\n" for every address a hostname rule resolved to, in
	 * rule order, each line once: the body of the synthetic /etc/hosts.
	 * len 0 = no rule names a host (the guest sees the real file). */
	struct { char *data; size_t len, cap; } hosts;
};

/* Parse one SPEC; a hostname is resolved (all A/AAAA) into one rule per
 * address.  Appends to r.  0, or -1 with *why (heap: "port out of range",
 * ...; NULL on OOM).  deny: hostnames are refused. */
int sl_netrules_add(struct sl_netrules *r, const char *spec, bool deny, char **why);
/* Only checks the syntax of SPEC (no resolution): NULL or a heap reason. */
char *sl_netrules_check(const char *spec, bool deny);
void sl_netrules_free(struct sl_netrules *r);
/* The synthetic /etc/hosts for r (localhost lines, then r->hosts), as a
 * heap string; NULL when no rule names a host (or on OOM, *oom set). */
char *sl_netrules_hosts_file(const struct sl_netrules *r, bool *oom);

/* True if proto (one SL_NP_*) to sa (AF_INET/AF_INET6; IPv4-mapped IPv6
 * counts as IPv4) is permitted by r: some rule matches (allow mode) or
 * none does (deny mode). */
bool sl_netrules_permit(const struct sl_netrules *r, int proto, const struct sockaddr *sa,
                        size_t salen);
/* True if an allow rule naming addresses (not `*`) covers proto to sa:
 * an explicit grant (the proxy's test for loopback and private
 * addresses, which an any-address rule does not open). */
bool sl_netrules_grants(const struct sl_netrules *r, int proto, const struct sockaddr *sa,
                        size_t salen);
/* True if some rule covers proto (protocol gating: socket creation). */
bool sl_netrules_has_proto(const struct sl_netrules *r, int proto);
/* True if the rules are only `:port` TCP rules with any address (what
 * Landlock alone can enforce). */
bool sl_netrules_landlock_only(const struct sl_netrules *r);

/* Bind port sets: `N`, `lo-hi`, `*`, comma-separated. */
struct sl_portranges {
	struct { uint16_t lo, hi; } *v;
	size_t n, cap;
	bool all; /* `*` */
};
/* Append spec to p.  0 or -1 with *why (heap; NULL on OOM). */
int sl_portranges_add(struct sl_portranges *p, const char *spec, char **why);
bool sl_portranges_has(const struct sl_portranges *p, uint16_t port);
void sl_portranges_free(struct sl_portranges *p);

#endif /* SANDLOCK_NETRULES_H */
