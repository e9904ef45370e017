/*
 * test_net.c — socket destinations (builtins/netdest/): pathname unix
 * sockets outside the granted trees, and a guest racing its own sockaddr
 * buffer from a second thread.  Every test first checks that its probe
 * works outside the sandbox.
 */
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/un.h>

/* The fd-swap race tests make tens of thousands of trapped calls each: on
 * a loaded machine (a CI runner shared with other jobs) they need more
 * than the default 60 s per test. */
#define TH_TIMEOUT_S 240
#include "harness.h"
#include "testutil.h"

/* Internal: the run's trapped set and its BPF (static linking reaches them). */
#include "../../src/supervisor/dispatch.h"
#include "../../src/launch/filter.h"

static const char *netprobe(void)
{
	static char path[4200];
	if (!path[0])
		snprintf(path, sizeof path, "%s/netprobe", tu_helpers_dir());
	return path;
}

/* A unix socket server at dir/name (stream or datagram); fd or -1. */
static int unix_server(const char *dir, const char *name, int type, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, name);
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	int s = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 ||
	    (type == SOCK_STREAM && listen(s, 64) < 0)) {
		if (s >= 0)
			close(s);
		return -1;
	}
	return s;
}

/* First output line of argv run in sb (static buffer), or "" */
static const char *run_line(sandlock_builder_t *b, const char *const *argv)
{
	static char line[256];
	line[0] = 0;
	sandlock_sandbox_t *sb = tu_build(b);
	if (!sb)
		return line;
	sandlock_result_t *r = tu_run(sb, argv);
	sandlock_sandbox_free(sb);
	if (!r)
		return line;
	char *out = sandlock_result_stdout(r);
	snprintf(line, sizeof line, "%s", out ? out : "");
	line[strcspn(line, "\n")] = 0;
	sandlock_string_free(out);
	sandlock_result_free(r);
	return line;
}

static sandlock_builder_t *base(void)
{
	return tu_escape_builder();
}

static bool says(sandlock_builder_t *b, const char *probe, const char *arg, const char *want)
{
	const char *argv[] = { netprobe(), probe, arg, NULL };
	const char *got = run_line(b, argv);
	if (strcmp(got, want) != 0)
		fprintf(stderr, "  %s %s inside: got '%s', want '%s'\n", probe, arg, got, want);
	return strcmp(got, want) == 0;
}

TEST(unix_socket_outside_granted_trees_unreachable)
{
	char dir[TU_TMPDIR_LEN], path[200];
	REQUIRE(tu_mkdtemp(dir, "unixgate"));
	int s = unix_server(dir, "srv.sock", SOCK_STREAM, path, sizeof path);
	REQUIRE(s >= 0);
	const char *argv[] = { netprobe(), "unix-connect", path, NULL };
	CHECK(strcmp(tu_outside_line(argv), "ok") == 0); /* the control */
	CHECK(says(base(), "unix-connect", path, "errno=EACCES"));
	CHECK(says(sandlock_sandbox_builder_net_allow_unix(base(), path), "unix-connect", path, "ok"));
	CHECK(says(sandlock_sandbox_builder_net_allow_unix(base(), dir), "unix-connect", path, "ok"));
	CHECK(says(sandlock_sandbox_builder_fs_write(base(), dir), "unix-connect", path, "ok"));
	/* readable trees only with the opt-in */
	CHECK(says(sandlock_sandbox_builder_fs_read(base(), dir), "unix-connect", path,
	           "errno=EACCES"));
	CHECK(says(sandlock_sandbox_builder_net_unix_readable(
	                   sandlock_sandbox_builder_fs_read(base(), dir), true),
	           "unix-connect", path, "ok"));
	/* fs_deny wins over every grant */
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_write(base(), dir);
	b = sandlock_sandbox_builder_net_allow_unix(b, dir);
	CHECK(says(sandlock_sandbox_builder_fs_deny(b, path), "unix-connect", path, "errno=EACCES"));
	/* a symlink inside a granted tree to the socket outside it is the socket */
	char odir[TU_TMPDIR_LEN], link[200];
	REQUIRE(tu_mkdtemp(odir, "unixlink"));
	snprintf(link, sizeof link, "%s/link", odir);
	REQUIRE(symlink(path, link) == 0);
	CHECK(says(sandlock_sandbox_builder_fs_write(base(), odir), "unix-connect", link,
	           "errno=EACCES"));
	close(s);
	tu_rm_rf(dir);
	tu_rm_rf(odir);
}

