/*
 * test_run.c — running real commands in the sandbox: output capture,
 * exit codes, timeouts, environment, cwd, cleanup of leftovers.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "sandlock.h"

/* A sandbox that can run the system's binaries. */
static sandlock_builder_t *base(void)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	sandlock_sandbox_builder_fs_read(b, "/usr");
	sandlock_sandbox_builder_fs_read(b, "/etc");
	return b;
}

/* Build b, run argv, and return the result (NULL on failure, *err set). */
static sandlock_result_t *run_argv(sandlock_builder_t *b, const char *const *argv, int *err,
                                   char **msg)
{
	int e = 0;
	char *m = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &e, &m);
	if (!sb) {
		fprintf(stderr, "  build failed: %d %s\n", e, m ? m : "");
		sandlock_string_free(m);
		if (err)
			*err = e;
		return NULL;
	}
	uint32_t argc = 0;
	while (argv[argc])
		argc++;
	sandlock_result_t *r = sandlock_run_err(sb, argv, argc, &e, &m);
	sandlock_sandbox_free(sb);
	if (err)
		*err = e;
	if (msg)
		*msg = m;
	else
		sandlock_string_free(m);
	return r;
}

static sandlock_result_t *sh(sandlock_builder_t *b, const char *script)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	return run_argv(b, argv, NULL, NULL);
}

TEST(echo_output)
{
	const char *argv[] = { "/bin/echo", "hello", "world", NULL };
	sandlock_result_t *r = run_argv(base(), argv, NULL, NULL);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strcmp(out, "hello world\n") == 0);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK(sandlock_result_success(r));
	sandlock_string_free(out);
	sandlock_result_free(r);
}

TEST(path_lookup)
{
	const char *argv[] = { "echo", "via-path", NULL };
	sandlock_result_t *r = run_argv(base(), argv, NULL, NULL);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strcmp(out, "via-path\n") == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

TEST(exit_code_and_stderr)
{
	sandlock_result_t *r = sh(base(), "echo oops >&2; exit 3");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 3);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK(!sandlock_result_success(r));
	char *err = sandlock_result_stderr(r);
	CHECK(err && strcmp(err, "oops\n") == 0);
	sandlock_string_free(err);
	sandlock_result_free(r);
}

TEST(killed_by_signal)
{
	sandlock_result_t *r = sh(base(), "kill -TERM $$");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_SIGNALED);
	CHECK_EQ_INT(sandlock_result_signal(r), SIGTERM);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 128 + SIGTERM);
	CHECK(!sandlock_result_success(r));
	sandlock_result_free(r);
}

/* `$SANDLOCK_BUILD/sandlock ARGS` (the CLI), its stdout into out. */
static int cli_out(const char *args, char *out, size_t len)
{
	const char *b = getenv("SANDLOCK_BUILD");
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "%s/sandlock %s 2>/dev/null", b ? b : "build", args);
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	size_t n = fread(out, 1, len - 1, p);
	out[n] = 0;
	return pclose(p);
}

/* A run started from C is listed by `sandlock ps` and ended by `sandlock
 * kill NAME`, as a CLI run is (the library serves its control socket). */
