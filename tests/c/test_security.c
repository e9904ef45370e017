/*
 * test_security.c — escape attempts.  Each probe (tests/c/helpers/escape.c)
 * must fail inside the sandbox; where meaningful the same probe is first
 * run outside the sandbox to prove it would have succeeded, so every test
 * here fails if the defence it covers is removed.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"

/* Enough to run the (dynamically linked) helper and nothing else. */
static sandlock_builder_t *base(void)
{
	return tu_escape_builder();
}

/* Run `escape probe [arg]` in the sandbox described by b (consumed). */
static sandlock_result_t *inside(sandlock_builder_t *b, const char *probe, const char *arg)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return NULL;
	const char *argv[] = { tu_escape_path(), probe, arg, NULL }; /* arg may end argv */
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	return r;
}

/* True if the sandboxed probe printed exactly want (e.g. "errno=EPERM"). */
static bool inside_says(sandlock_builder_t *b, const char *probe, const char *arg,
                        const char *want)
{
	sandlock_result_t *r = inside(b, probe, arg);
	if (!r)
		return false;
	char *out = sandlock_result_stdout(r);
	char *err = sandlock_result_stderr(r);
	char line[128];
	snprintf(line, sizeof line, "%s\n", want);
	bool ok = out && strcmp(out, line) == 0;
	if (!ok)
		fprintf(stderr, "  %s inside: got '%s' (stderr '%s', exit %d), want '%s'\n", probe,
		        out ? out : "", err ? err : "", sandlock_result_exit_code(r), want);
	sandlock_string_free(out);
	sandlock_string_free(err);
	sandlock_result_free(r);
	return ok;
}

/* Run the probe without any sandbox; its first output line (static). */
static const char *outside(const char *probe, const char *arg)
{
	const char *argv[] = { tu_escape_path(), probe, arg, NULL };
	return tu_outside_line(argv);
}

/* ---------------- filesystem ---------------- */

struct tmp {
	char dir[TU_TMPDIR_LEN];
	char path[256]; /* the last tmp_file() */
};

static bool tmp_make(struct tmp *t)
{
	return tu_mkdtemp(t->dir, "sec");
}

/* t->dir/rel, created with content unless content is NULL. */
static const char *tmp_file(struct tmp *t, const char *rel, const char *content)
{
	snprintf(t->path, sizeof t->path, "%s/%s", t->dir, rel);
	if (content)
		tu_write_file(t->path, content);
	return t->path;
}

static void tmp_remove(struct tmp *t)
{
	tu_rm_rf(t->dir);
}

TEST(read_outside_fs_read_denied)
{
	struct tmp t;
	REQUIRE(tmp_make(&t));
	const char *f = tmp_file(&t, "secret", "s3cret");
	CHECK(strcmp(outside("read", f), "ok") == 0);
	CHECK(inside_says(base(), "read", f, "errno=EACCES"));
	/* positive control: granting the directory makes it readable */
	CHECK(inside_says(sandlock_sandbox_builder_fs_read(base(), t.dir), "read", f, "ok"));
	tmp_remove(&t);
}

TEST(write_outside_fs_write_denied)
{
	struct tmp t;
	REQUIRE(tmp_make(&t));
	const char *f = tmp_file(&t, "new", NULL);
	CHECK(inside_says(sandlock_sandbox_builder_fs_read(base(), t.dir), "write", f,
	                  "errno=EACCES"));
	CHECK(access(f, F_OK) != 0);
	CHECK(inside_says(sandlock_sandbox_builder_fs_write(base(), t.dir), "write", f, "ok"));
	CHECK(access(f, F_OK) == 0);
	tmp_remove(&t);
}

