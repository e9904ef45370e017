/*
 * callpath.c — the path a call names, read from the caller, made
 * absolute and lexically normalized in the layer's space (host paths, or
 * guest paths under chroot), then resolved in the merged view.  Split
 * from cow.c: every part that takes a path starts here.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "supervisor/childmem.h"
#include "builtins/cow/callpath.h"

/*
 * The absolute path a call names, in the layer's space (cowpath.h): path
 * relative to dirfd (the caller's cwd for AT_FDCWD), lexically
 * normalized.  Under chroot an absolute path is a guest path and so is
 * the result.  false when it cannot be told (the call then passes: the
 * kernel, or the chroot builtin, answers it); empty paths pass too.
 *
 * The upper layer stands for the real tree it mirrors: a dirfd or cwd in
 * it (a directory that exists only there, opened by the guest) and an
 * absolute path into it (a staged program run from there sees its own
 * path as argv[0]/$0, execpath.h) name the same place under workdir.
 * *aliased then says the kernel would resolve the caller's string in the
 * upper layer, not the merged view: the caller must act on the result.
 * So does a ".." in the string (collapsed by name here, walked by the
 * kernel: "f/.." with f a staged directory over a real file).
 */

/* True if path has a ".." component: collapsed by name, it may name
 * something the kernel's walk of the string would not reach. */
static bool has_dotdot(const char *p)
{
	for (const char *q = p; (q = strstr(q, "..")) != NULL; q += 2)
		if ((q == p || q[-1] == '/') && (q[2] == '\0' || q[2] == '/'))
			return true;
	return false;
}

/* The path a call names, made absolute (in guest terms under chroot):
 * 1 with out filled; 0 when the kernel answers the call by itself (a NULL
 * or empty string, a starting fd that is no directory path); -errno when
 * we cannot look at the caller's memory, cwd or fd: never passed on, so
 * the real call cannot run in the caller's stead (fail closed). */
static int str_path(const struct cow_state *s, const struct sl_call *call, int dirfd,
                    const char *p, char *out, size_t cap, bool *aliased)
{
	int ok = p[0] ? 1 : 0;
	char base[PATH_MAX], guest[PATH_MAX];
	const char *from = "";
	*aliased = ok && has_dotdot(p);
	if (ok && p[0] != '/') {
		/* Unconfirmed, as the string: resolve confirms both. */
		ok = sl_child_dir_path(call->n, dirfd, base, sizeof base);
		const char *rel = ok > 0 ? sl_cow_rel(s->cow, base) : NULL;
		char moved[PATH_MAX];
		/* A real directory the run moved is found at its new place. */
		if (rel && !sl_cow_upper_rel(s->cow, base) &&
		    sl_cow_real_view(s->cow, rel, moved, sizeof moved)) {
			rel = moved;
			*aliased = true;
		}
		if (rel)
			ok = snprintf(guest, sizeof guest, "%s/%s", s->space.root, rel) < (int)sizeof guest
			             ? 1 : -ENAMETOOLONG;
		else if (ok > 0 && s->view)
			ok = sl_view_guest(s->view, base, guest, sizeof guest);
		from = rel || s->view ? guest : base;
		*aliased |= ok > 0 && sl_path_under(base, sl_cow_upper_path(s->cow));
	}
	if (ok > 0 && snprintf(out, cap, "%s%s%s", from, from[0] ? "/" : "", p) >= (int)cap)
		ok = -ENAMETOOLONG;
	if (ok > 0)
		sl_path_normalize(out);
	const char *up = ok > 0 ? sl_cow_upper_rel(s->cow, out) : NULL;
	if (up) {
		ok = snprintf(guest, sizeof guest, "%s/%s", s->space.root, up) < (int)sizeof guest
		             ? 1 : -ENAMETOOLONG;
		if (ok > 0) {
			memcpy(out, guest, strlen(guest) + 1);
			sl_path_normalize(out);
		}
		*aliased = ok > 0;
	}
	return ok;
}

static int call_path(const struct cow_state *s, const struct sl_call *call, int dirfd,
                     uint64_t addr, char *out, size_t cap, bool *aliased)
{
	if (!addr)
		return 0; /* the kernel's EFAULT */
	/* Read as every builtin reads a caller's path (childfd.h): a name of
	 * the caller's own /proc directory comes back spelled with its pid,
	 * which is never under workdir, as before. */
	int e = 0;
	/* Unconfirmed: resolve confirms it before the layer acts on it. */
	char *p = sl_child_read_path_unverified(call->mem, addr, call->n, true, &e);
	if (!p)
		return -e;
	int ok = str_path(s, call, dirfd, p, out, cap, aliased);
	free(p);
	return ok;
}

/*
 * The made-absolute path p (k > 0) resolved in the merged view.  What was
 * read of the caller (its string, its cwd or fd link) was not confirmed:
 * a path the layer leaves alone passes as it is (the kernel reads the
 * string again; an answer to a notification no longer pending goes
 * nowhere), but before the layer acts on one the notification must still
 * be pending, so the pid still named the caller when it was read.
 */
static int resolve(struct cow_state *s, const struct sl_call *call, int k, const char *p,
                   bool aliased, bool follow, struct sl_cow_res *res)
{
	if (k <= 0)
		return k;
	int r = sl_cow_resolve(s->cow, &s->space, p, follow, res);
	if (r < 0)
		return r;
	res->shadowed |= aliased && res->inside;
	if (!res->inside && !res->shadowed)
		return 0;
	return sl_notif_valid(call->listener, call->n->id) ? 1 : -ESRCH;
}

/* Resolve the path a call names in the merged view (cowpath.h).  1 with
 * *res filled; 0: not ours, pass; -errno: the answer. */
int sl_cowb_resolve_arg(struct cow_state *s, const struct sl_call *call, int dirfd, uint64_t addr,
                        bool follow, struct sl_cow_res *res)
{
	char p[PATH_MAX];
	bool aliased = false;
	int k = call_path(s, call, dirfd, addr, p, sizeof p, &aliased);
	return resolve(s, call, k, p, aliased, follow, res);
}

int sl_cowb_resolve_str(struct cow_state *s, const struct sl_call *call, const char *path,
                        bool follow, struct sl_cow_res *res)
{
	char p[PATH_MAX];
	bool aliased = false;
	int k = str_path(s, call, AT_FDCWD, path, p, sizeof p, &aliased);
	return resolve(s, call, k, p, aliased, follow, res);
}
