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
 * and the pinned names only.  The opener serves it (opener.c); this
 * builtin only makes sure every open goes through the opener when
 * nothing else does: with /proc readable the /proc view (proc.c) already
 * opens everything on behalf.  No hostname rule: nothing trapped, the
 * guest sees the real file.
 *
 * The same goes for the trust bundles of http_inject_ca: the opener
 * serves them with the HTTP proxy's CA certificate appended.
 *
 * Cost: every open of the guest becomes an on-behalf open (a round trip
 * through the supervisor), only in sandboxes with a hostname rule.
 */
#include <errno.h>
#include <sys/syscall.h>

#include "net/netrules.h"
#include "opener/opener.h"
#include "syscalls.h"
#include "builtins/builtin.h"
#include "builtins/proc.h"

static int hosts_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if ((cfg->net.hosts.len == 0 && cfg->http.inject_ca.n == 0) || sl_proc_readable(cfg))
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

const struct sl_builtin sl_builtin_hosts = {
	.name = "synthetic /etc/hosts",
	.setting = "net_allow host names (the synthetic /etc/hosts is served by the supervisor)",
	.phase = SL_PHASE_LAST,
	.needs_opener = true,
	.syscalls = hosts_syscalls,
	.decide = hosts_decide,
};