TEST(fs_deny_carve_out)
{
	struct tmp t;
	REQUIRE(tmp_make(&t));
	char secret_dir[128], secret[160], pub[128], other[128];
	snprintf(secret_dir, sizeof secret_dir, "%s/a/secret", t.dir);
	snprintf(secret, sizeof secret, "%s/s.txt", secret_dir);
	snprintf(pub, sizeof pub, "%s/a/pub.txt", t.dir);
	snprintf(other, sizeof other, "%s/a/other/o.txt", t.dir);
	REQUIRE(mkdir(tmp_file(&t, "a", NULL), 0755) == 0);
	REQUIRE(mkdir(secret_dir, 0755) == 0);
	REQUIRE(mkdir(tmp_file(&t, "a/other", NULL), 0755) == 0);
	tmp_file(&t, "a/secret/s.txt", "x");
	tmp_file(&t, "a/pub.txt", "x");
	tmp_file(&t, "a/other/o.txt", "x");
	/* without the deny everything under the root is readable */
	CHECK(inside_says(sandlock_sandbox_builder_fs_read(base(), t.dir), "read", secret, "ok"));
	sandlock_builder_t *b[4];
	for (int i = 0; i < 4; i++) {
		b[i] = sandlock_sandbox_builder_fs_read(base(), t.dir);
		sandlock_sandbox_builder_fs_deny(b[i], secret_dir);
	}
	CHECK(inside_says(b[0], "read", secret, "errno=EACCES"));
	CHECK(inside_says(b[1], "read", secret_dir, "errno=EACCES"));
	CHECK(inside_says(b[2], "read", pub, "ok"));
	CHECK(inside_says(b[3], "read", other, "ok"));
	tmp_remove(&t);
}

/* /proc readable must not mean /proc/self/mem writable. */
TEST(proc_self_mem_not_writable)
{
	CHECK(strcmp(outside("procmem", NULL), "ok") == 0);
	CHECK(inside_says(sandlock_sandbox_builder_fs_read(base(), "/proc"), "procmem", NULL,
	                  "errno=EACCES"));
}

/* ---------------- seccomp blocklist and argument rules ---------------- */

static void blocked(const char *probe, const char *want_inside, bool outside_ok)
{
	const char *o = outside(probe, NULL);
	/* Unprivileged, some probes (raw sockets, userfaultfd, TIOCSTI) already
	 * fail outside: the sandbox's difference cannot be observed then. */
	if (outside_ok && strcmp(o, "ok") != 0 && geteuid() != 0)
		SKIP("the probe needs privileges outside the sandbox too");
	if (outside_ok && strcmp(o, "ok") != 0) {
		fprintf(stderr, "  %s outside: %s\n", probe, o);
		CHECK(strcmp(o, "ok") == 0);
	}
	CHECK(strcmp(o, want_inside) != 0); /* the sandbox must make the difference */
	CHECK(inside_says(base(), probe, NULL, want_inside));
}

TEST(ptrace_blocked) { blocked("ptrace", "errno=EPERM", true); }
TEST(io_uring_blocked) { blocked("io_uring", "errno=EPERM", true); }
TEST(process_vm_writev_blocked) { blocked("vm_writev", "errno=EPERM", true); }
TEST(bpf_blocked) { blocked("bpf", "errno=EPERM", true); }
TEST(mount_blocked) { blocked("mount", "errno=EPERM", true); }
TEST(keyctl_blocked) { blocked("keyctl", "errno=EPERM", true); }
TEST(userfaultfd_blocked) { blocked("userfaultfd", "errno=EPERM", true); }
/* perf may be absent in a VM (ENOENT outside); inside it must be EPERM. */
TEST(perf_event_open_blocked) { blocked("perf", "errno=EPERM", false); }
TEST(clone_newuser_denied) { blocked("clone_newuser", "errno=EPERM", true); }
TEST(unshare_newuser_denied) { blocked("unshare_newuser", "errno=EPERM", true); }
TEST(clone3_enosys) { blocked("clone3", "errno=ENOSYS", true); }
TEST(raw_socket_denied) { blocked("raw_socket", "errno=EPERM", true); }
TEST(packet_socket_denied) { blocked("packet_socket", "errno=EPERM", true); }
TEST(set_dumpable_denied) { blocked("dumpable", "errno=EPERM", true); }

