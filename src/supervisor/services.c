/*
 * services.c — the run's services (services.h): made once, before the
 * builtins, freed after them and after the opener's last user.
 */
#include <stdlib.h>
#include <string.h>

#include "launch/mechs.h"
#include "net/connwait.h"
#include "net/httprules.h"
#include "net/portmap.h"
#include "net/sockadopt.h"
#include "opener/procpolicy.h"
#include "opener/virtfiles.h"
#include "paths/chroot.h"
#include "proxy/proxy.h"
#include "supervisor/services.h"
#include "util.h"

int sl_services_init(struct sl_services *sv, const struct sandlock_sandbox *cfg, int *err,
                     char **msg)
{
	sv->cfg = cfg;
	if (cfg->port_remap && !(sv->ports = sl_portmap_new()))
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	if (!sl_mech_getfd() && !(sv->adopted = sl_adopted_new()))
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	if (sl_http_active(&cfg->http) && !(sv->proxy = sl_proxy_new(cfg, msg))) {
		if (err)
			*err = SANDLOCK_ERR_SYSTEM;
		return -1;
	}
	/* Virtual chroot: one view for the path builtins and the opener. */
	if (cfg->chroot && !(sv->view = sl_view_new(cfg, msg))) {
		if (err)
			*err = SANDLOCK_ERR_SYSTEM;
		return -1;
	}
	return 0;
}

/* The builtins' files first (the dispatcher's serve), then the views. */
struct served_by {
	sl_opener_serve_fn serve;
	void *ud;
	struct sl_virt *virt;
};

static int serve_file(void *ud, const char *real, pid_t caller, int *fd)
{
	const struct served_by *by = ud;
	int e = by->serve ? by->serve(by->ud, real, caller, fd) : -1;
	return e >= 0 ? e : sl_virt_serve(by->virt, real, caller, fd);
}

int sl_services_start_opener(struct sl_services *sv, int ruleset_fd, sl_opener_serve_fn serve,
                             void *serve_ud, int *err, char **msg)
{
	if (sv->opener)
		return 0;
	struct served_by *by = calloc(1, sizeof(*by));
	if (!by || !(by->virt = sl_virt_new(sv->cfg))) {
		free(by);
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	by->serve = serve;
	by->ud = serve_ud;
	sv->virt = by->virt;
	sv->served = by;
	sv->opener = sl_opener_new(ruleset_fd, sv->view, serve_file, by, err, msg);
	return sv->opener ? 0 : -1;
}

void sl_services_bind(struct sl_services *sv, int listener, pid_t init)
{
	sv->init = init;
	if (!sv->opener)
		return;
	if (sl_proc_readable(sv->cfg))
		sl_opener_guard_proc(sv->opener, init, sl_proc_undenied(sv->cfg));
	if (sl_opener_bind(sv->opener, listener) < 0)
		sl_warn("too many concurrent runs: sandlock_open_on_behalf will fail (ENOSYS)");
}

int sl_services_expire(struct sl_services *sv)
{
	return sl_adopted_expire(sv->adopted, sv->init);
}

void sl_services_free(struct sl_services *sv)
{
	sl_opener_free(sv->opener); /* no handler can call it any more */
	sl_view_free(sv->view);     /* the opener's and the builtins': after them */
	sl_virt_free(sv->virt);
	free(sv->served);
	sl_portmap_free(sv->ports);
	sl_proxy_free(sv->proxy);
	sl_adopted_free(sv->adopted);
	memset(sv, 0, sizeof(*sv));
}
