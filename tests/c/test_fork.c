/*
 * test_fork.c — the COW fork mode from C (sandlock_fork, _wait, _result,
 * _kill, _free, sandlock_reduce) on real processes: what each clone
 * printed, what it could reach, and that nothing of a fork survives.
 */
#include "harness.h"
#include "testutil.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Pid exists and is not a zombie. */
static bool alive(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z';
}

static sandlock_sandbox_t *system_box(void)
{
	return tu_build(tu_system_builder());
}

static sandlock_fork_opts_t opts(sandlock_fork_work_fn work, void *ud)
{
	sandlock_fork_opts_t o;
	memset(&o, 0, sizeof o);
	o.size = sizeof o;
	o.work = work;
	o.ud = ud;
	return o;
}

static sandlock_fork_t *fork_n(const sandlock_sandbox_t *sb, uint32_t n,
                               const sandlock_fork_opts_t *o)
{
	int err = 0;
	char *msg = NULL;
	sandlock_fork_t *f = sandlock_fork_start(sb, n, o, &err, &msg);
	if (!f)
		fprintf(stderr, "  fork failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return f;
}

static bool wait_all(sandlock_fork_t *f)
{
	int err = 0;
	char *msg = NULL;
	int rc = sandlock_fork_wait(f, -1, &err, &msg);
	if (rc < 0)
		fprintf(stderr, "  wait failed: %d %s\n", err, msg ? msg : "");
	sandlock_string_free(msg);
	return rc == 0;
}

/* ---- work functions (they run in the clones) ---- */

static int print_square(void *ud, uint32_t id)
{
	(void)ud;
	const char *env = getenv("CLONE_ID");
	printf("%u %s\n", id * id, env ? env : "-");
	return 0;
}

/* init_fn state, made in the template and seen copy-on-write by clones. */
static int *g_table;
enum { TABLE = 1 << 20 };

static int build_table(void *ud, char *err, size_t errlen)
{
	(void)ud;
	(void)err;
	(void)errlen;
	g_table = malloc(TABLE * sizeof *g_table);
	if (!g_table)
		return 1;
	for (int i = 0; i < TABLE; i++)
		g_table[i] = i;
	return 0;
}

static int mutate_table(void *ud, uint32_t id)
{
	(void)ud;
	int before = g_table[0];
	g_table[0] = 1000 + (int)id; /* this clone's own copy of the page */
	printf("%d %d %d\n", before, g_table[0], g_table[TABLE - 1]);
	return 0;
}

static int try_read(void *ud, uint32_t id)
{
	(void)id;
	int fd = open((const char *)ud, O_RDONLY);
	printf("%s\n", fd >= 0 ? "read" : errno == EACCES ? "denied" : "other");
	return 0;
}

static int try_connect(void *ud, uint32_t id)
{
	(void)id;
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(*(int *)ud) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	int rc = connect(s, (struct sockaddr *)&a, sizeof a);
	printf("%s\n", rc == 0 ? "connected" : "refused");
	return 0;
}

static int crash_some(void *ud, uint32_t id)
{
	(void)ud;
	if (id == 1) {
		signal(SIGSEGV, SIG_DFL); /* not ASan's report-and-exit handler */
		raise(SIGSEGV);
	}
	if (id == 2)
		return 7;
	printf("ok %u\n", id);
	return 0;
}

static int hang(void *ud, uint32_t id)
{
	(void)ud;
	(void)id;
	pid_t kid = fork(); /* a grandchild that would outlive the clone */
	if (kid == 0) {
		pause();
		_exit(0);
	}
	printf("%d %d\n", (int)getpid(), (int)kid);
	fflush(stdout);
	pause();
	return 0;
}

static int failing_init(void *ud, char *err, size_t errlen)
{
	(void)ud;
	snprintf(err, errlen, "no model at %s", "/nowhere");
	return 3;
}

/* ---- tests ---- */

TEST(fork_8_and_reduce_compute_a_known_sum)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(print_square, NULL);
	sandlock_fork_t *f = fork_n(sb, 8, &o);
	REQUIRE(f);
	CHECK_EQ_INT(sandlock_fork_count(f), 8);
	for (uint32_t i = 0; i < 8; i++)
		CHECK(sandlock_fork_pid(f, i) > 0);
	const char *argv[] = { "/usr/bin/awk", "{ s += $1 } END { print s }", NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_result_t *r = sandlock_fork_reduce(sb, argv, 2, f, &err, &msg);
	REQUIRE(r);
	CHECK(tu_out_is(r, "140\n")); /* 0 + 1 + 4 + ... + 49 */
	sandlock_result_free(r);
	for (uint32_t i = 0; i < 8; i++) {
		const sandlock_result_t *c = sandlock_fork_result(f, i);
		REQUIRE(c);
		char want[32];
		snprintf(want, sizeof want, "%u %u\n", i * i, i);
		CHECK(tu_out_is(c, want));
		CHECK(sandlock_result_success(c));
	}
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
}

TEST(init_state_is_shared_copy_on_write)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(mutate_table, NULL);
	o.init = build_table;
	sandlock_fork_t *f = fork_n(sb, 4, &o);
	REQUIRE(f);
	REQUIRE(wait_all(f));
	for (uint32_t i = 0; i < 4; i++) {
		char want[64];
		snprintf(want, sizeof want, "0 %u %d\n", 1000 + i, TABLE - 1);
		CHECK(tu_out_is(sandlock_fork_result(f, i), want));
	}
	CHECK(g_table == NULL); /* init ran in the template, not here */
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
}

