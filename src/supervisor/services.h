/*
 * services.h — what one run shares with its builtins (services.c).
 *
 * Made once per run by the dispatcher, before any builtin's init, and
 * handed to each builtin's init and, through struct sl_call, to every
 * call: the run's one chroot view, its port map, its HTTP proxy, the
 * waiter for blocking connects, the on-behalf opener and the synthetic
 * views of host files.  A builtin takes what it needs from here instead
 * of making its own copy (one chroot view per run, not one per user of
 * it) or asking the dispatcher, which knows no builtin by name.
 *
 * Files served in place of those the opener opened are contributed by
 * the builtins themselves (struct sl_builtin's serve hook); the opener
 * asks them through the serve function the dispatcher gives
 * sl_services_start_opener.
 */
#ifndef SANDLOCK_SERVICES_H
#define SANDLOCK_SERVICES_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"
#include "opener/opener.h"

struct sl_view;
struct sl_portmap;
struct sl_proxy;
struct sl_connwait;
struct sl_virt;
struct sl_adopted;

struct sl_call;

/*
 * Where a pathname unix socket lies when the COW workdir's layer holds
 * it (the COW builtin answers, builtins/cow/sock.c; netdest asks): a
 * socket bound under workdir is made in the layer, never in the real
 * tree, and reached there by the sandbox's own connects and sends.
 */
struct sl_sockplace {
	int fd; /* bind: O_PATH fd of the upper directory to bind in; else the file */
	bool layer; /* the file is the layer's (a socket the run bound), not the real tree's */
	char name[256]; /* bind: the name in that directory */
};
struct sl_socklayer {
	void *state; /* NULL: no workdir */
	/* The socket file path (NUL-terminated, /proc/self already the
	 * caller's) names for call: a bind's place, or (!bind) an O_PATH fd
	 * of the file a connect or send reaches.  1 with *out filled; 0: the
	 * real tree resolves path as given (not under workdir, nothing
	 * staged on the way); -errno: the call's answer. */
	int (*place)(void *state, const struct sl_call *call, const char *path, bool bind,
	             struct sl_sockplace *out);
};

struct sl_services {
	const struct sandlock_sandbox *cfg; /* valid until the launch is over */
	struct sl_view *view;   /* chroot: the guest's view (chroot.h), else NULL */
	struct sl_portmap *ports; /* port_remap: the run's port map (portmap.h), else NULL */
	struct sl_proxy *proxy; /* HTTP rules: the run's proxy (proxy.h), else NULL */
	/* Blocking connects performed on behalf (connwait.h); the
	 * dispatcher's, which answers through it: borrowed. */
	struct sl_connwait *connwait;
	struct sl_opener *opener; /* NULL until sl_services_start_opener, or not needed */
	struct sl_virt *virt;     /* the synthetic views (virtfiles.h), once the opener runs */
	pid_t init;               /* the sandbox's init, once bound; 0 before */
	void *served;             /* services.c: what the opener's serve asks */
	struct sl_socklayer socklayer; /* set by the COW builtin's init */
	/* Where pidfd_getfd is refused (mechs.h), else NULL: the sockets
	 * sandlock made for the guest and keeps (sockadopt.h), netdest's
	 * and the netlink view's, whose calls netdest performs on them. */
	struct sl_adopted *adopted;
};

/* The services cfg asks for, into *sv (zeroed by the caller).  0, or -1
 * with *err, *msg; sl_services_free frees either way. */
int sl_services_init(struct sl_services *sv, const struct sandlock_sandbox *cfg, int *err,
                     char **msg);
/*
 * Start the opener confined by ruleset_fd (opener.h), with the synthetic
 * views of cfg and serve: every file it opens for reading for the guest
 * is offered to serve before the views.  0, or -1 with *err, *msg.
 */
int sl_services_start_opener(struct sl_services *sv, int ruleset_fd, sl_opener_serve_fn serve,
                             void *serve_ud, int *err, char **msg);
/* The sandbox's init is known and calls are about to come through
 * listener: the opener applies the /proc policy (with /proc readable) and
 * becomes the one sandlock_open_on_behalf finds. */
void sl_services_bind(struct sl_services *sv, int listener, pid_t init);
/* The services' timed work (the kept sockets' sweep, sockadopt.h), when
 * due; under the builtins' lock.  Milliseconds until the next, or -1. */
int sl_services_expire(struct sl_services *sv);
/* After the opener's users are gone (no handler can call it any more). */
void sl_services_free(struct sl_services *sv);

#endif /* SANDLOCK_SERVICES_H */