TEST(unix_datagram_sendto_and_sendmsg_gated)
{
	char dir[TU_TMPDIR_LEN], path[200];
	REQUIRE(tu_mkdtemp(dir, "unixdgram"));
	int s = unix_server(dir, "log", SOCK_DGRAM, path, sizeof path);
	REQUIRE(s >= 0);
	const char *probes[] = { "unix-sendto", "unix-sendmsg" };
	for (size_t i = 0; i < 2; i++) {
		const char *argv[] = { netprobe(), probes[i], path, NULL };
		CHECK(strcmp(tu_outside_line(argv), "ok") == 0);
		CHECK(says(base(), probes[i], path, "errno=EACCES"));
		CHECK(says(sandlock_sandbox_builder_net_allow_unix(base(), path), probes[i], path, "ok"));
	}
	/* what the allowed sends delivered: one byte each, from the sandbox
	 * runs only (the denied ones delivered nothing) */
	char buf[8];
	int got = 0;
	while (recv(s, buf, sizeof buf, MSG_DONTWAIT) == 1)
		got++;
	CHECK(got == 4); /* 2 controls outside + 2 allowed inside */
	close(s);
	tu_rm_rf(dir);
}

TEST(unix_relative_path_resolved_from_callers_cwd)
{
	char dir[TU_TMPDIR_LEN], path[200];
	REQUIRE(tu_mkdtemp(dir, "unixrel"));
	int s = unix_server(dir, "srv.sock", SOCK_STREAM, path, sizeof path);
	REQUIRE(s >= 0);
	sandlock_builder_t *b = sandlock_sandbox_builder_fs_write(base(), dir);
	CHECK(says(sandlock_sandbox_builder_cwd(b, dir), "unix-connect", "srv.sock", "ok"));
	/* elsewhere, the same relative name is not that socket (an empty
	 * directory of our own: a shared one such as /tmp may hold a srv.sock) */
	char other[TU_TMPDIR_LEN];
	REQUIRE(tu_mkdtemp(other, "unixrel-other"));
	b = sandlock_sandbox_builder_fs_write(base(), dir);
	CHECK(says(sandlock_sandbox_builder_cwd(b, other), "unix-connect", "srv.sock",
	           "errno=ENOENT"));
	close(s);
	tu_rm_rf(dir);
	tu_rm_rf(other);
}

/* ---------------- what is trapped ---------------- */

/*
 * In a child, the run's own filter installed without a listener: a call
 * it traps then fails with ENOSYS instead of reaching a supervisor, so the
 * BPF's decision is visible.  Reports, one letter per probe, 'T'
 * (trapped) or 'k' (kernel): send() on a connected unix datagram socket
 * (sendto with no address), sendto with an address, connect.
 */
static int trap_probe(sandlock_sandbox_t *sb, const sandlock_registration_t *regs, size_t nregs,
                      char out[4])
{
	struct sl_handlers hs = { regs, nregs };
	int err = 0;
	char *msg = NULL;
	struct sl_dispatch *d = sl_dispatch_new(sb, &hs, &err, &msg);
	if (!d) {
		fprintf(stderr, "  dispatch: %s\n", msg ? msg : "?");
		sandlock_string_free(msg);
		return -1;
	}
	const struct sl_trap *nrs;
	size_t n = sl_dispatch_trapped(d, &nrs);
	struct sock_fprog prog = { 0, NULL };
	int rc = sl_filter_build(sb, nrs, n, true, &prog, &err, &msg);
	sl_dispatch_unref(d);
	if (rc < 0) {
		fprintf(stderr, "  filter: %s\n", msg ? msg : "?");
		sandlock_string_free(msg);
		return -1;
	}
	int p[2], sv[2];
	if (pipe(p) < 0 || socketpair(AF_UNIX, SOCK_DGRAM, 0, sv) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		char r[4] = "???";
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path, sizeof a.sun_path, "/nonexistent/x");
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
		    syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0) {
			r[0] = send(sv[0], "x", 1, 0) == 1 ? 'k' : errno == ENOSYS ? 'T' : '?';
			long s1 = sendto(sv[0], "x", 1, 0, (struct sockaddr *)&a, sizeof a);
			r[1] = s1 < 0 && errno == ENOSYS ? 'T' : 'k';
			int c = socket(AF_UNIX, SOCK_STREAM, 0);
			r[2] = connect(c, (struct sockaddr *)&a, sizeof a) < 0 && errno == ENOSYS ? 'T' : 'k';
		}
		(void)!write(p[1], r, 3);
		_exit(0);
	}
	sl_filter_free(&prog);
	close(p[1]);
	close(sv[0]);
	close(sv[1]);
	memset(out, 0, 4);
	ssize_t got = read(p[0], out, 3);
	close(p[0]);
	waitpid(pid, NULL, 0);
	return got == 3 ? 0 : -1;
}