TEST(clones_cannot_read_outside_fs_read)
{
	char dir[TU_TMPDIR_LEN], secret[TU_TMPDIR_LEN + 16];
	REQUIRE(tu_mkdtemp(dir, "fork"));
	snprintf(secret, sizeof secret, "%s/secret", dir);
	REQUIRE(tu_write_file(secret, "top secret"));
	int probe = open(secret, O_RDONLY); /* the probe works outside */
	CHECK(probe >= 0);
	if (probe >= 0)
		close(probe);
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(try_read, secret);
	sandlock_fork_t *f = fork_n(sb, 3, &o);
	REQUIRE(f);
	REQUIRE(wait_all(f));
	for (uint32_t i = 0; i < 3; i++)
		CHECK(tu_out_is(sandlock_fork_result(f, i), "denied\n"));
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
	tu_rm_rf(dir);
}

TEST(clones_cannot_connect)
{
	int port = 0;
	int srv = tu_tcp_listener(&port);
	REQUIRE(srv >= 0);
	int c = socket(AF_INET, SOCK_STREAM, 0); /* reachable outside */
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
	close(c);
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(try_connect, &port);
	sandlock_fork_t *f = fork_n(sb, 2, &o);
	REQUIRE(f);
	REQUIRE(wait_all(f));
	for (uint32_t i = 0; i < 2; i++)
		CHECK(tu_out_is(sandlock_fork_result(f, i), "refused\n"));
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
	close(srv);
}

TEST(a_crashing_clone_does_not_break_the_others)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(crash_some, NULL);
	sandlock_fork_t *f = fork_n(sb, 4, &o);
	REQUIRE(f);
	REQUIRE(wait_all(f));
	const sandlock_result_t *r1 = sandlock_fork_result(f, 1), *r2 = sandlock_fork_result(f, 2);
	CHECK_EQ_INT(sandlock_result_reason(r1), SANDLOCK_EXIT_SIGNALED);
	CHECK_EQ_INT(sandlock_result_signal(r1), SIGSEGV);
	CHECK_EQ_INT(sandlock_result_exit_code(r2), 7);
	CHECK(tu_out_is(sandlock_fork_result(f, 0), "ok 0\n"));
	CHECK(tu_out_is(sandlock_fork_result(f, 3), "ok 3\n"));
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
}

