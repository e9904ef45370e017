/*
 * test_throttle.c — max_cpu without a CPU cgroup (the supervisor's
 * SIGSTOP/SIGCONT throttle), the usage readings of a running sandbox
 * (sandlock_handle_cpu_time_ns / _memory_bytes), and that a caller's
 * pause wins over the throttle.  The guest measures its own CPU share.
 */
#include "harness.h"
#include "testutil.h"

#include "run/cgroup.h" /* sl_cgroup_disabled: take the no-cgroup path here */

static sandlock_spawn_opts_t pipe_out(void)
{
	sandlock_spawn_opts_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	return o;
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] ? p[2] : 0;
}

/* The guest's own share of one core while it spins for `secs` of wall time. */
static const char k_busy[] = "import sys, time\n"
                             "t0, c0 = time.monotonic(), time.process_time()\n"
                             "while time.monotonic() - t0 < float(sys.argv[1]): pass\n"
                             "print('%.3f' % ((time.process_time() - c0) / (time.monotonic() - t0)))\n";

static double busy_share(sandlock_builder_t *b, const char *secs)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return -1;
	const char *argv[] = { TU_PY, "-c", k_busy, secs, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	double share = -1;
	if (r) {
		char *out = sandlock_result_stdout(r);
		if (out && sscanf(out, "%lf", &share) != 1)
			share = -1;
		fprintf(stderr, "  guest's CPU share: %s", out ? out : "(none)\n");
		sandlock_string_free(out);
		sandlock_result_free(r);
	}
	return share;
}

TEST(max_cpu_without_a_cgroup_throttles_the_guest)
{
	sl_cgroup_disabled = true; /* as for an unprivileged caller without delegation */
	double share = busy_share(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 20), "1.5");
	/* about 20% of one core: stopped most of the time, never for good */
	CHECK(share > 0.05);
	CHECK(share < 0.45);
}

TEST(max_cpu_throttle_covers_every_process_of_the_sandbox)
{
	sl_cgroup_disabled = true;
	/* two busy processes: together still about 20% of one core */
	const char *code = "import os, sys, time\n"
	                   "pid = os.fork()\n"
	                   "t0, c0 = time.monotonic(), time.process_time()\n"
	                   "while time.monotonic() - t0 < 1.5: pass\n"
	                   "share = (time.process_time() - c0) / (time.monotonic() - t0)\n"
	                   "if pid == 0:\n"
	                   "    print('%.3f' % share, flush=True); os._exit(0)\n"
	                   "os.waitpid(pid, 0)\n"
	                   "print('%.3f' % share)\n";
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 20));
	REQUIRE(sb);
	const char *argv[] = { TU_PY, "-c", code, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	double a = -1, b = -1;
	CHECK(out && sscanf(out, "%lf %lf", &a, &b) == 2);
	fprintf(stderr, "  shares: %s", out ? out : "(none)\n");
	CHECK(a > 0.01 && b > 0.01);
	CHECK(a + b < 0.45);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/* An idle sandbox is never stopped: its output comes as written. */
TEST(max_cpu_throttle_leaves_an_idle_sandbox_alone)
{
	sl_cgroup_disabled = true;
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 5));
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c", "sleep 0.3; echo done", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK(tu_out_is(r, "done\n"));
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	sandlock_result_free(r);
}

