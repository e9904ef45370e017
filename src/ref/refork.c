/*
 * refork.c — the reference's fork mode (sandlock_new_with_fns,
 * sandlock_fork, sandlock_reduce, ...) over ours (fork.c): argument-less
 * init and work callbacks, a handle that holds the policy, and a fork
 * result that reduce consumes.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ref/refabi.h"
#include "util.h"

struct sandlock_fns {
	const sandlock_sandbox_t *policy; /* the caller's: must outlive the handle */
	char *name;                       /* kept; the clones have no hostname of their own */
	sandlock_init_fn_t init;
	sandlock_work_fn_t work;
	int last; /* sandlock_wait: 0 after a fork that worked, -1 otherwise */
};

SL_EXPORT sandlock_t *sandlock_new_with_fns(const sandlock_sandbox_t *policy, const char *name,
                                            sandlock_init_fn_t init_fn,
                                            sandlock_work_fn_t work_fn)
{
	if (!policy || !work_fn)
		return NULL;
	sandlock_t *sb = calloc(1, sizeof(*sb));
	if (!sb)
		return NULL;
	*sb = (sandlock_t){ policy, NULL, init_fn, work_fn, -1 };
	if (name && !(sb->name = strdup(name))) {
		free(sb);
		return NULL;
	}
	return sb;
}

static int run_init(void *ud, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	const sandlock_t *sb = ud;
	if (sb->init)
		sb->init();
	return 0;
}

static int run_work(void *ud, uint32_t clone_id)
{
	const sandlock_t *sb = ud;
	sb->work(clone_id);
	return 0;
}

SL_EXPORT sandlock_fork_result_t *sandlock_fork(sandlock_t *sb, uint32_t n)
{
	if (!sb)
		return NULL;
	sandlock_fork_opts_t o = { .size = sizeof o, .init = run_init, .work = run_work, .ud = sb };
	sandlock_fork_t *f = sandlock_fork_start(sb->policy, n, &o, NULL, NULL);
	sb->last = f ? 0 : -1;
	return f;
}

SL_EXPORT uint32_t sandlock_fork_result_count(const sandlock_fork_result_t *r)
{
	return r ? sandlock_fork_count(r) : 0;
}

SL_EXPORT int32_t sandlock_fork_result_pid(const sandlock_fork_result_t *r, uint32_t index)
{
	return r ? sandlock_fork_pid(r, index) : -1;
}

SL_EXPORT sandlock_result_t *sandlock_reduce(sandlock_fork_result_t *fork_result,
                                             const sandlock_sandbox_t *policy, const char *name,
                                             const char *const *argv, unsigned int argc)
{
	sandlock_result_t *r = NULL;
	if (fork_result && policy) {
		/* The reducer is a normal supervised run: the name applies. */
		sandlock_sandbox_t copy;
		const sandlock_sandbox_t *sb = sl_named_policy(policy, name, &copy);
		if (sb)
			r = sandlock_fork_reduce(sb, argv, argc, fork_result, NULL, NULL);
	}
	sandlock_fork_free(fork_result); /* consumed, as the reference */
	return r;
}

SL_EXPORT void sandlock_fork_result_free(sandlock_fork_result_t *r)
{
	sandlock_fork_free(r);
}

SL_EXPORT int sandlock_wait(sandlock_t *sb)
{
	return sb ? sb->last : -1;
}

SL_EXPORT void sandlock_sandbox_fns_free(sandlock_t *sb)
{
	if (!sb)
		return;
	free(sb->name);
	free(sb);
}
