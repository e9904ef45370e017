/*
 * test_knobs.c — resource limits, process settings, extra syscall
 * denials, protections (the strict default), confine and check.  Each
 * knob is checked by what the sandboxed program itself sees, with a
 * control run without the knob.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "launch/landlock.h" /* sl_landlock_abi_cap: linked from libsandlock.a */
#include "testutil.h"

/* The system directories and /proc (the guests below read their own /proc/self). */
static sandlock_builder_t *sysproc(void)
{
	return sandlock_sandbox_builder_fs_read(tu_system_builder(), "/proc");
}

/* Run python3 -c code in b (consumed); stdout into out; the result, or NULL. */
static sandlock_result_t *py(sandlock_builder_t *b, const char *code, char *out, size_t cap)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { TU_PY, "-c", code, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	out[0] = 0;
	if (r) {
		char *s = sandlock_result_stdout(r);
		snprintf(out, cap, "%s", s ? s : "");
		sandlock_string_free(s);
	}
	return r;
}

/* Build b (consumed) expecting failure: the error code, message into msg. */
static int build_error(sandlock_builder_t *b, char *msg, size_t cap)
{
	int err = 0;
	char *m = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &m);
	snprintf(msg, cap, "%s", m ? m : "");
	sandlock_string_free(m);
	sandlock_sandbox_free(sb);
	return sb ? 0 : err;
}

/* Run argv in b (consumed) expecting a run failure: its code, message into msg. */
static int run_error(sandlock_builder_t *b, const char *const *argv, char *msg, size_t cap)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return -1;
	int err = 0;
	char *m = NULL;
	sandlock_result_t *r = sandlock_run_err(sb, argv, tu_argc(argv), &err, &m);
	snprintf(msg, cap, "%s", m ? m : "");
	sandlock_string_free(m);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	return r ? 0 : err;
}

/* ---------------- max_processes ---------------- */

/* Forks children that wait on a pipe (so all are alive at once) until a fork fails. */
static const char k_fork_many[] =
	"import os\n"
	"r, w = os.pipe(); n = 0\n"
	"for i in range(80):\n"
	"    try: pid = os.fork()\n"
	"    except OSError: break\n"
	"    if pid == 0:\n"
	"        os.close(w); os.read(r, 1); os._exit(0)\n"
	"    n += 1\n"
	"os.close(w)\n"
	"for _ in range(n): os.wait()\n"
	"print(n)\n";

TEST(max_processes_defaults_to_64_concurrent)
{
	char out[64];
	sandlock_result_t *r = py(tu_system_builder(), k_fork_many, out, sizeof out);
	REQUIRE(r);
	CHECK_EQ_INT(atoi(out), 63); /* the command itself is the 64th */
	sandlock_result_free(r);
	/* control: 0 = no limit */
	r = py(sandlock_sandbox_builder_max_processes(tu_system_builder(), 0), k_fork_many, out,
	       sizeof out);
	REQUIRE(r);
	CHECK_EQ_INT(atoi(out), 80);
	sandlock_result_free(r);
}

TEST(max_processes_does_not_count_threads)
{
	const char *code = "import threading\n"
	                   "ev = threading.Event()\n"
	                   "ts = [threading.Thread(target=ev.wait) for _ in range(20)]\n"
	                   "[t.start() for t in ts]\n"
	                   "print(threading.active_count() - 1); ev.set()\n"
	                   "[t.join() for t in ts]\n";
	char out[64];
	sandlock_result_t *r =
		py(sandlock_sandbox_builder_max_processes(tu_system_builder(), 1), code, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "20\n") == 0);
	sandlock_result_free(r);
}

/* ---------------- max_open_files ---------------- */

static const char k_nofile[] = "import resource\n"
                               "s, h = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
                               "try:\n"
                               "    resource.setrlimit(resource.RLIMIT_NOFILE, (s, h + 1))\n"
                               "    raised = 'raised'\n"
                               "except (ValueError, OSError):\n"
                               "    raised = 'kept'\n"
                               "print(s, h, raised)\n";

