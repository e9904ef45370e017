/*
 * stage.c — the changes staged in the layer that are not opens: metadata
 * (mode, owner, times, xattrs) on the upper copy with the caller's
 * rights, rename and link between two paths, truncate charged to
 * max_disk.  Split from cow.c along its sections.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "syscalls.h"
#include "launch/caps.h"
#include "builtins/cow/callpath.h"
#include "builtins/cow/stage.h"

/* setxattr/removexattr of the upper copy (fd, its magic link p) with the
 * caller's rights: our capabilities lowered, so trusted.* and security.*
 * stay out of its reach as they would.  User xattrs are not allowed on a
 * symlink (EPERM, as the kernel says). */
static long set_xattr(const struct sl_call *call, int fd, const char *p)
{
	const sandlock_notif_t *n = call->n;
	bool rm = n->syscall_nr == __NR_removexattr || n->syscall_nr == __NR_lremovexattr;
	struct stat st;
	if (fstat(fd, &st) < 0 || S_ISLNK(st.st_mode))
		return -EPERM;
	size_t size = rm ? 0 : (size_t)n->args[3];
	if (size > 65536)
		return -E2BIG;
	char *name = sandlock_mem_read_string(call->mem, n->args[1], 256);
	void *val = size ? malloc(size) : NULL;
	long r = !name ? -ERANGE : size && !val ? -ENOMEM : 0;
	if (!r && size && sandlock_mem_peek(call->mem, n->args[2], val, size) != 0)
		r = -EFAULT;
	struct sl_caps_saved sv;
	if (!r && sl_caps_lower(&sv) < 0)
		r = -EPERM;
	else if (!r) {
		r = (rm ? removexattr(p, name) : setxattr(p, name, val, size, (int)n->args[4])) == 0
		    ? 0 : -errno;
		sl_caps_restore(&sv);
	}
	free(val);
	sandlock_string_free(name);
	return r;
}

/* A metadata change on rel, applied to its upper copy.  The workdir
 * itself has none: its mode is kept by the layer (sl_cow_chmod_root), its
 * owner and times cannot be staged (EPERM). */
bool sl_cowb_meta(struct cow_state *s, const struct sl_call *call, const char *rel,
                  bool follow, sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	int nr = n->syscall_nr;
	if (!rel[0] && (nr == SL_NR_chmod || nr == __NR_fchmodat))
		return answer(act, sl_cow_chmod_root(s->cow, (mode_t)n->args[nr == SL_NR_chmod ? 1 : 2]));
	if (!rel[0])
		return answer(act, -EPERM);
	int fd = sl_cow_copy_up_fd(s->cow, rel, follow);
	if (fd < 0)
		return answer(act, fd);
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	long r;
	if (nr == SL_NR_chmod || nr == __NR_fchmodat) {
		mode_t mode = (mode_t)(nr == SL_NR_chmod ? n->args[1] : n->args[2]) & 07777;
		/* A directory stays open to ourselves (cow.h, sl_cow_note_mode). */
		struct stat st;
		bool dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
		mode_t real = dir ? mode | S_IRWXU : mode;
		r = chmod(p, real) == 0 ? 0 : -errno;
		if (!r)
			r = sl_cow_note_mode(s->cow, rel, real != mode ? (int)mode : -1);
	} else if (nr == __NR_setxattr || nr == __NR_lsetxattr || nr == __NR_removexattr ||
	           nr == __NR_lremovexattr) {
		r = set_xattr(call, fd, p);
	} else if (nr == __NR_utimensat) {
		struct timespec ts[2];
		bool have = n->args[2] != 0;
		if (have && sandlock_mem_peek(call->mem, n->args[2], ts, sizeof ts) != 0)
			r = -EFAULT;
		else
			r = utimensat(AT_FDCWD, p, have ? ts : NULL, 0) == 0 ? 0 : -errno;
	} else {
		int a = nr == __NR_fchownat ? 2 : 1;
		r = fchownat(fd, "", (uid_t)n->args[a], (gid_t)n->args[a + 1], AT_EMPTY_PATH) == 0
		            ? 0 : -errno;
	}
	close(fd);
	return answer(act, r);
}

/* True if a fs_mount point (a hole of the space) lies strictly under rel:
 * the rootfs entries there are not what the guest sees, so rel is not
 * moved as a whole. */
static bool holds_hole(const struct cow_state *s, const char *rel)
{
	for (size_t i = 0; i < s->holes.n; i++)
		if (strcmp(s->holes.v[i], rel) != 0 && (!rel[0] || sl_path_under(s->holes.v[i], rel)))
			return true;
	return false;
}

/* Two-path calls: both under workdir, or EXDEV when only one is (or one
 * leaves it through a staged symlink). */
bool sl_cowb_pair(struct cow_state *s, const struct sl_call *call, int d1, uint64_t p1, int d2,
                  uint64_t p2, sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	int nr = n->syscall_nr;
	bool link = nr == SL_NR_link || nr == __NR_linkat;
	bool follow1 = nr == __NR_linkat && (n->args[4] & AT_SYMLINK_FOLLOW);
	struct sl_cow_res *r = malloc(2 * sizeof(*r));
	if (!r)
		return answer(act, -ENOMEM);
	int ka = sl_cowb_resolve_arg(s, call, d1, p1, follow1, &r[0]);
	int kb = ka < 0 ? 0 : sl_cowb_resolve_arg(s, call, d2, p2, false, &r[1]);
	long ret;
	bool decided = true;
	if (ka < 0 || kb < 0)
		ret = ka < 0 ? ka : kb;
	else if (!ka && !kb)
		decided = false;
	else if (!ka || !kb || !r[0].inside || !r[1].inside)
		ret = -EXDEV;
	else if (link)
		ret = sl_cow_link(s->cow, r[0].path, r[1].path);
	else if (holds_hole(s, r[0].path) || holds_hole(s, r[1].path))
		ret = -EBUSY;
	else
		ret = sl_cow_rename(s->cow, r[0].path, r[1].path,
		                    nr == __NR_renameat2 ? (unsigned)n->args[4] : 0);
	free(r);
	return decided ? answer(act, ret) : false;
}

/* truncate(2) of rel: the staged copy, charged when it grows. */
long sl_cowb_truncate(struct cow_state *s, const char *rel, uint64_t len)
{
	if ((int64_t)len < 0)
		return -EINVAL;
	int fd = sl_cow_open(s->cow, rel, O_WRONLY, 0);
	long r = fd;
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) < 0)
		r = -errno;
	else if (fd >= 0 && len > (uint64_t)st.st_size &&
	         sl_cow_charge(s->cow, len - (uint64_t)st.st_size) < 0)
		r = -ENOSPC;
	else if (fd >= 0)
		r = ftruncate(fd, (off_t)len) == 0 ? 0 : -errno;
	if (fd >= 0)
		close(fd);
	return r;
}
