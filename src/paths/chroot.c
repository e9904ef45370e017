/*
 * chroot.c — the guest's view of the filesystem (see chroot.h).
 *
 * A guest path is walked as the guest sees it first (view_resolve: one
 * name at a time, symlinks read and followed at the guest's level, so an
 * absolute target is a guest path that may cross into a mount or back
 * out, ".." goes to the parent of what was reached and stops at "/"),
 * then the canonical path is mapped (the longest mount prefix wins, else
 * the rootfs) and opened by the kernel from that directory's fd with
 * RESOLVE_IN_ROOT: every step, the walk's own included, stays inside that
 * directory whatever a racing rename does.  RESOLVE_NO_MAGICLINKS is
 * always added: a /proc magic link followed in the supervisor would name
 * the supervisor's objects.
 *
 * /proc in the view (a mount of the host's) is walked for the caller the
 * chroot builtin names (sl_view_for): "self" and "thread-self" lead to
 * its /proc/TGID and /proc/TGID/task/TID (as the kernel's for a worker
 * thread too), not to ours; a process's magic links (exe, cwd, root,
 * fd/N: absolute or "type:[...]" targets) are never followed by the walk
 * (EACCES: their text is a host path or no path at all); and a /proc
 * file reached is subject to the /proc policy (procpolicy.h: only the
 * sandbox's own processes, the kernel files it denies), as on opens.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "launch/caps.h"
#include "supervisor/childfd.h"
#include "paths/chroot.h"
#include "paths/interp.h"
#include "paths/walk.h"
#include "opener/procpolicy.h"
#include "util.h"

struct view_mount {
	char *virt, *host;
	int fd;    /* the host directory; for a file, the directory holding it */
	char *name; /* a file's name in that directory, else NULL */
	bool ro;
};

struct sl_view {
	char *root;
	int rootfd;
	int procfd; /* the host's /proc, for the /proc policy */
	struct view_mount m[SL_MAX_MOUNTS];
	size_t n;
	sl_strvec write, deny; /* cfg's fs_write, fs_deny (canonical) */
};

static int open_dir(const char *p)
{
	return sl_fd_high(open(p, O_PATH | O_DIRECTORY | O_CLOEXEC));
}

/* A mount's fd: its directory, or (a file) the directory holding it and
 * the file's name there.  false with errno. */
static bool open_mount(struct view_mount *m, bool file)
{
	if (!file)
		return (m->fd = open_dir(m->host)) >= 0;
	char *slash = strrchr(m->host, '/');
	if (!(m->name = sl_strdup(slash + 1)))
		return false;
	*slash = '\0';
	m->fd = open_dir(slash == m->host ? "/" : m->host);
	*slash = '/';
	return m->fd >= 0;
}

struct sl_view *sl_view_new(const struct sandlock_sandbox *cfg, char **msg)
{
	struct sl_view *v = calloc(1, sizeof(*v));
	if (!v || !(v->root = sl_strdup(cfg->chroot))) {
		free(v);
		*msg = sl_strdup("out of memory");
		return NULL;
	}
	v->rootfd = open_dir(v->root);
	v->procfd = open_dir("/proc");
	bool ok = v->rootfd >= 0 && v->procfd >= 0;
	for (size_t i = 0; ok && i < cfg->n_mounts; i++) {
		struct view_mount *m = &v->m[v->n++];
		m->virt = sl_strdup(cfg->mounts[i].virt);
		m->host = sl_strdup(cfg->mounts[i].host);
		m->ro = cfg->mounts[i].ro;
		m->fd = -1;
		ok = m->virt && m->host && open_mount(m, cfg->mounts[i].file);
	}
	for (size_t i = 0; ok && i < cfg->fs_write.n; i++)
		ok = sl_strvec_push(&v->write, cfg->fs_write.v[i]) == 0;
	for (size_t i = 0; ok && i < cfg->fs_deny.n; i++)
		ok = sl_strvec_push(&v->deny, cfg->fs_deny.v[i]) == 0;
	if (!ok) {
		*msg = sl_asprintf("chroot '%s': cannot open the view: %s", cfg->chroot,
		                   strerror(errno ? errno : ENOMEM));
		sl_view_free(v);
		return NULL;
	}
	return v;
}

void sl_view_free(struct sl_view *v)
{
	if (!v)
		return;
	if (v->rootfd >= 0)
		close(v->rootfd);
	if (v->procfd >= 0)
		close(v->procfd);
	for (size_t i = 0; i < v->n; i++) {
		if (v->m[i].fd >= 0)
			close(v->m[i].fd);
		free(v->m[i].virt);
		free(v->m[i].host);
		free(v->m[i].name);
	}
	sl_strvec_free(&v->write);
	sl_strvec_free(&v->deny);
	free(v->root);
	free(v);
}

