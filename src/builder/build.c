/*
 * build.c — sandlock_sandbox_build: the builder's raw values resolved
 * (realpath, the chroot view's guest paths, the image), checked against
 * each other (writable paths, deny conflicts, GPUs under chroot), the
 * network and HTTP rules parsed, the workdir's storage and the private
 * /tmp made; then the configuration moves into a sandbox.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builder/builder.h"
#include "builder/builderhttp.h"
#include "builder/image.h"
#include "cow/cowstore.h"
#include "launch/filter.h"
#include "launch/launch.h"
#include "launch/tmpdir.h"
#include "paths/chroot.h"

/* realpath every entry of raw into out; the first missing path is an error. */
static int resolve_all(const sl_strvec *raw, sl_strvec *out, int *err, char **msg)
{
	for (size_t i = 0; i < raw->n; i++) {
		char *r = realpath(raw->v[i], NULL);
		if (!r) {
			int e = errno;
			return sl_fail(err, msg, e == ENOMEM ? SANDLOCK_ERR_NOMEM : SANDLOCK_ERR_NOT_FOUND,
			               "cannot resolve path '%s': %s", raw->v[i], strerror(e));
		}
		int rc = sl_strvec_push(out, r);
		free(r);
		if (rc < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	return 0;
}

/* True if canonical path p is equal to or below canonical dir. */
static bool path_within(const char *p, const char *dir)
{
	size_t n = strlen(dir);
	if (strcmp(dir, "/") == 0)
		return true;
	return strncmp(p, dir, n) == 0 && (p[n] == '\0' || p[n] == '/');
}

/*
 * Writable /proc (or an ancestor of it) would let the child write
 * /proc/<supervisor or itself>/mem and undo every other restriction.
 */
static int check_writable(const struct sandlock_sandbox *c, int *err, char **msg)
{
	for (size_t i = 0; i < c->fs_write.n; i++) {
		const char *w = c->fs_write.v[i];
		if (path_within(w, "/proc") || path_within("/proc", w))
			return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
			               "fs_write '%s' would make /proc writable", w);
	}
	return 0;
}

/*
 * The COW workdir: Landlock grants it read-only (writes under it are
 * staged by the supervisor, so a write grant on it or inside it is
 * dropped; one on an ancestor would let the child write the real tree,
 * and is refused).  The storage must be unreachable to the child: denied
 * when it lies inside a grant.
 */
/* The fs_mount whose host directory holds path (the deepest), or NULL. */
static const struct sl_mount *mount_holding(const struct sandlock_sandbox *c, const char *path)
{
	const struct sl_mount *in = NULL;
	for (size_t i = 0; i < c->n_mounts; i++)
		if (path_within(path, c->mounts[i].host) &&
		    (!in || strlen(c->mounts[i].host) > strlen(in->host)))
			in = &c->mounts[i];
	return in;
}

/*
 * Under chroot the COW layer works on what the guest sees: workdir must
 * be in its view (the rootfs or a directory of it, or a read-write
 * mount's host directory), seen at one guest path, and no other mount's
 * host directory may lie inside it (the same files at two guest places).
 */
static int chroot_workdir(const struct sandlock_sandbox *c, int *err, char **msg)
{
	const struct sl_mount *in = mount_holding(c, c->workdir);
	if (!in && !path_within(c->workdir, c->chroot))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "workdir '%s': with chroot it must be the rootfs, a directory in it, "
		               "or an fs_mount's host directory", c->workdir);
	if (in && in->ro)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "workdir '%s' is inside the read-only fs_mount '%s'", c->workdir, in->virt);
	if (in && strcmp(in->host, c->workdir) != 0)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "workdir '%s' is inside the read-write fs_mount '%s', which could write "
		               "it: make workdir the mount's host directory '%s'", c->workdir, in->virt,
		               in->host);
	char g[PATH_MAX];
	const char *rest = c->workdir + strlen(in ? in->host : c->chroot);
	snprintf(g, sizeof g, "%s%s", in ? in->virt : "", *rest || in ? rest : "/");
	for (size_t i = 0; i < c->n_mounts; i++) {
		const struct sl_mount *m = &c->mounts[i];
		if (m == in)
			continue;
		if (path_within(m->host, c->workdir))
			return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
			               "fs_mount '%s': its host directory '%s' is inside workdir '%s'",
			               m->virt, m->host, c->workdir);
		if (path_within(g, m->virt) && (!in || strlen(m->virt) > strlen(in->virt)))
			return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
			               "workdir '%s' (guest '%s') is hidden by fs_mount '%s'", c->workdir,
			               g, m->virt);
	}
	return 0;
}