TEST(c_started_run_is_listed_and_killed)
{
	char dir[] = "/tmp/sandlock-xdg-XXXXXX", out[8192];
	REQUIRE(mkdtemp(dir));
	setenv("XDG_RUNTIME_DIR", dir, 1);
	REQUIRE(cli_out("ps --json", out, sizeof out) == 0);
	CHECK(strstr(out, "\"cbox\"") == NULL); /* the control: not yet */
	sandlock_builder_t *b = base();
	sandlock_sandbox_builder_fs_read(b, "/bin");
	sandlock_sandbox_builder_fs_read(b, "/lib");
	sandlock_sandbox_builder_fs_read(b, "/lib64");
	sandlock_sandbox_builder_name(b, "cbox");
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, NULL, NULL);
	REQUIRE(sb);
	const char *argv[] = { "sleep", "1000", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 2, NULL, 0, NULL, NULL, NULL);
	REQUIRE(h);
	bool seen = false;
	for (int i = 0; i < 500 && !seen; i++) {
		seen = cli_out("ps --json", out, sizeof out) == 0 && strstr(out, "\"cbox\"");
		if (!seen)
			usleep(10000);
	}
	CHECK(seen);
	CHECK_EQ_INT(cli_out("kill cbox", out, sizeof out), 0);
	sandlock_result_t *r = sandlock_handle_wait_ms(h, 30000, NULL, NULL);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
	CHECK(cli_out("ps --json", out, sizeof out) == 0 && strstr(out, "\"cbox\"") == NULL);
	unsetenv("XDG_RUNTIME_DIR");
	char rm[128];
	snprintf(rm, sizeof rm, "rm -rf %s", dir);
	CHECK_EQ_INT(system(rm), 0);
}

/* Both pipes fill up at once: a reader that serialises them would deadlock. */
TEST(large_output_both_streams)
{
	sandlock_result_t *r =
		sh(base(), "i=0; while [ $i -lt 3 ]; do yes abcdefghijklmno | head -c 700000; "
		           "yes ABCDEFGHIJKLMNO | head -c 700000 >&2; i=$((i+1)); done");
	REQUIRE(r);
	size_t no = 0, ne = 0;
	const uint8_t *o = sandlock_result_stdout_bytes(r, &no);
	const uint8_t *e = sandlock_result_stderr_bytes(r, &ne);
	CHECK_EQ_INT(no, 2100000);
	CHECK_EQ_INT(ne, 2100000);
	CHECK(o && memcmp(o, "abcdefghijklmno\n", 16) == 0);
	CHECK(e && memcmp(e, "ABCDEFGHIJKLMNO\n", 16) == 0);
	CHECK(sandlock_result_success(r));
	sandlock_result_free(r);
}

TEST(timeout_kills)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_timeout_ms(base(), 300);
	sandlock_result_t *r = sh(b, "echo started; sleep 30; echo finished");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 124);
	CHECK(!sandlock_result_success(r));
	char *out = sandlock_result_stdout(r);
	CHECK(out && strcmp(out, "started\n") == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

TEST(env_inherited_and_overridden)
{
	setenv("SANDLOCK_TEST_INHERIT", "from-parent", 1);
	sandlock_builder_t *b = sandlock_sandbox_builder_env_var(base(), "FOO", "bar=baz");
	const char *argv[] = { "/usr/bin/env", NULL };
	sandlock_result_t *r = run_argv(b, argv, NULL, NULL);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strstr(out, "\nFOO=bar=baz\n"));
	CHECK(out && strstr(out, "SANDLOCK_TEST_INHERIT=from-parent\n"));
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/* The clean environment: PATH, HOME, USER, TERM, LANG from the caller where
 * set (this test runs in its own process, so changing its environment is
 * harmless), PATH defaulted, then the overrides; nothing else. */
static char *clean_env_of_run(void)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_clean_env(base(), true);
	sandlock_sandbox_builder_env_var(b, "FOO", "1");
	sandlock_sandbox_builder_env_var(b, "FOO", "2"); /* a later value wins */
	const char *argv[] = { "/usr/bin/env", NULL };
	sandlock_result_t *r = run_argv(b, argv, NULL, NULL);
	char *out = r ? sandlock_result_stdout(r) : NULL;
	sandlock_result_free(r);
	return out;
}

static bool env_is(char *out, const char *want)
{
	bool ok = out && strcmp(out, want) == 0;
	if (!ok)
		fprintf(stderr, "  env was: '%s'\n  expected: '%s'\n", out ? out : "(no run)", want);
	sandlock_string_free(out);
	return ok;
}

