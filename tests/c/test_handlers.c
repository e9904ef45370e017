/*
 * test_handlers.c — user handlers end to end: every action kind, child
 * memory access, chain order, exception policies, guards, registration
 * errors and ownership, and builtins that a handler cannot override.
 * Every test runs a real sandboxed program and checks what it saw.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* The sandbox of these tests: system programs, extra_dir readable too. */
static sandlock_sandbox_t *mk_sb_ex(const char *extra_dir, uint64_t timeout_ms)
{
	sandlock_builder_t *b = tu_system_builder();
	if (extra_dir)
		sandlock_sandbox_builder_fs_read(b, extra_dir);
	if (timeout_ms)
		sandlock_sandbox_builder_timeout_ms(b, timeout_ms);
	return tu_build(b);
}

static sandlock_sandbox_t *mk_sb(void)
{
	return mk_sb_ex(NULL, 20000);
}

/* Run argv with regs in a fresh mk_sb() sandbox (NULL on failure, reported). */
static sandlock_result_t *run_std(const char *const *argv, sandlock_registration_t *regs,
                                  size_t nregs)
{
	sandlock_sandbox_t *sb = mk_sb();
	if (!sb)
		return NULL;
	sandlock_result_t *r = tu_run_with(sb, argv, regs, nregs);
	sandlock_sandbox_free(sb);
	return r;
}

/* ---- a configurable test handler ---- */
struct ctx {
	atomic_int calls;       /* every invocation */
	atomic_int hits;        /* invocations for `match` */
	atomic_int freed;       /* ud_free calls */
	const char *match;      /* path (openat arg 1) this handler acts on; NULL = all */
	int mode;               /* what to do on a match, see below */
	int32_t value;
	int32_t value2;
	char inject[256];       /* M_INJECT_BYTES: the content served */
	atomic_int flag;        /* M_INJECT_*: the srcfd handed to sandlock */
	int fd;
};
enum { M_CONTINUE, M_ERRNO, M_RETVAL, M_FAIL, M_INJECT_BYTES, M_INJECT_FD, M_KILL, M_HOLD,
       M_UNSET, M_INJECT_TRACKED_FAIL };

static void ctx_free(void *ud)
{
	atomic_fetch_add(&((struct ctx *)ud)->freed, 1);
}

/* With `match` set only an openat of that path matches; else every call. */
static bool matches(struct ctx *c, const sandlock_notif_t *n, sandlock_mem_t *m)
{
	return !c->match || tu_openat_path_is(m, n, c->match);
}

static int32_t generic_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                          sandlock_action_t *out)
{
	struct ctx *c = ud;
	atomic_fetch_add(&c->calls, 1);
	if (!matches(c, n, m)) {
		sandlock_action_set_continue(out);
		return 0;
	}
	atomic_fetch_add(&c->hits, 1);
	switch (c->mode) {
	case M_ERRNO:
		sandlock_action_set_errno(out, c->value);
		return 0;
	case M_RETVAL:
		sandlock_action_set_return_value(out, c->value);
		return 0;
	case M_FAIL:
		return -1;
	case M_UNSET:
		return 0; /* kind left UNSET: a handler error */
	case M_INJECT_BYTES:
		sandlock_action_set_inject_bytes(out, (const uint8_t *)c->inject, strlen(c->inject),
		                                 (uint32_t)c->value);
		return 0;
	case M_INJECT_FD:
		sandlock_action_set_inject_fd_send_tracked(out, dup(c->fd), O_CLOEXEC, 42);
		atomic_store(&c->flag, out->u.inject.srcfd);
		return 0;
	case M_INJECT_TRACKED_FAIL:
		/* An erroring handler that still hands over an fd: it must be closed. */
		sandlock_action_set_inject_fd_send(out, dup(c->fd), 0);
		atomic_store(&c->flag, out->u.inject.srcfd);
		return -1;
	case M_KILL:
		sandlock_action_set_kill(out, c->value, c->value2);
		return 0;
	case M_HOLD:
		sandlock_action_set_hold(out);
		return 0;
	default:
		sandlock_action_set_continue(out);
		return 0;
	}
}

static sandlock_handler_t *mk_h(struct ctx *c, uint32_t policy)
{
	return sandlock_handler_new(generic_fn, c, ctx_free, policy);
}