/* True if canonical path p lies in one of the fs_read / fs_write grants. */
static bool granted(const struct sandlock_sandbox *c, const char *p)
{
	for (size_t i = 0; i < c->fs_read.n; i++)
		if (path_within(p, c->fs_read.v[i]))
			return true;
	for (size_t i = 0; i < c->fs_write.n; i++)
		if (path_within(p, c->fs_write.v[i]))
			return true;
	return false;
}

/*
 * The default staging storage: a new private directory in the first of
 * $TMPDIR (or /tmp), /var/tmp, /dev/shm that no grant covers and that is
 * not mounted noexec.  Landlock cannot take a subtree back out of a
 * grant, so storage inside a granted tree is denied by granting that
 * tree's other entries one by one, which leaves the tree itself without
 * create rights: "-w /tmp --workdir ." would make /tmp unwritable (gcc's
 * temporary files fail).  Failing that, one no grant covers; then the
 * first candidate, denied (still safe).
 */
static int make_storage(struct sandlock_sandbox *c, int *err, char **msg)
{
	char t[PATH_MAX];
	int lock = -ENOENT;
	for (size_t pass = 0; pass < 3 && lock < 0; pass++)
		for (size_t i = 0; sl_tmp_candidate(i) && lock < 0; i++) {
			char *dir = realpath(sl_tmp_candidate(i), NULL);
			bool ok = dir && (pass == 2 || !granted(c, dir)) &&
			          (pass > 0 || sl_dir_exec_allowed(dir)) && !path_within(dir, c->workdir);
			/* Owned by a lock file (cowstore.h): storage left by
			 * SIGKILLed callers is swept here, a live one never. */
			if (ok)
				sl_store_sweep(dir, "sandlock-cow-", SL_STORE_INSIDE);
			int r = ok ? sl_store_make(dir, "sandlock-cow-", SL_STORE_INSIDE, t, sizeof t) : -ENOENT;
			if (ok)
				lock = r;
			free(dir);
		}
	if (lock < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "cannot make COW storage: %s",
		               strerror(-lock));
	c->fs_storage = realpath(t, NULL);
	if (!c->fs_storage) {
		int e = errno;
		sl_b_remove_storage(lock, t);
		return sl_fail(err, msg, e == ENOMEM ? SANDLOCK_ERR_NOMEM : SANDLOCK_ERR_SYSTEM,
		               "COW storage '%s': %s", t, strerror(e));
	}
	c->storage_owned = true;
	c->storage_lock = lock;
	return 0;
}

/* The directory the runs' private TMPDIRs are made in: granted like a -w
 * tree, so every builtin that honours fs_write (metadata, unix sockets,
 * the /proc views) treats it as one. */