/* TIOCSTI needs a tty: the pty master from /dev/ptmx (opened read-write). */
static void tiocsti(const char *probe)
{
	const char *o = outside(probe, NULL);
	if (strcmp(o, "ok") != 0 && geteuid() != 0)
		SKIP("TIOCSTI needs privileges outside the sandbox too");
	CHECK(strcmp(o, "ok") == 0);
	CHECK(inside_says(sandlock_sandbox_builder_fs_write(base(), "/dev/ptmx"), probe, NULL,
	                  "errno=EPERM"));
}

TEST(tiocsti_denied) { tiocsti("tiocsti"); }
/* The kernel truncates cmd to 32 bits: high garbage must not bypass the rule. */
TEST(tiocsti_high_bits_denied) { tiocsti("tiocsti_hi"); }

/* Foreign syscall entry points kill the whole process with SIGSYS. */
static void killed(const char *probe)
{
	const char *o = outside(probe, NULL);
	CHECK(o[0] != 0); /* outside it survives and reports something */
	sandlock_result_t *r = inside(base(), probe, NULL);
	REQUIRE(r);
	CHECK_EQ_INT(sandlock_result_reason(r), SANDLOCK_EXIT_SIGNALED);
	CHECK_EQ_INT(sandlock_result_signal(r), SIGSYS);
	size_t n = 1;
	sandlock_result_stdout_bytes(r, &n);
	CHECK_EQ_INT(n, 0);
	sandlock_result_free(r);
}

TEST(x32_syscall_killed) { killed("x32"); }
TEST(int80_i386_syscall_killed) { killed("int80"); }

/* ---------------- capabilities (src/launch/caps.c) ---------------- */

/*
 * A sandbox started by root keeps no capability in any set.  Without
 * CAP_SETPCAP (an unprivileged caller) the bounding set cannot be
 * emptied; NO_NEW_PRIVS and the empty permitted set then still keep any
 * execve from granting one.
 */
TEST(capabilities_dropped)
{
	unsigned long long eff = 0;
	const char *o = outside("caps", NULL);
	REQUIRE(sscanf(o, "eff=%llx", &eff) == 1);
	if (geteuid() == 0) /* control: root outside has capabilities */
		CHECK(eff != 0);
	if (eff & (1ULL << 8)) { /* CAP_SETPCAP: every set must be empty */
		CHECK(inside_says(base(), "caps", NULL, "eff=0 prm=0 inh=0 bnd=0 amb=0"));
		return;
	}
	sandlock_result_t *r = inside(base(), "caps", NULL);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strncmp(out, "eff=0 prm=0 inh=0 bnd=", 22) == 0 && strstr(out, " amb=0\n"));
	sandlock_string_free(out);
	sandlock_result_free(r);
}

/*
 * A device node in a writable tree would open the raw disk or kernel
 * memory behind every path rule.  Two layers stop it: Landlock never
 * grants MAKE_CHAR/MAKE_BLOCK (EACCES) and the sandbox has no CAP_MKNOD
 * (EPERM); either one failing alone still fails this test's "not ok".
 */
TEST(mknod_char_device_denied)
{
	struct tmp t;
	REQUIRE(tmp_make(&t));
	const char *f = tmp_file(&t, "null", NULL);
	if (geteuid() == 0) { /* control: root outside can */
		CHECK(strcmp(outside("mknod", f), "ok") == 0);
		unlink(f);
	}
	sandlock_result_t *r = inside(sandlock_sandbox_builder_fs_write(base(), t.dir), "mknod", f);
	REQUIRE(r);
	char *out = sandlock_result_stdout(r);
	CHECK(out && strncmp(out, "errno=", 6) == 0);
	sandlock_string_free(out);
	sandlock_result_free(r);
	CHECK(access(f, F_OK) != 0);
	tmp_remove(&t);
}

/* Reading the clock state is harmless and allowed; changing it needs
 * CAP_SYS_TIME.  (No outside control: it would touch the host clock.) */
