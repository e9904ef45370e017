/*
 * test_cowstore.c — owned staging directories (src/cow/cowstore.c) under a
 * concurrent sweep: two sandboxes starting together each sweep the shared
 * storage directory while the other makes its own.  A sweep must never
 * take a directory whose owner is alive, however the two interleave.
 *
 * Found by two `--workdir` runs started together under load: the sweep
 * took a storage directory between its lock file's creation and its
 * flock, so the run that made it failed ("cannot make COW storage").
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "cow/cowstore.h"

#define ROUNDS 3000

struct race {
	char dir[PATH_MAX];
	enum sl_store_lock where;
	atomic_int stop;
};

static void *sweeper(void *arg)
{
	struct race *r = arg;
	while (!atomic_load(&r->stop))
		sl_store_sweep(r->dir, "race-", r->where);
	return NULL;
}

/* ROUNDS directories made (and released) while another thread sweeps
 * without pause: the number that were gone, or lost their lock file,
 * right after sl_store_make returned them as ours. */
static int lost_under_sweep(enum sl_store_lock where)
{
	struct race r = { .where = where };
	snprintf(r.dir, sizeof r.dir, "/tmp/sandlock-test-store-XXXXXX");
	if (!mkdtemp(r.dir))
		return -1;
	pthread_t t;
	pthread_create(&t, NULL, sweeper, &r);
	int lost = 0;
	for (int i = 0; i < ROUNDS; i++) {
		char out[PATH_MAX], lock[PATH_MAX + 16];
		int fd = sl_store_make(r.dir, "race-", where, out, sizeof out);
		if (fd < 0) {
			lost++;
			continue;
		}
		snprintf(lock, sizeof lock, where == SL_STORE_INSIDE ? "%s/.owner.lock" : "%s.lock", out);
		struct stat st;
		if (stat(out, &st) < 0 || !S_ISDIR(st.st_mode) || stat(lock, &st) < 0)
			lost++;
		if (where == SL_STORE_INSIDE) {
			sl_store_release(fd, out, where);
			rmdir(out);
		} else {
			rmdir(out);
			sl_store_release(fd, out, where);
		}
	}
	atomic_store(&r.stop, 1);
	pthread_join(t, NULL);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "rm -rf %s", r.dir);
	(void)system(cmd);
	return lost;
}

TEST(a_sweep_never_takes_a_storage_being_made)
{
	CHECK_EQ_INT(lost_under_sweep(SL_STORE_INSIDE), 0);
}

TEST(a_sweep_never_takes_an_upper_layer_being_made)
{
	CHECK_EQ_INT(lost_under_sweep(SL_STORE_BESIDE), 0);
}

TEST(a_sweep_takes_what_a_dead_owner_left)
{
	/* The sweep still works: a directory whose lock holder is gone goes. */
	char dir[] = "/tmp/sandlock-test-store-XXXXXX", out[PATH_MAX];
	CHECK(mkdtemp(dir) != NULL);
	int fd = sl_store_make(dir, "dead-", SL_STORE_INSIDE, out, sizeof out);
	CHECK(fd >= 0);
	close(fd); /* the owner "dies": its lock is dropped, the file stays */
	struct stat st;
	CHECK(stat(out, &st) == 0);
	sl_store_sweep(dir, "dead-", SL_STORE_INSIDE);
	CHECK(stat(out, &st) < 0 && errno == ENOENT);
	rmdir(dir);
}