static int setup_private_tmp(struct sandlock_sandbox *c, int *err, char **msg)
{
	if (!c->private_tmp)
		return 0;
	c->tmp_root = sl_private_tmp_make(err, msg);
	if (!c->tmp_root)
		return -1;
	if (sl_strvec_push(&c->fs_write, c->tmp_root) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	return 0;
}

static int setup_workdir(sandlock_builder_t *b, int *err, char **msg)
{
	struct sandlock_sandbox *c = &b->cfg;
	if (!b->raw_workdir)
		return b->raw_storage ? sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		                                "fs_storage needs workdir") : 0;
	c->workdir = realpath(b->raw_workdir, NULL);
	struct stat st;
	if (!c->workdir || stat(c->workdir, &st) < 0 || !S_ISDIR(st.st_mode))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "workdir '%s': %s", b->raw_workdir,
		               c->workdir ? "not a directory" : strerror(errno));
	/* Its staging storage must lie outside it, and so must everything else. */
	if (strcmp(c->workdir, "/") == 0 && !c->chroot)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "workdir '/': the whole filesystem cannot be staged (the staging "
		               "storage must lie outside it); name your project's directory");
	if (c->chroot && chroot_workdir(c, err, msg) < 0)
		return -1;
	if (b->raw_storage) {
		c->fs_storage = realpath(b->raw_storage, NULL);
		if (!c->fs_storage)
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "fs_storage '%s': %s",
			               b->raw_storage, strerror(errno));
	} else if (make_storage(c, err, msg) < 0) {
		return -1;
	}
	if (path_within(c->fs_storage, c->workdir) || path_within(c->workdir, c->fs_storage))
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "fs_storage '%s' and workdir '%s' overlap", c->fs_storage, c->workdir);
	for (size_t i = 0; i < c->fs_write.n;) {
		const char *w = c->fs_write.v[i];
		if (path_within(c->workdir, w) && strcmp(c->workdir, w) != 0)
			return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
			               "fs_write '%s' contains workdir '%s': the real tree would be "
			               "writable; grant it read-only", w, c->workdir);
		if (path_within(w, c->workdir)) {
			free(c->fs_write.v[i]);
			c->fs_write.v[i] = c->fs_write.v[--c->fs_write.n];
			continue;
		}
		i++;
	}
	if (sl_strvec_push(&c->fs_read, c->workdir) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	bool reachable = false;
	for (size_t i = 0; i < c->fs_read.n; i++)
		reachable |= path_within(c->fs_storage, c->fs_read.v[i]);
	for (size_t i = 0; i < c->fs_write.n; i++)
		reachable |= path_within(c->fs_storage, c->fs_write.v[i]);
	if (reachable && sl_strvec_push(&c->fs_deny, c->fs_storage) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	return 0;
}

/* One fs_mount entry: an absolute virtual path other than "/", an
 * existing host directory. */
static int resolve_mount(const struct sl_mount *raw, struct sl_mount *m, int *err, char **msg)
{
	if (raw->virt[0] != '/')
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "fs_mount '%s': the virtual path must be absolute", raw->virt);
	m->virt = sl_strdup(raw->virt);
	if (!m->virt)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	sl_path_normalize(m->virt);
	if (strcmp(m->virt, "/") == 0)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "fs_mount '%s': cannot mount over the root; use chroot", raw->virt);
	m->host = realpath(raw->host, NULL);
	struct stat st;
	if (!m->host || stat(m->host, &st) < 0 || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "fs_mount '%s': host '%s' is neither a directory nor a regular file",
		               raw->virt, raw->host);
	m->ro = raw->ro;
	m->file = S_ISREG(st.st_mode);
	return 0;
}

/* The mount other than m whose guest path holds m's (the deepest), or
 * NULL: the rootfs. */
static const struct sl_mount *mount_above(const struct sandlock_sandbox *c,
                                          const struct sl_mount *m)
{
	const struct sl_mount *in = NULL;
	for (size_t i = 0; i < c->n_mounts; i++)
		if (&c->mounts[i] != m && sl_path_under(m->virt, c->mounts[i].virt) &&
		    (!in || strlen(c->mounts[i].virt) > strlen(in->virt)))
			in = &c->mounts[i];
	return in;
}

/*
 * A read-only mount over its own place (an OCI readonlyPaths entry in a
 * writable rootfs): its host directory is the one its guest path shows
 * without it, in the rootfs or the mount above it.  Writable tree w
 * holding it is then no other way in when w is that rootfs or mount, or
 * a grant by guest path (those resolve through the view, to the mount);
 * another read-write mount's host directory would be.
 */
