/*
 * exec.c — the calls that make the kernel walk a path of the merged view
 * itself (execve/execveat, chdir; the host path swapped in for the
 * caller's string until the call is over, execpath.h) and getcwd, which
 * maps a cwd in the upper layer back to the place it mirrors.  Split
 * from cow.c along its sections.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "syscalls.h"
#include "launch/caps.h"
#include "builtins/cow/callpath.h"
#include "builtins/cow/exec.h"

/* The host path the kernel must exec for res (resolved in the merged
 * view, following): into host.  0, 1 when the caller's own string already
 * leads there (pass), or -errno. */
static int exec_target(struct cow_state *s, const struct sl_cow_res *res, char *host, size_t cap)
{
	if (!res->inside) {
		/* Left workdir through something staged: the outside file, by
		 * its host path (under chroot, the guest path opened in the view). */
		if (!s->view)
			return snprintf(host, cap, "%s", res->path) < (int)cap ? 0 : -ENAMETOOLONG;
		bool ro;
		int fd = sl_view_open(s->view, res->path, O_PATH | O_CLOEXEC, &ro);
		if (fd < 0)
			return fd;
		bool ok = sl_fd_path(fd, host, cap);
		close(fd);
		return ok ? 0 : -ENOENT;
	}
	struct stat st;
	int e = 0;
	enum sl_cow_where w = sl_cow_lookup(s->cow, res->path, true, &st, &e);
	if (w == SL_COW_NONE)
		return -e;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (w == SL_COW_LOWER && !res->shadowed)
		return 1;
	if (w == SL_COW_UPPER)
		return snprintf(host, cap, "%s/%s", sl_cow_upper_path(s->cow), res->path) < (int)cap
		               ? 0 : -ENAMETOOLONG;
	return sl_cow_lower_path(s->cow, res->path, host, cap) ? 0 : -ENAMETOOLONG;
}

/*
 * execve/execveat of a path in the merged view.  The kernel runs only
 * what its own lookup finds, on the real tree: a staged program (built in
 * this run) or a real one reached through something staged must be given
 * to it by host path.  The caller's string is replaced (execpath.h: argv
 * stays what the program sees) after the checks the kernel cannot make
 * the same way (under chroot, the interpreter's, chroot.h); Landlock
 * grants the upper layer read + execute (cow.c, cow_ruleset), never write.  An
 * untouched real file passes (the kernel, or the chroot builtin).
 */
bool sl_cowb_exec(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	/* policy_fn must see every exec (builtins/policy.c, after us): a
	 * staged program then cannot run (the kernel does not find it). */
	if (s->policy)
		return false;
	const sandlock_notif_t *n = call->n;
	struct sl_exec_args x;
	sl_sys_exec_args(n->syscall_nr, n->args, &x);
	bool follow = !(x.flags & AT_SYMLINK_NOFOLLOW);
	struct sl_cow_res *res = malloc(sizeof(*res));
	char *host = malloc(PATH_MAX);
	int k = res && host ? sl_cowb_resolve_arg(s, call, x.dirfd, x.path, follow, res) : -ENOMEM;
	k = k > 0 ? exec_target(s, res, host, PATH_MAX) : k == 0 ? 1 : k;
	if (k == 0) {
		struct sl_caps_saved sv;
		int fd = -EPERM;
		if (sl_caps_lower(&sv) == 0) {
			fd = open(host, O_PATH | O_CLOEXEC);
			fd = fd < 0 ? -errno : fd;
			sl_caps_restore(&sv);
		}
		k = fd < 0 ? fd : -sl_view_exec_check(s->view, fd);
		if (!k)
			k = sl_exec_set_path(call, host, res->inside, &s->undo);
		if (fd >= 0)
			close(fd);
		if (!k)
			sandlock_action_set_continue(act);
	}
	free(res);
	free(host);
	return k < 0 ? answer(act, k) : k == 0;
}

/*
 * chdir into a directory of the merged view that the kernel's lookup
 * would not reach (one that exists only in the layer, or a real one
 * reached through something staged): the kernel must chdir, on the
 * caller's string, so that string is swapped for the directory's host
 * path and put back before the caller runs again (execpath.h,
 * sl_path_swap).  The cwd may then lie in the upper layer: relative paths
 * from it name the merged view (callpath.c), and getcwd maps it back.
 */
bool sl_cowb_chdir(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	uint64_t addr = call->n->args[0];
	struct sl_cow_res *res = malloc(sizeof(*res));
	char *host = malloc(PATH_MAX);
	int k = res && host ? sl_cowb_resolve_arg(s, call, AT_FDCWD, addr, true, res) : -ENOMEM;
	if (k > 0 && !res->inside)
		k = 0; /* leaves workdir: its string reaches the same place, or Landlock decides */
	struct stat st, lst;
	int e = 0;
	enum sl_cow_where w = k > 0 ? sl_cow_lookup(s->cow, res->path, true, &st, &e) : SL_COW_NONE;
	bool real = w == SL_COW_LOWER || (w == SL_COW_UPPER && sl_cow_lower_dir(s->cow, res->path, &lst));
	if (k <= 0)
		;
	else if (w == SL_COW_NONE)
		k = -e;
	else if (!S_ISDIR(st.st_mode))
		k = -ENOTDIR;
	else if (real && !res->shadowed)
		k = 0; /* the real directory, as the caller's string says */
	else if (real ? !sl_cow_lower_path(s->cow, res->path, host, PATH_MAX)
	              : snprintf(host, PATH_MAX, "%s/%s", sl_cow_upper_path(s->cow), res->path) >= PATH_MAX)
		k = -ENAMETOOLONG;
	else if ((k = sl_path_swap(call, addr, host, &s->undo)) == 0)
		k = 1;
	free(res);
	free(host);
	if (k > 0)
		sandlock_action_set_continue(act);
	return k < 0 ? answer(act, k) : k > 0;
}

/* getcwd in the upper layer: the path of the place it mirrors (under
 * chroot, the guest's); anywhere else the call passes. */
bool sl_cowb_getcwd(struct cow_state *s, const struct sl_call *call, sandlock_action_t *act)
{
	int fd = sl_child_dirfd(call->listener, call->n, AT_FDCWD);
	if (fd < 0) /* the real getcwd would name the layer's host path */
		return answer(act, fd);
	char cwd[PATH_MAX], out[PATH_MAX];
	bool ok = sl_fd_path(fd, cwd, sizeof cwd);
	close(fd);
	if (!ok)
		return false;
	const char *rel = sl_cow_upper_rel(s->cow, cwd), *real = rel ? NULL : sl_cow_rel(s->cow, cwd);
	char moved[PATH_MAX];
	if (real && sl_cow_real_view(s->cow, real, moved, sizeof moved))
		rel = moved; /* a real directory the run moved */
	if (!rel)
		return false;
	if (snprintf(out, sizeof out, "%s%s%s", s->space.root, rel[0] ? "/" : "", rel) >= (int)sizeof out)
		return answer(act, -ENAMETOOLONG);
	sl_path_normalize(out);
	size_t len = strlen(out) + 1;
	if (len > (size_t)call->n->args[1])
		return answer(act, -ERANGE);
	return answer(act, sandlock_mem_poke(call->mem, call->n->args[0], out, len) == 0
	                           ? (long)len : -EFAULT);
}