static int32_t pass_handler(void *ud, const sandlock_notif_t *n, sandlock_mem_t *mem,
                            sandlock_action_t *act)
{
	(void)ud, (void)n, (void)mem;
	sandlock_action_set_continue(act);
	return 0;
}

TEST(send_without_address_is_not_trapped)
{
	char got[4];
	sandlock_sandbox_t *sb = tu_build(base());
	REQUIRE(sb);
	/* the probe works: with its own filter, an address reaches the trap */
	REQUIRE(trap_probe(sb, NULL, 0, got) == 0);
	CHECK(strcmp(got, "kTT") == 0);
	if (th_failed_now)
		fprintf(stderr, "  builtins only: %s\n", got);
	/* a user handler on sendto traps it outright: it sees every call */
	sandlock_registration_t reg = { "sendto",
		                            sandlock_handler_new(pass_handler, NULL, NULL, 0) };
	REQUIRE(reg.handler);
	REQUIRE(trap_probe(sb, &reg, 1, got) == 0);
	CHECK(strcmp(got, "TTT") == 0);
	if (th_failed_now)
		fprintf(stderr, "  with a sendto handler: %s\n", got);
	sandlock_handler_free(reg.handler);
	sandlock_sandbox_free(sb);
}

/* ---------------- races ---------------- */

/* Accepts and closes every connection on fds until stop. */
struct acceptor {
	int fds[2];
	atomic_bool stop;
	pthread_t t;
};