TEST(max_open_files_sets_both_limits_and_cannot_be_raised)
{
	struct rlimit own;
	REQUIRE(getrlimit(RLIMIT_NOFILE, &own) == 0);
	REQUIRE(own.rlim_cur > 100);
	char out[128], want[128];
	sandlock_result_t *r = py(sandlock_sandbox_builder_max_open_files(tu_system_builder(), 50),
	                          k_nofile, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "50 50 kept\n") == 0);
	if (th_failed_now)
		fprintf(stderr, "  guest saw '%s'\n", out);
	sandlock_result_free(r);
	/* a request above our own soft limit is capped at it: a bound, not a grant */
	r = py(sandlock_sandbox_builder_max_open_files(tu_system_builder(), 1u << 30), k_nofile, out,
	       sizeof out);
	REQUIRE(r);
	snprintf(want, sizeof want, "%llu %llu kept\n", (unsigned long long)own.rlim_cur,
	         (unsigned long long)own.rlim_cur);
	CHECK(strcmp(out, want) == 0);
	sandlock_result_free(r);
	/* control: without the knob the guest inherits our limits */
	r = py(tu_system_builder(), "import resource\n"
	                            "print(*resource.getrlimit(resource.RLIMIT_NOFILE))\n",
	       out, sizeof out);
	REQUIRE(r);
	snprintf(want, sizeof want, "%llu %llu\n", (unsigned long long)own.rlim_cur,
	         (unsigned long long)own.rlim_max);
	CHECK(strcmp(out, want) == 0);
	sandlock_result_free(r);
}

/* ---------------- cpu_cores ---------------- */

TEST(cpu_cores_pins_the_sandbox)
{
	cpu_set_t own;
	REQUIRE(sched_getaffinity(0, sizeof own, &own) == 0);
	int last = -1;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &own))
			last = c;
	REQUIRE(last >= 0);
	const char *code = "import os, subprocess\n"
	                   "print(sorted(os.sched_getaffinity(0)))\n"
	                   "print(subprocess.run(['/bin/grep', 'Cpus_allowed_list', "
	                   "'/proc/self/status'], capture_output=True, text=True).stdout.split()[1])\n";
	char out[256], want[256];
	sandlock_result_t *r =
		py(sandlock_sandbox_builder_cpu_core(sysproc(), (uint32_t)last), code, out, sizeof out);
	REQUIRE(r);
	snprintf(want, sizeof want, "[%d]\n%d\n", last, last); /* the command and its child */
	CHECK(strcmp(out, want) == 0);
	if (th_failed_now)
		fprintf(stderr, "  guest saw '%s'\n", out);
	sandlock_result_free(r);
	/* control: the caller's whole set */
	r = py(tu_system_builder(), "import os; print(len(os.sched_getaffinity(0)))", out,
	       sizeof out);
	REQUIRE(r);
	snprintf(want, sizeof want, "%d\n", CPU_COUNT(&own));
	CHECK(strcmp(out, want) == 0);
	sandlock_result_free(r);
}

TEST(cpu_cores_outside_our_affinity_is_an_error)
{
	const char *argv[] = { "/bin/true", NULL };
	char msg[256];
	CHECK_EQ_INT(run_error(sandlock_sandbox_builder_cpu_core(tu_system_builder(), 1000), argv,
	                       msg, sizeof msg),
	             SANDLOCK_ERR_INVALID);
	CHECK(strstr(msg, "core 1000"));
	CHECK_EQ_INT(build_error(sandlock_sandbox_builder_cpu_core(tu_system_builder(), 5000), msg,
	                         sizeof msg),
	             SANDLOCK_ERR_INVALID);
}

/* ---------------- cgroups: max_cpu, max_memory ---------------- */

/* The guest's cgroup line for controller ctl ("cpu", "memory"), or "". */
static const char k_cgline[] = "import sys\n"
                               "for l in open('/proc/self/cgroup'):\n"
                               "    n, ctl, path = l.strip().split(':', 2)\n"
                               "    if sys.argv[1] in ctl.split(','): print(path)\n";

static bool have_cgroup(const char *what)
{
	char *rep = sandlock_check_report();
	char line[128];
	snprintf(line, sizeof line, "%s", what);
	bool ok = rep && strstr(rep, line);
	sandlock_string_free(rep);
	return ok;
}

/* Run k_cgline for ctl in b (consumed): the guest's group path into path. */
static bool guest_group(sandlock_builder_t *b, const char *ctl, char *path, size_t cap)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return false;
	const char *argv[] = { TU_PY, "-c", k_cgline, ctl, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	if (!r)
		return false;
	char *s = sandlock_result_stdout(r);
	snprintf(path, cap, "%s", s ? s : "");
	path[strcspn(path, "\n")] = 0;
	sandlock_string_free(s);
	sandlock_result_free(r);
	return true;
}