/* Length of prefix if p is prefix or lies below it, else 0. */
static size_t below(const char *p, const char *prefix)
{
	size_t k = strlen(prefix);
	if (strcmp(prefix, "/") == 0)
		return 1;
	return strncmp(p, prefix, k) == 0 && (p[k] == '/' || p[k] == '\0') ? k : 0;
}

/* The deepest mount whose guest path (host: its host path) holds p, and
 * that path's length in *len; NULL (and 0) when none does. */
static const struct view_mount *deepest_mount(const struct sl_view *v, const char *p,
                                              bool host, size_t *len)
{
	const struct view_mount *bm = NULL;
	*len = 0;
	for (size_t i = 0; i < v->n; i++) {
		size_t k = below(p, host ? v->m[i].host : v->m[i].virt);
		if (k > *len) {
			*len = k;
			bm = &v->m[i];
		}
	}
	return bm;
}

/* The mount (or rootfs) holding canonical guest path norm: *base, the
 * rest of the path into out ("." for the base itself), *ro. */
static int map_lexical(const struct sl_view *v, const char *norm, int *base, char *out,
                       size_t cap, bool *ro)
{
	size_t best;
	const struct view_mount *bm = deepest_mount(v, norm, false, &best);
	const char *rest = norm + best;
	while (*rest == '/')
		rest++;
	*base = bm ? bm->fd : v->rootfd;
	*ro = bm ? bm->ro : false;
	if (bm && bm->name) { /* a file: its name in its directory, nothing below */
		if (*rest)
			return ENOTDIR;
		rest = bm->name;
	}
	if (snprintf(out, cap, "%s", *rest ? rest : ".") >= (int)cap)
		return ENAMETOOLONG;
	return 0;
}

/* An O_PATH fd of the canonical guest path p itself (its last name not
 * followed, no symlink before it): the fd, or -errno. */
