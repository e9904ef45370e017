/*
 * hosts.c — the synthetic /etc/hosts of a sandbox whose network rules
 * name hosts (net_allow "api.example.com:443").
 *
 * WHY: a hostname rule is resolved once, when the sandbox is built, and
 * pinned to those addresses (netrules.c).  The guest must find the same
 * addresses without a DNS rule, and must not learn the host's other
 * names: every read-only open of the file that is /etc/hosts (decided on
 * the opened file's device and inode, so /etc/../etc/hosts, a dirfd of
 * /etc or a link all count) gets a sealed memfd with the loopback lines
 * and the pinned names only.  This builtin serves it for every open the
 * opener performs (hosts_serve), and makes sure every open goes through
 * the opener when nothing else does: with /proc readable, num_cpus or
 * random_seed the /proc view (proc.c) already opens everything on behalf
 * (sl_proc_opens_on_behalf; both trapping the opens would fail the run:
 * a syscall has room for one LAST builtin).  No hostname rule: nothing
 * trapped, the guest sees the real file.
 *
 * The same goes for the trust bundles of http_inject_ca: served with the
 * HTTP proxy's CA certificate appended; the real files are untouched.
 *
 * Cost: every open of the guest becomes an on-behalf open (a round trip
 * through the supervisor), only in sandboxes with a hostname rule.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "net/netrules.h"
#include "opener/opener.h"
#include "opener/served.h"
#include "proxy/proxy.h"
#include "syscalls.h"
#include "builtins/builtin.h"
#include "builtins/proc.h"
#include "supervisor/services.h"

#define MAX_BUNDLES 16

struct hosts_state {
	char *hosts; /* the synthetic /etc/hosts, NULL: the real one */
	bool has_hosts_id; /* there is an /etc/hosts to serve it for */
	struct sl_file_id hosts_id;
	char *ca_pem; /* http_inject_ca: the proxy's CA certificate, else NULL */
	struct sl_file_id bundles[MAX_BUNDLES];
	size_t nbundles;
};

static int hosts_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if ((cfg->net.hosts.len == 0 && cfg->http.inject_ca.n == 0) ||
	    sl_proc_opens_on_behalf(cfg))
		return 0; /* the real file, or proc.c's opens serve it */
	const int *nrs;
	size_t n = sl_sys_open_family(&nrs);
	return sl_traps_add_all(out, nrs, n);
}

static bool hosts_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	(void)state;
	return sl_open_on_behalf(call, NULL, NULL, act);
}

static void hosts_free(void *state)
{
	struct hosts_state *s = state;
	if (s) {
		free(s->hosts);
		free(s->ca_pem);
	}
	free(s);
}

/* The file the guest would open: its identity, not its spelling.  No
 * /etc/hosts at all: nothing to serve, nothing of the host's to see.
 * 0, or -1 with *msg. */
static int find_hosts(struct hosts_state *s, char **msg)
{
	if (sl_file_id_of("/etc/hosts", &s->hosts_id) == 0)
		s->has_hosts_id = true;
	else if (errno != ENOENT) {
		*msg = sl_asprintf("cannot serve /etc/hosts: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The trust bundles the CA certificate pem is appended to.  0, or -1
 * with *msg. */
static int find_bundles(struct hosts_state *s, const sl_strvec *paths, const char *pem,
                        char **msg)
{
	if (!(s->ca_pem = sl_strdup(pem))) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	for (size_t i = 0; i < paths->n && s->nbundles < MAX_BUNDLES; i++)
		if (sl_file_id_of(paths->v[i], &s->bundles[s->nbundles++]) < 0) {
			*msg = sl_asprintf("http_inject_ca: %s", strerror(errno));
			return -1;
		}
	return 0;
}

static int hosts_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                      char **msg)
{
	bool oom;
	char *hosts = sl_netrules_hosts_file(&cfg->net, &oom);
	const char *pem = sv->proxy ? sl_proxy_ca_pem(sv->proxy) : NULL;
	if (!hosts && !pem && !oom)
		return 0; /* nothing to serve */
	struct hosts_state *s = calloc(1, sizeof(*s));
	if (!s || oom) {
		free(s);
		free(hosts);
		*msg = sl_strdup("out of memory");
		return -1;
	}
	*state = s;
	s->hosts = hosts;
	if ((hosts && find_hosts(s, msg) < 0) ||
	    (pem && find_bundles(s, &cfg->http.inject_ca, pem, msg) < 0)) {
		hosts_free(s);
		*state = NULL;
		return -1;
	}
	return 0;
}

/* Is fd one of the trust bundles the CA is spliced into? */
static bool is_bundle(const struct hosts_state *s, int fd)
{
	for (size_t i = 0; i < s->nbundles; i++)
		if (sl_file_id_is(&s->bundles[i], fd))
			return true;
	return false;
}

/* The bundle of *fd with the proxy's CA certificate appended. */
static int serve_bundle(const struct hosts_state *s, int *fd)
{
	sl_buf b = { 0 };
	int e = sl_serve_read(*fd, &b);
	if (!e && b.len && b.data[b.len - 1] != '\n')
		e = sl_buf_append(&b, "\n", 1) < 0 ? ENOMEM : 0;
	if (!e)
		e = sl_buf_append(&b, s->ca_pem, strlen(s->ca_pem) + 1) < 0 ? ENOMEM : 0;
	if (!e)
		e = sl_serve_text("cabundle", (char *)b.data, fd);
	sl_buf_free(&b);
	return e;
}

static int hosts_serve(void *state, const struct sl_services *sv, const char *real,
                       pid_t caller, int *fd)
{
	(void)sv;
	(void)real;
	(void)caller;
	const struct hosts_state *s = state;
	if (!s)
		return -1;
	if (s->hosts && s->has_hosts_id && sl_file_id_is(&s->hosts_id, *fd))
		return sl_serve_text("hosts", s->hosts, fd);
	if (is_bundle(s, *fd))
		return serve_bundle(s, fd);
	return -1;
}

const struct sl_builtin sl_builtin_hosts = {
	.name = "synthetic /etc/hosts",
	.setting = "net_allow host names (the synthetic /etc/hosts is served by the supervisor)",
	.phase = SL_PHASE_LAST,
	.needs_opener = true,
	.syscalls = hosts_syscalls,
	.init = hosts_init,
	.free = hosts_free,
	.decide = hosts_decide,
	.serve = hosts_serve,
};
