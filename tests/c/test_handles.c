/*
 * test_handles.c — a run as an object (sandlock_spawn and the
 * sandlock_handle_* calls) on real processes: what the command printed,
 * what a client could reach, what /proc says about CPU use while paused,
 * and that no process of the sandbox survives its handle.
 */
#include "harness.h"
#include "testutil.h"

#include <ctype.h>

/* The system's programs, and /dev/null: sh opens it for background jobs. */
static sandlock_builder_t *builder(void)
{
	return sandlock_sandbox_builder_fs_write(tu_system_builder(), "/dev/null");
}

static sandlock_sandbox_t *base(void)
{
	return tu_build(builder());
}

static sandlock_spawn_opts_t opts(void)
{
	sandlock_spawn_opts_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	return o;
}

static sandlock_handle_t *spawn_sh(const sandlock_sandbox_t *sb, const char *script,
                                   const sandlock_spawn_opts_t *o)
{
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, o, &err, &msg);
	if (!h)
		fprintf(stderr, "  spawn failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return h;
}

/* True if no process has this pid any more (reaped, not a zombie). */
static bool gone(pid_t pid)
{
	return pid > 0 && kill(pid, 0) < 0 && errno == ESRCH;
}



static sandlock_result_t *wait_ok(sandlock_handle_t *h)
{
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, &err, &msg);
	if (!r)
		fprintf(stderr, "  wait failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return r;
}

TEST(spawn_captures_output_and_wait_returns_the_result)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_handle_t *h = spawn_sh(sb, "echo out; echo err >&2; exit 3", NULL);
	REQUIRE(h);
	CHECK(sandlock_handle_pid(h) > 0);
	CHECK(sandlock_handle_init_pid(h) > 0);
	CHECK(sandlock_handle_pid(h) != sandlock_handle_init_pid(h));
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK(tu_out_is(r, "out\n"));
	CHECK(tu_err_has(r, "err"));
	CHECK_EQ_INT(sandlock_result_exit_code(r), 3);
	CHECK(!sandlock_handle_is_running(h));
	/* The result went to us: a second wait says so instead of handing out a copy. */
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_handle_wait_ms(h, -1, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	sandlock_string_free(msg);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* The options struct is versioned by its size: a caller built against a
 * newer header (a larger struct) is accepted while the fields this library
 * does not know are zero, refused when one is set; a size below the first
 * version's is refused. */
TEST(spawn_opts_size_rule_accepts_newer_zeroed_structs)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	union {
		sandlock_spawn_opts_t o;
		unsigned char raw[sizeof(sandlock_spawn_opts_t) + 16];
	} big;
	memset(&big, 0, sizeof big);
	big.o.size = sizeof big.raw;
	sandlock_handle_t *h = spawn_sh(sb, "exit 4", &big.o);
	REQUIRE(h);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 4);
	sandlock_result_free(r);
	sandlock_handle_free(h);

	big.raw[sizeof(sandlock_spawn_opts_t) + 3] = 1; /* a field we do not know */
	const char *argv[] = { "/bin/true", NULL };
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_spawn(sb, argv, 1, NULL, 0, &big.o, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	CHECK(msg && strstr(msg, "does not know"));
	sandlock_string_free(msg);

	sandlock_spawn_opts_t small = opts();
	small.size = 4;
	msg = NULL;
	CHECK(sandlock_spawn(sb, argv, 1, NULL, 0, &small, &err, &msg) == NULL);
	CHECK(msg && strstr(msg, "at least"));
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}