TEST(clean_env)
{
	setenv("SANDLOCK_TEST_INHERIT", "from-parent", 1);
	setenv("PATH", "/usr/bin:/bin", 1);
	setenv("HOME", "/sandlock-home", 1);
	setenv("USER", "tester", 1);
	setenv("TERM", "dumb", 1);
	setenv("LANG", "C.UTF-8", 1);
	CHECK(env_is(clean_env_of_run(), "PATH=/usr/bin:/bin\nHOME=/sandlock-home\nUSER=tester\n"
	                                 "TERM=dumb\nLANG=C.UTF-8\nFOO=2\n"));
	unsetenv("PATH");
	unsetenv("HOME");
	unsetenv("LANG");
	CHECK(env_is(clean_env_of_run(), "PATH=/usr/local/bin:/usr/bin:/bin\nUSER=tester\n"
	                                 "TERM=dumb\nFOO=2\n"));
}

TEST(cwd_is_applied)
{
	char dir[] = "/tmp/sandlock-cwd-XXXXXX";
	REQUIRE(mkdtemp(dir));
	sandlock_builder_t *b = sandlock_sandbox_builder_cwd(base(), dir);
	const char *argv[] = { "/bin/pwd", NULL };
	sandlock_result_t *r = run_argv(b, argv, NULL, NULL);
	rmdir(dir);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	char want[64];
	snprintf(want, sizeof want, "%s\n", dir);
	CHECK(out && strcmp(out, want) == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

TEST(command_not_found)
{
	const char *argv[] = { "no-such-command-sandlock", NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = run_argv(base(), argv, &err, &msg);
	CHECK(r == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_NOT_FOUND);
	CHECK(msg && strstr(msg, "no-such-command-sandlock"));
	sandlock_string_free(msg);
	sandlock_result_free(r);
}

/* A command the sandbox starts but that never becomes the program says
 * why in the result (its errno name), as the CLI's JSON and Python do;
 * a program's own exit 127 is no such failure. */
TEST(exec_failure_is_in_the_result)
{
	static const struct {
		const char *path;
		int code;
		const char *error;
	} cases[] = {
		{ "/no-such-file-sandlock", 127, "cannot execute /no-such-file-sandlock: ENOENT" },
		{ "/dev/null", 126, "cannot execute /dev/null: EACCES" }, /* no regular file */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *argv[] = { cases[i].path, NULL };
		sandlock_result_t *r = run_argv(base(), argv, NULL, NULL);
		REQUIRE(r);
		CHECK_EQ_INT(sandlock_result_exit_code(r), cases[i].code);
		const char *e = sandlock_result_error(r);
		CHECK(e && strcmp(e, cases[i].error) == 0);
		if (!e || strcmp(e, cases[i].error))
			fprintf(stderr, "  error was '%s'\n", e ? e : "(null)");
		sandlock_result_free(r);
	}
	sandlock_result_t *r = sh(base(), "exit 127");
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 127);
	CHECK(sandlock_result_error(r) == NULL);
	sandlock_result_free(r);
}

/* True if r's captured stderr is exactly want. */
static bool stderr_is(sandlock_result_t *r, const char *want)
{
	char *e = sandlock_result_stderr(r);
	bool ok = e && strcmp(e, want) == 0;
	if (!ok)
		fprintf(stderr, "  stderr was '%s', expected '%s'\n", e ? e : "(null)", want);
	sandlock_string_free(e);
	return ok;
}

/* Without any fs rule Landlock denies executing the program: 126, and the
 * child says why instead of failing silently. */
TEST(exec_denied_without_rules)
{
	const char *argv[] = { "/bin/echo", "x", NULL };
	sandlock_result_t *r = run_argv(sandlock_sandbox_builder_new(), argv, NULL, NULL);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 126);
	size_t n = 1;
	sandlock_result_stdout_bytes(r, &n);
	CHECK_EQ_INT(n, 0);
	CHECK(stderr_is(r, "sandlock: cannot execute /bin/echo: EACCES\n"));
	sandlock_result_free(r);
}

/* An executable outside fs_read: runs when its directory is granted (the
 * control), else the exec is denied with 126 and a message on stderr. */
TEST(exec_outside_fs_read_is_126_with_message)
{
	char dir[] = "/tmp/sandlock-exec-XXXXXX";
	REQUIRE(mkdtemp(dir));
	char path[64];
	snprintf(path, sizeof path, "%s/prog", dir);
	FILE *f = fopen(path, "w");
	REQUIRE(f);
	fputs("#!/bin/sh\necho ran\n", f);
	fclose(f);
	chmod(path, 0755);
	const char *argv[] = { path, NULL };

	sandlock_result_t *r = run_argv(sandlock_sandbox_builder_fs_read(base(), dir), argv, NULL, NULL);
	CHECK(r && sandlock_result_exit_code(r) == 0);
	char *out = r ? sandlock_result_stdout(r) : NULL;
	CHECK(out && strcmp(out, "ran\n") == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);

	r = run_argv(base(), argv, NULL, NULL);
	unlink(path);
	rmdir(dir);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 126);
	char want[128];
	snprintf(want, sizeof want, "sandlock: cannot execute %s: EACCES\n", path);
	CHECK(stderr_is(r, want));
	size_t n = 1;
	sandlock_result_stdout_bytes(r, &n);
	CHECK_EQ_INT(n, 0);
	sandlock_result_free(r);
}

