/*
 * state.h — what the parts of the copy-on-write builtin (cow.c and the
 * files beside it in src/builtins/cow/) share: one run's state and the
 * way each part turns a result into the call's answer.  Internal to
 * src/builtins/cow/.
 */
#ifndef SANDLOCK_BUILTINS_COW_STATE_H
#define SANDLOCK_BUILTINS_COW_STATE_H

#include <stdbool.h>

#include "cow/cow.h"
#include "cow/cowpath.h"
#include "opener/dirsort.h"
#include "paths/chroot.h"
#include "paths/execpath.h"
#include "util.h"
#include "builtins/builtin.h"

struct cow_state {
	struct sl_cow *cow;
	int on_exit, on_error;
	struct sl_dirsort *sorted; /* deterministic_dirs: listings sorted, else NULL */
	/* Where paths live: host paths, or under chroot guest paths (the
	 * view (the run's, services.h), workdir's guest path, the fs_mount
	 * points inside it). */
	struct sl_view *view;
	char *root;
	sl_strvec holes;
	struct sl_cow_space space;
	struct sl_exec_undo undo; /* an exec by a vfork child (execpath.h) */
	bool policy;              /* policy_fn set: its exec events come first */
};

/* A result (>= 0) or -errno as the call's answer; always decides. */
static inline bool answer(sandlock_action_t *act, long r)
{
	if (r < 0)
		sandlock_action_set_errno(act, (int32_t)-r);
	else
		sandlock_action_set_return_value(act, r);
	return true;
}

#endif
