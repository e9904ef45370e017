/*
 * cow.c — the copy-on-write workdir (issue 10): every write-side path
 * call under cfg->workdir is performed by the supervisor inside the COW
 * layer (src/cow/), never by the kernel on the real tree.
 *
 * ON when workdir is set.  FIRST phase, so it runs before the /proc view
 * (LAST on the open family and getdents64) and the metadata guard (LAST
 * on chmod/chown/utimes): for a path outside workdir it passes and the
 * chain goes on unchanged; for a path inside it decides:
 *   - open/openat/creat for writing (or O_CREAT/O_TRUNC): the file is
 *     copied up (or created) in the upper layer, opened there and the fd
 *     injected; reading a file that the upper layer holds opens that copy;
 *     reading a real, untouched file passes (the kernel, or the /proc
 *     view's opener, opens it: Landlock grants workdir read-only);
 *   - unlink*, rmdir, mkdir*, rename* (NOREPLACE, EXCHANGE), link*,
 *     symlink*, mknod*, truncate, chmod/chown/utimensat by path: staged;
 *   - getdents64 on a workdir directory: the merged listing, whiteouts
 *     hidden, written into the caller's buffer (its fd's offset counts
 *     entries);
 *   - the stat family, access, readlink: answered from the upper copy when
 *     there is one, ENOENT for a deleted path, else passed on;
 *   - with max_disk, the fd calls that can grow a file (write family,
 *     fallocate, ftruncate, ...): performed and charged by cowwrite.c when
 *     the fd is a staged file, passed on otherwise.
 *
 * PATHS: the string is made absolute (dirfd, cwd; a dirfd in the upper
 * layer stands for the real directory it mirrors) and normalized
 * lexically ("dir/../x" is "x", as the caller wrote it), then walked in
 * the merged view (cowpath.c), so symlinks are followed as staged; every
 * operation gets the canonical rel path.  Under chroot the same happens
 * in guest paths: workdir is the rootfs or a mount (builder.c), the mount
 * points below it are left to the chroot builtin, which runs next.
 *
 * FAIL CLOSED: Landlock grants workdir read-only and the storage not at
 * all (builder.c), so a call this builtin misses (or a path spelled so
 * that it is not recognized as under workdir: /proc/self/fd/N, a symlink
 * outside workdir pointing in) is refused by the kernel instead of
 * writing the real tree.
 *
 * At the end of the run (finish) the change list is computed and, per
 * on_exit / on_error, committed, thrown away or kept.
 *
 * This file holds the builtin's life and the decision of which part a
 * call goes to; the parts sit beside it, sharing state.h: callargs.c
 * (what a call's arguments say), callpath.c (the path it names, in the
 * merged view), open.c (opens, listings), stat.c (lookups; paths that
 * left workdir), stage.c (metadata, rename/link, truncate), exec.c
 * (exec, chdir, getcwd), sock.c (unix sockets bound under workdir, for
 * netdest).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "supervisor/childfd.h"
#include "compat.h"
#include "cow/cowwrite.h"
#include "syscalls.h"
#include "launch/landlock.h"
#include "run/result.h"
#include "builtins/builtin.h"
#include "supervisor/services.h"
#include "builtins/cow/callargs.h"
#include "builtins/cow/callpath.h"
#include "builtins/cow/exec.h"
#include "builtins/cow/open.h"
#include "builtins/cow/sock.h"
#include "builtins/cow/stage.h"
#include "builtins/cow/stat.h"

/* The path calls the layer answers (syscalls.h's classes; openat2 never
 * reaches it: the filter answers ENOSYS) ... */
static const sl_sys_class k_cow_classes[] = {
	sl_sys_open_family, sl_sys_path_lookup, sl_sys_path_change,
	sl_sys_path_xattr,  sl_sys_exec_like,   sl_sys_cwd,
};
/* ... getdents64, and the metadata calls it stages: fchmodat2 and the
 * utime family reach the metadata guard (meta.c) unstaged. */
static const int k_cow_nrs[] = {
	__NR_getdents64, SL_NR_chmod,  __NR_fchmodat, SL_NR_chown,
	SL_NR_lchown,    __NR_fchownat, __NR_utimensat,
};