/* Run argv in the standard sandbox with c's handler (policy) on one syscall. */
static sandlock_result_t *run_one(const char *syscall, struct ctx *c, uint32_t policy,
                                  const char *const *argv)
{
	sandlock_registration_t regs[] = { { syscall, mk_h(c, policy) } };
	return run_std(argv, regs, 1);
}

static const char *const CAT_HOSTNAME[] = { "/bin/cat", "/etc/hostname", NULL };
static const char *const SH_PID[] = { "/bin/sh", "-c", "echo $$", NULL };

/* ================= actions ================= */

TEST(baseline_cat_works_without_handlers)
{
	sandlock_result_t *r = run_std(CAT_HOSTNAME, NULL, 0);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	size_t len = 0;
	sandlock_result_stdout_bytes(r, &len);
	CHECK(len > 0);
	sandlock_result_free(r);
}

TEST(errno_action_fails_openat)
{
	struct ctx c = { .match = "/etc/hostname", .mode = M_ERRNO, .value = EXDEV };
	sandlock_result_t *r = run_one("openat", &c, SANDLOCK_EXCEPTION_KILL, CAT_HOSTNAME);
	REQUIRE(r);
	CHECK(!sandlock_result_success(r));
	CHECK(tu_err_has(r, "Invalid cross-device link"));
	CHECK(atomic_load(&c.hits) == 1);
	CHECK_EQ_INT(atomic_load(&c.freed), 1);
	sandlock_result_free(r);
}

TEST(return_value_action_on_getpid)
{
	struct ctx c = { .mode = M_RETVAL, .value = 777 };
	sandlock_result_t *r = run_one("getpid", &c, SANDLOCK_EXCEPTION_KILL, SH_PID);
	REQUIRE(r);
	CHECK(tu_out_is(r, "777\n"));
	CHECK(atomic_load(&c.calls) >= 1);
	sandlock_result_free(r);
}

/* ---- child memory ---- */
struct memctx {
	char full[256];
	atomic_int full_ok, exact_ok, short_null, tiny_null, read4_ok;
	const char *from, *to; /* mem_write: rewrite path `from` to `to` */
	atomic_int wrote;
};

static int32_t mem_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                      sandlock_action_t *out)
{
	struct memctx *c = ud;
	sandlock_action_set_continue(out);
	char *p = tu_openat_path(m, n);
	if (!p)
		return 0;
	if (c->from && strcmp(p, c->from) == 0) {
		if (sandlock_mem_poke(m, n->args[1], c->to, strlen(c->to) + 1) == 0)
			atomic_store(&c->wrote, 1);
	}
	if (strcmp(p, "/etc/hostname") == 0) {
		snprintf(c->full, sizeof(c->full), "%s", p);
		atomic_store(&c->full_ok, 1);
		/* "/etc/hostname" is 13 chars + NUL: 14 is enough, 13 is not. */
		char *e = sandlock_mem_read_string(m, n->args[1], 14);
		atomic_store(&c->exact_ok, e && strcmp(e, p) == 0);
		sandlock_string_free(e);
		char *s = sandlock_mem_read_string(m, n->args[1], 13);
		atomic_store(&c->short_null, s == NULL);
		sandlock_string_free(s);
		char *t = sandlock_mem_read_string(m, n->args[1], 4);
		atomic_store(&c->tiny_null, t == NULL);
		sandlock_string_free(t);
		char buf[5] = { 0 };
		atomic_store(&c->read4_ok,
		             sandlock_mem_peek(m, n->args[1], buf, 4) == 0 && strcmp(buf, "/etc") == 0);
	}
	sandlock_string_free(p);
	return 0;
}

TEST(read_cstr_reads_openat_path_and_never_truncates)
{
	struct memctx c = { 0 };
	sandlock_registration_t regs[] = {
		{ "openat", sandlock_handler_new(mem_fn, &c, NULL, SANDLOCK_EXCEPTION_KILL) }
	};
	sandlock_result_t *r = run_std(CAT_HOSTNAME, regs, 1);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	CHECK(atomic_load(&c.full_ok));
	CHECK(strcmp(c.full, "/etc/hostname") == 0);
	CHECK(atomic_load(&c.exact_ok));
	CHECK(atomic_load(&c.short_null));
	CHECK(atomic_load(&c.tiny_null));
	CHECK(atomic_load(&c.read4_ok));
	sandlock_result_free(r);
}

