/*
 * test_on_decision.c — sandlock_sandbox_builder_on_decision: the tracing
 * hook sees each supervised answer with who decided it (a builtin by name,
 * a user handler, or nobody), and what the answer was.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

#define MAXREC 512

struct rec {
	int nr;
	uint32_t kind;
	int64_t value; /* errno or return value */
	char by[32];   /* "" for NULL */
};

struct log {
	pthread_mutex_t mu;
	struct rec r[MAXREC];
	int n;
};

static void on_decision(void *ud, const sandlock_decision_t *d)
{
	struct log *l = ud;
	pthread_mutex_lock(&l->mu);
	if (l->n < MAXREC) {
		struct rec *r = &l->r[l->n++];
		r->nr = d->notif->syscall_nr;
		r->kind = d->action->kind;
		r->value = d->action->kind == SANDLOCK_ACTION_ERRNO ? d->action->u.errno_value
							             : d->action->u.return_value;
		snprintf(r->by, sizeof(r->by), "%s", d->decided_by ? d->decided_by : "");
	}
	pthread_mutex_unlock(&l->mu);
}

/* How many records match (nr, kind, by) (value too when check_value). */
static int count(const struct log *l, int nr, uint32_t kind, const char *by, bool check_value,
                 int64_t value)
{
	int c = 0;
	for (int i = 0; i < l->n; i++)
		if (l->r[i].nr == nr && l->r[i].kind == kind && strcmp(l->r[i].by, by) == 0 &&
		    (!check_value || l->r[i].value == value))
			c++;
	return c;
}

static int32_t fake_getppid(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                            sandlock_action_t *out)
{
	(void)ud;
	(void)n;
	(void)m;
	sandlock_action_set_return_value(out, 4242);
	return 0;
}

TEST(handler_and_nobody_decisions_are_reported)
{
	static struct log l = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, 0 };
	struct tu_counter cont = { 0 };
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_on_decision(b, on_decision, &l);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_registration_t regs[] = {
		{ "getppid", sandlock_handler_new(fake_getppid, NULL, NULL, SANDLOCK_EXCEPTION_KILL) },
		{ "getcwd", sandlock_handler_new(tu_count_and_continue, &cont, NULL,
						 SANDLOCK_EXCEPTION_KILL) },
	};
	const char *argv[] = { TU_PY, "-c", "import os; print(os.getppid()); os.getcwd()", NULL };
	sandlock_result_t *r = tu_run_with(sb, argv, regs, 2);
	REQUIRE(r);
	CHECK(tu_out_is(r, "4242\n")); /* the handler really answered */
	int ppid = (int)sandlock_syscall_nr("getppid"), cwd = (int)sandlock_syscall_nr("getcwd");
	CHECK(count(&l, ppid, SANDLOCK_ACTION_RETURN_VALUE, "handler", true, 4242) >= 1);
	CHECK(cont.calls >= 1);
	CHECK_EQ_INT(count(&l, cwd, SANDLOCK_ACTION_CONTINUE, "", false, 0), cont.calls);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

TEST(builtin_denial_names_the_builtin)
{
	static struct log l = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, 0 };
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_max_processes(b, 1);
	sandlock_sandbox_builder_on_decision(b, on_decision, &l);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", "/bin/true && echo forked", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && !strstr(out, "forked")); /* the limit really held */
	sandlock_string_free(out);
	int denied = 0;
	for (int i = 0; i < l.n; i++)
		if (l.r[i].kind == SANDLOCK_ACTION_ERRNO && l.r[i].value == EAGAIN &&
		    strcmp(l.r[i].by, "process count") == 0)
			denied++;
	CHECK(denied >= 1);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

TEST(no_hook_no_calls_and_null_removes_it)
{
	static struct log l = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, 0 };
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_max_processes(b, 1);
	sandlock_sandbox_builder_on_decision(b, on_decision, &l);
	sandlock_sandbox_builder_on_decision(b, NULL, &l);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", "/bin/true; true", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK_EQ_INT(l.n, 0);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}