static void *accept_loop(void *arg)
{
	struct acceptor *a = arg;
	while (!atomic_load(&a->stop)) {
		struct pollfd p[2] = { { a->fds[0], POLLIN, 0 }, { a->fds[1], POLLIN, 0 } };
		if (poll(p, 2, 50) <= 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (p[i].revents & POLLIN) { /* drain: a full backlog would stall SYNs */
				int c;
				while ((c = accept4(a->fds[i], NULL, NULL, SOCK_NONBLOCK)) >= 0)
					close(c);
			}
	}
	return NULL;
}

static void acceptor_start(struct acceptor *a, int good, int bad)
{
	fcntl(good, F_SETFL, O_NONBLOCK);
	fcntl(bad, F_SETFL, O_NONBLOCK);
	listen(good, 1024); /* a deep backlog: the control connects fast */
	listen(bad, 1024);
	a->fds[0] = good;
	a->fds[1] = bad;
	atomic_store(&a->stop, false);
	pthread_create(&a->t, NULL, accept_loop, a);
}

static void acceptor_stop(struct acceptor *a)
{
	atomic_store(&a->stop, true);
	pthread_join(a->t, NULL);
}

/* "bad=K good=M" -> K, M */
static bool race_counts(const char *line, int *bad, int *good)
{
	return sscanf(line, "bad=%d good=%d", bad, good) == 2;
}

TEST(unix_path_race_never_reaches_denied_socket)
{
	char gdir[TU_TMPDIR_LEN], bdir[TU_TMPDIR_LEN], good[200], bad[200];
	REQUIRE(tu_mkdtemp(gdir, "raceok"));
	REQUIRE(tu_mkdtemp(bdir, "racebad"));
	int gs = unix_server(gdir, "s", SOCK_STREAM, good, sizeof good);
	int bs = unix_server(bdir, "s", SOCK_STREAM, bad, sizeof bad);
	REQUIRE(gs >= 0 && bs >= 0);
	struct acceptor acc;
	acceptor_start(&acc, gs, bs);
	const char *argv[] = { netprobe(), "unix-race", good, bad, "3000", NULL };
	int nb = 0, ng = 0;
	CHECK(race_counts(tu_outside_line(argv), &nb, &ng));
	CHECK(nb > 0); /* the control: the flip does win outside */
	CHECK(race_counts(run_line(sandlock_sandbox_builder_fs_write(base(), gdir), argv), &nb, &ng));
	CHECK(nb == 0);
	CHECK(ng > 0);
	acceptor_stop(&acc);
	close(gs);
	close(bs);
	tu_rm_rf(gdir);
	tu_rm_rf(bdir);
}

TEST(tcp_port_race_never_reaches_denied_port)
{
	int gp, bp;
	int gs = tu_tcp_listener(&gp), bs = tu_tcp_listener(&bp);
	REQUIRE(gs >= 0 && bs >= 0);
	struct acceptor acc;
	acceptor_start(&acc, gs, bs);
	char g[16], bstr[16];
	snprintf(g, sizeof g, "%d", gp);
	snprintf(bstr, sizeof bstr, "%d", bp);
	const char *argv[] = { netprobe(), "tcp-race", g, bstr, "1500", NULL };
	int nb = 0, ng = 0;
	CHECK(race_counts(tu_outside_line(argv), &nb, &ng));
	CHECK(nb > 0);
	/* an IP rule (on-behalf path) and a bare port rule (continued: the
	 * kernel's Landlock check reads whatever port the race left) */
	char spec[64];
	snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", gp);
	CHECK(race_counts(run_line(sandlock_sandbox_builder_net_allow_spec(base(), spec), argv), &nb,
	                  &ng));
	CHECK(nb == 0 && ng > 0);
	if (th_failed_now)
		fprintf(stderr, "  IP rule: bad=%d good=%d\n", nb, ng);
	CHECK(race_counts(run_line(sandlock_sandbox_builder_net_allow_port(base(), (uint32_t)gp), argv),
	                  &nb, &ng));
	CHECK(nb == 0 && ng > 0);
	if (th_failed_now)
		fprintf(stderr, "  port rule: bad=%d good=%d\n", nb, ng);
	acceptor_stop(&acc);
	close(gs);
	close(bs);
}

/* How the netdest builtin answered the connects of a run. */
struct connect_log {
	atomic_int continued, performed;
};

static void log_connect(void *ud, const sandlock_decision_t *d)
{
	struct connect_log *l = ud;
	if (d->notif->syscall_nr != __NR_connect || !d->decided_by ||
	    strcmp(d->decided_by, "socket destinations") != 0)
		return;
	if (d->action->kind == SANDLOCK_ACTION_CONTINUE)
		atomic_fetch_add(&l->continued, 1);
	else
		atomic_fetch_add(&l->performed, 1);
}

TEST(tcp_connects_are_performed_never_continued)
{
	int gp, bp;
	int gs = tu_tcp_listener(&gp), bs = tu_tcp_listener(&bp);
	REQUIRE(gs >= 0 && bs >= 0);
	struct acceptor acc;
	acceptor_start(&acc, gs, bs);
	char g[16], bstr[16], spec[64];
	snprintf(g, sizeof g, "%d", gp);
	snprintf(bstr, sizeof bstr, "%d", bp);
	const char *argv[] = { netprobe(), "tcp-race", g, bstr, "50", NULL };
	int nb = 0, ng = 0;
	/* a `:port` rule, which Landlock alone could enforce, and an IP rule:
	 * either way every connect is performed on behalf (a continued one
	 * loses to a thread swapping the fd: connect_fd_swap_... below) */
	struct connect_log port = { 0, 0 }, ip = { 0, 0 };
	CHECK(race_counts(run_line(sandlock_sandbox_builder_on_decision(
	                               sandlock_sandbox_builder_net_allow_port(base(), (uint32_t)gp),
	                               log_connect, &port),
	                           argv),
	                  &nb, &ng));
	CHECK(nb == 0); /* which port each try meets is luck: only "never the bad one" */
	CHECK(atomic_load(&port.continued) == 0 && atomic_load(&port.performed) >= 50);
	snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", gp);
	CHECK(race_counts(run_line(sandlock_sandbox_builder_on_decision(
	                               sandlock_sandbox_builder_net_allow_spec(base(), spec),
	                               log_connect, &ip),
	                           argv),
	                  &nb, &ng));
	CHECK(nb == 0);
	if (th_failed_now)
		fprintf(stderr, "  IP rule: bad=%d good=%d\n", nb, ng);
	CHECK(atomic_load(&ip.continued) == 0 && atomic_load(&ip.performed) >= 50);
	acceptor_stop(&acc);
	close(gs);
	close(bs);
}

static const char *race_fd(void)
{
	static char path[4200];
	if (!path[0])
		snprintf(path, sizeof path, "%s/race_fd", tu_helpers_dir());
	return path;
}

/* "reached=R tries=T" -> R, or -1 */
static long reached(const char *line)
{
	long r, t;
	return sscanf(line, "reached=%ld tries=%ld", &r, &t) == 2 ? r : -1;
}

/*
 * A second thread dup2()s a unix socket over the fd number a TCP
 * connect names, the address being a sockaddr_un to a host socket no
 * rule grants.  Before connects were always performed on behalf, the
 * supervisor saw TCP, let the kernel run the call, and the kernel
 * connected the unix socket (5657 of 20000 tries reached the host's
 * socket with no rules at all).
 */
TEST(connect_fd_swap_never_reaches_unix_socket)
{
	char dir[TU_TMPDIR_LEN], path[200];
	REQUIRE(tu_mkdtemp(dir, "fdswap"));
	int us = unix_server(dir, "host.sock", SOCK_STREAM, path, sizeof path);
	REQUIRE(us >= 0);
	struct acceptor acc;
	acceptor_start(&acc, us, us);
	const char *argv[] = { race_fd(), "connect", path, "20000", NULL };
	const char *few[] = { race_fd(), "connect", path, "5000", NULL };
	long out = 0;
	for (int i = 0; i < 5 && out <= 0; i++) /* the control: the swap wins outside */
		out = reached(tu_outside_line(few));
	CHECK(out > 0);
	long in = reached(run_line(base(), argv)); /* no rules: Landlock alone said no to TCP */
	CHECK(in == 0);
	if (in != 0)
		fprintf(stderr, "  no rules: reached=%ld\n", in);
	CHECK(reached(run_line(sandlock_sandbox_builder_net_allow_port(base(), 80), few)) == 0);
	CHECK(reached(run_line(sandlock_sandbox_builder_net_allow_spec(base(), "tcp://127.0.0.1:80"),
	                       few)) == 0);
	CHECK(reached(run_line(sandlock_sandbox_builder_disable(base(), SANDLOCK_PROTECTION_NET_TCP), few)) == 0);
	acceptor_stop(&acc);
	close(us);
	tu_rm_rf(dir);
}

/* The swap wins outside (a few rounds: it needs the two threads to run
 * at once, which a loaded machine does not always give). */
static long reached_outside(const char *const *argv)
{
	long out = 0;
	for (int i = 0; i < 5 && out <= 0; i++)
		out = reached(tu_outside_line(argv));
	return out;
}

static int32_t allow_all(void *ud, const sandlock_policy_event_t *ev, sandlock_policy_ctx_t *ctx)
{
	(void)ud, (void)ev, (void)ctx;
	return SANDLOCK_VERDICT_ALLOW;
}

/*
 * bind and listen swapped the same way: a unix socket while the
 * supervisor looks, a TCP one when the kernel runs the call.  Before
 * binds and listens were always performed on behalf, a continued bind
 * put the TCP socket on a port net_deny_bind refuses (1006 of 5000
 * tries) and a continued listen autobound a port no rule granted (208
 * of 5000).
 */
TEST(bind_and_listen_fd_swap_stay_within_the_bind_rules)
{
	int port = tu_free_port();
	REQUIRE(port > 0);
	char ps[16];
	snprintf(ps, sizeof ps, "%d", port);
	const char *bind_argv[] = { race_fd(), "bind", ps, "5000", NULL };
	const char *listen_argv[] = { race_fd(), "listen", "5000", NULL };
	CHECK(reached_outside(bind_argv) > 0);
	CHECK(reached(run_line(sandlock_sandbox_builder_net_deny_bind(base(), ps), bind_argv)) == 0);
	CHECK(reached(run_line(sandlock_sandbox_builder_policy_callback(base(), allow_all, NULL),
	                       bind_argv)) == 0);
	CHECK(reached_outside(listen_argv) > 0);
	CHECK(reached(run_line(base(), listen_argv)) == 0);
}

/* policy_fn's bind events: the bind is performed on behalf, and still
 * only on a port the bind rules grant (it was performed on any port:
 * the supervisor is outside Landlock). */
TEST(bind_rules_hold_under_policy_fn)
{
	int port = tu_free_port();
	REQUIRE(port > 0);
	char ps[16], contain[4200];
	snprintf(ps, sizeof ps, "%d", port);
	snprintf(contain, sizeof contain, "%s/contain", tu_helpers_dir());
	const char *argv[] = { contain, "stream", "2", "6", "listen", ps, NULL };
	CHECK(strcmp(tu_outside_line(argv), "ok") == 0);
	sandlock_builder_t *b = sandlock_sandbox_builder_policy_callback(base(), allow_all, NULL);
	const char *in = run_line(b, argv);
	CHECK(strcmp(in, "errno=EACCES") == 0);
	if (th_failed_now)
		fprintf(stderr, "  policy_fn, no bind rule: %s\n", in);
	b = sandlock_sandbox_builder_net_allow_bind_port(
	    sandlock_sandbox_builder_policy_callback(base(), allow_all, NULL), (uint32_t)port);
	CHECK(strcmp(run_line(b, argv), "ok") == 0);
}

/* A TCP listener whose accept queue is full (backlog 0, one connection
 * queued): the kernel drops SYNs to it until, after delay_ms, a thread
 * starts accepting; a connect meanwhile waits in SYN retransmits. */
struct late_listener {
	int lfd, filler, port, delay_ms;
	atomic_bool stop;
	pthread_t t;
};

static void *late_accept(void *arg)
{
	struct late_listener *l = arg;
	tu_sleep_ms(l->delay_ms);
	while (!atomic_load(&l->stop)) {
		struct pollfd p = { l->lfd, POLLIN, 0 };
		if (poll(&p, 1, 50) > 0) {
			int c = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK);
			if (c >= 0)
				close(c);
		}
	}
	return NULL;
}