static bool self_overlay(const struct sandlock_sandbox *c, const struct sl_mount *m,
                         const char *w)
{
	const struct sl_mount *above = mount_above(c, m);
	const char *base = above ? above->host : c->chroot;
	const char *rest = m->virt + (above && strcmp(above->virt, "/") ? strlen(above->virt) : 0);
	char want[PATH_MAX];
	if (snprintf(want, sizeof want, "%s%s", strcmp(base, "/") ? base : "", rest) >=
	    (int)sizeof want || strcmp(want, m->host) != 0)
		return false;
	for (size_t i = 0; i < c->n_mounts; i++)
		if (&c->mounts[i] != above && !c->mounts[i].ro && strcmp(c->mounts[i].host, w) == 0)
			return false;
	return true;
}

/* The guest's cwd (a guest path) as the host directory behind it. */
static int chroot_cwd(sandlock_builder_t *b, const struct sl_view *v, int *err, char **msg)
{
	struct sandlock_sandbox *c = &b->cfg;
	if (!b->raw_cwd) { /* the guest starts at its "/" */
		free(c->cwd);
		c->cwd = sl_strdup(c->chroot);
		return c->cwd ? 0 : sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	if (b->raw_cwd[0] != '/')
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "cwd '%s': under chroot it must be an absolute guest path", b->raw_cwd);
	char host[PATH_MAX];
	bool ro;
	if (sl_view_host(v, b->raw_cwd, O_PATH | O_DIRECTORY, host, sizeof host, &ro))
		return sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "cwd '%s': not a directory in chroot '%s'",
		               b->raw_cwd, c->chroot);
	c->cwd = sl_strdup(host);
	return c->cwd ? 0 : sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
}

/* The read-only fs_mount whose host directory holds host, or NULL. */
static const struct sl_mount *ro_mount_holding(const struct sandlock_sandbox *c, const char *host)
{
	for (size_t i = 0; i < c->n_mounts; i++)
		if (c->mounts[i].ro && sl_path_under(host, c->mounts[i].host))
			return &c->mounts[i];
	return NULL;
}

/*
 * One fs_read / fs_write / fs_deny entry under chroot: a guest path (a
 * relative one from the guest's "/", as the reference joins it to the
 * rootfs), resolved in the view (symlinks followed at the guest's level,
 * ".." stopping at its "/", each step RESOLVE_IN_ROOT), so the host path
 * granted always lies in the rootfs or a mount: naming a host path, or
 * climbing out, grants nothing outside.  One the view does not have is
 * skipped, as the reference skips it.  A write grant inside a read-only
 * mount is refused (the view would answer EROFS anyway).
 */
static int chroot_grant(const struct sandlock_sandbox *c, const struct sl_view *v,
                        const char *what, const char *guest, sl_strvec *out, int *err,
                        char **msg)
{
	char g[PATH_MAX], host[PATH_MAX];
	if (snprintf(g, sizeof g, "%s%s", guest[0] == '/' ? "" : "/", guest) >= (int)sizeof g)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "%s '%s': path too long", what, guest);
	bool ro;
	int e = sl_view_host(v, g, O_PATH, host, sizeof host, &ro);
	if (e == ENOENT || e == ENOTDIR)
		return 0;
	if (e)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "%s '%s': cannot resolve this guest path in chroot '%s': %s", what,
		               guest, c->chroot, strerror(e));
	const struct sl_mount *m = out == &c->fs_write ? ro_mount_holding(c, host) : NULL;
	if (m)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "%s '%s' is inside the read-only fs_mount '%s': make that mount "
		               "read-write or drop the grant", what, guest, m->virt);
	return sl_strvec_push(out, host) < 0 ? sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory")
	                                     : 0;
}

/* Every fs_read / fs_write / fs_deny entry of b as a guest path. */
static int chroot_grants(sandlock_builder_t *b, const struct sl_view *v, int *err, char **msg)
{
	struct sandlock_sandbox *c = &b->cfg;
	const struct {
		const sl_strvec *raw;
		sl_strvec *out;
		const char *what;
	} lists[] = { { &b->raw_read, &c->fs_read, "fs_read" },
		      { &b->raw_write, &c->fs_write, "fs_write" },
		      { &b->raw_deny, &c->fs_deny, "fs_deny" } };
	for (size_t l = 0; l < sizeof lists / sizeof lists[0]; l++)
		for (size_t i = 0; i < lists[l].raw->n; i++)
			if (chroot_grant(c, v, lists[l].what, lists[l].raw->v[i], lists[l].out, err,
			                 msg) < 0)
				return -1;
	return 0;
}

