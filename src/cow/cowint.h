/*
 * cowint.h — what the parts of the copy-on-write layer (cow.c, cowview.c,
 * cowops.c, cowcommit.c, cowmodes.c) share: the layer's state and the
 * helpers one part defines and another calls.  Internal to src/cow/:
 * everyone else uses cow.h.
 */
#ifndef SANDLOCK_COWINT_H
#define SANDLOCK_COWINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "compat.h"
#include "cow/cow.h"
#include "cow/cowjournal.h"
#include "util.h"

/* What one name in the layer costs max_disk at least: a block, whatever
 * it is (a directory, a symlink, an empty file, a whiteout).  So the
 * quota also bounds how many inodes the layer may hold. */
#define SL_COW_INODE_BYTES 4096u

struct record {
	char *rel;
	bool existed; /* the real path existed when first shadowed */
	struct stat st;
};

struct sl_cow {
	char *lower, *upper; /* absolute paths */
	int lower_fd, upper_fd;
	uint64_t max_disk;   /* bytes; 0 = unlimited */
	/* With max_disk: upper files the guest deletes are moved here instead
	 * (a process may still hold them open and write), so they keep
	 * counting until the run ends.  NULL without a quota. */
	char *trash;
	int trash_fd;
	int lock_fd; /* the layer's owner lock (cowstore.h), held for its life */
	struct sl_commit_log log; /* a commit's lock and journal (cowjournal.h) */
	int test_delay_ms; /* SANDLOCK_TEST_COMMIT_DELAY_MS: see sl_cow_commit */
	uint64_t ntrash;
	uint64_t used; /* an upper bound of bytes_used(), see sl_cow_charge */
	dev_t upper_dev;
	sl_strvec whiteouts;
	struct record *rec;
	size_t nrec, caprec;
	struct sl_cowlinks *links; /* the real hard links, once asked (cowlinks.h) */
	int root_mode;             /* workdir's own mode as the guest set it, or -1 */
	/* Upper entries whose mode the run's end opened to ourselves (unlock_upper):
	 * the mode the guest gave them, restored or committed. */
	struct locked *locked;
	size_t nlocked;
	bool unlocked;
	/* Real directories the view moved (renamed, or an ancestor renamed):
	 * a process whose cwd or dirfd is one of them finds it at its new
	 * place, as it would after a real rename. */
	struct moved_dir *moved;
	size_t nmoved;
};

struct moved_dir {
	char *real, *view;
};

struct locked {
	char *rel;
	mode_t mode;
};

struct ent {
	char *name;
	uint64_t ino;
	unsigned char type;
};

struct ents {
	struct ent *v;
	size_t n;
};

/* cow.c */
int sl_cw_push_change(struct sl_changes *c, char kind, const char *path);
int sl_cw_open_beneath(int root, const char *rel, int flags, mode_t mode);
int sl_cw_layer_stat(int root, const char *rel, bool follow, struct stat *st);
/* One entry of a directory walked by sl_cw_each_entry: dir (the
 * directory's fd), its name there, child (rel/name), its lstat.  0 goes
 * on; anything else stops the walk and is its result. */
typedef int (*sl_cw_entry_fn)(void *ud, int dir, const char *name, const char *child,
                              struct stat *st);
/* fn for every entry of directory dir (an fd, closed here; negative: its
 * -errno is the result) but "." and "..", named rel/name; an entry gone
 * since it was listed is skipped, one whose rel/name is too long is
 * skipped (skip_long) or ends the walk with -ENAMETOOLONG.  The one
 * directory loop of the layer's tree walks (commit's, the modes');
 * fn recurses by itself. */
int sl_cw_each_entry(int dir, const char *rel, bool skip_long, sl_cw_entry_fn fn, void *ud);
void sl_cw_parent_of(const char *rel, char *buf, size_t cap);
bool sl_cw_hidden(const struct sl_cow *c, const char *rel);
void sl_cw_unwhite(struct sl_cow *c, const char *rel);
struct record *sl_cw_find_record(struct sl_cow *c, const char *rel);
int sl_cw_remember(struct sl_cow *c, const char *rel);
int sl_cw_whiteout(struct sl_cow *c, const char *rel);
bool sl_cw_lower_visible(struct sl_cow *c, const char *rel, struct stat *st);
bool sl_cw_over_quota(struct sl_cow *c, uint64_t adding);
int sl_cw_discard_upper(struct sl_cow *c, const char *rel);

/* cowmodes.c */
void sl_cw_notes_drop(struct sl_cow *c, const char *rel);
int sl_cw_notes_move(struct sl_cow *c, const char *from, const char *to, bool exchange);
int sl_cw_unlock_upper(struct sl_cow *c);
void sl_cw_staged_mode(const struct sl_cow *c, const char *rel, struct stat *u);

/* cowview.c */
int sl_cw_parent_ok(struct sl_cow *c, const char *rel);
int sl_cw_upper_parents(struct sl_cow *c, const char *rel);
void sl_cw_copy_user_xattrs(int in, int out);
bool sl_cw_same_user_xattrs(int a, int b);
int sl_cw_copy_data(int in, int out);
int sl_cw_copy_up(struct sl_cow *c, const char *rel, bool empty_only);
/* rel (not followed) in the upper layer, copied up when only the real
 * tree has it: 0 with its stat in *st (the real one's if copied), or -errno. */
int sl_cw_make_upper(struct sl_cow *c, const char *rel, struct stat *st);
void sl_cw_ents_free(struct ents *l);
int sl_cw_merged_list(struct sl_cow *c, const char *rel, struct ents *l);

#endif