TEST(clock_adjust_denied)
{
	CHECK(inside_says(base(), "adjtime_read", NULL, "ok"));
	CHECK(inside_says(base(), "adjtime_set", NULL, "errno=EPERM"));
}

/* ---------------- network ---------------- */

TEST(tcp_connect_denied_unless_allowed)
{
	int port;
	int s = tu_tcp_listener(&port);
	REQUIRE(s >= 0);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	CHECK(strcmp(outside("connect", ps), "ok") == 0);
	CHECK(inside_says(base(), "connect", ps, "errno=EACCES"));
	CHECK(inside_says(sandlock_sandbox_builder_net_allow_port(base(), (uint32_t)port), "connect", ps,
	                  "ok"));
	/* allowing another port does not open this one */
	CHECK(inside_says(sandlock_sandbox_builder_net_allow_port(base(), (uint32_t)(port == 1 ? 2 : port - 1)),
	                  "connect", ps, "errno=EACCES"));
	close(s);
}

TEST(tcp_bind_denied_unless_allowed)
{
	int port;
	int s = tu_tcp_listener(&port); /* find a free port, then release it */
	REQUIRE(s >= 0);
	close(s);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	CHECK(strcmp(outside("bind", ps), "ok") == 0);
	CHECK(inside_says(base(), "bind", ps, "errno=EACCES"));
	CHECK(inside_says(sandlock_sandbox_builder_net_allow_bind_port(base(), (uint32_t)port), "bind",
	                  ps, "ok"));
}

TEST(abstract_unix_socket_scoped)
{
	char name[64];
	snprintf(name, sizeof name, "sandlock-test-%d", (int)getpid());
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	REQUIRE(s >= 0);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	memcpy(a.sun_path + 1, name, strlen(name));
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
	REQUIRE(bind(s, (struct sockaddr *)&a, len) == 0 && listen(s, 16) == 0);
	CHECK(strcmp(outside("abstract", name), "ok") == 0);
	CHECK(inside_says(base(), "abstract", name, "errno=EPERM"));
	close(s);
}

TEST(signal_outside_sandbox_scoped)
{
	pid_t victim = tu_spawn_victim();
	REQUIRE(victim >= 0);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", (int)victim);
	CHECK(strcmp(outside("kill", ps), "ok") == 0);
	CHECK(inside_says(base(), "kill", ps, "errno=EPERM"));
	tu_reap_victim(victim);
}

/* ---------------- Landlock before any trappable call ---------------- */

static int32_t fake_success(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                            sandlock_action_t *out)
{
	(void)n;
	(void)m;
	atomic_fetch_add((atomic_int *)ud, 1);
	sandlock_action_set_return_value(out, 0); /* pretend; do nothing */
	return 0;
}

/* `escape probe arg` in sb with a faking handler on landlock_restrict_self. */
static sandlock_result_t *run_faking_landlock(const sandlock_sandbox_t *sb, const char *probe,
                                              const char *arg, atomic_int *calls)
{
	sandlock_handler_t *h =
		sandlock_handler_new(fake_success, calls, NULL, SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t reg = { "landlock_restrict_self", h };
	const char *argv[] = { tu_escape_path(), probe, arg, NULL };
	return sandlock_run_with_handlers_err(sb, argv, 3, &reg, 1, NULL, NULL);
}

/*
 * A handler on landlock_restrict_self that fakes success would leave the
 * command without its filesystem rules if sandlock's own call could be
 * trapped.  The command applies its ruleset before the seccomp filter
 * exists, so the handler only ever sees the program's calls: it fakes
 * the probe's (bogus) call, and a file outside the granted trees stays
 * unreadable, while outside the sandbox the probe reads it.
 */
TEST(faked_landlock_restrict_self_keeps_the_command_confined)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/sandlock-ll-%d", (int)getpid());
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0644);
	REQUIRE(fd >= 0);
	REQUIRE(write(fd, "x", 1) == 1);
	close(fd);
	CHECK(strcmp(outside("read", path), "ok") == 0);
	sandlock_sandbox_t *sb = sandlock_sandbox_build(base(), NULL, NULL);
	REQUIRE(sb);
	char nr[16];
	snprintf(nr, sizeof nr, "%d", (int)__NR_landlock_restrict_self);
	atomic_int calls = 0;
	/* control: the handler is active and fakes the program's own call */
	sandlock_result_t *r = run_faking_landlock(sb, "rawsys", nr, &calls);
	REQUIRE(r);
	CHECK(tu_out_is(r, "ok\n"));
	CHECK_EQ_INT(atomic_load(&calls), 1);
	sandlock_result_free(r);

	atomic_store(&calls, 0);
	r = run_faking_landlock(sb, "read", path, &calls);
	REQUIRE(r);
	CHECK(tu_out_is(r, "errno=EACCES\n"));
	CHECK_EQ_INT(atomic_load(&calls), 0); /* sandlock's own call was never trapped */
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	unlink(path);
}

