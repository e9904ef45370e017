/*
 * refdryrun.c — the reference's sandlock_dry_run: the command runs with
 * its COW workdir, the changes it made are listed and thrown away (never
 * committed, whatever on_exit/on_error say), and its output is captured.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "ref/refabi.h"
#include "util.h"

struct sandlock_dry_run_result {
	sandlock_result_t *r;
};

SL_EXPORT sandlock_dry_run_result_t *sandlock_dry_run(const sandlock_sandbox_t *policy,
                                                      const char *name,
                                                      const char *const *argv,
                                                      unsigned int argc)
{
	sandlock_sandbox_t copy;
	const sandlock_sandbox_t *sb = sl_named_policy(policy, name, &copy);
	/* Without a workdir the writes would land on the real files: refused. */
	if (!sb || !sb->workdir)
		return NULL;
	if (sb != &copy) {
		copy = *sb;
		sb = &copy;
	}
	copy.on_exit = SANDLOCK_BRANCH_ABORT;
	copy.on_error = SANDLOCK_BRANCH_ABORT;
	copy.inherit_stdio = false; /* the result carries the output */
	sandlock_dry_run_result_t *d = calloc(1, sizeof(*d));
	if (!d || !(d->r = sandlock_run_err(sb, argv, argc, NULL, NULL))) {
		free(d);
		return NULL;
	}
	return d;
}

SL_EXPORT int sandlock_dry_run_result_exit_code(const sandlock_dry_run_result_t *d)
{
	return d ? sandlock_result_exit_code(d->r) : -1;
}

SL_EXPORT sandlock_exit_reason sandlock_dry_run_result_reason(const sandlock_dry_run_result_t *d)
{
	return d ? sandlock_result_reason(d->r) : SANDLOCK_EXIT_KILLED;
}

SL_EXPORT int sandlock_dry_run_result_signal(const sandlock_dry_run_result_t *d)
{
	return d ? sandlock_result_signal(d->r) : -1;
}

SL_EXPORT bool sandlock_dry_run_result_success(const sandlock_dry_run_result_t *d)
{
	return d && sandlock_result_success(d->r);
}

SL_EXPORT const uint8_t *sandlock_dry_run_result_stdout_bytes(const sandlock_dry_run_result_t *d,
                                                              uintptr_t *len)
{
	if (!d) {
		if (len)
			*len = 0;
		return NULL;
	}
	return sandlock_result_stdout_bytes(d->r, len);
}

SL_EXPORT const uint8_t *sandlock_dry_run_result_stderr_bytes(const sandlock_dry_run_result_t *d,
                                                              uintptr_t *len)
{
	if (!d) {
		if (len)
			*len = 0;
		return NULL;
	}
	return sandlock_result_stderr_bytes(d->r, len);
}

SL_EXPORT uintptr_t sandlock_dry_run_result_changes_len(const sandlock_dry_run_result_t *d)
{
	return d ? sandlock_result_change_count(d->r, false) : 0;
}

/* 'A', 'M' or 'D'; 0 for an index out of range. */
SL_EXPORT char sandlock_dry_run_result_change_kind(const sandlock_dry_run_result_t *d, uintptr_t i)
{
	char kind = 0;
	if (d)
		(void)sandlock_result_change(d->r, false, i, &kind);
	return kind;
}

/* The path (free with sandlock_string_free); NULL out of range. */
SL_EXPORT char *sandlock_dry_run_result_change_path(const sandlock_dry_run_result_t *d,
                                                    uintptr_t i)
{
	const char *p = d ? sandlock_result_change(d->r, false, i, NULL) : NULL;
	return p ? strdup(p) : NULL;
}

SL_EXPORT void sandlock_dry_run_result_free(sandlock_dry_run_result_t *d)
{
	if (!d)
		return;
	sandlock_result_free(d->r);
	free(d);
}