TEST(mem_write_changes_what_the_child_opens)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "hnd"));
	char from[128], to[128];
	snprintf(from, sizeof(from), "%s/aaaa", dir);
	snprintf(to, sizeof(to), "%s/bbbb", dir);
	tu_write_file(to, "rewritten\n");
	struct memctx c = { .from = from, .to = to };
	sandlock_registration_t regs[] = {
		{ "openat", sandlock_handler_new(mem_fn, &c, NULL, SANDLOCK_EXCEPTION_KILL) }
	};
	sandlock_sandbox_t *sb = mk_sb_ex(dir, 20000);
	REQUIRE(sb);
	const char *argv[] = { "/bin/cat", from, NULL };
	sandlock_result_t *r = tu_run_with(sb, argv, regs, 1);
	REQUIRE(r);
	CHECK(atomic_load(&c.wrote));
	CHECK(tu_out_is(r, "rewritten\n")); /* aaaa does not exist: only the rewrite explains this */
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
}

/* ---- injection ---- */
TEST(inject_bytes_serves_content)
{
	struct ctx c = { .match = "/etc/hostname", .mode = M_INJECT_BYTES };
	strcpy(c.inject, "injected\n");
	sandlock_result_t *r = run_one("openat", &c, SANDLOCK_EXCEPTION_KILL, CAT_HOSTNAME);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	CHECK(tu_out_is(r, "injected\n"));
	sandlock_result_free(r);
}

/* Serve `content` (with inject flags) as python's open of /etc/hostname;
 * python prints the fd's F_GETFD flags, its seals and what it read. */
static void check_injected_fd(uint32_t flags, const char *content, const char *want)
{
	static const char *const py_fdflags[] = {
		TU_PY, "-c",
		"import os,fcntl\n"
		"fd=os.open('/etc/hostname',os.O_RDONLY)\n"
		"print(fcntl.fcntl(fd,fcntl.F_GETFD), fcntl.fcntl(fd,fcntl.F_GET_SEALS), os.read(fd,64))\n",
		NULL
	};
	struct ctx c = { .match = "/etc/hostname", .mode = M_INJECT_BYTES, .value = (int32_t)flags };
	snprintf(c.inject, sizeof c.inject, "%s", content);
	sandlock_result_t *r = run_one("openat", &c, SANDLOCK_EXCEPTION_KILL, py_fdflags);
	REQUIRE(r);
	CHECK(tu_out_is(r, want));
	sandlock_result_free(r);
}

TEST(inject_bytes_is_cloexec_and_sealed_by_default)
{
	/* FD_CLOEXEC=1; seals SEAL|SHRINK|GROW|WRITE = 15 */
	check_injected_fd(0, "x1\n", "1 15 b'x1\\n'\n");
}

TEST(inject_bytes_writable_no_cloexec)
{
	check_injected_fd(SANDLOCK_INJECT_WRITABLE | SANDLOCK_INJECT_NO_CLOEXEC, "x2\n",
	                  "0 0 b'x2\\n'\n");
}

TEST(inject_fd_send_of_a_real_fd_and_srcfd_closed)
{
	char dir[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(dir, "hnd"));
	char path[128];
	snprintf(path, sizeof(path), "%s/real", dir);
	tu_write_file(path, "from-supervisor\n");
	struct ctx c = { .match = "/etc/hostname", .mode = M_INJECT_FD, .flag = -1 };
	c.fd = open(path, O_RDONLY | O_CLOEXEC);
	REQUIRE(c.fd >= 0);
	sandlock_result_t *r = run_one("openat", &c, SANDLOCK_EXCEPTION_KILL, CAT_HOSTNAME);
	REQUIRE(r);
	CHECK(tu_out_is(r, "from-supervisor\n"));
	int sent = atomic_load(&c.flag);
	CHECK(sent >= 0);
	/* ownership passed to sandlock: the dup'd srcfd must be closed now */
	CHECK(tu_fd_closed(sent));
	sandlock_result_free(r);
	close(c.fd);
	tu_rm_rf(dir);
}

