/*
 * test_on_start.c — sandlock_sandbox_builder_on_start: the start callback
 * reports the sandbox's init (the parent of the command) exactly once,
 * while it is running.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

struct seen {
	int calls;
	int32_t pid;
	int alive; /* kill(pid, 0) succeeded inside the callback */
};

static void record(void *ud, int32_t pid)
{
	struct seen *s = ud;
	s->calls++;
	s->pid = pid;
	s->alive = kill(pid, 0) == 0;
}

TEST(on_start_reports_the_commands_parent_once)
{
	struct seen s = { 0 };
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_on_start(b, record, &s);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", "echo $PPID", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK_EQ_INT(s.calls, 1);
	CHECK(s.alive);
	char want[32];
	snprintf(want, sizeof(want), "%d\n", (int)s.pid);
	CHECK(s.pid > 0);
	CHECK(tu_out_is(r, want));
	sandlock_result_free(r);
	/* A second run of the same sandbox calls it again, with the new init. */
	int32_t first = s.pid;
	r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK_EQ_INT(s.calls, 2);
	CHECK(s.pid != first);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

TEST(on_start_null_removes_the_callback)
{
	struct seen s = { 0 };
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_on_start(b, record, &s);
	sandlock_sandbox_builder_on_start(b, NULL, &s);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/bin/true", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK_EQ_INT(s.calls, 0);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}