/* ---------------- descriptors that must not reach the program ---------------- */

static int32_t fake_close_range(void *ud, const sandlock_notif_t *n, sandlock_mem_t *m,
                                sandlock_action_t *out)
{
	(void)n;
	(void)m;
	atomic_fetch_add((atomic_int *)ud, 1);
	sandlock_action_set_return_value(out, 0); /* pretend; close nothing */
	return 0;
}

#define PY_OPEN_FDS                                                                          \
	"import os\nr = []\nfor fd in range(3, 1024):\n try:\n  os.fstat(fd); r.append(fd)\n" \
	" except OSError:\n  pass\nprint(r)\n"

/* Python's repr of the fds >= 3 this process would pass on without close-on-exec. */
static void inheritable_fds(char *buf, size_t cap)
{
	size_t len = (size_t)snprintf(buf, cap, "[");
	for (int fd = 3; fd < 1024 && len < cap; fd++) {
		int fl = fcntl(fd, F_GETFD);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			len += (size_t)snprintf(buf + len, cap - len, "%s%d", len > 1 ? ", " : "", fd);
	}
	if (len < cap)
		snprintf(buf + len, cap - len, "]\n");
}

/*
 * The child closes every fd >= 3 just before exec, but that close_range()
 * is a trappable syscall: a user handler can fake it.  Even then none of
 * sandlock's own descriptors (the seccomp listener, the Landlock ruleset,
 * the sync socket, the pipes' spare ends) may reach the program: they are
 * all close-on-exec.  Only the caller's own inheritable fd leaks — which
 * also proves the probe sees leaked descriptors.
 */
TEST(faked_close_range_leaks_no_sandlock_fd)
{
	int mine = open("/dev/null", O_RDONLY); /* deliberately inheritable */
	REQUIRE(mine >= 3);
	char want[512];
	inheritable_fds(want, sizeof want);
	REQUIRE(strstr(want, "]\n"));
	sandlock_sandbox_t *sb = sandlock_sandbox_build(base(), NULL, NULL);
	REQUIRE(sb);
	const char *argv[] = { TU_PY, "-c", PY_OPEN_FDS, NULL };
	/* control: the real close_range leaves nothing */
	sandlock_result_t *r = sandlock_run_err(sb, argv, 3, NULL, NULL);
	REQUIRE(r);
	CHECK(tu_out_is(r, "[]\n"));
	sandlock_result_free(r);

	atomic_int calls = 0;
	sandlock_handler_t *h =
		sandlock_handler_new(fake_close_range, &calls, NULL, SANDLOCK_EXCEPTION_KILL);
	sandlock_registration_t reg = { "close_range", h };
	r = sandlock_run_with_handlers_err(sb, argv, 3, &reg, 1, NULL, NULL);
	REQUIRE(r);
	CHECK(atomic_load(&calls) >= 1);
	CHECK(tu_out_is(r, want));
	sandlock_result_free(r);
	sandlock_sandbox_free(sb);
	close(mine);
}