/* An absolute path is exec'd as is (no PATH search): a missing one is 127. */
TEST(exec_missing_absolute_path_is_127_with_message)
{
	const char *argv[] = { "/nonexistent-sandlock/prog", "arg", NULL };
	sandlock_result_t *r = run_argv(base(), argv, NULL, NULL);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 127);
	CHECK(stderr_is(r, "sandlock: cannot execute /nonexistent-sandlock/prog: ENOENT\n"));
	sandlock_result_free(r);
}

static int32_t deny_exec(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                         sandlock_action_t *out)
{
	(void)ud, (void)n, (void)m;
	sandlock_action_set_errno(out, EPERM);
	return 0;
}

/* A handler that refuses execve: the launch's own exec fails, and says so. */
TEST(exec_denied_by_handler_is_126_with_message)
{
	sandlock_sandbox_t *sb = sandlock_sandbox_build(base(), NULL, NULL);
	REQUIRE(sb);
	sandlock_registration_t reg = {
		"execve", sandlock_handler_new(deny_exec, NULL, NULL, SANDLOCK_EXCEPTION_KILL)
	};
	const char *argv[] = { "/bin/echo", "should-not-run", NULL };
	sandlock_result_t *r = sandlock_run_with_handlers_err(sb, argv, 2, &reg, 1, NULL, NULL);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 126);
	CHECK(stderr_is(r, "sandlock: cannot execute /bin/echo: EPERM\n"));
	size_t n = 1;
	sandlock_result_stdout_bytes(r, &n);
	CHECK_EQ_INT(n, 0);
	sandlock_result_free(r);
}

/* Dead = gone or a zombie waiting for its new parent (init) to reap it. */
static bool process_dead(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return true;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && (p[2] == 'Z' || p[2] == 'X');
}