static bool late_start(struct late_listener *l, int delay_ms)
{
	l->lfd = tu_tcp_listener(&l->port);
	if (l->lfd < 0 || listen(l->lfd, 0) < 0)
		return false;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)l->port),
		                     .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	l->filler = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	connect(l->filler, (struct sockaddr *)&a, sizeof a);
	tu_sleep_ms(100); /* its handshake is over: the queue is full */
	l->delay_ms = delay_ms;
	atomic_store(&l->stop, false);
	return pthread_create(&l->t, NULL, late_accept, l) == 0;
}

static void late_stop(struct late_listener *l)
{
	atomic_store(&l->stop, true);
	pthread_join(l->t, NULL);
	close(l->filler);
	close(l->lfd);
}

/* The probe's line against a fresh late listener, outside (b NULL) or in b. */
static const char *signal_probe(sandlock_builder_t *b, bool by_port, const char *mode)
{
	static char line[256];
	struct late_listener l;
	if (!late_start(&l, 700))
		return "(no listener)";
	char ps[16];
	snprintf(ps, sizeof ps, "%d", l.port);
	const char *argv[] = { netprobe(), "tcp-signal", ps, mode, NULL };
	if (b && by_port)
		b = sandlock_sandbox_builder_net_allow_port(b, (uint32_t)l.port);
	else if (b) {
		char spec[64];
		snprintf(spec, sizeof spec, "tcp://127.0.0.1:%d", l.port);
		b = sandlock_sandbox_builder_net_allow_spec(b, spec);
	}
	snprintf(line, sizeof line, "%s", b ? run_line(b, argv) : tu_outside_line(argv));
	late_stop(&l);
	return line;
}