/* ================= chains ================= */

TEST(chain_runs_in_order_until_first_decision)
{
	struct ctx a = { .mode = M_CONTINUE };
	struct ctx b = { .match = "/etc/hostname", .mode = M_ERRNO, .value = EXDEV };
	sandlock_registration_t regs[] = {
		{ "openat", mk_h(&a, SANDLOCK_EXCEPTION_KILL) },
		{ "openat", mk_h(&b, SANDLOCK_EXCEPTION_KILL) },
	};
	sandlock_result_t *r = run_std(CAT_HOSTNAME, regs, 2);
	REQUIRE(r);
	CHECK(tu_err_has(r, "Invalid cross-device link"));
	CHECK(atomic_load(&a.calls) >= 1);
	CHECK_EQ_INT(atomic_load(&a.calls), atomic_load(&b.calls)); /* CONTINUE -> next runs */
	CHECK_EQ_INT(atomic_load(&b.hits), 1);
	sandlock_result_free(r);
}

TEST(chain_short_circuits_after_a_decision)
{
	struct ctx a = { .match = "/etc/hostname", .mode = M_ERRNO, .value = EXDEV };
	struct ctx b = { .match = "/etc/hostname", .mode = M_ERRNO, .value = ENOENT };
	sandlock_registration_t regs[] = {
		{ "openat", mk_h(&a, SANDLOCK_EXCEPTION_KILL) },
		{ "openat", mk_h(&b, SANDLOCK_EXCEPTION_KILL) },
	};
	sandlock_result_t *r = run_std(CAT_HOSTNAME, regs, 2);
	REQUIRE(r);
	CHECK(tu_err_has(r, "Invalid cross-device link"));
	CHECK_EQ_INT(atomic_load(&a.hits), 1);
	CHECK(atomic_load(&b.calls) >= 1); /* it ran for the other openats... */
	CHECK_EQ_INT(atomic_load(&b.hits), 0); /* ...but never for the decided one */
	sandlock_result_free(r);
}

/* ================= exception policies ================= */

/* `echo $$` with a failing getpid handler (mode M_FAIL or M_UNSET) under
 * policy, optionally followed by a second handler in the chain. */
static sandlock_result_t *run_failing_getpid(uint32_t policy, int mode, struct ctx *second)
{
	static struct ctx c;
	memset(&c, 0, sizeof(c));
	c.mode = mode;
	sandlock_registration_t regs[2] = { { "getpid", mk_h(&c, policy) } };
	size_t n = 1;
	if (second)
		regs[n++] = (sandlock_registration_t){ "getpid", mk_h(second, SANDLOCK_EXCEPTION_KILL) };
	return run_std(SH_PID, regs, n);
}

TEST(policy_kill_kills_the_sandbox)
{
	sandlock_result_t *r = run_failing_getpid(SANDLOCK_EXCEPTION_KILL, M_FAIL, NULL);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK_EQ_INT(sandlock_result_term_signal(r), SIGKILL);
	CHECK_EQ_INT(sandlock_result_signal(r), -1); /* the reference: KILLED has none */
	CHECK(tu_out_is(r, ""));
	sandlock_result_free(r);
}

/* The failing handler alone: `echo $$` prints what getpid returned. */
static void check_failing_getpid_prints(uint32_t policy, int mode, const char *want)
{
	sandlock_result_t *r = run_failing_getpid(policy, mode, NULL);
	REQUIRE(r);
	CHECK(tu_out_is(r, want));
	sandlock_result_free(r);
}

TEST(policy_deny_eperm)
{
	/* glibc's getpid returns the raw value: -EPERM shows as -1 */
	check_failing_getpid_prints(SANDLOCK_EXCEPTION_DENY_EPERM, M_FAIL, "-1\n");
}

TEST(policy_deny_eio_also_for_unset_action)
{
	check_failing_getpid_prints(SANDLOCK_EXCEPTION_DENY_EIO, M_FAIL, "-5\n");
	check_failing_getpid_prints(SANDLOCK_EXCEPTION_DENY_EIO, M_UNSET, "-5\n");
}