/* The clone and grandchild pids a hang() clone printed. */
static int printed_pids(const sandlock_result_t *r, pid_t out[2])
{
	char *s = sandlock_result_stdout(r);
	int a = 0, b = 0;
	int n = s ? sscanf(s, "%d %d", &a, &b) : 0;
	sandlock_string_free(s);
	out[0] = a;
	out[1] = b;
	return n;
}

TEST(timeout_kills_hanging_clones_and_their_children)
{
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_timeout_ms(tu_system_builder(),
	                                                                      300));
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(hang, NULL);
	sandlock_fork_t *f = fork_n(sb, 3, &o);
	REQUIRE(f);
	REQUIRE(wait_all(f));
	for (uint32_t i = 0; i < 3; i++) {
		const sandlock_result_t *r = sandlock_fork_result(f, i);
		CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_TIMEOUT);
		CHECK_EQ_INT(sandlock_result_exit_code(r), 124);
		pid_t p[2];
		CHECK_EQ_INT(printed_pids(r, p), 2);
		CHECK(!alive(p[0]) && !alive(p[1]));
	}
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
}

TEST(free_without_wait_ends_everything)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(hang, NULL);
	sandlock_fork_t *f = fork_n(sb, 3, &o);
	REQUIRE(f);
	pid_t pids[3];
	for (uint32_t i = 0; i < 3; i++) {
		pids[i] = sandlock_fork_pid(f, i);
		CHECK(alive(pids[i]));
	}
	int err = 0;
	char *msg = NULL;
	CHECK_EQ_INT(sandlock_fork_wait(f, 0, &err, &msg), -1); /* still running */
	CHECK_EQ_INT(err, SANDLOCK_ERR_RUNNING);
	sandlock_string_free(msg);
	sandlock_fork_free(f);
	for (uint32_t i = 0; i < 3; i++)
		CHECK(!alive(pids[i]));
	sandlock_sandbox_free(sb);
}

TEST(kill_then_wait_reports_killed)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(hang, NULL);
	sandlock_fork_t *f = fork_n(sb, 2, &o);
	REQUIRE(f);
	sandlock_fork_kill(f);
	REQUIRE(wait_all(f));
	for (uint32_t i = 0; i < 2; i++)
		CHECK_EQ_INT(sandlock_result_reason(sandlock_fork_result(f, i)), SANDLOCK_EXIT_KILLED);
	sandlock_fork_free(f);
	sandlock_sandbox_free(sb);
}

TEST(a_failing_init_is_an_error_with_its_reason)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(print_square, NULL);
	o.init = failing_init;
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_fork_start(sb, 2, &o, &err, &msg) == NULL);
	CHECK_EQ_INT(err, SANDLOCK_ERR_SYSTEM);
	CHECK(msg && strstr(msg, "no model at /nowhere"));
	sandlock_string_free(msg);
	sandlock_sandbox_free(sb);
}

TEST(bad_arguments_are_clear_errors)
{
	sandlock_sandbox_t *sb = system_box();
	REQUIRE(sb);
	sandlock_fork_opts_t o = opts(NULL, NULL);
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_fork_start(sb, 2, &o, &err, &msg) == NULL);
	CHECK(err == SANDLOCK_ERR_INVALID && msg && strstr(msg, "no work function"));
	sandlock_string_free(msg);
	o.work = print_square;
	CHECK(sandlock_fork_start(sb, 0, &o, &err, &msg) == NULL);
	CHECK(err == SANDLOCK_ERR_INVALID && msg && strstr(msg, "got 0"));
	sandlock_string_free(msg);
	sandlock_sandbox_t *mem =
		tu_build(sandlock_sandbox_builder_max_memory(tu_system_builder(), 64 << 20));
	REQUIRE(mem);
	CHECK(sandlock_fork_start(mem, 2, &o, &err, &msg) == NULL);
	CHECK(err == SANDLOCK_ERR_CONFLICT && msg && strstr(msg, "max_memory"));
	sandlock_string_free(msg);
	sandlock_sandbox_free(mem);
	sandlock_sandbox_free(sb);
}
