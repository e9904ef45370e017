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

/* A probe calling what the filter refuses: the blocklist (ptrace, mount,
 * bpf, keyctl, io_uring_setup) and the argument rules (personality flags,
 * a user namespace, a packet socket); prints each errno (0: it worked)
 * and the personality afterwards. */
static const char k_refused_probe[] =
	"import ctypes, sys\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"def call(nr, *a):\n"
	"    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) for x in a])\n"
	"    return 0 if r >= 0 else ctypes.get_errno()\n"
	"n = [int(x) for x in sys.argv[1:]]\n"
	"out = [call(n[0], 0, 0, 0, 0), call(n[1], 0, 0, 0, 0, 0), call(n[2], 0, 0, 0),\n"
	"       call(n[3], 0, 0), call(n[4], 1, 0), call(n[5], 0x0040000),\n"
	"       call(n[6], 0x10000000), call(n[7], 17, 3, 0)]\n"
	"print(*out, libc.personality(0xffffffff))\n";

static const char *const k_blocked_calls[] = { "ptrace", "mount", "bpf", "keyctl",
	                                       "io_uring_setup" };
static const char *const k_arg_calls[] = { "personality", "unshare", "socket" };

/* The probe's argv: python, the script, the syscall numbers. */
static void refused_argv(const char *argv[12], char nums[8][8])
{
	const char *names[8];
	memcpy(names, k_blocked_calls, sizeof k_blocked_calls);
	memcpy(names + 5, k_arg_calls, sizeof k_arg_calls);
	argv[0] = TU_PY;
	argv[1] = "-c";
	argv[2] = k_refused_probe;
	for (int i = 0; i < 8; i++) {
		snprintf(nums[i], 8, "%d", (int)sandlock_syscall_nr(names[i]));
		argv[3 + i] = nums[i];
	}
	argv[11] = NULL;
}

/* How many EPERM records name syscall `name` and decider `by`. */
static int refusals_of(const struct log *l, const char *name, const char *by)
{
	return count(l, (int)sandlock_syscall_nr(name), SANDLOCK_ACTION_ERRNO, by, true, EPERM);
}

/*
 * report_filter_refusals: the calls the filter refuses by itself reach the
 * hook, named ("syscall filter" for the blocklist, "argument rules" for
 * the argument rules), and are refused exactly as without it (every errno
 * EPERM, the personality unchanged); without it the hook sees none.
 * Outside, ptrace(TRACEME) and the personality flag work: the probe
 * reaches the calls.
 */
TEST(filter_refusals_are_reported_only_when_asked)
{
	const char *argv[12];
	char nums[8][8];
	refused_argv(argv, nums);
	const char *outside = tu_outside_line(argv);
	CHECK(strncmp(outside, "0 ", 2) == 0); /* ptrace(PTRACE_TRACEME) worked */
	CHECK(strstr(outside, " 262144") != NULL); /* ADDR_NO_RANDOMIZE was set */
	for (int report = 0; report < 2; report++) {
		static struct log l;
		memset(&l, 0, sizeof l);
		pthread_mutex_init(&l.mu, NULL);
		sandlock_builder_t *b = tu_system_builder();
		sandlock_sandbox_builder_on_decision(b, on_decision, &l);
		sandlock_sandbox_builder_report_filter_refusals(b, report);
		sandlock_sandbox_t *sb = tu_build(b);
		REQUIRE(sb);
		sandlock_result_t *r = tu_run(sb, argv);
		REQUIRE(r);
		CHECK(tu_out_is(r, "1 1 1 1 1 1 1 1 0\n"));
		for (size_t i = 0; i < 5; i++)
			CHECK_EQ_INT(refusals_of(&l, k_blocked_calls[i], "syscall filter"), report);
		for (size_t i = 0; i < 3; i++)
			CHECK_EQ_INT(refusals_of(&l, k_arg_calls[i], "argument rules"), report);
		sandlock_result_free(r);
		sandlock_sandbox_free(sb);
		pthread_mutex_destroy(&l.mu);
	}
}

/* An extra-denied syscall a LAST builtin traps (uts.c: uname) is refused
 * by the syscall filter, reported, and the builtin never performs it. */
TEST(reported_extra_deny_wins_over_a_builtin)
{
	static struct log l = { PTHREAD_MUTEX_INITIALIZER, { { 0 } }, 0 };
	sandlock_builder_t *b = tu_system_builder();
	sandlock_sandbox_builder_on_decision(b, on_decision, &l);
	sandlock_sandbox_builder_report_filter_refusals(b, true);
	sandlock_sandbox_builder_extra_deny_syscalls(b, "uname");
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	const char *argv[] = { TU_PY, "-c",
		               "import os\ntry:\n os.uname(); print('ran')\n"
		               "except OSError as e: print(e.errno)",
		               NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "1\n"));
	CHECK(refusals_of(&l, "uname", "syscall filter") >= 1);
	CHECK_EQ_INT(count(&l, (int)sandlock_syscall_nr("uname"), SANDLOCK_ACTION_RETURN_VALUE,
	                   "virtual hostname", false, 0), 0);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}