/*
 * The virtual chroot: the rootfs is granted read (+exec) to Landlock, each
 * mount's host directory read or read-write; fs_read/fs_write/fs_deny are
 * guest paths (chroot_grant).  A workdir under chroot is checked by
 * chroot_workdir.
 */
static int setup_chroot(sandlock_builder_t *b, int *err, char **msg)
{
	struct sandlock_sandbox *c = &b->cfg;
	if (!b->raw_chroot)
		return b->n_raw_mounts ? sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		                                 "fs_mount '%s' needs chroot", b->raw_mounts[0].virt) : 0;
	/* The chroot performs every exec (rewritten to the host path) before
	 * policy_fn's builtin would see it: its exec events would be lost. */
	if (c->policy_fn)
		return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
		               "policy_fn with chroot is not supported yet (exec events would be lost)");
	/* The private directory is a host path the chroot's view cannot show. */
	if (c->private_tmp)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "tmp with chroot: mount a directory of your own at /tmp instead "
		               "(--fs-mount /tmp:HOSTDIR)");
	c->chroot = realpath(b->raw_chroot, NULL);
	struct stat st;
	if (!c->chroot || stat(c->chroot, &st) < 0 || !S_ISDIR(st.st_mode))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "chroot '%s': %s", b->raw_chroot,
		               c->chroot ? "not a directory" : strerror(errno));
	if (sl_strvec_push(&c->fs_read, c->chroot) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < b->n_raw_mounts; i++) {
		struct sl_mount *m = &c->mounts[c->n_mounts++];
		if (resolve_mount(&b->raw_mounts[i], m, err, msg) < 0)
			return -1;
		if (sl_strvec_push(m->ro ? &c->fs_read : &c->fs_write, m->host) < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	struct sl_view *v = sl_view_new(c, msg);
	if (!v)
		return sl_fail(err, NULL, SANDLOCK_ERR_SYSTEM, "%s", "view");
	int rc = chroot_grants(b, v, err, msg);
	if (!rc)
		rc = chroot_cwd(b, v, err, msg);
	sl_view_free(v);
	if (rc < 0)
		return -1;
	/* Once every mount and grant is in: a read-only host directory inside
	 * a writable one (fs_write, or a read-write mount given before or
	 * after it) would be writable through the other, unless the mount
	 * lies over its own place (self_overlay). */
	for (size_t i = 0; i < c->n_mounts; i++)
		for (size_t k = 0; c->mounts[i].ro && k < c->fs_write.n; k++)
			if (sl_path_under(c->mounts[i].host, c->fs_write.v[k]) &&
			    !self_overlay(c, &c->mounts[i], c->fs_write.v[k]))
				return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
				               "fs_mount '%s' is read-only but its host directory '%s' is "
				               "writable through '%s' (fs_write or a read-write fs_mount)",
				               c->mounts[i].virt, c->mounts[i].host, c->fs_write.v[k]);
	return 0;
}

/* A path both allowed and denied is ambiguous: refuse it. */
static int check_deny_conflicts(const struct sandlock_sandbox *c, int *err, char **msg)
{
	for (size_t d = 0; d < c->fs_deny.n; d++) {
		const char *dp = c->fs_deny.v[d];
		for (size_t i = 0; i < c->fs_read.n; i++)
			if (strcmp(dp, c->fs_read.v[i]) == 0)
				return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
				               "'%s' is both in fs_read and fs_deny", dp);
		for (size_t i = 0; i < c->fs_write.n; i++)
			if (strcmp(dp, c->fs_write.v[i]) == 0)
				return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
				               "'%s' is both in fs_write and fs_deny", dp);
	}
	return 0;
}

/* A rule that failed to parse: its reason, with the rule named. */
static int bad_rule(int *err, char **msg, const char *what, const char *spec, char *why)
{
	int code = why && strstr(why, "port out of range") ? SANDLOCK_ERR_BAD_PORT
	                                                  : SANDLOCK_ERR_INVALID;
	sl_fail(err, msg, why ? code : SANDLOCK_ERR_NOMEM, "%s '%s': %s", what, spec,
	        why ? why : "out of memory");
	free(why);
	return -1;
}

