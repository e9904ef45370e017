/*
 * cow.h — the copy-on-write layer behind `workdir` (builtins/cow/).
 *
 * The real directory (the lower layer) is never written during a run:
 * every change is staged in a private upper directory, deletions are
 * remembered as whiteouts, and at the end the staged changes are listed
 * (A/M/D), committed into the real tree file by file, or thrown away.
 * Paths here are "rel" paths: relative to workdir, normalized, "" for
 * workdir itself.  Single-threaded: the supervisor thread owns it.
 */
#ifndef SANDLOCK_COW_H
#define SANDLOCK_COW_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct sl_cow;

/* One entry of the change list (also what result.c hands out). */
struct sl_change {
	char kind; /* 'A' added, 'M' modified, 'D' deleted */
	char *path; /* relative to workdir */
};
struct sl_changes {
	struct sl_change *v;
	size_t n;
};
void sl_changes_free(struct sl_changes *c);

/* Open the layer: lower = workdir (canonical), a fresh upper directory
 * inside storage.  NULL with *msg (heap) on failure. */
struct sl_cow *sl_cow_new(const char *workdir, const char *storage, uint64_t max_disk,
                          char **msg);
/* Remove the upper directory unless keep (then it stays for the caller). */
void sl_cow_free(struct sl_cow *c, bool keep);
const char *sl_cow_upper_path(const struct sl_cow *c);

/* The rel path of an absolute, lexically normalized path under workdir
 * (or under the upper directory, which mirrors it), or NULL. */
const char *sl_cow_rel(const struct sl_cow *c, const char *abs);
/* Where the view shows the real directory path real (relative to
 * workdir): its new place when the run moved it or an ancestor (true),
 * else real itself (false); into out. */
bool sl_cow_real_view(const struct sl_cow *c, const char *real, char *out, size_t cap);
/* Like sl_cow_rel, for a path in the upper layer only. */
const char *sl_cow_upper_rel(const struct sl_cow *c, const char *abs);

/* Where rel is visible in the merged view. */
enum sl_cow_where { SL_COW_NONE, SL_COW_UPPER, SL_COW_LOWER };
/* Look rel up (follow: the last component's symlink too); *st filled
 * when found.  SL_COW_NONE with *e = ENOENT / ENOTDIR / ... otherwise. */
enum sl_cow_where sl_cow_lookup(struct sl_cow *c, const char *rel, bool follow, struct stat *st,
                                int *e);

/* True while nothing is staged (no path shadowed yet): every read then
 * sees the real tree as it is. */
bool sl_cow_untouched(const struct sl_cow *c);
/* True if the real tree shows a directory at rel (not whited out). */
bool sl_cow_lower_dir(struct sl_cow *c, const char *rel, struct stat *st);
/* lstat of the real rel, whiteouts ignored (what the kernel would see). */
int sl_cow_lower_lstat(struct sl_cow *c, const char *rel, struct stat *st);
/* The target of the symlink rel in the upper (upper) or real layer, into
 * buf (NUL-terminated): its length, or -errno. */
ssize_t sl_cow_readlink(struct sl_cow *c, const char *rel, bool upper, char *buf, size_t cap);
/* The real tree's host path of rel (workdir + "/" + rel) into buf. */
bool sl_cow_lower_path(const struct sl_cow *c, const char *rel, char *buf, size_t cap);

/* chmod of the workdir itself (it has no upper copy): kept here, shown
 * by the stat answers (sl_cow_root_mode: -1 for unchanged) and committed
 * as the change "M .".  0 or -errno. */
int sl_cow_chmod_root(struct sl_cow *c, mode_t mode);
int sl_cow_root_mode(const struct sl_cow *c);

/* A staged directory whose mode takes its owner's rights away is kept
 * open to the supervisor (which works inside it for the guest) and the
 * guest's mode noted here: shown by the stat answers, committed, moved
 * by renames.  mode -1 forgets it.  0 or -errno. */
int sl_cow_note_mode(struct sl_cow *c, const char *rel, int mode);
/* The noted mode of rel, or -1. */
int sl_cow_view_mode(const struct sl_cow *c, const char *rel);

/* A directory's link count in the merged view: 2 + its subdirectories
 * (the upper copy's own count knows only the staged ones). */
nlink_t sl_cow_dir_nlink(struct sl_cow *c, const char *rel);

/* The operations; each returns an fd / 0, or -errno, as the syscall would. */
int sl_cow_open(struct sl_cow *c, const char *rel, int flags, mode_t mode);
int sl_cow_open_upper(struct sl_cow *c, const char *rel, int flags); /* O_PATH lookups */
/* The real rel (no whiteout check), as openat2 from workdir would. */
int sl_cow_open_lower(struct sl_cow *c, const char *rel, int flags);
int sl_cow_unlink(struct sl_cow *c, const char *rel, bool dir);
int sl_cow_mkdir(struct sl_cow *c, const char *rel, mode_t mode);
int sl_cow_rename(struct sl_cow *c, const char *from, const char *to, unsigned flags);
int sl_cow_link(struct sl_cow *c, const char *from, const char *to);
int sl_cow_symlink(struct sl_cow *c, const char *target, const char *to);
int sl_cow_mknod(struct sl_cow *c, const char *rel, mode_t mode, dev_t dev);
/* A unix socket to be bound at rel (not shown yet): the upper directory
 * that is to hold it, made if needed (an O_PATH fd) and the name in it
 * (into name, cap bytes); -EADDRINUSE when the view shows rel, or
 * -errno.  The file the bind makes stays in the layer: sockets are never
 * committed. */
int sl_cow_sock_dir(struct sl_cow *c, const char *rel, char *name, size_t cap);
/* Make rel an upper file (copied up if needed) for a metadata change;
 * an O_PATH fd of the upper copy (follow: through a final symlink). */
int sl_cow_copy_up_fd(struct sl_cow *c, const char *rel, bool follow);

/* max_disk.  Charge bytes about to be added to a staged file: 0, or
 * -ENOSPC when the layer would then hold more than max_disk (nothing is
 * charged then).  Always 0 without a quota. */
int sl_cow_charge(struct sl_cow *c, uint64_t bytes);
/* Bytes that may still be added (UINT64_MAX without a quota). */
uint64_t sl_cow_room(struct sl_cow *c);
/* True if an open file (path: its /proc/self/fd link, st: its fstat) is
 * one of the layer's own staged files: writes to it must be charged. */
bool sl_cow_owns(const struct sl_cow *c, const char *path, const struct stat *st);

/* Fill buf[0..cap) with linux_dirent64 records of the merged listing of
 * directory rel starting at entry *pos; advance *pos.  The listing is
 * built by merged_list() in cow.c (upper first, then the real entries not
 * whited out): the one place to sort it for deterministic listings.  Bytes written, 0
 * at the end, or -errno (-EINVAL: cap too small for one entry). */
long sl_cow_getdents(struct sl_cow *c, const char *rel, uint64_t *pos, char *buf, size_t cap);

/* What the staged changes would do to the real tree, sorted by path. */
int sl_cow_changes(struct sl_cow *c, struct sl_changes *out);
/* Apply the changes; a change whose real file moved on since it was
 * staged is not applied and lands in *conflicts (the upper layer must
 * then be kept).  0, or -errno on an I/O failure. */
int sl_cow_commit(struct sl_cow *c, const struct sl_changes *ch, struct sl_changes *conflicts);

#endif /* SANDLOCK_COW_H */