TEST(background_grandchild_is_killed)
{
	sandlock_result_t *r = sh(base(), "sleep 100 & echo $!");
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	REQUIRE(out);
	pid_t pid = (pid_t)atoi(out);
	CHECK(pid > 1);
	if (pid > 1)
		CHECK(process_dead(pid));
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/*
 * A python command starts a child that leaves the sandbox's process group
 * and session (setsid) and execs a long sleep; once the setsid has
 * happened, the command prints the child's pid and goes on with `then`.
 * The end-of-run killpg cannot see such a child: only the sandbox's init,
 * to which it stays attached as a subreaper's descendant, can end it.
 */
#define PY_SETSID_ESCAPEE(then)                                              \
	"import os, signal, sys, time\n"                                      \
	"r, w = os.pipe()\n"                                                  \
	"pid = os.fork()\n"                                                   \
	"if pid == 0:\n"                                                      \
	"    os.setsid(); os.write(w, b'x')\n"                                \
	"    os.execv('/bin/sleep', ['sleep', '300'])\n"                      \
	"os.read(r, 1)\n"                                                     \
	"print(pid, flush=True)\n" then

/* The escapee's pid from the first stdout line (0 if absent). */
static pid_t escapee_pid(const sandlock_result_t *r)
{
	char *out = sandlock_result_stdout(r);
	pid_t pid = out ? (pid_t)atoi(out) : 0;
	sandlock_string_free(out);
	return pid;
}

/* CHECK that the escapee is dead; kill it if not (no leak into later tests). */
static void check_escapee_dead(pid_t pid)
{
	CHECK(pid > 1);
	if (pid <= 1)
		return;
	bool dead = process_dead(pid);
	CHECK(dead);
	if (!dead)
		kill(pid, SIGKILL);
}

static sandlock_result_t *run_py(sandlock_builder_t *b, const char *script)
{
	const char *argv[] = { "/usr/bin/python3", "-c", script, NULL };
	return run_argv(b, argv, NULL, NULL);
}

TEST(setsid_escapee_is_killed_when_the_command_exits)
{
	sandlock_result_t *r = run_py(base(), PY_SETSID_ESCAPEE(""));
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	check_escapee_dead(escapee_pid(r));
	sandlock_result_free(r);
}

TEST(setsid_escapee_is_killed_on_timeout)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_timeout_ms(base(), 500);
	sandlock_result_t *r = run_py(b, PY_SETSID_ESCAPEE("time.sleep(30)\n"));
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 124);
	CHECK_EQ_INT(sandlock_result_term_signal(r), SIGKILL);
	CHECK_EQ_INT(sandlock_result_signal(r), -1); /* the reference: only SIGNALED has one */
	check_escapee_dead(escapee_pid(r));
	sandlock_result_free(r);
}

/*
 * The command tries to SIGKILL (and SIGSTOP) the sandbox's init, its
 * parent: with init gone, the setsid child would be orphaned to the
 * host's init and outlive the run.  init stays outside the command's
 * Landlock domain, which scopes signals, so both fail with EPERM (Landlock
 * ABI >= 6).
 */
TEST(command_cannot_signal_the_sandbox_init)
{
	if (sandlock_landlock_abi_version() < 6) {
		fprintf(stderr, "  skipped: Landlock ABI < 6 has no signal scoping\n");
		return;
	}
	sandlock_result_t *r = run_py(base(), PY_SETSID_ESCAPEE(
		"for sig in (signal.SIGSTOP, signal.SIGKILL):\n"
		"    try:\n"
		"        os.kill(os.getppid(), sig); print('sent')\n"
		"    except OSError as e:\n"
		"        print(e.errno)\n"
		"sys.stdout.flush()\n"));
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strstr(out, "\n1\n1\n")); /* EPERM twice */
	sandlock_string_free(out);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	check_escapee_dead(escapee_pid(r));
	sandlock_result_free(r);
}

/* A handler's KILL action ends the escapee too (init is asked, respond.c). */
static int32_t kill_on_getppid(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                               sandlock_action_t *out)
{
	(void)ud;
	(void)n;
	(void)m;
	sandlock_action_set_kill(out, SIGKILL, 0);
	return 0;
}

TEST(setsid_escapee_is_killed_by_kill_action)
{
	sandlock_sandbox_t *sb =
		sandlock_sandbox_build(sandlock_sandbox_builder_timeout_ms(base(), 60000), NULL, NULL);
	REQUIRE(sb);
	sandlock_handler_t *h =
		sandlock_handler_new(kill_on_getppid, NULL, NULL, SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t reg = { "getppid", h };
	const char *argv[] = { "/usr/bin/python3", "-c",
		               PY_SETSID_ESCAPEE("os.getppid()\ntime.sleep(30)\n"), NULL };
	sandlock_result_t *r = sandlock_run_with_handlers_err(sb, argv, 3, &reg, 1, NULL, NULL);
	sandlock_sandbox_free(sb);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK_EQ_INT(sandlock_result_term_signal(r), SIGKILL);
	check_escapee_dead(escapee_pid(r));
	sandlock_result_free(r);
}

TEST(nul_bytes_in_output)
{
	sandlock_result_t *r = sh(base(), "printf 'a\\000b\\000'");
	REQUIRE(r);
	size_t n = 0;
	const uint8_t *p = sandlock_result_stdout_bytes(r, &n);
	CHECK_EQ_INT(n, 4);
	CHECK(p && memcmp(p, "a\0b\0", 4) == 0);
	char *s = sandlock_result_stdout(r);
	CHECK(s && strcmp(s, "a") == 0);
	sandlock_string_free(s);
	sandlock_result_free(r);
}

TEST(stdin_is_dev_null)
{
	sandlock_result_t *r = sh(base(), "cat; echo rc=$?");
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strcmp(out, "rc=0\n") == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);
}

