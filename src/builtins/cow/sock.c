/*
 * sock.c — unix sockets bound under the copy-on-write workdir.
 *
 * The real tree is read-only to the guest (Landlock), so a bind(2) there
 * would fail EACCES, and a socket made in it would change the real DIR
 * before any commit.  Instead, netdest (which performs every trapped
 * bind and connect on the caller's behalf) asks here, through the run's
 * services (sl_socklayer), where a socket path lies in the merged view:
 *  - a bind under workdir is made in the upper layer (sl_cow_sock_dir),
 *    where the listings, stat and unlink of the view then find it like
 *    any staged file; the commit never carries it over (a socket belongs
 *    to the run that bound it) and the layer goes with the run;
 *  - a connect or send to a path under workdir reaches the file the view
 *    shows: the layer's socket (the run's own), or the real tree's one,
 *    then checked as every real socket file is (netdest's unix rules).
 * The path is walked in the merged view (cowpath.h), so a staged symlink
 * or ".." is followed as the view shows it.  A bind that leads out of
 * workdir through something staged is refused (EACCES, as every write
 * the layer cannot stage: the real tree would resolve the string
 * elsewhere); a connect there reaches the host file the walk ended at,
 * checked by netdest's rules like any real socket file.  The address was copied once by netdest: a thread of the
 * caller rewriting it meanwhile changes nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtins/cow/callpath.h"
#include "builtins/cow/sock.h"

/* A connect's file: the layer's copy, or the real one (re-checked). */
static int reached(struct cow_state *s, const char *rel, struct sl_sockplace *out)
{
	struct stat st;
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(s->cow, rel, true, &st, &e);
	if (w == SL_COW_NONE)
		return -e;
	out->layer = w == SL_COW_UPPER;
	out->fd = out->layer ? sl_cow_open_upper(s->cow, rel, O_PATH)
	                     : sl_cow_open_lower(s->cow, rel, O_PATH);
	return out->fd < 0 ? out->fd : 1;
}

/* A connect's path that left workdir through something staged: the
 * file it leads to on the host, a real one for netdest's rules to check
 * (its canonical path).  Under chroot the path is the guest's: refused. */
static int left(struct cow_state *s, const char *host, struct sl_sockplace *out)
{
	if (s->view)
		return -EACCES;
	out->layer = false;
	out->fd = open(host, O_PATH | O_CLOEXEC);
	return out->fd < 0 ? -errno : 1;
}

static int sock_place(void *state, const struct sl_call *call, const char *path, bool bind,
                      struct sl_sockplace *out)
{
	struct cow_state *s = state;
	if (!s->cow || (!bind && sl_cow_untouched(s->cow)))
		return 0; /* nothing staged: the real tree is the view */
	struct sl_cow_res *res = malloc(sizeof(*res));
	if (!res)
		return -ENOMEM;
	/* bind makes the last component (a symlink there: EADDRINUSE) */
	int k = sl_cowb_resolve_str(s, call, path, !bind, res);
	if (k > 0 && !res->inside)
		k = bind ? -EACCES : left(s, res->path, out);
	else if (k > 0 && bind) {
		out->fd = sl_cow_sock_dir(s->cow, res->path, out->name, sizeof out->name);
		out->layer = true;
		k = out->fd < 0 ? out->fd : 1;
	} else if (k > 0) {
		k = reached(s, res->path, out);
	}
	free(res);
	return k;
}

void sl_cowb_sock_offer(struct cow_state *s, struct sl_services *sv)
{
	sv->socklayer.state = s;
	sv->socklayer.place = sock_place;
}