TEST(pause_during_throttling_stays_paused)
{
	sl_cgroup_disabled = true;
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 20));
	REQUIRE(sb);
	const char *argv[] = { TU_PY, "-c", "print('up', flush=True)\nwhile True: pass\n", NULL };
	sandlock_spawn_opts_t o = pipe_out();
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, &o, &err, &msg);
	sandlock_string_free(msg);
	REQUIRE(h);
	int out = sandlock_handle_stdout_fd(h);
	char line[32];
	tu_read_line(out, line, sizeof line);
	CHECK(strcmp(line, "up") == 0);
	pid_t cmd = sandlock_handle_pid(h);
	tu_sleep_ms(150); /* a few throttle cycles: it is being stopped and continued */
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	int64_t t0 = sandlock_handle_cpu_time_ns(h);
	CHECK(t0 > 0);
	/* many throttle periods later: still stopped, no CPU time used */
	tu_sleep_ms(600);
	CHECK(proc_state(cmd) == 'T');
	int64_t t1 = sandlock_handle_cpu_time_ns(h);
	CHECK(t1 == t0);
	if (th_failed_now)
		fprintf(stderr, "  cpu %lld -> %lld ns while paused\n", (long long)t0, (long long)t1);
	/* resume: it runs again (throttled) */
	CHECK_EQ_INT(sandlock_handle_resume(h), 0);
	bool ran = false;
	for (int i = 0; i < 250 && !ran; i++) {
		tu_sleep_ms(20);
		ran = sandlock_handle_cpu_time_ns(h) > t1;
	}
	CHECK(ran);
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, NULL, NULL);
	CHECK(r && sandlock_result_reason(r) == SANDLOCK_EXIT_KILLED);
	sandlock_result_free(r);
	close(out);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* The readings of a running sandbox, with and without a cgroup. */
static void usage_readings(bool cgroups)
{
	sl_cgroup_disabled = !cgroups;
	sandlock_sandbox_t *sb = tu_build(tu_system_builder());
	REQUIRE(sb);
	const char *code = "import time\n"
	                   "a = bytearray(64 << 20)\n"
	                   "for i in range(0, len(a), 4096): a[i] = 1\n"
	                   "while time.process_time() < 0.3: pass\n"
	                   "print('ready', flush=True)\n"
	                   "time.sleep(30)\n";
	const char *argv[] = { TU_PY, "-c", code, NULL };
	sandlock_spawn_opts_t o = pipe_out();
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, &o, NULL, NULL);
	REQUIRE(h);
	int out = sandlock_handle_stdout_fd(h);
	char line[32];
	tu_read_line(out, line, sizeof line);
	CHECK(strcmp(line, "ready") == 0);
	int64_t cpu = sandlock_handle_cpu_time_ns(h), mem = sandlock_handle_memory_bytes(h);
	fprintf(stderr, "  cpu %lld ns, memory %lld bytes\n", (long long)cpu, (long long)mem);
	CHECK(cpu >= 250000000LL); /* it used 0.3 s of CPU (10 ms ticks on /proc) */
	CHECK(mem >= (64LL << 20));
	CHECK(mem < (1LL << 30));
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, NULL, NULL);
	sandlock_result_free(r);
	errno = 0;
	CHECK(sandlock_handle_cpu_time_ns(h) == -1 && errno == ESRCH);
	CHECK(sandlock_handle_memory_bytes(h) == -1 && errno == ESRCH);
	CHECK(sandlock_handle_cpu_time_ns(NULL) == -1 && errno == EINVAL);
	close(out);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

TEST(usage_of_a_running_sandbox_from_proc)
{
	usage_readings(false);
}

TEST(usage_of_a_running_sandbox_from_its_cgroup)
{
	usage_readings(true);
}

/* The timeout ends a throttled sandbox (stopped or not) and nothing of it
 * is left: the command's pid is gone once the run returns. */
TEST(timeout_ends_a_throttled_sandbox)
{
	sl_cgroup_disabled = true;
	sandlock_builder_t *b = sandlock_sandbox_builder_max_cpu(tu_system_builder(), 10);
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_timeout_ms(b, 500));
	REQUIRE(sb);
	/* the command reports its pid, then spins (stopped most of the time) */
	const char *argv[] = { TU_PY, "-c", "import os\nprint(os.getpid(), flush=True)\nwhile True: pass\n",
		               NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	char *out = sandlock_result_stdout(r);
	int pid = out ? atoi(out) : 0;
	CHECK(pid > 0);
	CHECK(pid > 0 && kill(pid, 0) < 0 && errno == ESRCH);
	sandlock_string_free(out);
	sandlock_result_free(r);
}