TEST(wait_with_timeout_reports_a_running_command)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.stdio[0].mode = SANDLOCK_STDIO_PIPE;
	sandlock_handle_t *h = spawn_sh(sb, "read line; echo got $line", &o);
	REQUIRE(h);
	int in = sandlock_handle_stdin_fd(h);
	CHECK(in > 2);
	CHECK_EQ_INT(sandlock_handle_stdin_fd(h), -1); /* ownership passed once */
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_handle_wait_ms(h, 0, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_RUNNING);
	sandlock_string_free(msg);
	CHECK(sandlock_handle_wait_ms(h, 50, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_RUNNING);
	sandlock_string_free(msg);
	CHECK(sandlock_handle_is_running(h));
	CHECK(write(in, "abc\n", 4) == 4);
	close(in);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK(tu_out_is(r, "got abc\n"));
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* A TCP server started with spawn answers a client; kill() ends it. */
TEST(spawned_server_is_reachable_and_killed)
{
	int port = 0;
	int probe = tu_tcp_listener(&port); /* a free port, released for the server */
	REQUIRE(probe >= 0);
	close(probe);
	sandlock_builder_t *b = builder();
	sandlock_sandbox_builder_net_allow_bind_port(b, (uint32_t)port);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	char script[512];
	snprintf(script, sizeof script,
	         "import socket,sys\n"
	         "s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
	         "s.bind(('127.0.0.1',%d)); s.listen(4)\n"
	         "print('ready', flush=True)\n"
	         "while True:\n"
	         "    c,_=s.accept(); c.sendall(b'hello from the sandbox\\n'); c.close()\n",
	         port);
	const char *argv[] = { TU_PY, "-c", script, NULL };
	sandlock_spawn_opts_t o = opts();
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, &o, &err, &msg);
	REQUIRE(h);
	int out = sandlock_handle_stdout_fd(h);
	char line[64];
	tu_read_line(out, line, sizeof line);
	CHECK(strcmp(line, "ready") == 0);
	pid_t pid = sandlock_handle_pid(h);
	for (int i = 0; i < 2; i++) { /* twice: it keeps serving */
		int c = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		REQUIRE(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
		char got[64] = { 0 };
		tu_read_line(c, got, sizeof got);
		CHECK(strcmp(got, "hello from the sandbox") == 0);
		close(c);
	}
	CHECK(sandlock_handle_is_running(h));
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK(gone(pid));
	/* Nobody listens any more. */
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(connect(c, (struct sockaddr *)&a, sizeof a) < 0);
	close(c);
	CHECK_EQ_INT(sandlock_handle_kill(h), -1); /* already over */
	close(out);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* create: the command is parked before exec; start() releases it. */
TEST(create_parks_before_exec_and_start_releases)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.flags = SANDLOCK_SPAWN_CREATE;
	const char *argv[] = { "/bin/echo", "released", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 2, NULL, 0, &o, NULL, NULL);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h);
	CHECK(pid > 0);
	CHECK(sandlock_handle_is_running(h));
	/* Not exec'd yet: the command is still a copy of this test binary. */
	char path[64], exe[256] = { 0 };
	snprintf(path, sizeof path, "/proc/%d/exe", (int)pid);
	CHECK(readlink(path, exe, sizeof exe - 1) > 0 && !strstr(exe, "echo"));
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_handle_wait_ms(h, 0, &err, &msg) == NULL); /* not started */
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	sandlock_string_free(msg);
	CHECK_EQ_INT(sandlock_handle_start(h), 0);
	CHECK_EQ_INT(sandlock_handle_start(h), -1); /* only once */
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK(tu_out_is(r, "released\n"));
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

TEST(created_handle_killed_or_freed_leaves_nothing)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.flags = SANDLOCK_SPAWN_CREATE;
	const char *argv[] = { "/bin/echo", "never", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 2, NULL, 0, &o, NULL, NULL);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h), init = sandlock_handle_init_pid(h);
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK(!tu_out_is(r, "never\n"));
	CHECK(gone(pid) && gone(init));
	sandlock_result_free(r);
	sandlock_handle_free(h);

	h = sandlock_spawn(sb, argv, 2, NULL, 0, &o, NULL, NULL);
	REQUIRE(h);
	pid = sandlock_handle_pid(h);
	init = sandlock_handle_init_pid(h);
	sandlock_handle_free(h); /* never started, never waited */
	CHECK(gone(pid) && gone(init));
	sandlock_sandbox_free(sb);
}

/* Free of a running handle ends every process of the sandbox, also a
 * background one in its own session. */
TEST(free_of_running_handle_ends_the_whole_sandbox)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	sandlock_handle_t *h = spawn_sh(
	    sb, "sleep 1000 & echo $!; setsid sleep 1000 & echo $!; echo $$; wait", &o);
	REQUIRE(h);
	int out = sandlock_handle_stdout_fd(h);
	pid_t pids[3];
	for (int i = 0; i < 3; i++) {
		char line[32];
		tu_read_line(out, line, sizeof line);
		pids[i] = (pid_t)atoi(line);
		CHECK(pids[i] > 0 && !gone(pids[i]));
	}
	pid_t init = sandlock_handle_init_pid(h);
	sandlock_handle_free(h);
	for (int i = 0; i < 3; i++)
		CHECK(gone(pids[i]));
	CHECK(gone(init));
	close(out);
	sandlock_sandbox_free(sb);
}

/*
 * pause() stops CPU use of the whole tree (the command and a grandchild
 * busy loop), resume() continues it.
 */