/* The TCP connect ports Landlock can enforce as a backstop: only when
 * every TCP rule lists its ports (Landlock cannot say "port P on host H"
 * but the union of ports is still an upper bound). */
static void landlock_connect_ports(struct sandlock_sandbox *c)
{
	c->ll_connect = !c->net.deny_mode;
	for (size_t i = 0; c->ll_connect && i < c->net.n; i++) {
		const struct sl_netrule *x = &c->net.v[i];
		if (!(x->protos & SL_NP_TCP))
			continue;
		if (x->all_ports) {
			c->ll_connect = false;
			break;
		}
		for (size_t k = 0; k < x->nports; k++) {
			bool dup = false;
			for (size_t j = 0; j < c->n_net_connect && !dup; j++)
				dup = c->net_connect[j] == x->ports[k];
			if (dup)
				continue;
			if (c->n_net_connect == sizeof(c->net_connect) / sizeof(c->net_connect[0])) {
				c->ll_connect = false; /* too many for the backstop: on-behalf only */
				break;
			}
			c->net_connect[c->n_net_connect++] = x->ports[k];
		}
	}
	if (!c->ll_connect)
		c->n_net_connect = 0;
}

/* Parse every network rule of the builder into its cfg. */
static int parse_net(sandlock_builder_t *b, int *err, char **msg)
{
	struct sandlock_sandbox *c = &b->cfg;
	if (b->raw_net_allow.n && b->raw_net_deny.n)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "net_allow and net_deny are mutually exclusive");
	if (b->raw_bind_allow.n && b->raw_bind_deny.n)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "net_allow_bind and net_deny_bind are mutually exclusive");
	char *why = NULL;
	for (size_t i = 0; i < b->raw_net_allow.n; i++)
		if (sl_netrules_add(&c->net, b->raw_net_allow.v[i], false, &why) < 0)
			return bad_rule(err, msg, "net_allow", b->raw_net_allow.v[i], why);
	c->net.deny_mode = b->raw_net_deny.n > 0;
	for (size_t i = 0; i < b->raw_net_deny.n; i++)
		if (sl_netrules_add(&c->net, b->raw_net_deny.v[i], true, &why) < 0)
			return bad_rule(err, msg, "net_deny", b->raw_net_deny.v[i], why);
	for (size_t i = 0; i < b->raw_bind_allow.n; i++)
		if (sl_portranges_add(&c->bind_allow, b->raw_bind_allow.v[i], &why) < 0)
			return bad_rule(err, msg, "net_allow_bind", b->raw_bind_allow.v[i], why);
	for (size_t i = 0; i < b->raw_bind_deny.n; i++)
		if (sl_portranges_add(&c->bind_deny, b->raw_bind_deny.v[i], &why) < 0)
			return bad_rule(err, msg, "net_deny_bind", b->raw_bind_deny.v[i], why);
	/* Protocol gating: UDP and ping sockets exist only when a rule can
	 * allow one of their destinations (the filter's socket gate). */
	c->filter.allow_udp = sl_netrules_has_proto(&c->net, SL_NP_UDP);
	c->filter.allow_icmp = sl_netrules_has_proto(&c->net, SL_NP_ICMP);
	landlock_connect_ports(c);
	return 0;
}

/* Resolve every path of the builder into its cfg. */
static int resolve_paths(sandlock_builder_t *b, int *err, char **msg)
{
	/* Under chroot (or an image) the fs lists are guest paths: setup_chroot. */
	bool host = !b->raw_chroot;
	if ((host && (resolve_all(&b->raw_read, &b->cfg.fs_read, err, msg) < 0 ||
	              resolve_all(&b->raw_write, &b->cfg.fs_write, err, msg) < 0 ||
	              resolve_all(&b->raw_deny, &b->cfg.fs_deny, err, msg) < 0)) ||
	    resolve_all(&b->raw_unix, &b->cfg.unix_allow, err, msg) < 0)
		return -1;
	if (b->raw_cwd && !b->raw_chroot) {
		b->cfg.cwd = realpath(b->raw_cwd, NULL);
		if (!b->cfg.cwd)
			return sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "cannot resolve cwd '%s': %s",
			               b->raw_cwd, strerror(errno));
	}
	return 0;
}