TEST(max_cpu_puts_the_sandbox_under_a_cpu_quota)
{
	if (!have_cgroup("max_cpu                      available (cgroup)"))
		SKIP("no cgroup with the cpu controller can be made here");
	char path[512], ctl[512];
	REQUIRE(guest_group(sandlock_sandbox_builder_max_cpu(sysproc(), 25), "cpu", path,
	                    sizeof path));
	CHECK(strstr(path, "/sandlock-") != NULL);
	/* the quota in effect for that group: 25% of one core */
	char file[700], buf[64] = "";
	snprintf(file, sizeof file, "/sys/fs/cgroup/cpu%s", path);
	(void)ctl;
	/* the group is gone once the run is over */
	CHECK(access(file, F_OK) < 0 && errno == ENOENT);
	/* the quota in effect: the guest reads its own group's */
	const char *code = "import sys\n"
	                   "p = [l.strip().split(':', 2)[2] for l in open('/proc/self/cgroup') "
	                   "if 'cpu' in l.split(':')[1].split(',')][0]\n"
	                   "print(open('/sys/fs/cgroup/cpu' + p + '/cpu.cfs_quota_us').read().strip(),"
	                   " open('/sys/fs/cgroup/cpu' + p + '/cpu.cfs_period_us').read().strip())\n";
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_read(sysproc(), "/sys/fs/cgroup");
	sandlock_result_t *r = py(sandlock_sandbox_builder_max_cpu(b, 25), code, buf, sizeof buf);
	REQUIRE(r);
	CHECK(strcmp(buf, "25000 100000\n") == 0);
	if (th_failed_now)
		fprintf(stderr, "  guest saw '%s'\n", buf);
	sandlock_result_free(r);
	/* control: no knob, no group of ours */
	REQUIRE(guest_group(sysproc(), "cpu", path, sizeof path));
	CHECK(strstr(path, "/sandlock-") == NULL);
}

/*
 * Both limits at once must both hold: the guest is in a group of ours for
 * the cpu and for the memory controller (on cgroup v2 one group carries
 * both: two v2 groups would leave it in the second only).
 */
TEST(max_memory_and_max_cpu_apply_together)
{
	if (!have_cgroup("max_cpu                      available (cgroup)") ||
	    !have_cgroup("max_memory                   whole sandbox (cgroup)"))
		SKIP("no cpu and memory cgroups can be made here");
	/* The limit files of every group of ours the guest is in, whichever
	 * hierarchy (v2 or v1) holds them (the usual mount points: the
	 * sandbox's /proc view has no mountinfo). */
	const char *code =
		"seen = set()\n"
		"for l in open('/proc/self/cgroup'):\n"
		"    n, ctl, path = l.strip().split(':', 2)\n"
		"    if '/sandlock-' not in path: continue\n"
		"    roots = ['/sys/fs/cgroup/unified', '/sys/fs/cgroup'] if not ctl else \\\n"
		"        ['/sys/fs/cgroup/' + c for c in [ctl] + ctl.split(',')]\n"
		"    for root in roots:\n"
		"        for f in ('memory.max', 'memory.limit_in_bytes', 'cpu.max', 'cpu.cfs_quota_us'):\n"
		"            try: seen.add(f + '=' + open(root + path + '/' + f).read().split()[0])\n"
		"            except OSError: pass\n"
		"print(' '.join(sorted(seen)))\n";
	char out[512];
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_read(sysproc(), "/sys/fs/cgroup");
	b = sandlock_sandbox_builder_max_memory(b, 256ull << 20);
	sandlock_result_t *r = py(sandlock_sandbox_builder_max_cpu(b, 50), code, out, sizeof out);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	CHECK(strstr(out, "memory.max=268435456") || strstr(out, "memory.limit_in_bytes=268435456"));
	CHECK(strstr(out, "cpu.max=50000") || strstr(out, "cpu.cfs_quota_us=50000"));
	if (th_failed_now)
		fprintf(stderr, "  the guest's limits: '%s'\n", out);
	sandlock_result_free(r);
}

TEST(max_cpu_validation)
{
	char msg[256];
	CHECK_EQ_INT(build_error(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 0), msg,
	                         sizeof msg),
	             SANDLOCK_ERR_INVALID);
	CHECK_EQ_INT(build_error(sandlock_sandbox_builder_max_cpu(tu_system_builder(), 101), msg,
	                         sizeof msg),
	             SANDLOCK_ERR_INVALID);
	CHECK(strstr(msg, "1..100"));
}

