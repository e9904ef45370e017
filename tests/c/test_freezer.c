/*
 * test_freezer.c — pause()/resume(): the cgroup v2 freezer where the run
 * has a v2 group, the SIGSTOP/SIGCONT fallback without one (forced here
 * with pause.c's test switch), and a paused sandbox ended either way.
 * Each TEST runs in its own process, so the switch does not leak.
 */
#include "harness.h"
#include "testutil.h"

#include <time.h>

#include "launch/cglimits.h" /* sl_cglimits_no_cpu_group: max_cpu by the throttle */
#include "run/pause.h" /* sl_pause_freezer: force the fallback */



/* "State:" of /proc/PID/status, e.g. "T (stopped)". */
static void status_state(pid_t pid, char *out, size_t len)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	out[0] = 0;
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "State:", 6) == 0) {
			const char *v = line + 6 + strspn(line + 6, " \t");
			snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
			break;
		}
	if (f)
		fclose(f);
}

/* A busy sh loop, its pid the handle's. */
static sandlock_handle_t *busy(sandlock_sandbox_t **sb)
{
	*sb = tu_build(sandlock_sandbox_builder_fs_write(tu_system_builder(), "/dev/null"));
	if (!*sb)
		return NULL;
	const char *argv[] = { "/bin/sh", "-c", "while :; do :; done", NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = sandlock_spawn(*sb, argv, 3, NULL, 0, NULL, &err, &msg);
	if (!h)
		fprintf(stderr, "  spawn failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return h;
}

static void end(sandlock_handle_t *h, sandlock_sandbox_t *sb, pid_t pid)
{
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, NULL, NULL);
	CHECK(r != NULL);
	if (r)
		CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK(kill(pid, 0) < 0 && errno == ESRCH);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

TEST(pause_freezes_the_runs_v2_group_when_it_has_one)
{
	sandlock_sandbox_t *sb = NULL;
	sandlock_handle_t *h = busy(&sb);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h);
	char dir[1024], state[64];
	if (!tu_v2_group(pid, dir, sizeof dir)) {
		end(h, sb, pid);
		SKIP("the run has no cgroup v2 group here");
	}
	CHECK(!tu_group_frozen(dir) && tu_cpu_advances(pid, 200)); /* the control */
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	CHECK(tu_group_frozen(dir));
	status_state(pid, state, sizeof state);
	CHECK(state[0] && strncmp(state, "T", 1) != 0); /* frozen, not stopped */
	long long t0 = tu_cpu_ticks(pid);
	tu_sleep_ms(300);
	CHECK(tu_cpu_ticks(pid) == t0);
	CHECK_EQ_INT(sandlock_handle_resume(h), 0);
	CHECK(!tu_group_frozen(dir));
	CHECK(tu_cpu_advances(pid, 200));
	/* paused again, then killed: the kill thaws init to end the tree */
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	CHECK(tu_group_frozen(dir));
	end(h, sb, pid);
}

TEST(without_the_freezer_pause_falls_back_to_sigstop)
{
	sl_pause_freezer = false; /* as in a run without a v2 group */
	sandlock_sandbox_t *sb = NULL;
	sandlock_handle_t *h = busy(&sb);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h);
	char dir[1024], state[64];
	CHECK(tu_cpu_advances(pid, 200));
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	status_state(pid, state, sizeof state);
	CHECK(strncmp(state, "T (stopped)", 11) == 0);
	if (tu_v2_group(pid, dir, sizeof dir))
		CHECK(!tu_group_frozen(dir));
	long long t0 = tu_cpu_ticks(pid);
	tu_sleep_ms(300);
	CHECK(tu_cpu_ticks(pid) == t0);
	CHECK_EQ_INT(sandlock_handle_resume(h), 0);
	CHECK(tu_cpu_advances(pid, 200));
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	end(h, sb, pid);
}

/* The deadline still ends a frozen sandbox (init is thawed first). */
TEST(a_frozen_sandbox_still_times_out)
{
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_timeout_ms(
	    sandlock_sandbox_builder_fs_write(tu_system_builder(), "/dev/null"), 500));
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", "sleep 1000 & wait", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, NULL, NULL, NULL);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h);
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, NULL, NULL);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	CHECK(kill(pid, 0) < 0 && errno == ESRCH);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/*
 * The freezer with the max_cpu throttle (no CPU group): a user pause wins
 * (no CPU time for many throttle periods), and resume hands the sandbox
 * back to the throttle, which lets it run again: a stop the throttle left
 * in place while it was paused is continued by the resume.
 */
TEST(a_frozen_sandbox_stays_frozen_under_the_throttle)
{
	sl_cglimits_no_cpu_group = true;
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 20));
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", "while :; do :; done", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, NULL, NULL, NULL);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h);
	char dir[1024];
	if (!tu_v2_group(pid, dir, sizeof dir)) {
		end(h, sb, pid);
		SKIP("the run has no cgroup v2 group here");
	}
	for (int round = 0; round < 3; round++) {
		CHECK(tu_cpu_advances(pid, 200)); /* throttled, but running */
		tu_sleep_ms(130); /* some throttle cycles, so it may be mid-stop */
		CHECK_EQ_INT(sandlock_handle_pause(h), 0);
		CHECK(tu_group_frozen(dir));
		int64_t t0 = sandlock_handle_cpu_time_ns(h);
		tu_sleep_ms(450); /* several throttle periods */
		CHECK(tu_group_frozen(dir));
		CHECK(sandlock_handle_cpu_time_ns(h) == t0);
		CHECK_EQ_INT(sandlock_handle_resume(h), 0);
		CHECK(!tu_group_frozen(dir));
	}
	CHECK(tu_cpu_advances(pid, 200));
	end(h, sb, pid);
}
