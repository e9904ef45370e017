/*
 * cowmodes.c — modes the guest gave staged entries that would lock the
 * supervisor out of the upper layer (chmod 000 f, chmod 500 d): noted,
 * opened to ourselves for the listing and the commit (a kept layer gets
 * them back when it is freed, cow.c); and the workdir's own mode as the
 * guest set it.  Split from cow.c along its sections.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cow/cowint.h"

/*
 * The run is over; the listing and the commit read every staged entry,
 * with our own rights: where the guest took the owner's rights away
 * (chmod 000 f, chmod 500 d), an unprivileged supervisor could not read
 * the file or walk the directory, and the entry was left out (or the
 * commit failed).  So the owner's rights are given back to ourselves
 * first, and the guest's mode is remembered here for the listing, the
 * commit and a kept layer (cow.c's relock_upper).
 */
static int lock_note(struct sl_cow *c, const char *rel, mode_t mode)
{
	struct locked *v = realloc(c->locked, (c->nlocked + 1) * sizeof *v);
	if (!v)
		return -ENOMEM;
	c->locked = v;
	if (!(v[c->nlocked].rel = sl_strdup(rel)))
		return -ENOMEM;
	v[c->nlocked++].mode = mode & 07777;
	return 0;
}

/* Forget the notes at and under rel (it is gone). */
void sl_cw_notes_drop(struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->nlocked;) {
		if (sl_path_under(c->locked[i].rel, rel)) {
			free(c->locked[i].rel);
			c->locked[i] = c->locked[--c->nlocked];
			continue;
		}
		i++;
	}
}

/* The notes under from now live under to (and, exchanged, the other way). */
int sl_cw_notes_move(struct sl_cow *c, const char *from, const char *to, bool exchange)
{
	for (size_t i = 0; i < c->nlocked; i++) {
		const char *r = c->locked[i].rel, *a = NULL, *b = NULL;
		if (sl_path_under(r, from))
			a = from, b = to;
		else if (exchange && sl_path_under(r, to))
			a = to, b = from;
		if (!a)
			continue;
		char *n = sl_asprintf("%s%s", b, r + strlen(a));
		if (!n)
			return -ENOMEM;
		free(c->locked[i].rel);
		c->locked[i].rel = n;
	}
	return 0;
}

int sl_cow_note_mode(struct sl_cow *c, const char *rel, int mode)
{
	for (size_t i = 0; i < c->nlocked; i++)
		if (!strcmp(c->locked[i].rel, rel)) {
			free(c->locked[i].rel);
			c->locked[i] = c->locked[--c->nlocked];
			break;
		}
	return mode < 0 ? 0 : lock_note(c, rel, (mode_t)mode);
}

int sl_cow_view_mode(const struct sl_cow *c, const char *rel)
{
	for (size_t i = 0; i < c->nlocked; i++)
		if (!strcmp(c->locked[i].rel, rel))
			return (int)c->locked[i].mode;
	return -1;
}

static int unlock_tree(struct sl_cow *c, int dir, const char *rel);

/* An entry made unreadable or unsearchable by the guest: opened up for
 * us, its mode noted (lock_note); a directory, walked. */
static int unlock_entry(void *ud, int dir, const char *name, const char *child, struct stat *st)
{
	struct sl_cow *c = ud;
	mode_t need = S_ISDIR(st->st_mode) ? S_IRWXU : S_ISREG(st->st_mode) ? S_IRUSR : 0;
	int e = 0;
	if ((st->st_mode & need) != need) {
		if ((e = lock_note(c, child, st->st_mode)))
			return e;
		(void)fchmodat(dir, name, (st->st_mode & 07777) | need, 0);
	}
	if (S_ISDIR(st->st_mode)) {
		int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0)
			e = unlock_tree(c, sub, child);
	}
	return e;
}

static int unlock_tree(struct sl_cow *c, int dir, const char *rel)
{
	return sl_cw_each_entry(dir, rel, true, unlock_entry, c);
}

int sl_cw_unlock_upper(struct sl_cow *c)
{
	if (c->unlocked)
		return 0;
	c->unlocked = true;
	int fd = sl_cw_open_beneath(c->upper_fd, "", O_RDONLY | O_DIRECTORY, 0);
	return fd < 0 ? fd : unlock_tree(c, fd, "");
}

/* The mode the guest gave the staged rel (u: what the upper layer has). */
void sl_cw_staged_mode(const struct sl_cow *c, const char *rel, struct stat *u)
{
	for (size_t i = 0; i < c->nlocked; i++)
		if (!strcmp(c->locked[i].rel, rel)) {
			u->st_mode = (u->st_mode & S_IFMT) | c->locked[i].mode;
			return;
		}
}
