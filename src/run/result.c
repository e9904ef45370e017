/*
 * result.c — accessors for a finished run.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "run/result.h"

SL_EXPORT int sandlock_result_exit_code(const sandlock_result_t *r)
{
	return r ? r->exit_code : -1;
}

/* The reference's reasons: Linux ends an OOM kill and a timeout with the
 * same SIGKILL, so any SIGKILL is KILLED, never SIGNALED. */
SL_EXPORT sandlock_exit_reason sandlock_result_reason(const sandlock_result_t *r)
{
	if (!r)
		return SANDLOCK_EXIT_KILLED;
	if (r->reason == SANDLOCK_EXIT_SIGNALED && r->signal == SIGKILL)
		return SANDLOCK_EXIT_KILLED;
	return (sandlock_exit_reason)r->reason;
}

SL_EXPORT int sandlock_result_signal(const sandlock_result_t *r)
{
	return sandlock_result_reason(r) == SANDLOCK_EXIT_SIGNALED ? r->signal : -1;
}

SL_EXPORT int sandlock_result_term_signal(const sandlock_result_t *r)
{
	return r && r->signal > 0 ? r->signal : -1; /* -1: none, as sandlock_result_signal says it */
}

SL_EXPORT bool sandlock_result_killed_by_handler(const sandlock_result_t *r)
{
	return r && r->reason == SANDLOCK_EXIT_KILLED;
}

SL_EXPORT bool sandlock_result_success(const sandlock_result_t *r)
{
	return r && r->reason == SANDLOCK_EXIT_EXITED && r->exit_code == 0;
}

/* NUL-terminated heap copy (embedded NULs truncate the C string view). */
static char *buf_copy(const sl_buf *b)
{
	char *s = malloc(b->len + 1);
	if (!s)
		return NULL;
	if (b->len)
		memcpy(s, b->data, b->len);
	s[b->len] = '\0';
	return s;
}

SL_EXPORT char *sandlock_result_stdout(const sandlock_result_t *r)
{
	return r ? buf_copy(&r->out) : NULL;
}

SL_EXPORT char *sandlock_result_stderr(const sandlock_result_t *r)
{
	return r ? buf_copy(&r->err) : NULL;
}

/* Never NULL for a valid result, so callers can always pass the pointer on. */
static const uint8_t *buf_bytes(const sl_buf *b, uintptr_t *len)
{
	static const uint8_t empty[1];
	if (len)
		*len = b->len;
	return b->data ? b->data : empty;
}

SL_EXPORT const uint8_t *sandlock_result_stdout_bytes(const sandlock_result_t *r, uintptr_t *len)
{
	if (!r) {
		if (len)
			*len = 0;
		return NULL;
	}
	return buf_bytes(&r->out, len);
}

SL_EXPORT const uint8_t *sandlock_result_stderr_bytes(const sandlock_result_t *r, uintptr_t *len)
{
	if (!r) {
		if (len)
			*len = 0;
		return NULL;
	}
	return buf_bytes(&r->err, len);
}

SL_EXPORT uint64_t sandlock_result_stdout_truncated(const sandlock_result_t *r)
{
	return r ? r->out_dropped : 0;
}

SL_EXPORT uint64_t sandlock_result_stderr_truncated(const sandlock_result_t *r)
{
	return r ? r->err_dropped : 0;
}

SL_EXPORT bool sandlock_result_handlers_abandoned(const sandlock_result_t *r)
{
	return r && r->abandoned;
}

SL_EXPORT void sandlock_result_free(sandlock_result_t *r)
{
	if (!r)
		return;
	sl_buf_free(&r->out);
	sl_buf_free(&r->err);
	sl_changes_free(&r->changes);
	sl_changes_free(&r->conflicts);
	free(r->cow_kept);
	free(r->cow_error);
	free(r->error);
	free(r->denied);
	free(r->denied_path);
	free(r);
}

static const struct sl_changes *change_list(const sandlock_result_t *r, bool conflicts)
{
	return conflicts ? &r->conflicts : &r->changes;
}

SL_EXPORT size_t sandlock_result_change_count(const sandlock_result_t *r, bool conflicts)
{
	return r ? change_list(r, conflicts)->n : 0;
}

SL_EXPORT const char *sandlock_result_change(const sandlock_result_t *r, bool conflicts,
                                             size_t i, char *kind)
{
	if (!r || i >= change_list(r, conflicts)->n)
		return NULL;
	if (kind)
		*kind = change_list(r, conflicts)->v[i].kind;
	return change_list(r, conflicts)->v[i].path;
}

SL_EXPORT const char *sandlock_result_cow_kept(const sandlock_result_t *r)
{
	return r ? r->cow_kept : NULL;
}

SL_EXPORT const char *sandlock_result_error(const sandlock_result_t *r)
{
	return r ? r->error : NULL;
}

SL_EXPORT const char *sandlock_result_denied_access(const sandlock_result_t *r,
                                                  const char **path)
{
	if (path)
		*path = r ? r->denied_path : NULL;
	return r ? r->denied : NULL;
}

SL_EXPORT const char *sandlock_result_cow_error(const sandlock_result_t *r)
{
	return r ? r->cow_error : NULL;
}
