/*
 * confine.c — sandlock_confine: the calling process confines itself with
 * a sandbox's Landlock ruleset and seccomp blocklist, in place (no fork,
 * no supervisor).  What only a supervisor or a fresh child can give is
 * refused rather than silently dropped.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "builtins/builtin.h"
#include "launch/caps.h"
#include "launch/cglimits.h"
#include "launch/confine.h"
#include "launch/filter.h"
#include "launch/landlock.h"

/* The setting of the first builtin that sb turns on (its refusal, or its
 * setting when it traps anything), or NULL.  Derived from the builtin
 * table, so a new supervisor-only setting cannot be forgotten here
 * (random_seed, time_start were, and were dropped). */
static const char *builtin_refusal(const struct sandlock_sandbox *sb)
{
	for (size_t i = 0; i < sl_builtin_count; i++) {
		const struct sl_builtin *b = sl_builtin_table[i];
		const char *why = b->refusal ? b->refusal(sb) : NULL;
		if (why)
			return why;
		struct sl_traps s = { 0 };
		if (!b->setting || !b->syscalls)
			continue;
		int rc = b->syscalls(sb, &s);
		size_t n = s.n;
		free(s.v);
		if (rc < 0 || n > 0)
			return b->setting;
	}
	return NULL;
}

/* The first setting of sb that confine cannot honour, or NULL.  A fork
 * (fork.c) applies cwd, env and timeout itself: for_fork skips them. */
const char *sl_confine_refusal(const struct sandlock_sandbox *sb, bool for_fork)
{
	const char *b = builtin_refusal(sb);
	if (b)
		return b;
	if (sb->cwd && !for_fork)
		return "cwd";
	if ((sb->env.n || sb->clean_env) && !for_fork)
		return "env / clean_env";
	if (sb->timeout_ms && !for_fork)
		return "timeout";
	if (sb->max_memory)
		return "max_memory";
	if (sb->max_cpu)
		return "max_cpu";
	if (sb->no_randomize_memory)
		return "no_randomize_memory (takes effect at exec only)";
	if (sb->on_decision)
		return "on_decision / trace (reports the supervisor's decisions)";
	if (sb->private_tmp)
		return "tmp (a private TMPDIR is made and removed per run)";
	return NULL;
}

/* Number of threads of this process (-1: cannot tell). */
static int thread_count(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

int sl_confine_apply(const struct sandlock_sandbox *sb, int rs, struct sock_fprog *prog,
                     int *err, char **msg)
{
	struct sl_cglimits none;
	sl_cg_init(&none);
	int e = sl_limits_child(sb, &none);
	if (!e)
		e = sl_limits_command(sb, &none);
	if (e)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "confine: applying limits: %s",
		               strerror(e));
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "confine: PR_SET_NO_NEW_PRIVS: %s",
		               strerror(errno));
	int rc = sl_caps_drop();
	if (rc == 0)
		rc = sl_landlock_apply(rs, 0);
	if (rc < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "confine: %s",
		               strerror(-rc));
	if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, prog) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "confine: seccomp: %s",
		               strerror(errno));
	return 0;
}

/* The filter of a process without a supervisor: the in_every_filter
 * builtins' traps (answered ENOSYS by the kernel), no others. */
int sl_confine_filter(const struct sandlock_sandbox *sb, struct sock_fprog *prog, int *err,
                      char **msg)
{
	struct sl_traps t = { 0 };
	int rc = sl_builtin_unsupervised_traps(sb, &t) < 0
		         ? sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory")
		         : sl_filter_build(sb, t.v, t.n, false, prog, err, msg);
	sl_traps_free(&t);
	return rc;
}

SL_EXPORT const char *sandlock_confine_refusal(const sandlock_sandbox_t *sb)
{
	return sb ? sl_confine_refusal(sb, false) : NULL;
}

SL_EXPORT int sandlock_confine_err(const sandlock_sandbox_t *sb, int *err, char **err_msg)
{
	if (err)
		*err = SANDLOCK_OK;
	if (err_msg)
		*err_msg = NULL;
	if (!sb)
		return sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "NULL sandbox");
	const char *what = sl_confine_refusal(sb, false);
	if (what)
		return sl_fail(err, err_msg, SANDLOCK_ERR_CONFLICT,
		               "confine: %s cannot be applied to the calling process", what);
	int threads = thread_count();
	if (threads != 1)
		return sl_fail(err, err_msg, SANDLOCK_ERR_CONFLICT,
		               "confine: the process has %d threads; Landlock would confine only "
		               "the calling one", threads);
	int rc = sl_limits_check(sb, err, err_msg);
	if (rc < 0)
		return -1;
	int rs = sl_landlock_prepare(sb, err, err_msg);
	if (rs == -2)
		return sl_fail(err, err_msg, SANDLOCK_ERR_UNSUPPORTED,
		               "Landlock is not available on this kernel; refusing to run unconfined");
	if (rs < 0)
		return -1;
	struct sock_fprog prog = { 0, NULL };
	rc = sl_confine_filter(sb, &prog, err, err_msg);
	if (rc == 0)
		rc = sl_confine_apply(sb, rs, &prog, err, err_msg);
	sl_filter_free(&prog);
	close(rs);
	return rc;
}