/*
 * The budget covers the whole tree: a parent holding 48 MiB and a child
 * adding 48 MiB more exceed 64 MiB together, though each alone fits.
 */
static const char k_two_allocs[] = "import os\n"
                                   "a = bytearray(48 << 20)\n"
                                   "for i in range(0, len(a), 4096): a[i] = 1\n"
                                   "pid = os.fork()\n"
                                   "if pid == 0:\n"
                                   "    b = bytearray(48 << 20)\n"
                                   "    for i in range(0, len(b), 4096): b[i] = 1\n"
                                   "    os._exit(0)\n"
                                   "_, st = os.waitpid(pid, 0)\n"
                                   "print('child', 'ok' if st == 0 else 'died')\n";

TEST(max_memory_is_one_budget_for_the_whole_sandbox)
{
	if (!have_cgroup("max_memory                   whole sandbox"))
		SKIP("no memory cgroup can be made here (max_memory is per process)");
	char path[512];
	REQUIRE(guest_group(sandlock_sandbox_builder_max_memory(sysproc(), 64 << 20), "memory",
	                    path, sizeof path));
	CHECK(strstr(path, "/sandlock-") != NULL);
	char file[700];
	snprintf(file, sizeof file, "/sys/fs/cgroup/memory%s", path);
	CHECK(access(file, F_OK) < 0 && errno == ENOENT); /* removed after the run */
	char out[128];
	sandlock_result_t *r = py(sandlock_sandbox_builder_max_memory(tu_system_builder(), 64 << 20),
	                          k_two_allocs, out, sizeof out);
	REQUIRE(r);
	/* one of the two is OOM-killed: the child, or the parent before it prints */
	CHECK(strstr(out, "child ok") == NULL);
	if (th_failed_now)
		fprintf(stderr, "  guest printed '%s'\n", out);
	sandlock_result_free(r);
	/* control: a budget for both */
	r = py(sandlock_sandbox_builder_max_memory(tu_system_builder(), 512 << 20), k_two_allocs, out,
	       sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "child ok\n") == 0);
	sandlock_result_free(r);
}

/* ---------------- process settings ---------------- */

TEST(no_coredump_sets_rlimit_core_to_zero_for_good)
{
	const char *code = "import resource\n"
	                   "s, h = resource.getrlimit(resource.RLIMIT_CORE)\n"
	                   "try:\n"
	                   "    resource.setrlimit(resource.RLIMIT_CORE, (1 << 20, 1 << 20)); r = 'raised'\n"
	                   "except (ValueError, OSError): r = 'kept'\n"
	                   "print(s, h, r)\n";
	char out[128];
	sandlock_result_t *r = py(sandlock_sandbox_builder_no_coredump(tu_system_builder(), true),
	                          code, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "0 0 kept\n") == 0);
	sandlock_result_free(r);
	struct rlimit own;
	REQUIRE(getrlimit(RLIMIT_CORE, &own) == 0);
	if (own.rlim_max < (1 << 20))
		SKIP("our own hard RLIMIT_CORE is too low for the control");
	r = py(tu_system_builder(), code, out, sizeof out);
	REQUIRE(r);
	CHECK(strstr(out, "raised") != NULL); /* control: the probe can raise it */
	sandlock_result_free(r);
}

static const char k_thp[] = "import ctypes\n"
                            "print(ctypes.CDLL(None, use_errno=True).prctl(42, 0, 0, 0, 0))\n";

TEST(no_huge_pages_disables_thp)
{
	char out[64];
	sandlock_result_t *r = py(sandlock_sandbox_builder_no_huge_pages(tu_system_builder(), true),
	                          k_thp, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "1\n") == 0);
	sandlock_result_free(r);
	r = py(tu_system_builder(), k_thp, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "0\n") == 0);
	sandlock_result_free(r);
}

static const char k_persona[] = "print(open('/proc/self/personality').read().strip())\n";

TEST(no_randomize_memory_sets_addr_no_randomize)
{
	char out[64];
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_read(tu_system_builder(), "/proc");
	sandlock_result_t *r =
		py(sandlock_sandbox_builder_no_randomize_memory(b, true), k_persona, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "00040000\n") == 0); /* ADDR_NO_RANDOMIZE */
	if (th_failed_now)
		fprintf(stderr, "  guest saw '%s'\n", out);
	sandlock_result_free(r);
	r = py(sandlock_sandbox_builder_fs_read(tu_system_builder(), "/proc"), k_persona, out,
	       sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "00000000\n") == 0);
	sandlock_result_free(r);
}