static int view_open_link(const struct sl_view *v, const char *p)
{
	char rel[PATH_MAX];
	int base;
	bool ro;
	int e = map_lexical(v, p, &base, rel, sizeof rel, &ro);
	if (e)
		return -e;
	struct open_how how = {
		.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	int fd = (int)syscall(SYS_openat2, base, rel, &how, sizeof how);
	return fd < 0 ? -errno : fd;
}

/* The caller a walk on this thread is for (sl_view_for); tgid looked up
 * when a self link first needs it (0: not yet). */
static __thread struct {
	const sandlock_notif_t *n;
	pid_t init;
	long tgid;
} tl_for;

void sl_view_for(const sandlock_notif_t *n, pid_t init)
{
	tl_for.n = n;
	tl_for.init = init;
	tl_for.tgid = 0;
}

static bool on_procfs(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* lstat of p (as view_open_link), *proc: it lies on procfs.  0, or -errno. */
static int view_lstat(const struct sl_view *v, const char *p, struct stat *st, bool *proc)
{
	int fd = view_open_link(v, p);
	if (fd < 0)
		return fd;
	int e = fstat(fd, st) == 0 ? 0 : -errno;
	*proc = on_procfs(fd);
	close(fd);
	return e;
}

/* The target of the symlink p (as view_open_link), into t. */
static int view_readlink(const struct sl_view *v, const char *p, char *t, size_t cap)
{
	int fd = view_open_link(v, p);
	if (fd < 0)
		return fd;
	ssize_t n = readlinkat(fd, "", t, cap - 1);
	int e = n < 0 ? -errno : 0;
	close(fd);
	if (!e)
		t[n] = '\0';
	return e;
}

int sl_view_proc_self(const char *name, char *target, size_t cap)
{
	bool thread = strcmp(name, "thread-self") == 0;
	if (!thread && strcmp(name, "self") != 0)
		return 0;
	if (!tl_for.n)
		return -EACCES; /* no caller: it would be us */
	if (tl_for.tgid <= 0 && (tl_for.tgid = sl_child_tgid(tl_for.n)) < 0)
		return (int)tl_for.tgid;
	int k = thread ? snprintf(target, cap, "%ld/task/%u", tl_for.tgid, tl_for.n->pid)
	               : snprintf(target, cap, "%ld", tl_for.tgid);
	return k < (int)cap ? 0 : -ENAMETOOLONG;
}

/* A procfs link the walk follows, target as read by us: "self" and
 * "thread-self" become the caller's (sl_view_proc_self), other relative
 * ones (net -> self/net) stay; a magic link is refused.  0 or -errno. */
static int proc_link(const char *name, char *target, size_t cap)
{
	if (target[0] == '/' || strchr(target, ':'))
		return -EACCES;
	return sl_view_proc_self(name, target, cap);
}

/* One walk in the view (walk.h): the last name looked at lies on procfs. */
struct view_walk {
	const struct sl_view *v;
	bool proc;
};

/* What a name of the view is: each step opens from a mount or rootfs fd
 * with RESOLVE_IN_ROOT (view_open_link), so the walk itself never leaves
 * the view. */
static int walk_look(void *ud, const char *cand, bool last, struct stat *st, bool *found)
{
	struct view_walk *w = ud;
	(void)last;
	int e = view_lstat(w->v, cand, st, &w->proc);
	*found = e != -ENOENT;
	return e && e != -ENOENT ? e : SL_WALK_ENTRY;
}

/* A symlink's target as the guest sees it (procfs links: proc_link). */
static int walk_readlink(void *ud, const char *cand, const char *name, char *t, size_t cap)
{
	struct view_walk *w = ud;
	int e = view_readlink(w->v, cand, t, cap);
	return e || !w->proc ? e : proc_link(name, t, cap);
}

static const struct sl_walk_ops k_view_walk = { walk_look, walk_readlink };

/*
 * The guest's own path walk (walk.h, the rules COW's walk follows too):
 * symlinks followed as the guest sees them (an absolute target is a guest
 * path: it may lead into a mount, or out of one back into the rootfs),
 * ".." to the parent of what was reached, stopping at "/".  Into out
 * (canonical, absolute); -errno as the kernel's walk would fail (ENOENT,
 * ENOTDIR, ELOOP).
 */
static int view_resolve(const struct sl_view *v, const char *guest, bool follow, char *out,
                        size_t cap)
{
	struct view_walk w = { v, false };
	return sl_path_walk("/", guest, follow, &k_view_walk, &w, out, cap);
}

int sl_view_map(const struct sl_view *v, const char *guest, bool follow, int *base, char *out,
                size_t cap, bool *ro)
{
	if (guest[0] != '/')
		return EINVAL;
	char norm[PATH_MAX];
	int e = view_resolve(v, guest, follow, norm, sizeof norm);
	if (e)
		return -e;
	return map_lexical(v, norm, base, out, cap, ro);
}

bool sl_view_guest(const struct sl_view *v, const char *host, char *out, size_t cap)
{
	size_t best;
	const struct view_mount *bm = deepest_mount(v, host, true, &best);
	const char *rest;
	if (bm) {
		rest = host + best;
		return snprintf(out, cap, "%s%s", bm->virt, rest) < (int)cap;
	}
	size_t k = below(host, v->root);
	if (!k)
		return false;
	rest = strcmp(v->root, "/") == 0 ? host : host + k;
	return snprintf(out, cap, "%s", *rest ? rest : "/") < (int)cap;
}

/* A file of procfs reached for the caller: the /proc policy on its real
 * path.  Without a caller (the opener's walks: it checks what it opened
 * itself) nothing more is asked here.  0 or an errno. */
static int proc_check(const struct sl_view *v, int fd)
{
	char real[PATH_MAX];
	if (tl_for.init <= 0 || !on_procfs(fd))
		return 0;
	if (!sl_fd_path(fd, real, sizeof real))
		return EACCES;
	return sl_proc_policy(v->procfd, tl_for.init, real);
}

int sl_view_open(const struct sl_view *v, const char *guest, int flags, bool *ro)
{
	char rel[PATH_MAX];
	int base;
	int e = sl_view_map(v, guest, !(flags & O_NOFOLLOW), &base, rel, sizeof rel, ro);
	if (e)
		return -e;
	struct open_how how = {
		.flags = (uint64_t)(O_CLOEXEC | flags),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct sl_caps_saved sv;
	if (sl_caps_lower(&sv) < 0)
		return -EPERM; /* never with more rights than the caller */
	int fd = (int)syscall(SYS_openat2, base, rel, &how, sizeof how);
	e = fd < 0 ? errno : 0;
	sl_caps_restore(&sv);
	if (fd >= 0 && (e = proc_check(v, fd))) {
		close(fd);
		fd = -1;
	}
	return fd < 0 ? -e : sl_fd_high(fd);
}

int sl_view_host(const struct sl_view *v, const char *guest, int flags, char *out, size_t cap,
                 bool *ro)
{
	char back[PATH_MAX];
	int fd = sl_view_open(v, guest, flags, ro);
	if (fd < 0)
		return -fd;
	bool named = sl_fd_path(fd, out, cap);
	close(fd);
	if (!named)
		return ENAMETOOLONG;
	/* RESOLVE_IN_ROOT kept it inside; a grant built on it must never
	 * name anything else, so say so again (fail closed). */
	return sl_view_guest(v, out, back, sizeof back) ? 0 : EACCES;
}

bool sl_view_busy(const struct sl_view *v, int dirfd, const char *name)
{
	char dir[PATH_MAX], g[PATH_MAX];
	if (!sl_view_fd_guest(v, dirfd, dir, sizeof dir) ||
	    snprintf(g, sizeof g, "%s/%s", strcmp(dir, "/") ? dir : "", name) >= (int)sizeof g)
		return true;
	for (size_t i = 0; i < v->n; i++)
		if (below(v->m[i].virt, g))
			return true;
	return false;
}

bool sl_view_denied(const struct sl_view *v, const char *host)
{
	for (size_t i = 0; i < v->deny.n; i++)
		if (sl_path_under(host, v->deny.v[i]))
			return true;
	return false;
}

bool sl_view_writable(const struct sl_view *v, const char *host)
{
	if (sl_view_denied(v, host))
		return false;
	for (size_t i = 0; i < v->n; i++)
		if (v->m[i].ro && sl_path_under(host, v->m[i].host))
			return false;
	for (size_t i = 0; i < v->n; i++)
		if (!v->m[i].ro && sl_path_under(host, v->m[i].host))
			return true;
	for (size_t i = 0; i < v->write.n; i++)
		if (sl_path_under(host, v->write.v[i]))
			return true;
	return false;
}

bool sl_view_fd_guest(const struct sl_view *v, int fd, char *out, size_t cap)
{
	char host[PATH_MAX];
	return sl_fd_path(fd, host, sizeof host) && sl_view_guest(v, host, out, cap);
}

int sl_view_call_path(const struct sl_view *v, int listener, const sandlock_notif_t *n, int dirfd,
                      const char *path, char *out, size_t cap)
{
	if (path[0] == '/')
		return snprintf(out, cap, "%s", path) < (int)cap ? 0 : ENAMETOOLONG;
	int fd = sl_child_dirfd(listener, n, dirfd);
	if (fd < 0)
		return -fd;
	char dir[PATH_MAX];
	bool in = sl_view_fd_guest(v, fd, dir, sizeof dir);
	close(fd);
	if (!in)
		return EACCES; /* a starting point outside the guest's tree */
	if (snprintf(out, cap, "%s/%s", dir, path) >= (int)cap)
		return ENAMETOOLONG;
	return 0;
}

/*
 * The kernel looks an interpreter up by host path: it must be the file
 * the guest sees at that path (a mount of the host's /lib, or an
 * identical tree), never a host program the guest cannot name.
 */
static int interp_same(const struct sl_view *v, const char *interp)
{
	if (!interp[0])
		return 0;
	if (interp[0] != '/')
		return ENOEXEC;
	bool ro;
	int in = sl_view_open(v, interp, O_PATH, &ro);
	if (in < 0)
		return ENOENT;
	int host = open(interp, O_PATH | O_CLOEXEC);
	struct stat a, b;
	bool same = host >= 0 && fstat(in, &a) == 0 && fstat(host, &b) == 0 &&
	            a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	close(in);
	if (host >= 0)
		close(host);
	return same ? 0 : EACCES;
}

int sl_view_exec_check(const struct sl_view *v, int fd)
{
	struct stat st;
	struct statvfs vfs;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || fstatvfs(fd, &vfs) < 0 ||
	    (vfs.f_flag & ST_NOEXEC))
		return EACCES;
	/* Execute permission with the caller's rights (our capabilities
	 * lowered), as the kernel will check it: an exec that fails after
	 * the rewrite would leave the caller's memory changed. */
	struct sl_caps_saved caps;
	if (sl_caps_lower(&caps) < 0)
		return EPERM;
	int x = (int)syscall(__NR_faccessat2, fd, "", X_OK, AT_EACCESS | AT_EMPTY_PATH);
	int xe = errno;
	sl_caps_restore(&caps);
	if (x < 0)
		return xe;
	if (!v)
		return 0; /* the interpreter's host path is the guest's: the kernel checks */
	/* An O_PATH fd cannot be read: reopened with the caller's rights. */
	char p[64], interp[PATH_MAX];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	if (sl_caps_lower(&caps) < 0)
		return EPERM;
	int rd = open(p, O_RDONLY | O_CLOEXEC);
	int e = rd < 0 ? errno : 0;
	sl_caps_restore(&caps);
	if (!e)
		e = sl_exec_interp(rd, interp, sizeof interp);
	if (!e)
		e = interp_same(v, interp);
	if (rd >= 0)
		close(rd);
	return e;
}
