/*
 * test_policy.c — policy_fn (sandlock_sandbox_builder_policy_fn) on real
 * processes: exec refused by argv, connect refused by address, a runtime
 * deny_path that blocks later opens only, the KILL verdict, and the
 * hostile argv race (a second thread rewriting argv while the callback
 * looks at it) shown to work without the freeze and to fail with it.
 */
#include "harness.h"
#include "testutil.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>

#include "../../src/builtins/policy.h"

/* What the callback saw, and what it is told to do. */
struct seen {
	pthread_mutex_t mu;
	char argv1[64][256]; /* each exec event's argv, joined by spaces */
	int nexec;
	char hosts[16][64];
	int ports[16];
	int nnet;
	int nfork;
	const char *deny_marker; /* exec whose argv has it: refused */
	const char *kill_marker; /* exec whose argv has it: KILL */
	const char *lock_marker; /* exec whose argv has it: deny_path(lock_path) */
	const char *lock_path;
	int deny_port; /* connect to it: ENETUNREACH */
	int sleep_ms;  /* in each exec event with "SAFE-ARG" */
	int lock_rc;
	bool try_bad, bad_done;
	const char *addr_file; /* exec with "SAFE-ARG": write "EVIL" at the address in it */
	int bad_ip_rc, bad_path_rc;
};

static bool argv_has(const sandlock_policy_event_t *ev, const char *s)
{
	for (size_t i = 0; s && ev->argv && i < ev->argc; i++)
		if (strstr(ev->argv[i], s))
			return true;
	return false;
}

/* A writer the freeze cannot stop (the kernel's AIO completions, a dying
 * CLONE_VM helper's clear_child_tid), played by the callback itself:
 * while every task of the sandbox is stopped, "EVIL" lands over the
 * argv string whose address the guest left in file. */