/* ---------------- extra_deny_syscalls ---------------- */

static const char k_uname[] = "import os\n"
                              "try: os.uname(); print('ok')\n"
                              "except OSError as e: print('errno', e.errno)\n";

TEST(extra_deny_syscalls_denies_a_syscall_with_eperm)
{
	char out[64], want[32];
	sandlock_result_t *r = py(tu_system_builder(), k_uname, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "ok\n") == 0); /* control */
	sandlock_result_free(r);
	r = py(sandlock_sandbox_builder_extra_deny_syscalls(tu_system_builder(), "uname"), k_uname,
	       out, sizeof out);
	REQUIRE(r);
	snprintf(want, sizeof want, "errno %d\n", EPERM);
	CHECK(strcmp(out, want) == 0);
	sandlock_result_free(r);
}

/* SysV shared memory: shmget(IPC_PRIVATE, 4096, 0600), removed again at once. */
static const char k_shm[] = "import ctypes\n"
                            "c = ctypes.CDLL(None, use_errno=True)\n"
                            "i = c.shmget(0, 4096, 0o600)\n"
                            "if i < 0: print('errno', ctypes.get_errno())\n"
                            "else: c.shmctl(i, 0, None); print('ok')\n";

/* sysv_ipc is denied by default; extra_allow re-allows it, and a deny wins. */
TEST(extra_deny_syscalls_expands_a_group)
{
	char out[64], want[32];
	snprintf(want, sizeof want, "errno %d\n", EPERM);
	sandlock_builder_t *b = sandlock_sandbox_builder_extra_allow_syscalls(tu_system_builder(),
	                                                                      "sysv_ipc");
	sandlock_result_t *r = py(b, k_shm, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, "ok\n") == 0); /* control: allowed */
	sandlock_result_free(r);
	b = sandlock_sandbox_builder_extra_allow_syscalls(tu_system_builder(), "sysv_ipc");
	r = py(sandlock_sandbox_builder_extra_deny_syscalls(b, "sysv_ipc"), k_shm, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, want) == 0);
	sandlock_result_free(r);
	/* one member by name, the rest of the group still allowed */
	b = sandlock_sandbox_builder_extra_allow_syscalls(tu_system_builder(), "sysv_ipc");
	r = py(sandlock_sandbox_builder_extra_deny_syscalls(b, "shmget"), k_shm, out, sizeof out);
	REQUIRE(r);
	CHECK(strcmp(out, want) == 0);
	sandlock_result_free(r);
}

TEST(extra_deny_syscalls_rejects_unknown_names)
{
	char msg[256];
	CHECK_EQ_INT(build_error(sandlock_sandbox_builder_extra_deny_syscalls(tu_system_builder(),
	                                                                      "no_such_call"),
	                         msg, sizeof msg),
	             SANDLOCK_ERR_SYSCALL);
	CHECK(strstr(msg, "no_such_call"));
	CHECK_EQ_INT(build_error(sandlock_sandbox_builder_extra_deny_syscalls(tu_system_builder(), ""),
	                         msg, sizeof msg),
	             SANDLOCK_ERR_INVALID);
}