TEST(pause_stops_the_whole_tree_and_resume_continues)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	sandlock_handle_t *h =
	    spawn_sh(sb, "sh -c 'while :; do :; done' & echo $!; echo $$; while :; do :; done", &o);
	REQUIRE(h);
	int out = sandlock_handle_stdout_fd(h);
	char a[32], b[32];
	tu_read_line(out, a, sizeof a);
	tu_read_line(out, b, sizeof b);
	pid_t grandchild = (pid_t)atoi(a), cmd = (pid_t)atoi(b);
	REQUIRE(grandchild > 0 && cmd == sandlock_handle_pid(h));
	/* Control: both really burn CPU before the pause. */
	CHECK(tu_cpu_advances(grandchild, 200));
	CHECK(tu_cpu_advances(cmd, 200));
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	CHECK(tu_paused(grandchild));
	CHECK(tu_paused(cmd));
	long long g0 = tu_cpu_ticks(grandchild), c0 = tu_cpu_ticks(cmd);
	tu_sleep_ms(300);
	CHECK_EQ_INT(tu_cpu_ticks(grandchild), g0);
	CHECK_EQ_INT(tu_cpu_ticks(cmd), c0);
	CHECK(sandlock_handle_is_running(h)); /* paused is not ended */
	CHECK_EQ_INT(sandlock_handle_resume(h), 0);
	CHECK(tu_cpu_advances(grandchild, 200));
	CHECK(tu_cpu_advances(cmd, 200));
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK(gone(grandchild) && gone(cmd));
	CHECK_EQ_INT(sandlock_handle_pause(h), -1);
	CHECK_EQ_INT(errno, ESRCH);
	close(out);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* A paused sandbox can be killed (SIGKILL reaches stopped processes). */
TEST(paused_sandbox_can_be_killed)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_handle_t *h = spawn_sh(sb, "sleep 1000 & wait", NULL);
	REQUIRE(h);
	pid_t pid = sandlock_handle_pid(h);
	CHECK_EQ_INT(sandlock_handle_pause(h), 0);
	CHECK_EQ_INT(sandlock_handle_kill(h), 0);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_KILLED);
	CHECK(gone(pid));
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* FD mode and pass_fds: the command writes into fds the caller chose;
 * any other fd of the caller is closed in the command. */
TEST(fd_mode_and_pass_fds)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	int outp[2], extra[2], secret[2];
	REQUIRE(pipe(outp) == 0 && pipe(extra) == 0 && pipe(secret) == 0);
	int five = fcntl(extra[1], F_DUPFD_CLOEXEC, 50); /* a high number, close-on-exec */
	REQUIRE(five >= 50);
	char script[512];
	snprintf(script, sizeof script,
	         "import os\n"
	         "os.write(1, b'to-stdout\\n')\n"
	         "os.write(%d, b'to-extra\\n')\n"
	         "try:\n"
	         "    os.write(%d, b'x'); print('leaked')\n"
	         "except OSError: pass\n",
	         five, secret[1]);
	sandlock_spawn_opts_t o = opts();
	o.stdio[1] = (sandlock_stdio_t){ SANDLOCK_STDIO_FD, outp[1] };
	int32_t keep[] = { five };
	o.pass_fds = keep;
	o.npass_fds = 1;
	const char *argv[] = { TU_PY, "-c", script, NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 3, NULL, 0, &o, NULL, NULL);
	REQUIRE(h);
	close(outp[1]);
	close(extra[1]);
	close(five);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	sandlock_handle_free(h); /* drops the handle's copies of the fds */
	char buf[128] = { 0 };
	CHECK(read(outp[0], buf, sizeof buf - 1) > 0);
	CHECK(strcmp(buf, "to-stdout\n") == 0); /* and not "leaked" */
	memset(buf, 0, sizeof buf);
	CHECK(read(extra[0], buf, sizeof buf - 1) > 0);
	CHECK(strcmp(buf, "to-extra\n") == 0);
	close(outp[0]);
	close(extra[0]);
	close(secret[0]);
	close(secret[1]);
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
}

TEST(devnull_and_inherit_modes)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.stdio[0].mode = SANDLOCK_STDIO_DEVNULL;
	o.stdio[1].mode = SANDLOCK_STDIO_DEVNULL;
	sandlock_handle_t *h = spawn_sh(sb, "cat; echo visible >&2; echo hidden", &o);
	REQUIRE(h);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK(tu_out_is(r, ""));
	CHECK(tu_err_has(r, "visible"));
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	/* INHERIT stdout: it lands in this process's stdout (here a pipe). */
	int p[2];
	REQUIRE(pipe(p) == 0);
	int saved = dup(1);
	dup2(p[1], 1);
	close(p[1]);
	o = opts();
	o.stdio[1].mode = SANDLOCK_STDIO_INHERIT;
	h = spawn_sh(sb, "echo inherited", &o);
	r = h ? wait_ok(h) : NULL;
	dup2(saved, 1);
	close(saved);
	REQUIRE(r);
	CHECK(tu_out_is(r, ""));
	char buf[64] = { 0 };
	CHECK(read(p[0], buf, sizeof buf - 1) > 0);
	CHECK(strcmp(buf, "inherited\n") == 0);
	close(p[0]);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* stdin and stdout both PIPE: 16 MiB through cat, written and read at
 * the same time (neither side can block the other). */