/* A single-path call on the canonical rel (follow: as sl_sys_path_follows said). */
static bool decide_rel(struct cow_state *s, const struct sl_call *call, const char *rel,
                       bool shadowed, bool follow, sandlock_action_t *act)
{
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	mode_t um = 0;
	switch (nr) {
	case SL_NR_open:
		return sl_cowb_open(s, call, rel, shadowed, (int)a[1], (mode_t)a[2], act);
	case __NR_openat:
		return sl_cowb_open(s, call, rel, shadowed, (int)a[2], (mode_t)a[3], act);
	case SL_NR_creat:
		return sl_cowb_open(s, call, rel, shadowed, O_CREAT | O_WRONLY | O_TRUNC, (mode_t)a[1], act);
	case SL_NR_unlink:
		return answer(act, sl_cow_unlink(s->cow, rel, false));
	case SL_NR_rmdir:
		return answer(act, sl_cow_unlink(s->cow, rel, true));
	case __NR_unlinkat:
		return answer(act, sl_cow_unlink(s->cow, rel, (a[2] & AT_REMOVEDIR) != 0));
	case SL_NR_mkdir:
	case __NR_mkdirat:
		um = sl_child_umask(call->listener, call->n);
		return answer(act, sl_cow_mkdir(s->cow, rel, (mode_t)a[nr == SL_NR_mkdir ? 1 : 2] & 07777 & ~um));
	case SL_NR_mknod:
	case __NR_mknodat: {
		int i = nr == SL_NR_mknod ? 1 : 2;
		mode_t m = (mode_t)a[i];
		um = sl_child_umask(call->listener, call->n);
		return answer(act, sl_cow_mknod(s->cow, rel, (m & S_IFMT) | (m & 07777 & ~um), (dev_t)a[i + 1]));
	}
	case SL_NR_symlink:
	case __NR_symlinkat: {
		char *t = sandlock_mem_read_string(call->mem, a[0], PATH_MAX);
		long r = t ? sl_cow_symlink(s->cow, t, rel) : -EFAULT;
		sandlock_string_free(t);
		return answer(act, r);
	}
	case __NR_truncate:
		return answer(act, sl_cowb_truncate(s, rel, a[1]));
	case SL_NR_chmod: case SL_NR_chown: case SL_NR_lchown: case __NR_fchmodat: case __NR_fchownat:
	case __NR_utimensat: case __NR_setxattr: case __NR_lsetxattr: case __NR_removexattr:
	case __NR_lremovexattr:
		return sl_cowb_meta(s, call, rel, follow, act);
	default: /* the stat family, access, readlink, getxattr, listxattr */
		return sl_cowb_stat(s, call, rel, shadowed, follow, act);
	}
}

static bool cow_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	struct cow_state *s = state;
	if (!s)
		return false;
	const uint64_t *a = call->n->args;
	int nr = call->n->syscall_nr;
	/* Nothing staged yet: a read sees the real tree, no need to look. */
	if (sl_cow_untouched(s->cow) && sl_cowb_reads_only(nr, a))
		return false;
	if (nr == __NR_getdents64)
		return sl_cowb_dents(s, call, act);
	if (sl_sys_is_exec_like(nr))
		return sl_cowb_exec(s, call, act);
	if (nr == __NR_chdir)
		return sl_cowb_chdir(s, call, act);
	if (nr == __NR_getcwd)
		return sl_cowb_getcwd(s, call, act);
	long ret;
	if (sl_cowwrite_is(nr))
		return sl_cowwrite(s->cow, call->listener, call->n, call->mem, &ret) &&
		       answer(act, ret);
	int dot = sl_cowb_dot_refusal(call);
	if (dot)
		return answer(act, -dot);
	if (nr == SL_NR_rename)
		return sl_cowb_pair(s, call, AT_FDCWD, a[0], AT_FDCWD, a[1], act);
	if (nr == __NR_renameat || nr == __NR_renameat2)
		return sl_cowb_pair(s, call, (int)(int32_t)a[0], a[1], (int)(int32_t)a[2], a[3], act);
	if (nr == SL_NR_link)
		return sl_cowb_pair(s, call, AT_FDCWD, a[0], AT_FDCWD, a[1], act);
	if (nr == __NR_linkat)
		return sl_cowb_pair(s, call, (int)(int32_t)a[0], a[1], (int)(int32_t)a[2], a[3], act);
	int dirfd;
	uint64_t path;
	if (!sl_sys_path_arg(nr, a, &dirfd, &path))
		return false;
	if (nr == __NR_utimensat && path == 0)
		return false; /* futimens: on the fd itself */
	bool follow = sl_sys_path_follows(nr, a);
	struct sl_cow_res *res = malloc(sizeof(*res));
	if (!res)
		return answer(act, -ENOMEM);
	int k = sl_cowb_resolve_arg(s, call, dirfd, path, follow, res);
	/* A read of a real file the walk found where the kernel would (the
	 * workdir itself aside: its link count is the view's) passes at once:
	 * open.c and stat.c would look it up again only to pass it. */
	bool real = k > 0 && res->inside && res->real && !res->shadowed && res->path[0] &&
	            sl_cowb_reads_only(nr, a);
	bool r = k < 0 ? answer(act, k)
	         : !k || real ? false
	         : !res->inside ? sl_cowb_outside(s, call, res->path, follow, act)
	         : decide_rel(s, call, res->path, res->shadowed, follow, act);
	free(res);
	return r;
}

static int cow_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	if (!cfg->workdir)
		return 0;
	size_t ncls = sizeof k_cow_classes / sizeof k_cow_classes[0];
	if (sl_traps_add_classes(out, k_cow_classes, ncls) < 0 ||
	    sl_traps_add_all(out, k_cow_nrs, sizeof k_cow_nrs / sizeof k_cow_nrs[0]) < 0)
		return -1;
	if (cfg->max_disk && sl_traps_add_all(out, sl_cowwrite_nrs, sl_cowwrite_nrs_count) < 0)
		return -1;
	return 0;
}