TEST(handler_on_an_extra_denied_syscall_is_an_error)
{
	sandlock_sandbox_t *sb =
		tu_build(sandlock_sandbox_builder_extra_deny_syscalls(tu_system_builder(), "uname"));
	REQUIRE(sb);
	int calls = 0;
	sandlock_handler_t *h = sandlock_handler_new(tu_count_and_continue, &calls, NULL,
	                                             SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t reg = { "uname", h };
	const char *argv[] = { "/bin/uname", NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_run_with_handlers_err(sb, argv, 1, &reg, 1, &err, &msg);
	CHECK(r == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_SYSCALL);
	CHECK(msg && strstr(msg, "uname"));
	CHECK_EQ_INT(calls, 0);
	sandlock_string_free(msg);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

/* ---------------- protections: the strict default ---------------- */

TEST(strict_default_refuses_a_missing_protection)
{
	if (sandlock_landlock_abi_version() < 6)
		SKIP("needs a kernel with Landlock ABI 6 for the control");
	const char *argv[] = { "/bin/true", NULL };
	char msg[256];
	sl_landlock_abi_cap = 5;
	int e = run_error(tu_system_builder(), argv, msg, sizeof msg);
	CHECK_EQ_INT(e, SANDLOCK_ERR_UNSUPPORTED);
	CHECK(strstr(msg, "signal_scope") != NULL);
	/* one of the two ABI-6 protections allowed to degrade: still refused */
	e = run_error(sandlock_sandbox_builder_allow_degraded(tu_system_builder(),
	                                                      SANDLOCK_PROTECTION_SIGNAL_SCOPE),
	              argv, msg, sizeof msg);
	CHECK_EQ_INT(e, SANDLOCK_ERR_UNSUPPORTED);
	CHECK(strstr(msg, "abstract_unix_socket_scope") != NULL);
	/* both: it runs */
	sandlock_builder_t *b = sandlock_sandbox_builder_allow_degraded(
		tu_system_builder(), SANDLOCK_PROTECTION_SIGNAL_SCOPE);
	b = sandlock_sandbox_builder_allow_degraded(b,
	                                            SANDLOCK_PROTECTION_ABSTRACT_UNIX_SOCKET_SCOPE);
	sandlock_sandbox_t *sb = tu_build(b);
	sandlock_result_t *r = sb ? tu_run(sb, argv) : NULL;
	CHECK(r && sandlock_result_success(r));
	if (sb) {
		CHECK_EQ_INT(sandlock_sandbox_protection_status(sb, SANDLOCK_PROTECTION_SIGNAL_SCOPE),
		             SANDLOCK_PROTECTION_DEGRADED);
		CHECK_EQ_INT(sandlock_sandbox_protection_status(sb, SANDLOCK_PROTECTION_NET_TCP),
		             SANDLOCK_PROTECTION_ACTIVE);
	}
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	sl_landlock_abi_cap = 0;
	/* control: at the kernel's own ABI the default runs */
	e = run_error(tu_system_builder(), argv, msg, sizeof msg);
	CHECK_EQ_INT(e, 0);
}

TEST(protection_calls_are_last_wins)
{
	sandlock_builder_t *b = tu_system_builder();
	b = sandlock_sandbox_builder_disable(b, SANDLOCK_PROTECTION_NET_TCP);
	b = sandlock_sandbox_builder_allow_degraded(b, SANDLOCK_PROTECTION_NET_TCP);
	b = sandlock_sandbox_builder_allow_degraded(b, SANDLOCK_PROTECTION_FS_TRUNCATE);
	b = sandlock_sandbox_builder_disable(b, SANDLOCK_PROTECTION_FS_TRUNCATE);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	CHECK_EQ_INT(sandlock_sandbox_protection_status(sb, SANDLOCK_PROTECTION_NET_TCP),
	             sandlock_landlock_abi_version() >= 4 ? SANDLOCK_PROTECTION_ACTIVE
	                                                   : SANDLOCK_PROTECTION_DEGRADED);
	CHECK_EQ_INT(sandlock_sandbox_protection_status(sb, SANDLOCK_PROTECTION_FS_TRUNCATE),
	             SANDLOCK_PROTECTION_DISABLED);
	CHECK_EQ_INT(sandlock_sandbox_protection_status(sb, 99), -1);
	sandlock_sandbox_free(sb);
	char msg[128];
	CHECK_EQ_INT(build_error(sandlock_sandbox_builder_disable(tu_system_builder(), 6), msg,
	                         sizeof msg),
	             SANDLOCK_ERR_INVALID);
	CHECK_EQ_INT(sandlock_min_landlock_abi(), 6);
	CHECK(strcmp(sandlock_protection_name(SANDLOCK_PROTECTION_SIGNAL_SCOPE), "signal_scope") ==
	      0);
	CHECK_EQ_INT(sandlock_protection_min_abi(SANDLOCK_PROTECTION_FS_IOCTL_DEV), 5);
}

/* disable really switches a protection off: signals and TCP reach outside. */
TEST(disable_turns_a_protection_off)
{
	if (sandlock_landlock_abi_version() < 6)
		SKIP("needs Landlock ABI 6");
	pid_t victim = tu_spawn_victim();
	REQUIRE(victim >= 0);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", (int)victim);
	const char *argv[] = { tu_escape_path(), "kill", ps, NULL };
	sandlock_sandbox_t *sb = tu_build(tu_escape_builder());
	sandlock_result_t *r = sb ? tu_run(sb, argv) : NULL;
	CHECK(r && tu_out_is(r, "errno=EPERM\n")); /* control: scoped by default */
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	sb = tu_build(sandlock_sandbox_builder_disable(tu_escape_builder(),
	                                               SANDLOCK_PROTECTION_SIGNAL_SCOPE));
	r = sb ? tu_run(sb, argv) : NULL;
	CHECK(r && tu_out_is(r, "ok\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	tu_reap_victim(victim);

	int port;
	int s = tu_tcp_listener(&port);
	REQUIRE(s >= 0);
	snprintf(ps, sizeof ps, "%d", port);
	const char *cargv[] = { tu_escape_path(), "connect", ps, NULL };
	sb = tu_build(tu_escape_builder());
	r = sb ? tu_run(sb, cargv) : NULL;
	CHECK(r && tu_out_is(r, "errno=EACCES\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	sb = tu_build(sandlock_sandbox_builder_disable(tu_escape_builder(),
	                                               SANDLOCK_PROTECTION_NET_TCP));
	r = sb ? tu_run(sb, cargv) : NULL;
	CHECK(r && tu_out_is(r, "ok\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	close(s);
}

/* ---------------- confine ---------------- */

/* In a forked child: confine, then report what it may still do (bits). */
static int confine_child(const char *pub, const char *sec)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_read(tu_system_builder(), pub);
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return 100;
	int err = 0;
	char *msg = NULL;
	if (sandlock_confine_err(sb, &err, &msg) < 0) {
		fprintf(stderr, "  confine: %d %s\n", err, msg ? msg : "");
		return 101;
	}
	int bits = 0;
	int fd = open(pub, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) /* allowed */
		bits |= 1, close(fd);
	fd = open(sec, O_RDONLY);
	if (fd < 0 && errno == EACCES) /* Landlock */
		bits |= 2;
	else if (fd >= 0)
		close(fd);
	if (syscall(SYS_ptrace, 0 /* PTRACE_TRACEME */, 0, 0, 0) < 0 && errno == EPERM)
		bits |= 4; /* the seccomp blocklist */
	return bits;
}

TEST(confine_confines_the_calling_process)
{
	char root[TU_TMPDIR_LEN], pub[128], sec[160];
	REQUIRE(tu_mkdtemp(root, "confine"));
	snprintf(pub, sizeof pub, "%s/pub", root);
	snprintf(sec, sizeof sec, "%s/secret", root);
	REQUIRE(mkdir(pub, 0755) == 0 && tu_write_file(sec, "s\n"));
	/* control: ptrace(TRACEME) and the secret work unconfined */
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(sec, O_RDONLY);
		_exit(fd >= 0 && syscall(SYS_ptrace, 0, 0, 0, 0) == 0 ? 0 : 1);
	}
	int st = -1;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid = fork();
	if (pid == 0)
		_exit(confine_child(pub, sec));
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ_INT(WEXITSTATUS(st), 7);
	tu_rm_rf(root);
}

/* A confined process's view of calls naming another process: its own
 * (pid 0) go through, another's (its parent) are refused by the filter
 * alone (no supervisor answers: ENOSYS).  Bits as confine_child's. */
static int confine_pids_child(void)
{
	sandlock_sandbox_t *sb = tu_build(tu_system_builder());
	int err = 0;
	char *msg = NULL;
	if (!sb || sandlock_confine_err(sb, &err, &msg) < 0)
		return 100;
	struct rlimit rl;
	int bits = 0;
	if (prlimit(0, RLIMIT_CORE, NULL, &rl) == 0)
		bits |= 1;
	if (prlimit(getppid(), RLIMIT_CORE, NULL, &rl) < 0 && errno == ENOSYS)
		bits |= 2;
	return bits;
}

TEST(confine_keeps_calls_on_other_processes_inside)
{
	/* control: unconfined, the parent's limits can be read */
	struct rlimit rl;
	pid_t pid = fork();
	if (pid == 0)
		_exit(prlimit(getppid(), RLIMIT_CORE, NULL, &rl) == 0 ? 0 : 1);
	int st = -1;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	pid = fork();
	if (pid == 0)
		_exit(confine_pids_child());
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st));
	CHECK_EQ_INT(WEXITSTATUS(st), 3);
}

static void *idle_thread(void *arg)
{
	(void)arg;
	pause();
	return NULL;
}

static void ignore_decision(void *ud, const sandlock_decision_t *d)
{
	(void)ud;
	(void)d;
}

static int32_t allow_all(void *ud, const sandlock_policy_event_t *ev, sandlock_policy_ctx_t *ctx)
{
	(void)ud;
	(void)ev;
	(void)ctx;
	return SANDLOCK_VERDICT_ALLOW;
}

TEST(confine_refuses_what_needs_a_child_or_a_supervisor)
{
	struct {
		sandlock_builder_t *b;
		const char *what;
	} cases[] = {
		{ sandlock_sandbox_builder_cwd(tu_system_builder(), "/tmp"), "cwd" },
		{ sandlock_sandbox_builder_env_var(tu_system_builder(), "A", "1"), "env" },
		{ sandlock_sandbox_builder_max_memory(tu_system_builder(), 1 << 30), "max_memory" },
		{ sandlock_sandbox_builder_timeout_ms(tu_system_builder(), 1000), "timeout" },
		{ sandlock_sandbox_builder_max_processes(tu_system_builder(), 5), "max_processes" },
		{ sandlock_sandbox_builder_max_cpu(tu_system_builder(), 50), "max_cpu" },
		{ sandlock_sandbox_builder_on_decision(tu_system_builder(), ignore_decision, NULL),
		  "on_decision" },
		{ sandlock_sandbox_builder_policy_callback(tu_system_builder(), allow_all, NULL), "policy_fn" },
		{ sandlock_sandbox_builder_port_remap(tu_system_builder(), true), "port_remap" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sandlock_sandbox_t *sb = tu_build(cases[i].b);
		REQUIRE(sb);
		int err = 0;
		char *msg = NULL;
		CHECK_EQ_INT(sandlock_confine_err(sb, &err, &msg), -1); /* refused before any change */
		CHECK_EQ_INT(err, SANDLOCK_ERR_CONFLICT);
		CHECK(msg && strstr(msg, cases[i].what));
		sandlock_string_free(msg);
		sandlock_sandbox_free(sb);
	}
	/* a second thread would stay unconfined: refused */
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, idle_thread, NULL) != 0)
			_exit(100);
		sandlock_sandbox_t *sb = tu_build(tu_system_builder());
		int err = 0;
		char *msg = NULL;
		int rc = sandlock_confine_err(sb, &err, &msg);
		_exit(rc == -1 && err == SANDLOCK_ERR_CONFLICT && msg && strstr(msg, "threads") ? 0 : 1);
	}
	int st = -1;
	REQUIRE(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ---------------- check, parse ---------------- */

TEST(check_report_describes_this_host)
{
	char *rep = sandlock_check_report();
	REQUIRE(rep);
	char want[64];
	snprintf(want, sizeof want, "Landlock ABI: %d", sandlock_landlock_abi_version());
	CHECK(strstr(rep, want) != NULL);
	CHECK(strstr(rep, "user notification            yes") != NULL); /* we run supervised */
	CHECK(strstr(rep, "signal_scope") && strstr(rep, "ADDFD") && strstr(rep, "SYNC_WAKE_UP"));
	CHECK(strstr(rep, "v2 group") && strstr(rep, "Yama ptrace_scope"));
	if (th_failed_now)
		fprintf(stderr, "%s", rep);
	sandlock_string_free(rep);
}

TEST(parse_memory_size_accepts_decimals_and_units)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} cases[] = {
		{ "1.5G", 0, 3ull << 29 }, { "512M", 0, 512ull << 20 }, { "64k", 0, 64 << 10 },
		{ "2MiB", 0, 2 << 20 },    { "4096", 0, 4096 },         { " 1G ", 0, 1 << 30 },
		{ "0.5K", 0, 512 },        { "1T", 0, 1ull << 40 },     { "10B", 0, 10 },
		{ "", -1, 0 },             { "1.5.5G", -1, 0 },         { "-1", -1, 0 },
		{ "1X", -1, 0 },           { "G", -1, 0 },              { "0", -2, 0 },
		{ "0.0001K", -2, 0 },      { "99999999999999999999G", -3, 0 },
		{ "17179869184G", -3, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint64_t v = 0;
		int rc = sandlock_parse_memory_size(cases[i].s, &v);
		CHECK_EQ_INT(rc, cases[i].rc);
		if (rc == 0)
			CHECK_EQ_INT(v, cases[i].v);
		if (th_failed_now) {
			fprintf(stderr, "  case '%s'\n", cases[i].s);
			return;
		}
	}
}
