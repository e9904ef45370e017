/*
 * test_determinism.c — random_seed (getrandom from a seeded stream) and
 * time_start (a shifted wall clock, vDSO included), on real programs.
 */
#include <stdio.h>
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

/* ================= num_cpus, deterministic_dirs (issue 10) ================= */

TEST(num_cpus_from_c_and_bad_values)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_num_cpus(b, 3);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { "/usr/bin/nproc", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK(tu_out_is(r, "3\n"));
	sandlock_result_free(r);
	static const uint32_t bad[] = { 0, 1025 };
	for (size_t i = 0; i < 2; i++) {
		b = tu_system_builder();
		sandlock_sandbox_builder_num_cpus(b, bad[i]);
		int err = 0;
		char *msg = NULL, num[16];
		sb = sandlock_sandbox_build(b, &err, &msg);
		snprintf(num, sizeof num, "%u", bad[i]);
		CHECK(sb == NULL);
		CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
		CHECK(msg && strstr(msg, "num_cpus") && strstr(msg, num));
		sandlock_string_free(msg);
		sandlock_sandbox_free(sb);
	}
}

/* A guest reading getdents64 with a tiny buffer: every call returns what
 * fits, the whole listing comes out sorted, a rewind starts over, and a
 * buffer too small for the next entry is EINVAL (as in the kernel). */
static const char *const SMALL_BUF =
	"import ctypes, os, sys\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
	"def names(size):\n"
	"    buf = ctypes.create_string_buffer(size); out = []; calls = 0\n"
	"    while True:\n"
	"        n = libc.syscall(217, fd, buf, size)\n"
	"        if n < 0: return ctypes.get_errno()\n"
	"        if n == 0: return out, calls\n"
	"        calls += 1; off = 0\n"
	"        while off < n:\n"
	"            rl = int.from_bytes(buf.raw[off + 16:off + 18], 'little')\n"
	"            out.append(buf.raw[off + 19:off + rl].split(b'\\0')[0].decode()); off += rl\n"
	"a, calls = names(64)\n"
	"os.lseek(fd, 0, 0)\n"
	"b, _ = names(4096)\n"
	"os.lseek(fd, 0, 0)\n"
	"print(a == b == sorted(a, key=lambda x: (x not in ('.', '..'), x != '.', x)), len(a), calls > 10, names(16))\n";

static void make_names(const char *dir, int n)
{
	char p[128];
	for (int i = n - 1; i >= 0; i--) { /* reverse order on disk */
		snprintf(p, sizeof p, "%s/n%03d", dir, (i * 37) % n);
		tu_write_file(p, "");
	}
}

TEST(deterministic_dirs_small_buffers_rewind_and_einval)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "dsort"));
	make_names(dir, 40);
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, dir);
	sandlock_sandbox_builder_deterministic_dirs(b, true);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { TU_PY, "-c", SMALL_BUF, dir, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK(tu_out_is(r, "True 42 True 22\n")); /* 22 = EINVAL */
	sandlock_result_free(r);
	tu_rm_rf(dir);
}

/* With a COW workdir the sort wraps the merged listing (upper + lower). */
TEST(deterministic_dirs_sorts_the_cow_merged_listing)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "dsortcow"));
	make_names(dir, 5);
	const char *script = "touch n009 n005 n000b; rm n003; ls -f | tr '\\n' ' '";
	const char *want = ". .. n000 n000b n001 n002 n004 n005 n009 ";
	char *outs[2] = { NULL, NULL };
	for (int sorted = 0; sorted < 2; sorted++) {
		sandlock_builder_t *b = tu_system_builder();
		sandlock_sandbox_builder_workdir(b, dir);
		sandlock_sandbox_builder_on_exit(b, SANDLOCK_BRANCH_ABORT);
		sandlock_sandbox_builder_cwd(b, dir);
		sandlock_sandbox_builder_max_processes(b, 0); /* a pipeline: see test_procvirt.py */
		sandlock_sandbox_builder_deterministic_dirs(b, sorted);
		sandlock_sandbox_t *sb = tu_build(b);
		REQUIRE(sb);
		const char *argv[] = { "/bin/sh", "-c", script, NULL };
		sandlock_result_t *r = tu_run(sb, argv);
		sandlock_sandbox_free(sb);
		REQUIRE(r);
		outs[sorted] = sandlock_result_stdout(r);
		sandlock_result_free(r);
	}
	CHECK(outs[0] && strcmp(outs[0], want) != 0); /* control: merge order */
	CHECK(outs[1] && strcmp(outs[1], want) == 0);
	if (outs[1] && strcmp(outs[1], want) != 0)
		fprintf(stderr, "  got '%s'\n", outs[1]);
	sandlock_string_free(outs[0]);
	sandlock_string_free(outs[1]);
	tu_rm_rf(dir);
}

/* The opener's views from C: cpuinfo and the CPU list (num_cpus), meminfo
 * (max_memory), a seeded /dev/urandom that repeats across runs. */
static char *views_out(uint64_t seed)
{
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_fs_read(b, "/proc");
	sandlock_sandbox_builder_fs_read(b, "/sys/devices/system/cpu");
	sandlock_sandbox_builder_fs_read(b, "/dev/urandom");
	sandlock_sandbox_builder_num_cpus(b, 3);
	sandlock_sandbox_builder_max_memory(b, 300ull << 20);
	sandlock_sandbox_builder_random_seed(b, seed);
	sandlock_sandbox_builder_max_processes(b, 0); /* pipelines: see test_procvirt.py */
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { "/bin/sh", "-c",
		"grep -c ^processor /proc/cpuinfo; cat /sys/devices/system/cpu/online; "
		"grep -c '^cpu[0-9]' /proc/stat; "
		"head -1 /proc/meminfo | tr -s ' '; head -c 12 /dev/urandom | od -An -tx1", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	char *out = r ? sandlock_result_stdout(r) : NULL;
	sandlock_result_free(r);
	return out;
}

TEST(views_of_cpus_memory_and_urandom)
{
	char *a = views_out(1), *b = views_out(1), *c = views_out(2);
	REQUIRE(a && b && c);
	CHECK(strncmp(a, "3\n0-2\n3\nMemTotal: 307200 kB\n", 28) == 0);
	CHECK(strlen(a) > 32 && strcmp(a, b) == 0 && strcmp(a, c) != 0);
	sandlock_string_free(a);
	sandlock_string_free(b);
	sandlock_string_free(c);
}