static void cow_free(void *state)
{
	struct cow_state *s = state;
	if (!s)
		return;
	sl_exec_undo_release(&s->undo);
	sl_cow_free(s->cow, false);
	sl_dirsort_free(s->sorted);
	sl_strvec_free(&s->holes);
	free(s->root);
	free(s);
}

/*
 * Under chroot, paths are guest paths: workdir's place in the view (the
 * builder made sure it has one: the rootfs, or a directory of it or of a
 * mount) and the mount points below it, which belong to their mounts.
 */
static int chroot_space(struct cow_state *s, const struct sandlock_sandbox *cfg,
                        struct sl_view *view, char **msg)
{
	char g[PATH_MAX];
	s->view = view; /* the run's one view (services.h) */
	if (!sl_view_guest(s->view, cfg->workdir, g, sizeof g)) {
		*msg = sl_asprintf("workdir '%s' is not in the chroot's view", cfg->workdir);
		return -1;
	}
	if (!(s->root = sl_strdup(g)))
		goto oom;
	for (size_t i = 0; i < cfg->n_mounts; i++) {
		const char *v = cfg->mounts[i].virt;
		if (!sl_path_under(v, g) || strcmp(v, g) == 0)
			continue;
		const char *rel = v + strlen(g);
		while (*rel == '/')
			rel++;
		if (sl_strvec_push(&s->holes, rel) < 0)
			goto oom;
	}
	return 0;
oom:
	*msg = sl_strdup("out of memory");
	return -1;
}

static int cow_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                    char **msg)
{
	if (!cfg->workdir)
		return 0;
	struct cow_state *s = calloc(1, sizeof(*s));
	if (!s) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	s->cow = sl_cow_new(cfg->workdir, cfg->fs_storage, cfg->max_disk, msg);
	if (!s->cow) {
		free(s);
		return -1;
	}
	s->on_exit = cfg->on_exit;
	s->policy = cfg->policy_fn != NULL;
	s->on_error = cfg->on_error;
	int e = cfg->chroot ? chroot_space(s, cfg, sv->view, msg)
	        : (s->root = sl_strdup(cfg->workdir)) ? 0 : -1;
	if (!e && cfg->deterministic_dirs && !(s->sorted = sl_dirsort_new()))
		e = -1;
	if (e) {
		if (!*msg)
			*msg = sl_strdup("out of memory");
		cow_free(s);
		return -1;
	}
	s->space.root = s->root;
	s->space.holes = &s->holes;
	sl_cowb_sock_offer(s, sv); /* unix sockets bound under workdir (sock.c) */
	*state = s;
	return 0;
}

/* The run is over: list the changes, then commit, abort or keep. */
static void cow_finish(void *state, struct sandlock_result *r)
{
	struct cow_state *s = state;
	if (!s || !s->cow)
		return;
	bool ok = r->reason == SANDLOCK_EXIT_EXITED && r->exit_code == 0;
	int action = ok ? s->on_exit : s->on_error;
	int e = sl_cow_changes(s->cow, &r->changes);
	bool keep = action == SANDLOCK_BRANCH_KEEP;
	if (e) {
		r->cow_error = sl_asprintf("cannot list the changes: %s", strerror(-e));
		keep = true;
	} else if (action == SANDLOCK_BRANCH_COMMIT) {
		e = sl_cow_commit(s->cow, &r->changes, &r->conflicts);
		if (e == -EBUSY) /* cowjournal.c: the workdir's commit lock */
			r->cow_error = sl_strdup("commit failed: another commit into the workdir "
			                         "held its lock for a minute");
		else if (e)
			r->cow_error = sl_asprintf("commit failed: %s", strerror(-e));
		keep = e || r->conflicts.n > 0; /* never lose staged work */
	}
	if (keep)
		r->cow_kept = sl_strdup(sl_cow_upper_path(s->cow));
	sl_cow_free(s->cow, keep);
	s->cow = NULL;
}

static void cow_answered(void *state, const sandlock_notif_t *n)
{
	struct cow_state *s = state;
	if (s)
		sl_exec_answered(&s->undo, n);
}

/* The upper layer is readable and executable by the guest (a program it
 * built runs from there, exec.c), never writable: writes go through
 * the fds this builtin hands out, so max_disk and commit stay ours. */
static int cow_ruleset(void *state, const struct sandlock_sandbox *cfg, int ruleset_fd, char **msg)
{
	struct cow_state *s = state;
	return s && s->cow ? sl_landlock_grant_read(ruleset_fd, cfg, sl_cow_upper_path(s->cow), msg)
	                   : 0;
}

const struct sl_builtin sl_builtin_cow = {
	.name = "copy-on-write workdir",
	.setting = "workdir (the copy-on-write layer needs the supervisor)",
	.phase = SL_PHASE_FIRST,
	.syscalls = cow_syscalls,
	.init = cow_init,
	.free = cow_free,
	.ruleset = cow_ruleset,
	.decide = cow_decide,
	.answered = cow_answered,
	.finish = cow_finish,
	.needs_opener = true, /* reads reached through the merged view */
};
