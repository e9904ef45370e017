/*
 * test_determinism.c — random_seed (getrandom from a seeded stream) and
 * time_start (a shifted wall clock, vDSO included), on real programs.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "testutil.h"

#define Y2K_NS (946684800LL * 1000000000LL) /* 2000-01-01T00:00:00Z */

/* Run argv with the given knobs (seed < 0: none; start < 0: none);
 * returns stdout (heap) or NULL. */
static char *run_out(long long seed, long long start_ns, const char *const *argv, int *code)
{
	sandlock_builder_t *b = tu_system_builder();
	if (seed >= 0)
		sandlock_sandbox_builder_random_seed(b, (uint64_t)seed);
	if (start_ns >= 0)
		sandlock_sandbox_builder_time_start_ns(b, start_ns);
	sandlock_sandbox_builder_timeout_ms(b, 30000);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	if (!r)
		return NULL;
	char *out = sandlock_result_stdout(r);
	if (code)
		*code = sandlock_result_exit_code(r);
	sandlock_result_free(r);
	return out;
}

/* date(1) reads the clock through the vDSO: it sees the patched clock. */
static const char *const DATE[] = { "/bin/date", "-u", "+%Y-%m-%d", NULL };

TEST(time_start_shifts_date_through_the_vdso)
{
	int code = -1;
	char *real = run_out(-1, -1, DATE, &code);
	REQUIRE(real);
	CHECK(strcmp(real, "2000-01-01\n") != 0); /* the probe: today is not 2000 */
	sandlock_string_free(real);
	char *out = run_out(-1, Y2K_NS, DATE, &code);
	REQUIRE(out);
	CHECK_EQ_INT(code, 0);
	CHECK(strcmp(out, "2000-01-01\n") == 0);
	if (strcmp(out, "2000-01-01\n") != 0)
		fprintf(stderr, "  date said '%s'\n", out);
	sandlock_string_free(out);
}

/* clock_gettime, gettimeofday and time (libc, i.e. the vDSO), raw
 * syscalls, a thread and a forked child all agree; the monotonic clock
 * and sleeps are real. */
static const char *const CLOCKS[] = {
	TU_PY, "-c",
	"import ctypes, os, threading, time\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"class TS(ctypes.Structure): _fields_ = [('s', ctypes.c_long), ('ns', ctypes.c_long)]\n"
	"ts = TS(); libc.syscall(228, 0, ctypes.byref(ts))\n"
	"tv = TS(); libc.gettimeofday(ctypes.byref(tv), None)\n"
	"vals = [time.time(), libc.time(None), ts.s, tv.s]\n"
	"box = []\n"
	"t = threading.Thread(target=lambda: box.append(time.time())); t.start(); t.join()\n"
	"vals += box\n"
	"pid = os.fork()\n"
	"if pid == 0:\n"
	"    os._exit(0 if 946684800 <= time.time() < 946684800 + 60 else 3)\n"
	"_, st = os.waitpid(pid, 0)\n"
	"m = time.monotonic(); time.sleep(0.2); slept = time.monotonic() - m\n"
	"ok = all(946684800 <= v < 946684800 + 60 for v in vals)\n"
	"print(ok, os.WEXITSTATUS(st), 0.19 < slept < 5)\n",
	NULL,
};

TEST(time_start_covers_every_clock_entry_and_keeps_monotonic_real)
{
	int code = -1;
	char *out = run_out(-1, Y2K_NS, CLOCKS, &code);
	REQUIRE(out);
	CHECK_EQ_INT(code, 0);
	CHECK(strcmp(out, "True 0 True\n") == 0);
	if (strcmp(out, "True 0 True\n") != 0)
		fprintf(stderr, "  got '%s'\n", out);
	sandlock_string_free(out);
}

/* getrandom through libc (os.urandom) and as a raw syscall. */
static const char *const RANDOM[] = {
	TU_PY, "-c",
	"import ctypes, os\n"
	"libc = ctypes.CDLL(None)\n"
	"buf = ctypes.create_string_buffer(16)\n"
	"n = libc.syscall(318, buf, 16, 0)\n"
	"print(os.urandom(16).hex(), n, buf.raw.hex())\n",
	NULL,
};

TEST(random_seed_gives_the_same_stream_every_run)
{
	char *a = run_out(42, -1, RANDOM, NULL);
	char *b = run_out(42, -1, RANDOM, NULL);
	char *c = run_out(43, -1, RANDOM, NULL);
	char *free1 = run_out(-1, -1, RANDOM, NULL);
	char *free2 = run_out(-1, -1, RANDOM, NULL);
	REQUIRE(a && b && c && free1 && free2);
	CHECK(strcmp(free1, free2) != 0); /* the probe: unseeded runs differ */
	CHECK(strcmp(a, b) == 0);
	CHECK(strcmp(a, c) != 0);
	CHECK(strstr(a, " 16 ") != NULL); /* the raw call returned the full count */
	sandlock_string_free(a);
	sandlock_string_free(b);
	sandlock_string_free(c);
	sandlock_string_free(free1);
	sandlock_string_free(free2);
}

/* A bad buffer is EFAULT, as from the kernel; nothing is written elsewhere. */
static const char *const RANDOM_FAULT[] = {
	TU_PY, "-c",
	"import ctypes\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"n = libc.syscall(318, ctypes.c_void_p(8), 16, 0)\n"
	"print(n, ctypes.get_errno())\n",
	NULL,
};

TEST(random_seed_bad_buffer_is_efault)
{
	char *out = run_out(1, -1, RANDOM_FAULT, NULL);
	REQUIRE(out);
	CHECK(strcmp(out, "-1 14\n") == 0);
	sandlock_string_free(out);
}

TEST(time_start_before_epoch_is_refused)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_time_start_ns(b, -1);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	CHECK(sb == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	CHECK(msg && strstr(msg, "time_start"));
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}