TEST(pipes_stream_both_ways)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	sandlock_spawn_opts_t o = opts();
	o.stdio[0].mode = SANDLOCK_STDIO_PIPE;
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	const char *argv[] = { "/bin/cat", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 1, NULL, 0, &o, NULL, NULL);
	REQUIRE(h);
	int in = sandlock_handle_stdin_fd(h), out = sandlock_handle_stdout_fd(h);
	const size_t total = 16u << 20;
	static unsigned char chunk[65536];
	for (size_t i = 0; i < sizeof chunk; i++)
		chunk[i] = (unsigned char)(i * 7);
	size_t sent = 0, got = 0;
	bool same = true;
	fcntl(in, F_SETFL, O_NONBLOCK);
	while (got < total) {
		struct pollfd pf[2] = { { out, POLLIN, 0 }, { sent < total ? in : -1, POLLOUT, 0 } };
		if (poll(pf, 2, -1) < 0)
			break;
		if (pf[1].revents & POLLOUT) {
			size_t off = sent % sizeof chunk, n = sizeof chunk - off;
			if (n > total - sent)
				n = total - sent;
			ssize_t w = write(in, chunk + off, n);
			if (w > 0)
				sent += (size_t)w;
			if (sent == total)
				close(in);
		}
		if (pf[0].revents) {
			unsigned char buf[65536];
			ssize_t n = read(out, buf, sizeof buf);
			if (n <= 0)
				break;
			for (ssize_t i = 0; i < n; i++)
				same &= buf[i] == chunk[(got + (size_t)i) % sizeof chunk];
			got += (size_t)n;
		}
	}
	CHECK_EQ_INT(got, total);
	CHECK(same);
	close(out);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_exit_code(r), 0);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}

/* Handlers work with spawn; a bad option releases them exactly once. */
TEST(handlers_with_spawn_and_on_bad_options)
{
	sandlock_sandbox_t *sb = base();
	REQUIRE(sb);
	struct tu_counter c = { 0 };
	sandlock_handler_t *hd =
	    sandlock_handler_new(tu_count_and_continue, &c, tu_counter_free, SANDLOCK_EXCEPTION_KILL);
	REQUIRE(hd);
	sandlock_registration_t reg = { "openat", hd };
	const char *argv[] = { "/bin/cat", "/etc/hostname", NULL };
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 2, &reg, 1, NULL, NULL, NULL);
	REQUIRE(h);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK(atomic_load(&c.calls) > 0);
	CHECK_EQ_INT(atomic_load(&c.freed), 0); /* the handle still owns it */
	sandlock_result_free(r);
	sandlock_handle_free(h);
	CHECK_EQ_INT(atomic_load(&c.freed), 1);

	/* A bad stdio mode: NULL, INVALID, and the handler was released once. */
	struct tu_counter c2 = { 0 };
	reg.handler = sandlock_handler_new(tu_count_and_continue, &c2, tu_counter_free,
	                                   SANDLOCK_EXCEPTION_KILL);
	sandlock_spawn_opts_t o = opts();
	o.stdio[2].mode = 99;
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_spawn(sb, argv, 2, &reg, 1, &o, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	CHECK(msg && strstr(msg, "stderr"));
	CHECK_EQ_INT(atomic_load(&c2.freed), 1);
	CHECK_EQ_INT(atomic_load(&c2.calls), 0);
	sandlock_string_free(msg);
	o = opts();
	int32_t bad[] = { 1 };
	o.pass_fds = bad;
	o.npass_fds = 1;
	msg = NULL;
	CHECK(sandlock_spawn(sb, argv, 2, NULL, 0, &o, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	sandlock_string_free(msg);
	o = opts();
	o.size = 4;
	msg = NULL;
	CHECK(sandlock_spawn(sb, argv, 2, NULL, 0, &o, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_INVALID);
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}

/* The sandbox's timeout applies to a spawned run too. */
TEST(timeout_applies_to_a_spawned_run)
{
	sandlock_builder_t *b = builder();
	sandlock_sandbox_builder_timeout_ms(b, 200);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_handle_t *h = spawn_sh(sb, "sleep 1000", NULL);
	REQUIRE(h);
	sandlock_result_t *r = wait_ok(h);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
}