/*
 * image: the image's extracted tree becomes the chroot; its WorkingDir the
 * cwd and its Env the whole environment (a container's start), unless
 * cwd / env are given; its command runs when the caller gives none.
 */
static int setup_image(sandlock_builder_t *b, int *err, char **msg)
{
	if (!b->raw_image)
		return 0;
	if (b->raw_chroot)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "image and chroot are exclusive (the image is the rootfs)");
	struct sl_image img;
	char *why = NULL;
	if (sl_image_resolve(b->raw_image, &img, &why) < 0) {
		sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "%s", why ? why : "image: failed");
		free(why);
		return -1;
	}
	struct sandlock_sandbox *c = &b->cfg;
	b->raw_chroot = img.rootfs;
	img.rootfs = NULL;
	if (!b->raw_cwd && img.workdir) {
		b->raw_cwd = img.workdir;
		img.workdir = NULL;
	}
	c->clean_env = true;
	sl_strvec env = c->env; /* the caller's settings go last: they win */
	c->env = img.env;
	img.env = (sl_strvec){ 0 };
	int rc = 0;
	for (size_t i = 0; i < env.n && !rc; i++)
		rc = sl_strvec_push(&c->env, env.v[i]);
	sl_strvec_free(&env);
	c->image_argv = img.argv;
	img.argv = (sl_strvec){ 0 };
	sl_image_free(&img);
	return rc ? sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory") : 0;
}

/* GPU nodes are granted on the host's /dev, which a chroot guest never sees. */
static int check_gpu(const struct sandlock_sandbox *cfg, int *err, char **msg)
{
	if (cfg->gpu_on && cfg->chroot)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "gpu_devices (--gpu) cannot be combined with chroot: the device "
		               "nodes are granted on the host's /dev");
	return 0;
}

SL_EXPORT sandlock_sandbox_t *sandlock_sandbox_build(sandlock_builder_t *b, int *err,
                                                     char **err_msg)
{
	if (err)
		*err = SANDLOCK_OK;
	if (err_msg)
		*err_msg = NULL;
	if (!b) {
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "NULL builder");
		return NULL;
	}
	if (b->err) {
		sl_fail(err, err_msg, b->err, "%s", b->errmsg ? b->errmsg : "invalid configuration");
		sandlock_sandbox_builder_free(b);
		return NULL;
	}
	if (setup_image(b, err, err_msg) < 0 || resolve_paths(b, err, err_msg) < 0 ||
	    setup_chroot(b, err, err_msg) < 0 ||
	    check_writable(&b->cfg, err, err_msg) < 0 ||
	    setup_workdir(b, err, err_msg) < 0 || setup_private_tmp(&b->cfg, err, err_msg) < 0 ||
	    check_deny_conflicts(&b->cfg, err, err_msg) < 0 || sl_build_http(b, err, err_msg) < 0 ||
	    parse_net(b, err, err_msg) < 0 || check_gpu(&b->cfg, err, err_msg) < 0) {
		sandlock_sandbox_builder_free(b);
		return NULL;
	}
	sandlock_sandbox_t *sb = malloc(sizeof(*sb));
	struct sl_prog_cache *progs = sl_prog_cache_new();
	if (!sb || !progs) {
		free(sb);
		sl_prog_cache_free(progs);
		sl_fail(err, err_msg, SANDLOCK_ERR_NOMEM, "out of memory");
		sandlock_sandbox_builder_free(b);
		return NULL;
	}
	/* Move the configuration out of the builder, then free the rest. */
	*sb = b->cfg;
	sb->progs = progs;
	sb->refs = 1;
	memset(&b->cfg, 0, sizeof(b->cfg));
	sandlock_sandbox_builder_free(b);
	return sb;
}