TEST(policy_continue_lets_the_next_handler_run)
{
	struct ctx second = { .mode = M_RETVAL, .value = 777 };
	sandlock_result_t *r = run_failing_getpid(SANDLOCK_EXCEPTION_CONTINUE, M_FAIL, &second);
	REQUIRE(r);
	CHECK(tu_out_is(r, "777\n"));
	CHECK(atomic_load(&second.calls) >= 1);
	sandlock_result_free(r);
}

TEST(policy_continue_alone_lets_the_call_proceed)
{
	sandlock_result_t *r = run_failing_getpid(SANDLOCK_EXCEPTION_CONTINUE, M_FAIL, NULL);
	REQUIRE(r);
	char *s = sandlock_result_stdout(r);
	CHECK(s && atoi(s) > 1); /* the real pid */
	sandlock_string_free(s);
	sandlock_result_free(r);
}

TEST(erroring_handler_inject_fd_is_closed)
{
	struct ctx c = { .match = "/etc/hostname", .mode = M_INJECT_TRACKED_FAIL, .flag = -1 };
	c.fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	REQUIRE(c.fd >= 0);
	sandlock_result_t *r = run_one("openat", &c, SANDLOCK_EXCEPTION_DENY_EPERM, CAT_HOSTNAME);
	REQUIRE(r);
	CHECK(tu_err_has(r, "Operation not permitted"));
	int sent = atomic_load(&c.flag);
	CHECK(sent >= 0);
	CHECK(tu_fd_closed(sent));
	sandlock_result_free(r);
	close(c.fd);
}

static atomic_int guard_calls;
static int guard_closed(void)
{
	atomic_fetch_add(&guard_calls, 1);
	return 0;
}

TEST(guard_returning_zero_applies_the_policy)
{
	struct ctx c = { .mode = M_RETVAL, .value = 777 };
	sandlock_handler_t *h = mk_h(&c, SANDLOCK_EXCEPTION_DENY_EIO);
	sandlock_handler_set_guard(h, guard_closed);
	sandlock_registration_t regs[] = { { "getpid", h } };
	sandlock_result_t *r = run_std(SH_PID, regs, 1);
	REQUIRE(r);
	CHECK(tu_out_is(r, "-5\n"));
	CHECK(atomic_load(&guard_calls) >= 1);
	CHECK_EQ_INT(atomic_load(&c.calls), 0); /* the callback was never entered */
	sandlock_result_free(r);
}

/* ================= kill / hold ================= */

TEST(kill_action_reports_killed_with_signal)
{
	struct ctx c = { .mode = M_KILL, .value = SIGTERM, .value2 = 0 };
	sandlock_result_t *r = run_one("getpid", &c, SANDLOCK_EXCEPTION_DENY_EPERM, SH_PID);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK_EQ_INT(sandlock_result_term_signal(r), SIGTERM);
	CHECK(tu_out_is(r, ""));
	sandlock_result_free(r);
}

TEST(kill_action_never_trusts_the_handlers_pgid)
{
	/* In a child that leads its own process group, a handler names that
	 * group as pgid.  If sandlock trusted it, the child would die of
	 * SIGTERM instead of reporting the sandbox's result. */
	fflush(NULL);
	pid_t pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		struct ctx c = { .mode = M_KILL, .value = SIGTERM, .value2 = (int32_t)getpid() };
		sandlock_result_t *r = run_one("getpid", &c, SANDLOCK_EXCEPTION_DENY_EPERM, SH_PID);
		if (!r)
			_exit(4);
		bool ok = sandlock_result_reason(r) == SANDLOCK_EXIT_KILLED &&
		          sandlock_result_term_signal(r) == SIGTERM;
		_exit(ok ? 0 : 5);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	CHECK(WIFEXITED(st));
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st), 0);
}