/*
 * A signal during a blocking connect: the kernel restarts it under
 * SA_RESTART (the connect then waits on and succeeds) and fails it with
 * EINTR otherwise.  The supervisor performs the connect and its waiter
 * answers the wait (connwait.c): the same, the handler run once.
 */
TEST(signal_during_a_blocking_connect_as_in_the_kernel)
{
	const char *modes[] = { "restart", "interrupt" };
	const char *want[] = { "handled=1 ok", "handled=1 errno=EINTR" };
	for (int i = 0; i < 2; i++) {
		const char *out = signal_probe(NULL, false, modes[i]);
		CHECK(tu_str_is(out, want[i]));
		out = signal_probe(base(), true, modes[i]);
		CHECK(tu_str_is(out, want[i]));
		out = signal_probe(base(), false, modes[i]);
		CHECK(tu_str_is(out, want[i]));
	}
}

/* A guest server: bind port, listen, print its getsockname port, then
 * answer one connection with "hi" and exit. */
static const char k_remap_guest[] =
    "import socket,sys\n"
    "s=socket.socket(); s.bind(('127.0.0.1',int(sys.argv[1]))); s.listen(4)\n"
    "print(s.getsockname()[1], flush=True)\n"
    "c,_=s.accept(); c.sendall(b'hi'); c.close()\n";