TEST(misc_api)
{
	CHECK_EQ_INT(sandlock_syscall_nr("getpid"), 39);
	CHECK_EQ_INT(sandlock_syscall_nr("no_such_syscall"), -1);
	CHECK_EQ_INT(sandlock_syscall_nr(NULL), -1);
	char *n = sandlock_syscall_name(39);
	CHECK(n && strcmp(n, "getpid") == 0);
	sandlock_string_free(n);
	CHECK(sandlock_syscall_name(-5) == NULL);
	CHECK(sandlock_landlock_abi_version() >= 1);
	CHECK(strcmp(sandlock_version(), SANDLOCK_VERSION) == 0);
}

/* A failure inside the child's setup is reported by name, not as a crash. */
TEST(child_setup_error_reported)
{
	char dir[] = "/tmp/sandlock-gone-XXXXXX";
	REQUIRE(mkdtemp(dir));
	sandlock_sandbox_t *sb =
		sandlock_sandbox_build(sandlock_sandbox_builder_cwd(base(), dir), NULL, NULL);
	REQUIRE(sb);
	rmdir(dir); /* chdir in the child now fails */
	const char *argv[] = { "/bin/true", NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_run_err(sb, argv, 1, &err, &msg);
	CHECK(r == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_SYSTEM);
	CHECK(msg && strstr(msg, "chdir") && strstr(msg, "ENOENT"));
	sandlock_string_free(msg);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

/* max_memory caps the address space: a big allocation fails inside only. */
TEST(max_memory_limits_allocation)
{
	const char *argv[] = { "/usr/bin/python3", "-c", "bytearray(400 * 1024 * 1024)", NULL };
	sandlock_result_t *r = run_argv(base(), argv, NULL, NULL);
	REQUIRE(r);
	CHECK(sandlock_result_success(r)); /* control: works without a limit */
	sandlock_result_free(r);
	sandlock_builder_t *b = sandlock_sandbox_builder_max_memory(base(), 128ull << 20);
	r = run_argv(b, argv, NULL, NULL);
	REQUIRE(r);
	CHECK(!sandlock_result_success(r));
	char *err = sandlock_result_stderr(r);
	/* memory cgroup: OOM-killed; RLIMIT_AS fallback: MemoryError */
	CHECK(sandlock_result_reason(r) == SANDLOCK_EXIT_KILLED || (err && strstr(err, "MemoryError")));
	sandlock_string_free(err);
	sandlock_result_free(r);
}

/* ---------------- handlers on the launch's own syscalls ---------------- */

/*
 * The child sets itself up before exec with a few syscalls of its own.  A
 * user handler on one of them must neither deadlock the launch (the
 * listener hand-over once used sendmsg, trapped before any supervisor
 * existed) nor miss the sandboxed program's own calls.
 */
struct counter {
	atomic_int calls;
	atomic_int freed;
};

static int32_t count_and_continue(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                                  sandlock_action_t *out)
{
	(void)n;
	(void)m;
	atomic_fetch_add(&((struct counter *)ud)->calls, 1);
	sandlock_action_set_continue(out);
	return 0;
}

static void counter_free(void *ud)
{
	atomic_fetch_add(&((struct counter *)ud)->freed, 1);
}

/* Run argv with one counting handler on syscall; returns the result. */
static sandlock_result_t *run_counting(const char *syscall_name, const char *const *argv,
                                       struct counter *c)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_timeout_ms(base(), 30000);
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, NULL, NULL);
	if (!sb)
		return NULL;
	sandlock_handler_t *h = sandlock_handler_new(count_and_continue, c, counter_free,
	                                             SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t reg = { syscall_name, h };
	uint32_t argc = 0;
	while (argv[argc])
		argc++;
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_run_with_handlers_err(sb, argv, argc, &reg, 1, &err, &msg);
	if (!r)
		fprintf(stderr, "  run with a '%s' handler failed: %d %s\n", syscall_name, err,
		        msg ? msg : "");
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
	return r;
}

/* sendmsg, then send (a sendto syscall on x86_64) */
#define PY_SENDMSG                                                                 \
	"import socket; a,b=socket.socketpair(); a.sendmsg([b'x']); a.send(b'y'); " \
	"print(b.recv(1), b.recv(1))"

static void launch_with_handler_on(const char *syscall_name, int min_calls)
{
	const char *argv[] = { "/usr/bin/python3", "-c", PY_SENDMSG, NULL };
	struct counter c = { 0 };
	sandlock_result_t *r = run_counting(syscall_name, argv, &c);
	CHECK_EQ_INT(atomic_load(&c.freed), 1);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_EXITED);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strcmp(out, "b'x' b'y'\n") == 0);
	if (out && strcmp(out, "b'x' b'y'\n"))
		fprintf(stderr, "  stdout was '%s'\n", out);
	sandlock_string_free(out);
	CHECK(atomic_load(&c.calls) >= min_calls);
	sandlock_result_free(r);
}