static void write_under_freeze(const char *file, int32_t pid)
{
	char buf[64] = "", mem[64];
	FILE *f = fopen(file, "r");
	if (f) {
		(void)!fgets(buf, sizeof buf, f);
		fclose(f);
	}
	unsigned long long at = strtoull(buf, NULL, 0);
	snprintf(mem, sizeof mem, "/proc/%d/mem", (int)pid);
	int fd = open(mem, O_RDWR | O_CLOEXEC);
	if (fd < 0 || !at || pwrite(fd, "EVIL", 4, (off_t)at) != 4)
		fprintf(stderr, "  the writer failed: %s\n", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static int32_t policy(void *ud, const sandlock_policy_event_t *ev, sandlock_policy_ctx_t *ctx)
{
	struct seen *s = ud;
	pthread_mutex_lock(&s->mu);
	int32_t v = SANDLOCK_VERDICT_ALLOW;
	if (ev->argv && s->nexec < 64) {
		char *d = s->argv1[s->nexec++];
		size_t at = 0;
		for (size_t i = 0; i < ev->argc && at < 255; i++)
			at += (size_t)snprintf(d + at, 256 - at, "%s%s", i ? " " : "", ev->argv[i]);
	}
	if (s->try_bad && !s->bad_done) {
		/* Bad input in the context: refused, and nothing restricted. */
		const char *ips[] = { "127.0.0.1", "not-an-ip" };
		s->bad_ip_rc = sandlock_policy_restrict_network(ctx, ips, 2);
		s->bad_path_rc = sandlock_policy_deny_path(ctx, "relative/path");
		s->bad_done = true;
	}
	if (ev->host && s->nnet < 16) {
		snprintf(s->hosts[s->nnet], 64, "%s", ev->host);
		s->ports[s->nnet++] = ev->port;
	}
	if (strcmp(ev->syscall, "clone") == 0 || strcmp(ev->syscall, "fork") == 0 ||
	    strcmp(ev->syscall, "vfork") == 0)
		s->nfork++;
	if (argv_has(ev, s->deny_marker))
		v = SANDLOCK_VERDICT_DENY;
	if (argv_has(ev, s->kill_marker))
		v = SANDLOCK_VERDICT_KILL;
	if (argv_has(ev, s->lock_marker))
		s->lock_rc = sandlock_policy_deny_path(ctx, s->lock_path);
	if (ev->host && s->deny_port && ev->port == s->deny_port &&
	    strcmp(ev->syscall, "connect") == 0)
		v = ENETUNREACH;
	if (argv_has(ev, "SAFE-ARG") && s->addr_file)
		write_under_freeze(s->addr_file, ev->pid);
	bool slow = argv_has(ev, "SAFE-ARG") && s->sleep_ms;
	pthread_mutex_unlock(&s->mu);
	if (slow) {
		struct timespec t = { 0, (long)s->sleep_ms * 1000000L };
		nanosleep(&t, NULL);
	}
	return v;
}

static struct seen *new_seen(void)
{
	struct seen *s = calloc(1, sizeof *s);
	pthread_mutex_init(&s->mu, NULL);
	return s;
}

static void free_seen(struct seen *s)
{
	pthread_mutex_destroy(&s->mu);
	free(s);
}

static sandlock_sandbox_t *with_policy(sandlock_builder_t *b, struct seen *s)
{
	b = sandlock_sandbox_builder_fs_write(b, "/dev/null");
	return tu_build(sandlock_sandbox_builder_policy_callback(b, policy, s));
}

static bool saw_exec(const struct seen *s, const char *a)
{
	for (int i = 0; i < s->nexec; i++)
		if (strstr(s->argv1[i], a))
			return true;
	return false;
}

TEST(exec_refused_by_argv)
{
	struct seen *s = new_seen();
	s->deny_marker = "MARK-DENY";
	sandlock_sandbox_t *sb = with_policy(tu_system_builder(), s);
	REQUIRE(sb);
	/* The shell runs (its own exec is allowed); the python3 whose argv has
	 * the marker is refused with EPERM (sh: 126), the plain one runs. */
	const char *argv[] = { "/bin/sh", "-c",
		                   "M=MARK; " TU_PY " -c 'print(1)' $M-DENY; echo rc=$?; "
		                         TU_PY " -c 'print(2)' fine; echo rc=$?", NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "rc=126\n2\nrc=0\n"));

	CHECK(saw_exec(s, "/bin/sh -c "));           /* the command's own exec */
	CHECK(saw_exec(s, "-c print(1) MARK-DENY")); /* the refused one, argv intact */
	CHECK(saw_exec(s, "-c print(2) fine"));
	CHECK(s->nfork >= 2);      /* sh forked for each command */
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	free_seen(s);
}

/* A python3 guest connecting to ports a and b, printing each outcome. */
static sandlock_result_t *connect_both(struct seen *s, int pa, int pb)
{
	char spec[64], spec2[64], code[512];
	snprintf(spec, sizeof spec, "127.0.0.1:%d", pa);
	snprintf(spec2, sizeof spec2, "127.0.0.1:%d", pb);
	sandlock_builder_t *b = sandlock_sandbox_builder_net_allow_spec(tu_system_builder(), spec);
	b = sandlock_sandbox_builder_net_allow_spec(b, spec2);
	sandlock_sandbox_t *sb = with_policy(b, s);
	if (!sb)
		return NULL;
	snprintf(code, sizeof code,
	         "import socket\n"
	         "for p in (%d, %d):\n"
	         "    c = socket.socket()\n"
	         "    try:\n"
	         "        c.connect(('127.0.0.1', p)); print('ok')\n"
	         "    except OSError as e:\n"
	         "        print('err', e.errno)\n",
	         pa, pb);
	const char *argv[] = { TU_PY, "-c", code, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

TEST(connect_refused_by_address)
{
	int pa = 0, pb = 0;
	int la = tu_tcp_listener(&pa), lb = tu_tcp_listener(&pb);
	REQUIRE(la >= 0 && lb >= 0);
	struct seen *s = new_seen();
	s->deny_port = pb;
	s->try_bad = true;
	sandlock_result_t *r = connect_both(s, pa, pb);
	REQUIRE(r);
	/* Both are allowed statically: only policy_fn refuses b. */
	char want[64];
	snprintf(want, sizeof want, "ok\nerr %d\n", ENETUNREACH);
	CHECK(tu_out_is(r, want));
	CHECK_EQ_INT(s->nnet, 2);
	CHECK(strcmp(s->hosts[0], "127.0.0.1") == 0);
	CHECK_EQ_INT(s->ports[0], pa);
	CHECK_EQ_INT(s->ports[1], pb);
	CHECK_EQ_INT(s->bad_ip_rc, -EINVAL);
	CHECK_EQ_INT(s->bad_path_rc, -EINVAL);
	sandlock_result_free(r);
	close(la);
	close(lb);
	free_seen(s);
}

TEST(deny_path_applies_to_later_opens)
{
	char dir[TU_TMPDIR_LEN], file[TU_TMPDIR_LEN + 16], cmd[512];
	REQUIRE(tu_mkdtemp(dir, "policy"));
	snprintf(file, sizeof file, "%s/secret", dir);
	REQUIRE(tu_write_file(file, "s3cret\n"));
	struct seen *s = new_seen();
	s->lock_marker = "LOCK-NOW";
	s->lock_path = dir;
	s->lock_rc = 1;
	sandlock_sandbox_t *sb =
		with_policy(sandlock_sandbox_builder_fs_read(tu_system_builder(), dir), s);
	REQUIRE(sb);
	/* Read before the lock, lock (an exec event), read again: directly,
	 * through a symlink-free relative path from the dir. */
	snprintf(cmd, sizeof cmd,
	         "cat %s; L=LOCK; /bin/true $L-NOW; cat %s 2>/dev/null || echo refused; "
	         "cd %s && cat ./secret 2>/dev/null || echo refused-relative",
	         file, file, dir);
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK(tu_out_is(r, "s3cret\nrefused\nrefused-relative\n"));
	CHECK_EQ_INT(s->lock_rc, 0);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
	free_seen(s);
}

TEST(kill_verdict_ends_the_run)
{
	struct seen *s = new_seen();
	s->kill_marker = "MARK-KILL";
	sandlock_sandbox_t *sb = with_policy(tu_system_builder(), s);
	REQUIRE(sb);
	const char *argv[] = { "/bin/sh", "-c",
		                   "echo before; M=MARK; /bin/true $M-KILL; echo after; sleep 30 & wait",
		                   NULL };
	sandlock_result_t *r = tu_run(sb, argv);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK(tu_out_is(r, "before\n"));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	free_seen(s);
}

/*
 * The hostile race: python3 points argv[1] at a buffer that a second
 * thread rewrites from SAFE-ARG to EVIL-ARG 300 ms after starting, and
 * execs /bin/echo at once.  The callback sleeps 800 ms on an exec whose
 * argv says SAFE.  echo prints the argv the kernel really used.
 */
static const char k_race[] =
	"import ctypes, threading, time\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"buf = ctypes.create_string_buffer(b'SAFE' b'-ARG', 16)\n"
	"def flip():\n"
	"    time.sleep(0.3)\n"
	"    ctypes.memmove(buf, b'EVIL' b'-ARG', 8)\n"
	"threading.Thread(target=flip).start()\n"
	"argv = (ctypes.c_char_p * 3)(b'/bin/echo', ctypes.cast(buf, ctypes.c_char_p), None)\n"
	"libc.execv(b'/bin/echo', argv)\n"
	"print('exec failed', ctypes.get_errno())\n";

/* argv run in sb (freed): its stdout into out, the signal that ended it
 * into *sig (0: none, -1: no run) unless sig is NULL. */
static void run_guest(sandlock_sandbox_t *sb, const char *const *argv, char *out, size_t len,
                      int *sig)
{
	sandlock_result_t *r = sb ? tu_run(sb, argv) : NULL;
	char *o = r ? sandlock_result_stdout(r) : NULL;
	snprintf(out, len, "%s", o ? o : "");
	if (sig)
		*sig = r ? sandlock_result_term_signal(r) : -1;
	sandlock_string_free(o);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

static void race(bool freeze, char *out, size_t len, struct seen **seen)
{
	sl_policy_freeze_disabled = !freeze;
	struct seen *s = new_seen();
	s->sleep_ms = 800;
	*seen = s;
	const char *argv[] = { TU_PY, "-c", k_race, NULL };
	run_guest(with_policy(tu_system_builder(), s), argv, out, len, NULL);
}

TEST(argv_race_works_without_freeze)
{
	/* The control: without the freeze, the guest wins the race — the
	 * callback saw SAFE-ARG, the program ran with EVIL-ARG. */
	char out[256];
	struct seen *s;
	race(false, out, sizeof out, &s);
	CHECK(saw_exec(s, "SAFE-ARG"));
	CHECK(strcmp(out, "EVIL-ARG\n") == 0);
	if (strcmp(out, "EVIL-ARG\n") != 0)
		fprintf(stderr, "  echo printed '%s'\n", out);
	free_seen(s);
}

TEST(argv_race_blocked_by_freeze)
{
	char out[256];
	struct seen *s;
	race(true, out, sizeof out, &s);
	/* What the callback saw is what ran. */
	CHECK(saw_exec(s, "SAFE-ARG"));
	CHECK(!saw_exec(s, "EVIL-ARG"));
	CHECK(strcmp(out, "SAFE-ARG\n") == 0);
	if (strcmp(out, "SAFE-ARG\n") != 0)
		fprintf(stderr, "  echo printed '%s'\n", out);
	free_seen(s);
}



/*
 * The freeze stops every task, but not the kernel: memory written under
 * it (here by the callback, standing in for an AIO completion or a
 * clear_child_tid write) reaches the exec.  The new image is checked
 * while it is stopped before its first instruction: its argv is not the
 * one allowed, so it is killed and never runs.
 */
static const char k_written[] =
	"import ctypes, sys\n"
	"libc = ctypes.CDLL(None, use_errno=True)\n"
	"buf = ctypes.create_string_buffer(b'SAFE' b'-ARG', 16)\n"
	"open(sys.argv[1], 'w').write(hex(ctypes.addressof(buf)))\n"
	"argv = (ctypes.c_char_p * 3)(b'/bin/echo', ctypes.cast(buf, ctypes.c_char_p), None)\n"
	"libc.execv(b'/bin/echo', argv)\n"
	"print('exec failed', ctypes.get_errno())\n";

static void written(bool verify, char *out, size_t len, int *sig, struct seen **seen)
{
	sl_policy_verify_disabled = !verify;
	char dir[TU_TMPDIR_LEN], file[TU_TMPDIR_LEN + 8];
	*out = 0;
	*sig = -1;
	struct seen *s = new_seen();
	*seen = s;
	if (!tu_mkdtemp(dir, "polwrite"))
		return;
	snprintf(file, sizeof file, "%s/addr", dir);
	s->addr_file = file;
	const char *argv[] = { TU_PY, "-c", k_written, file, NULL };
	run_guest(with_policy(sandlock_sandbox_builder_fs_write(tu_system_builder(), dir), s), argv,
	          out, len, sig);
	sl_policy_verify_disabled = false;
	tu_rm_rf(dir);
}

/* A run of k_written (verify: with the check) must print want and end
 * by signal want_sig (-1: none); the callback saw SAFE-ARG either way. */
static void check_written(bool verify, const char *want, int want_sig)
{
	char out[256];
	int sig;
	struct seen *s;
	written(verify, out, sizeof out, &sig, &s);
	CHECK(saw_exec(s, "SAFE-ARG"));
	CHECK(strcmp(out, want) == 0 && sig == want_sig);
	if (strcmp(out, want) != 0 || sig != want_sig)
		fprintf(stderr, "  echo printed '%s', signal %d\n", out, sig);
	free_seen(s);
}

/* The control: without the check, the callback saw SAFE-ARG and the
 * program ran with EVIL-ARG. */
TEST(memory_written_under_the_freeze_reaches_exec_unchecked)
{
	check_written(false, "EVIL-ARG\n", -1);
}

TEST(exec_with_argv_not_seen_is_killed_before_it_runs)
{
	check_written(true, "", SIGKILL);
}

/* A #! script's new image runs [interpreter, its path, args...], not the
 * argv the callback saw: still what was allowed (execcheck.c), so it
 * runs, by absolute and by relative path, nested through env too. */
TEST(allowed_scripts_run_with_the_check)
{
	char dir[TU_TMPDIR_LEN], sh[TU_TMPDIR_LEN + 8], env[TU_TMPDIR_LEN + 8], cmd[512];
	REQUIRE(tu_mkdtemp(dir, "polscript"));
	snprintf(sh, sizeof sh, "%s/s.sh", dir);
	snprintf(env, sizeof env, "%s/e.sh", dir);
	REQUIRE(tu_write_file(sh, "#!/bin/sh\necho ran \"$@\"\n") && chmod(sh, 0755) == 0);
	REQUIRE(tu_write_file(env, "#!/usr/bin/env sh\necho env \"$@\"\n") && chmod(env, 0755) == 0);
	snprintf(cmd, sizeof cmd, "%s a 'b c'; cd %s && ./s.sh rel && ./e.sh x", sh, dir);
	struct seen *s = new_seen();
	const char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	char out[256];
	int sig;
	run_guest(with_policy(sandlock_sandbox_builder_fs_read(tu_system_builder(), dir), s), argv,
	          out, sizeof out, &sig);
	CHECK(strcmp(out, "ran a b c\nran rel\nenv x\n") == 0 && sig == -1);
	if (strcmp(out, "ran a b c\nran rel\nenv x\n") != 0)
		fprintf(stderr, "  printed '%s', signal %d\n", out, sig);
	CHECK(saw_exec(s, "./s.sh rel"));
	free_seen(s);
	tu_rm_rf(dir);
}