TEST(port_remap_moves_a_taken_port_and_reports_it)
{
	int v;
	int host = tu_tcp_listener(&v); /* the host holds v for the whole test */
	REQUIRE(host >= 0);
	char vs[16];
	snprintf(vs, sizeof vs, "%d", v);
	sandlock_builder_t *b = sandlock_sandbox_builder_port_remap(
	    sandlock_sandbox_builder_net_allow_bind_port(tu_system_builder(), (uint32_t)v), true);
	sandlock_sandbox_t *sb = tu_build(b);
	REQUIRE(sb);
	sandlock_spawn_opts_t o = { .size = sizeof o };
	o.stdio[1].mode = SANDLOCK_STDIO_PIPE;
	const char *argv[] = { "/usr/bin/python3", "-c", k_remap_guest, vs, NULL };
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = sandlock_spawn(sb, argv, 4, NULL, 0, &o, &err, &msg);
	REQUIRE(h);
	FILE *out = fdopen(sandlock_handle_stdout_fd(h), "r");
	REQUIRE(out);
	char line[32] = "";
	CHECK(fgets(line, sizeof line, out) != NULL); /* it listens now */
	CHECK(atoi(line) == v);                        /* and sees the port it asked for */
	uint16_t virt[4], real[4];
	CHECK(sandlock_handle_ports(h, virt, real, 4) == 1);
	CHECK(virt[0] == v && real[0] != v && real[0] != 0);
	CHECK(sandlock_handle_ports(h, NULL, NULL, 0) == 1); /* just the count */
	/* reachable from outside at the real port */
	int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(real[0]),
		                     .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	CHECK(connect(c, (struct sockaddr *)&a, sizeof a) == 0);
	char buf[4] = "";
	CHECK(read(c, buf, sizeof buf) == 2 && memcmp(buf, "hi", 2) == 0);
	close(c);
	fclose(out);
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, &err, &msg);
	CHECK(r && sandlock_result_exit_code(r) == 0);
	sandlock_result_free(r);
	sandlock_handle_free(h);
	sandlock_sandbox_free(sb);
	close(host);
}

TEST(bad_rules_are_build_errors_naming_the_rule)
{
	const char *bad[] = { "x:99999", "1.2.3.4:0", "ftp://h", "icmp://1.2.3.4:80",
	                      "10.0.0.0/33", "[::1", "h:80,*", "1.2.3.4:" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		sandlock_builder_t *b = sandlock_sandbox_builder_net_allow_spec(base(), bad[i]);
		int err = 0;
		char *msg = NULL;
		sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
		CHECK(sb == NULL);
		CHECK(msg && strstr(msg, bad[i]));
		if (sb)
			sandlock_sandbox_free(sb);
		sandlock_string_free(msg);
	}
	/* hostnames are refused in deny lists; the two lists exclude each other */
	char *why = sandlock_net_spec_error("example.com", 1);
	CHECK(why != NULL);
	sandlock_string_free(why);
	why = sandlock_net_spec_error("example.com:443", 0);
	CHECK(why == NULL);
	sandlock_builder_t *b = sandlock_sandbox_builder_net_allow_spec(base(), "127.0.0.1");
	b = sandlock_sandbox_builder_net_deny(b, "10.0.0.0/8");
	int err = 0;
	char *msg = NULL;
	CHECK(sandlock_sandbox_build(b, &err, &msg) == NULL);
	CHECK(err == SANDLOCK_ERR_CONFLICT);
	sandlock_string_free(msg);
}