TEST(hold_leaves_the_call_pending_until_timeout)
{
	struct ctx c = { .mode = M_HOLD };
	sandlock_registration_t regs[] = { { "getpid", mk_h(&c, SANDLOCK_EXCEPTION_KILL) } };
	sandlock_sandbox_t *sb = mk_sb_ex(NULL, 500);
	REQUIRE(sb);
	sandlock_result_t *r = tu_run_with(sb, SH_PID, regs, 1);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	CHECK(tu_out_is(r, ""));
	CHECK_EQ_INT(atomic_load(&c.calls), 1);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

/* ================= registration and ownership ================= */

static void check_reg_error(const char *bad, int want_err, const char *want_msg)
{
	struct ctx a = { 0 }, b = { 0 };
	sandlock_handler_t *ha = mk_h(&a, SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t regs[] = {
		{ "openat", ha },
		{ bad, mk_h(&b, SANDLOCK_EXCEPTION_KILL) },
		{ "getpid", ha }, /* the same handler twice: still freed once */
	};
	sandlock_sandbox_t *sb = mk_sb();
	REQUIRE(sb);
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r =
		sandlock_run_with_handlers_err(sb, CAT_HOSTNAME, 2, regs, 3, &err, &msg);
	CHECK(r == NULL);
	CHECK_EQ_INT(err, want_err);
	CHECK(msg && strstr(msg, want_msg));
	if (msg && !strstr(msg, want_msg))
		fprintf(stderr, "  message: %s\n", msg);
	CHECK_EQ_INT(atomic_load(&a.freed), 1);
	CHECK_EQ_INT(atomic_load(&b.freed), 1);
	CHECK_EQ_INT(atomic_load(&a.calls), 0);
	sandlock_string_free(msg);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

TEST(registration_unknown_syscall)
{
	check_reg_error("no_such_syscall", SANDLOCK_ERR_SYSCALL, "unknown syscall 'no_such_syscall'");
}

TEST(registration_blocklisted_ptrace)
{
	check_reg_error("ptrace", SANDLOCK_ERR_SYSCALL,
	                "syscall 'ptrace' is denied by the sandbox and cannot be handled");
}

TEST(registration_clone3_refused)
{
	check_reg_error("clone3", SANDLOCK_ERR_SYSCALL, "clone3");
}

TEST(registration_null_handler_releases_the_others)
{
	struct ctx a = { 0 };
	sandlock_registration_t regs[] = { { "openat", mk_h(&a, SANDLOCK_EXCEPTION_KILL) },
		                           { "getpid", NULL } };
	sandlock_sandbox_t *sb = mk_sb();
	REQUIRE(sb);
	int err = 0;
	sandlock_result_t *r = sandlock_run_with_handlers_err(sb, CAT_HOSTNAME, 2, regs, 2, &err, NULL);
	CHECK(r == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	CHECK_EQ_INT(atomic_load(&a.freed), 1);
	sandlock_sandbox_free(sb);
}

TEST(success_frees_a_shared_handler_once)
{
	struct ctx a = { .mode = M_CONTINUE };
	sandlock_handler_t *h = mk_h(&a, SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t regs[] = { { "openat", h }, { "getpid", h }, { "close", h } };
	sandlock_result_t *r = run_std(CAT_HOSTNAME, regs, 3);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	CHECK(atomic_load(&a.calls) >= 2);
	CHECK_EQ_INT(atomic_load(&a.freed), 1);
	sandlock_result_free(r);
}

TEST(handler_new_rejects_bad_arguments)
{
	struct ctx a = { 0 };
	CHECK(sandlock_handler_new(NULL, &a, ctx_free, 0) == NULL);
	CHECK(sandlock_handler_new(generic_fn, &a, ctx_free, 4) == NULL);
	CHECK_EQ_INT(atomic_load(&a.freed), 0); /* caller keeps ud on failure */
	sandlock_handler_t *h = mk_h(&a, SANDLOCK_EXCEPTION_KILL);
	REQUIRE(h);
	sandlock_handler_free(h);
	CHECK_EQ_INT(atomic_load(&a.freed), 1);
}

/* ================= builtins run before user handlers ================= */

TEST(continue_on_ioctl_cannot_allow_tiocsti)
{
	/* Without the builtin, the CONTINUE would let the kernel run the
	 * ioctl, which on a non-tty stdin answers ENOTTY (25), not EPERM. */
	struct ctx c = { .mode = M_CONTINUE };
	const char *argv[] = {
		TU_PY, "-c",
		"import fcntl,termios\n"
		"for req in (termios.TIOCSTI, termios.TIOCSTI | (1 << 32)):\n"
		"    try:\n"
		"        fcntl.ioctl(0, req, b'x'); print('ok')\n"
		"    except OSError as e: print(e.errno)\n"
		"try:\n"
		"    fcntl.ioctl(0, termios.TCGETS, bytes(64)); print('ok')\n"
		"except OSError as e: print(e.errno)\n",
		NULL
	};
	sandlock_result_t *r = run_one("ioctl", &c, SANDLOCK_EXCEPTION_KILL, argv);
	REQUIRE(r);
	/* TIOCSTI denied (also with junk in the upper 32 bits); a harmless
	 * ioctl still reaches the kernel (ENOTTY on a non-tty stdin). */
	CHECK(tu_out_is(r, "1\n1\n25\n"));
	CHECK(atomic_load(&c.calls) >= 1);
	sandlock_result_free(r);
}

TEST(continue_on_clone_cannot_create_a_user_namespace)
{
	struct ctx c = { .mode = M_CONTINUE };
	const char *argv[] = {
		TU_PY, "-c",
		"import ctypes,os\n"
		"libc=ctypes.CDLL(None,use_errno=True)\n"
		"r=libc.syscall(56, 0x10000000|17, 0, 0, 0, 0)\n"
		"if r==0: os._exit(0)\n"
		"print(r, ctypes.get_errno())\n"
		"if r>0: os.waitpid(r,0)\n"
		"p=os.fork()\n"
		"if p==0: os._exit(0)\n"
		"os.waitpid(p,0)\n",
		NULL
	};
	sandlock_result_t *r = run_one("clone", &c, SANDLOCK_EXCEPTION_KILL, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "-1 1\n"));
	CHECK(atomic_load(&c.calls) >= 1); /* a plain fork did reach the handler */
	sandlock_result_free(r);
}

/* ================= child memory edge cases ================= */

struct pathlog {
	atomic_int hostname_seen;
};

static int32_t pathlog_fn(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                          sandlock_action_t *out)
{
	struct pathlog *c = ud;
	if (tu_openat_path_is(m, n, "/etc/hostname"))
		atomic_fetch_add(&c->hostname_seen, 1);
	sandlock_action_set_continue(out);
	return 0;
}

TEST(read_cstr_stops_before_an_unmapped_page)
{
	/* The path ends 1 byte before an unmapped page: reading a whole
	 * max_len block at once would fault and lose a valid string. */
	struct pathlog c = { 0 };
	sandlock_registration_t regs[] = {
		{ "openat", sandlock_handler_new(pathlog_fn, &c, NULL, SANDLOCK_EXCEPTION_KILL) }
	};
	const char *argv[] = {
		TU_PY, "-c",
		"import ctypes,mmap\n"
		"libc=ctypes.CDLL(None,use_errno=True)\n"
		"libc.mmap.restype=ctypes.c_void_p\n"
		"a=libc.mmap(None,8192,3,0x22,-1,0)\n"
		"libc.munmap(ctypes.c_void_p(a+4096),4096)\n"
		"s=b'/etc/hostname\\0'; off=4096-len(s)\n"
		"ctypes.memmove(a+off,s,len(s))\n"
		"fd=libc.syscall(257,-100,ctypes.c_void_p(a+off),0,0)\n"
		"print('open', fd>=0)\n",
		NULL
	};
	sandlock_result_t *r = run_std(argv, regs, 1);
	REQUIRE(r);
	CHECK(tu_out_is(r, "open True\n"));
	CHECK_EQ_INT(atomic_load(&c.hostname_seen), 1);
	sandlock_result_free(r);
}

TEST(mem_cache_survives_execve)
{
	/* sh's own openats cache /proc/PID/mem for its pid; after `exec cat`
	 * that fd points at the dead address space and must be reopened. */
	struct pathlog c = { 0 };
	sandlock_registration_t regs[] = {
		{ "openat", sandlock_handler_new(pathlog_fn, &c, NULL, SANDLOCK_EXCEPTION_KILL) }
	};
	const char *argv[] = { "/bin/sh", "-c", "exec /bin/cat /etc/hostname", NULL };
	sandlock_result_t *r = run_std(argv, regs, 1);
	REQUIRE(r);
	CHECK(sandlock_result_success(r));
	CHECK_EQ_INT(atomic_load(&c.hostname_seen), 1);
	sandlock_result_free(r);
}