/* The program calls sendmsg once: the handler must see it. */
TEST(handler_on_sendmsg_does_not_block_launch) { launch_with_handler_on("sendmsg", 1); }
TEST(handler_on_sendto_does_not_block_launch) { launch_with_handler_on("sendto", 1); }
/* python3 reads its own files; the child's wait for "ready" is a read too. */
TEST(handler_on_read_does_not_block_launch) { launch_with_handler_on("read", 2); }
/* The child closes its extra fds with close_range before exec. */
TEST(handler_on_close_range_does_not_block_launch) { launch_with_handler_on("close_range", 1); }

/* One run of argv in sb with a counting handler on syscall_name. */
static int calls_seen(const sandlock_sandbox_t *sb, const char *syscall_name,
                      const char *const *argv, uint32_t argc)
{
	struct counter c = { 0 };
	sandlock_handler_t *h = sandlock_handler_new(count_and_continue, &c, counter_free,
	                                             SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t reg = { syscall_name, h };
	sandlock_result_t *r = sandlock_run_with_handlers_err(sb, argv, argc, &reg, 1, NULL, NULL);
	int ok = r && sandlock_result_success(r);
	sandlock_result_free(r);
	return ok ? atomic_load(&c.calls) : -1;
}

/*
 * A sandbox keeps the BPF programs built for it, one per trapped set: each
 * run must still trap exactly its own handlers' syscalls, whichever ran
 * before on the same sandbox.
 */
TEST(one_sandbox_traps_each_runs_own_syscalls)
{
	sandlock_sandbox_t *sb = sandlock_sandbox_build(base(), NULL, NULL);
	REQUIRE(sb);
	const char *argv[] = { "/usr/bin/python3", "-c", "import os; os.getppid(); os.uname()",
	                       NULL };
	CHECK(calls_seen(sb, "getppid", argv, 3) >= 1);
	CHECK(calls_seen(sb, "uname", argv, 3) >= 1);
	CHECK(calls_seen(sb, "getppid", argv, 3) >= 1);
	CHECK(calls_seen(sb, "uname", argv, 3) >= 1);
	sandlock_result_t *r = sandlock_run_err(sb, argv, 3, NULL, NULL); /* no handler at all */
	CHECK(r && sandlock_result_success(r));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}
