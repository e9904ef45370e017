/*
 * test_containment.c — escapes closed by the seccomp filter's containment
 * rules (src/launch/filter.c) and the metadata guard's set-id refusal
 * (src/builtins/meta.c): stream protocols Landlock does not cover, TCP
 * Fast Open, socket families, UDP and ping sockets, personality, SysV and
 * POSIX IPC shared with the host, and set-id files.
 *
 * Each probe (tests/c/helpers/contain.c) is first run outside the sandbox
 * to show it gets through there (skipped when that needs privileges this
 * run lacks), then inside, where it must be denied.  Where a switch opens
 * the rule again (extra_allow_syscalls, the UDP gate), the probe is also
 * shown to work inside with the switch on.
 */
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <mqueue.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "harness.h"
#include "testutil.h"
#include "config.h" /* struct sandlock_sandbox: the UDP/ICMP gate */
#include "launch/filter.h" /* sl_filter_arg_check */

#define LINE 256
#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static const char *helper(void)
{
	static char path[4200];
	if (!path[0])
		snprintf(path, sizeof path, "%s/contain", tu_helpers_dir());
	return path;
}

/* argv for the helper: its path, then args (NULL-terminated). */
static void make_argv(const char *argv[16], const char *const *args)
{
	size_t n = 0;
	argv[n++] = helper();
	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
}

/* The probe's first output line, run outside any sandbox. */
static void outside(char out[LINE], const char *const *args)
{
	const char *argv[16];
	make_argv(argv, args);
	out[0] = 0;
	int p[2];
	if (pipe(p) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(p[1]);
	ssize_t n, tot = 0;
	while (tot < LINE - 1 && (n = read(p[0], out + tot, (size_t)(LINE - 1 - tot))) > 0)
		tot += n;
	out[tot] = 0;
	out[strcspn(out, "\n")] = 0;
	close(p[0]);
	waitpid(pid, NULL, 0);
}

/* The probe's first output line, run in sb (kept). */
static void inside_sb(const sandlock_sandbox_t *sb, char out[LINE], const char *const *args)
{
	const char *argv[16];
	make_argv(argv, args);
	snprintf(out, LINE, "(no run)");
	sandlock_result_t *r = sb ? tu_run(sb, argv) : NULL;
	if (!r)
		return;
	char *s = sandlock_result_stdout(r);
	snprintf(out, LINE, "%s", s ? s : "");
	out[strcspn(out, "\n")] = 0;
	sandlock_string_free(s);
	sandlock_result_free(r);
}

/* The same in a sandbox built from b (consumed). */
static void inside(sandlock_builder_t *b, char out[LINE], const char *const *args)
{
	sandlock_sandbox_t *sb = tu_build(b);
	inside_sb(sb, out, args);
	sandlock_sandbox_free(sb);
}

/* Enough to run the helper and nothing else. */
static sandlock_builder_t *base(void)
{
	return tu_escape_builder();
}

/* True if got is want; otherwise says what the probe printed. */
static bool is(const char *got, const char *want, const char *where)
{
	if (strcmp(got, want) == 0)
		return true;
	fprintf(stderr, "  %s: got '%s', want '%s'\n", where, got, want);
	return false;
}

static void port_str(char buf[16], int port)
{
	snprintf(buf, 16, "%d", port);
}

/* ================= stream protocols Landlock does not cover ================= */

/*
 * MPTCP: Landlock's port rules apply to IPPROTO_TCP sockets only, so an
 * MPTCP socket connects to a port no rule allows (a plain TCP listener
 * accepts it: MPTCP falls back to TCP).
 */
TEST(mptcp_connect_denied)
{
	int port;
	int s = tu_tcp_listener(&port);
	REQUIRE(s >= 0);
	char ps[16], o[LINE], in[LINE];
	port_str(ps, port);
	outside(o, ARGS("stream", "2", "262", "connect", ps));
	if (strcmp(o, "ok") != 0) {
		close(s);
		SKIP("MPTCP is not available on this kernel");
	}
	/* the port is not allowed: plain TCP is refused by Landlock ... */
	inside(base(), in, ARGS("stream", "2", "0", "connect", ps));
	CHECK(is(in, "errno=EACCES", "plain TCP"));
	/* ... and MPTCP must not get around it, even to an allowed port */
	inside(base(), in, ARGS("stream", "2", "262", "connect", ps));
	CHECK(is(in, "errno=EPERM", "MPTCP"));
	inside(sandlock_sandbox_builder_net_allow_port(base(), (uint32_t)port), in,
	       ARGS("stream", "2", "262", "connect", ps));
	CHECK(is(in, "errno=EPERM", "MPTCP to an allowed port"));
	inside(sandlock_sandbox_builder_net_allow_port(base(), (uint32_t)port), in,
	       ARGS("stream", "2", "6", "connect", ps));
	CHECK(is(in, "ok", "IPPROTO_TCP to an allowed port"));
	close(s);
}

static void mptcp_listen(const char *family)
{
	int port = tu_free_port();
	REQUIRE(port > 0);
	char ps[16], o[LINE], in[LINE];
	port_str(ps, port);
	outside(o, ARGS("stream", family, "262", "listen", ps));
	if (strcmp(o, "ok") != 0)
		SKIP("MPTCP (or this address family) is not available here");
	inside(base(), in, ARGS("stream", family, "0", "listen", ps));
	CHECK(is(in, "errno=EACCES", "plain TCP bind"));
	inside(base(), in, ARGS("stream", family, "262", "listen", ps));
	CHECK(is(in, "errno=EPERM", "MPTCP listen"));
}

TEST(mptcp_listen_denied) { mptcp_listen("2"); }
TEST(mptcp6_listen_denied) { mptcp_listen("10"); }

/* ================= listen(2) without bind(2) ================= */

/*
 * listen on an unbound TCP socket binds an ephemeral port itself, which
 * no bind rule ever sees: a server nobody granted.  Refused unless a
 * bind to port 0 would be (a net_deny_bind list, '*'); a port bound
 * through the rules still listens.  (A socket that was ever connected is
 * refused by the kernel itself: its stale port is no way in.)
 */
static void autolisten(const char *family)
{
	char o[LINE], in[LINE];
	outside(o, ARGS("stream", family, "0", "autolisten", "0"));
	if (strcmp(o, "ok") != 0)
		SKIP("this address family is not available here");
	inside(base(), in, ARGS("stream", family, "0", "autolisten", "0"));
	CHECK(is(in, "errno=EACCES", "listen without bind"));
	inside(sandlock_sandbox_builder_port_remap(base(), true), in,
	       ARGS("stream", family, "0", "autolisten", "0"));
	CHECK(is(in, "errno=EACCES", "listen without bind, port_remap"));
	inside(sandlock_sandbox_builder_net_deny_bind(base(), "*"), in,
	       ARGS("stream", family, "0", "autolisten", "0"));
	CHECK(is(in, "errno=EACCES", "listen without bind, net_deny_bind *"));
	inside(sandlock_sandbox_builder_net_deny_bind(base(), "9"), in,
	       ARGS("stream", family, "0", "autolisten", "0"));
	CHECK(is(in, "ok", "listen without bind, a deny list"));
	int port = tu_free_port();
	REQUIRE(port > 0);
	char ps[16];
	port_str(ps, port);
	inside(sandlock_sandbox_builder_net_allow_bind_port(base(), (uint32_t)port), in,
	       ARGS("stream", family, "0", "listen", ps));
	CHECK(is(in, "ok", "bind to an allowed port, then listen"));
}

TEST(listen_without_bind_denied) { autolisten("2"); }
TEST(listen6_without_bind_denied) { autolisten("10"); }

/* socket(domain, type, protocol) inside must print want; outside must not
 * already be refused the same way (else the sandbox's part is invisible). */
static void socket_verdict(const char *probe, const char *d, const char *t, const char *p,
                           const char *want)
{
	char o[LINE], in[LINE];
	outside(o, ARGS(probe, d, t, p));
	if (strcmp(want, "ok") != 0 && strcmp(o, want) == 0)
		SKIP("refused outside the sandbox too (needs privileges or a module)");
	inside(base(), in, ARGS(probe, d, t, p));
	char where[LINE + 96];
	snprintf(where, sizeof where, "%s(%s, %s, %s) (outside: %s)", probe, d, t, p, o);
	CHECK(is(in, want, where));
}

/* Other stream protocols (SCTP, SMC over AF_INET, anything new) fail closed;
 * the filter compares the low 32 bits exactly as the kernel reads them. */
TEST(sctp_stream_denied) { socket_verdict("socket", "2", "1", "132", "errno=EPERM"); }
TEST(smc_inet_stream_denied) { socket_verdict("socket", "2", "1", "256", "errno=EPERM"); }
TEST(mptcp_protocol_high_bits_denied)
{
	socket_verdict("socket", "2", "1", "0x100000106", "errno=EPERM");
}
TEST(mptcp_nonblock_cloexec_denied)
{
	socket_verdict("socket", "10", "0x80801", "262", "errno=EPERM");
}
TEST(tcp_with_type_flags_allowed) { socket_verdict("socket", "2", "0x80801", "6", "ok"); }
TEST(inet_seqpacket_denied) { socket_verdict("socket", "2", "5", "132", "errno=EPERM"); }

/* ================= TCP Fast Open ================= */

/* Fast Open connects from inside sendto/sendmsg: no connect(2), so no
 * Landlock port check.  The listener's port is not allowed. */
static void fast_open(const char *how)
{
	int port;
	int s = tu_tcp_listener(&port);
	REQUIRE(s >= 0);
	char ps[16], o[LINE], in[LINE];
	port_str(ps, port);
	outside(o, ARGS("tfo", how, ps));
	if (strcmp(o, "ok") != 0) {
		close(s);
		fprintf(stderr, "  outside: %s\n", o);
		SKIP("TCP Fast Open (client) is not enabled here");
	}
	inside(base(), in, ARGS("stream", "2", "0", "connect", ps));
	CHECK(is(in, "errno=EACCES", "connect(2) to the port"));
	inside(base(), in, ARGS("tfo", how, ps));
	CHECK(is(in, "errno=EPERM", how));
	close(s);
}

TEST(fastopen_sendto_denied) { fast_open("sendto"); }
TEST(fastopen_sendmsg_denied) { fast_open("sendmsg"); }
TEST(fastopen_sendmmsg_denied) { fast_open("sendmmsg"); }
TEST(fastopen_connect_sockopt_denied) { fast_open("sockopt"); }

/* ================= UDP and ping sockets ================= */

/* A UDP echo server on the loopback address of family: a child process. */
static pid_t udp_echo(int family, int *port)
{
	int s = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	socklen_t len;
	if (family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		len = sizeof *a;
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *a;
	}
	if (s < 0 || bind(s, (struct sockaddr *)&ss, len) < 0 ||
	    getsockname(s, (struct sockaddr *)&ss, &len) < 0) {
		if (s >= 0)
			close(s);
		return -1;
	}
	*port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                 : ((struct sockaddr_in *)&ss)->sin_port);
	pid_t pid = fork();
	if (pid == 0) {
		char buf[64];
		for (;;) {
			struct sockaddr_storage from;
			socklen_t fl = sizeof from;
			ssize_t n = recvfrom(s, buf, sizeof buf, 0, (struct sockaddr *)&from, &fl);
			if (n > 0)
				sendto(s, buf, (size_t)n, 0, (struct sockaddr *)&from, fl);
		}
	}
	close(s);
	return pid;
}

/* A sandbox from b (consumed) with the UDP/ICMP gate set as given: the
 * gate has no public switch yet, so the test sets the built config. */
static sandlock_sandbox_t *gated(sandlock_builder_t *b, bool udp, bool icmp)
{
	sandlock_sandbox_t *sb = tu_build(b);
	if (sb) {
		sb->filter.allow_udp = udp;
		sb->filter.allow_icmp = icmp;
	}
	return sb;
}

static void udp_denied(const char *family)
{
	int port;
	pid_t echo = udp_echo(atoi(family), &port);
	if (echo < 0)
		SKIP("no loopback address of this family");
	char ps[16], o[LINE], in[LINE];
	port_str(ps, port);
	outside(o, ARGS("dgram", family, "0", ps));
	CHECK(is(o, "ok", "UDP outside"));
	inside(base(), in, ARGS("dgram", family, "0", ps));
	CHECK(is(in, "errno=EPERM", "UDP inside"));
	inside(base(), in, ARGS("dgram", family, "17", ps));
	CHECK(is(in, "errno=EPERM", "IPPROTO_UDP inside"));
	inside(base(), in, ARGS("dgram", family, "136", ps));
	CHECK(is(in, "errno=EPERM", "UDP-Lite inside"));
	/* A UDP rule opens the gate: the same probe gets its echo (so the
	 * denial above is the filter's, not a broken probe). */
	char rule[32];
	snprintf(rule, sizeof rule, "udp://*:%d", port);
	sandlock_sandbox_t *sb = tu_build(sandlock_sandbox_builder_net_allow_spec(base(), rule));
	inside_sb(sb, in, ARGS("dgram", family, "0", ps));
	CHECK(is(in, "ok", "UDP inside with the gate open"));
	inside_sb(sb, in, ARGS("dgram", family, "136", ps));
	CHECK(is(in, "errno=EPERM", "UDP-Lite with the UDP gate open"));
	sandlock_sandbox_free(sb);
	tu_reap_victim(echo);
}

TEST(udp_socket_denied) { udp_denied("2"); }
TEST(udp6_socket_denied) { udp_denied("10"); }

/* Ping sockets: the host's ping_group_range may refuse them outside
 * (EACCES); the sandbox's EPERM must come first, and opening the ICMP
 * gate hands the call back to the kernel's own answer. */
static void ping_denied(const char *family, const char *proto)
{
	char o[LINE], in[LINE];
	outside(o, ARGS("socket", family, "2", proto));
	CHECK(strcmp(o, "errno=EPERM") != 0);
	inside(base(), in, ARGS("socket", family, "2", proto));
	CHECK(is(in, "errno=EPERM", "ping socket inside"));
	sandlock_sandbox_t *sb = gated(base(), false, true);
	inside_sb(sb, in, ARGS("socket", family, "2", proto));
	CHECK(is(in, o, "ping socket with the ICMP gate open (as outside)"));
	sandlock_sandbox_free(sb);
}

TEST(ping_socket_denied) { ping_denied("2", "1"); }
TEST(ping6_socket_denied) { ping_denied("10", "58"); }

/* ================= source routes ================= */

/* A packet socket on lo (root only): where the probe's datagram went. */
static int lo_capture(void)
{
	int s = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_ALL));
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL),
		                      .sll_ifindex = (int)if_nametoindex("lo") };
	if (s >= 0 && (ll.sll_ifindex == 0 || bind(s, (struct sockaddr *)&ll, sizeof ll) < 0)) {
		close(s);
		s = -1;
	}
	return s;
}

/* True if a packet carrying marker crossed lo within 300 ms. */
static bool lo_saw(int cap, const char *marker)
{
	char buf[2048];
	size_t ml = strlen(marker);
	struct pollfd p = { cap, POLLIN, 0 };
	while (poll(&p, 1, 300) == 1) {
		ssize_t n = recv(cap, buf, sizeof buf, 0);
		for (ssize_t i = 0; n > 0 && i + (ssize_t)ml <= n; i++)
			if (memcmp(buf + i, marker, ml) == 0)
				return true;
	}
	return false;
}

/*
 * A rule allows UDP to one documentation address (routed away from lo);
 * a routing header / source route lists 127.0.0.1 or ::1 as the first
 * hop.  Outside, the datagram crosses lo; inside, the option (sticky or
 * as ancillary data) is refused and nothing reaches lo.  Variants this
 * kernel refuses by itself outside (IPv6 ancillary routing headers other
 * than Mobile IPv6's) must still get the sandbox's EPERM inside.
 */
static void source_route(const char *family, const char *how)
{
	int cap = lo_capture();
	if (cap < 0)
		SKIP("no packet socket (needs CAP_NET_RAW) to watch lo");
	bool v6 = strcmp(family, "10") == 0;
	char marker[64], o[LINE], in[LINE];
	snprintf(marker, sizeof marker, "sandlock-route-%d-%s-%s", (int)getpid(), family, how);
	outside(o, ARGS("route", family, how, "5999", marker));
	bool works = strcmp(o, "ok") == 0 && lo_saw(cap, marker);
	fprintf(stderr, "  outside: %s, %s\n", o, works ? "rerouted to lo" : "not rerouted");
	sandlock_builder_t *b = sandlock_sandbox_builder_net_allow_spec(
	    base(), v6 ? "udp://[2001:db8::53]:5999" : "udp://192.0.2.1:5999");
	snprintf(marker + strlen(marker), sizeof marker - strlen(marker), "-in");
	inside(b, in, ARGS("route", family, how, "5999", marker));
	CHECK(is(in, "errno=EPERM", how));
	CHECK(!lo_saw(cap, marker));
	close(cap);
	if (!works && strcmp(how, "sockopt") == 0)
		SKIP("the option does not reroute on this kernel (nothing to show outside)");
}

TEST(ipv6_routing_header_sockopt_denied) { source_route("10", "sockopt"); }
TEST(ipv6_routing_header_cmsg_denied) { source_route("10", "cmsg"); }
TEST(ipv6_2292_pktoptions_denied) { source_route("10", "pktoptions"); }
TEST(ipv4_source_route_sockopt_denied) { source_route("2", "sockopt"); }
TEST(ipv4_source_route_cmsg_denied) { source_route("2", "cmsg"); }

/* ================= socket families ================= */

/* Families outside unix/inet/inet6/netlink: each widens reach (kernel
 * crypto, hypervisor sockets, key management, raw links, ...). */
TEST(af_vsock_denied) { socket_verdict("socket", "40", "1", "0", "errno=EPERM"); }
TEST(af_alg_denied) { socket_verdict("socket", "38", "5", "0", "errno=EPERM"); }
TEST(af_key_denied) { socket_verdict("socket", "15", "3", "2", "errno=EPERM"); }
TEST(af_packet_denied) { socket_verdict("socket", "17", "2", "0", "errno=EPERM"); }
TEST(af_xdp_denied) { socket_verdict("socket", "44", "3", "0", "errno=EPERM"); }
TEST(af_bluetooth_denied) { socket_verdict("socket", "31", "1", "0", "errno=EPERM"); }
/* AF_VSOCK with garbage in the upper half: the kernel reads an int. */
TEST(family_high_bits_denied) { socket_verdict("socket", "0x100000028", "1", "0", "errno=EPERM"); }
/* NETLINK_SOCK_DIAG lists every socket of the host, NETLINK_AUDIT ... */
TEST(netlink_sock_diag_denied) { socket_verdict("socket", "16", "2", "4", "errno=EPERM"); }
TEST(netlink_audit_denied) { socket_verdict("socket", "16", "3", "9", "errno=EPERM"); }
TEST(raw_inet_denied) { socket_verdict("socket", "2", "3", "1", "errno=EPERM"); }
TEST(socketpair_netlink_denied) { socket_verdict("socketpair", "16", "3", "0", "errno=EPERM"); }
TEST(socketpair_vsock_denied) { socket_verdict("socketpair", "40", "1", "0", "errno=EPERM"); }

/* What programs need keeps working: unix sockets, TCP, NETLINK_ROUTE
 * (getaddrinfo's AI_ADDRCONFIG reads the interfaces through it). */
TEST(ordinary_sockets_allowed)
{
	static const char *const ok[][4] = {
		{ "socket", "1", "1", "0" },  { "socket", "1", "2", "0" },
		{ "socket", "1", "5", "0" },  { "socket", "2", "1", "0" },
		{ "socket", "2", "1", "6" },  { "socket", "10", "1", "0" },
		{ "socket", "10", "0x801", "6" }, { "socket", "16", "3", "0" },
		{ "socket", "16", "2", "0" }, { "socketpair", "1", "1", "0" },
		{ "socketpair", "1", "2", "0" },
	};
	sandlock_sandbox_t *sb = tu_build(base());
	REQUIRE(sb);
	char in[LINE], where[64];
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		inside_sb(sb, in, ARGS(ok[i][0], ok[i][1], ok[i][2], ok[i][3]));
		snprintf(where, sizeof where, "%s(%s, %s, %s)", ok[i][0], ok[i][1], ok[i][2], ok[i][3]);
		CHECK(is(in, "ok", where));
	}
	inside_sb(sb, in, ARGS("resolve", "localhost"));
	CHECK(is(in, "ok", "getaddrinfo(localhost, AI_ADDRCONFIG)"));
	sandlock_sandbox_free(sb);
}

/* ================= personality ================= */

TEST(personality_query_and_linux_allowed)
{
	char in[LINE];
	inside(base(), in, ARGS("personality", "0xffffffff"));
	CHECK(is(in, "ok", "query"));
	inside(base(), in, ARGS("personality", "0"));
	CHECK(is(in, "ok", "PER_LINUX"));
	/* the kernel reads 32 bits: all ones in 64 is still the query */
	inside(base(), in, ARGS("personality", "0xffffffffffffffff"));
	CHECK(is(in, "ok", "query, 64-bit -1"));
}

static void persona_denied(const char *value)
{
	char o[LINE], in[LINE];
	outside(o, ARGS("personality", value));
	CHECK(is(o, "ok", "outside"));
	inside(base(), in, ARGS("personality", value));
	CHECK(is(in, "errno=EPERM", value));
}

/* ADDR_NO_RANDOMIZE: no ASLR for the guest (a later, explicit option). */
TEST(personality_no_randomize_denied) { persona_denied("0x0040000"); }
TEST(personality_read_implies_exec_denied) { persona_denied("0x0400000"); }
TEST(personality_linux32_denied) { persona_denied("0x0008"); }
TEST(personality_high_bits_denied) { persona_denied("0x100040000"); }

/* ================= SysV and POSIX IPC (the host's IPC namespace) ================= */

static sandlock_builder_t *with_ipc(void)
{
	return sandlock_sandbox_builder_extra_allow_syscalls(base(), "sysv_ipc");
}

/* An outside process's shared memory: attached and overwritten by the
 * guest unless the group is allowed. */
TEST(sysv_shm_denied_unless_allowed)
{
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	REQUIRE(id >= 0);
	char *mem = shmat(id, NULL, 0);
	REQUIRE(mem != (void *)-1);
	char ids[16], o[LINE], in[LINE];
	port_str(ids, id);
	strcpy(mem, "host");
	outside(o, ARGS("shm", ids));
	CHECK(is(o, "ok", "outside"));
	CHECK(strcmp(mem, "guest") == 0);
	strcpy(mem, "host");
	inside(base(), in, ARGS("shm", ids));
	CHECK(is(in, "errno=EPERM", "inside"));
	CHECK(strcmp(mem, "host") == 0);
	inside(with_ipc(), in, ARGS("shm", ids));
	CHECK(is(in, "ok", "inside with sysv_ipc"));
	CHECK(strcmp(mem, "guest") == 0);
	shmdt(mem);
	shmctl(id, IPC_RMID, NULL);
}

/* Messages the guest posted to an outside queue (drains it): 0 or 1. */
static int take_msg(int id)
{
	struct {
		long type;
		char text[8];
	} m;
	return msgrcv(id, &m, sizeof m.text, 0, IPC_NOWAIT) >= 0 && strcmp(m.text, "guest") == 0;
}

TEST(sysv_msg_denied_unless_allowed)
{
	int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	REQUIRE(id >= 0);
	char ids[16], o[LINE], in[LINE];
	port_str(ids, id);
	outside(o, ARGS("msg", ids));
	CHECK(is(o, "ok", "outside"));
	CHECK_EQ_INT(take_msg(id), 1);
	inside(base(), in, ARGS("msg", ids));
	CHECK(is(in, "errno=EPERM", "inside"));
	CHECK_EQ_INT(take_msg(id), 0);
	inside(with_ipc(), in, ARGS("msg", ids));
	CHECK(is(in, "ok", "inside with sysv_ipc"));
	CHECK_EQ_INT(take_msg(id), 1);
	msgctl(id, IPC_RMID, NULL);
}

TEST(sysv_sem_denied_unless_allowed)
{
	int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	REQUIRE(id >= 0);
	char ids[16], o[LINE], in[LINE];
	port_str(ids, id);
	outside(o, ARGS("sem", ids));
	CHECK(is(o, "ok", "outside"));
	CHECK_EQ_INT(semctl(id, 0, GETVAL), 1);
	inside(base(), in, ARGS("sem", ids));
	CHECK(is(in, "errno=EPERM", "inside"));
	CHECK_EQ_INT(semctl(id, 0, GETVAL), 1);
	inside(with_ipc(), in, ARGS("sem", ids));
	CHECK(is(in, "ok", "inside with sysv_ipc"));
	CHECK_EQ_INT(semctl(id, 0, GETVAL), 2);
	semctl(id, 0, IPC_RMID);
}

/* Messages waiting in q, then drained. */
static long mq_take(mqd_t q)
{
	struct mq_attr at;
	if (mq_getattr(q, &at) < 0)
		return -1;
	char buf[64];
	for (long i = 0; i < at.mq_curmsgs; i++)
		mq_receive(q, buf, sizeof buf, NULL);
	return at.mq_curmsgs;
}

TEST(posix_mq_denied_unless_allowed)
{
	char name[64], o[LINE], in[LINE];
	snprintf(name, sizeof name, "/sandlock-contain-%d", (int)getpid());
	struct mq_attr at = { .mq_maxmsg = 4, .mq_msgsize = 64 };
	mqd_t q = mq_open(name, O_CREAT | O_RDWR | O_NONBLOCK | O_CLOEXEC, 0600, &at);
	REQUIRE(q != (mqd_t)-1);
	outside(o, ARGS("mq", name));
	CHECK(is(o, "ok", "outside"));
	CHECK_EQ_INT(mq_take(q), 1);
	inside(base(), in, ARGS("mq", name));
	CHECK(is(in, "errno=EPERM", "inside"));
	CHECK_EQ_INT(mq_take(q), 0);
	/* With the group the filter lets mq_open through to the kernel, where
	 * Landlock checks it like a file open: the queue's mqueue filesystem
	 * (/dev/mqueue when mounted) is not granted here, hence EACCES, not
	 * the filter's EPERM. */
	inside(with_ipc(), in, ARGS("mq", name));
	CHECK(is(in, "errno=EACCES", "inside with sysv_ipc"));
	CHECK_EQ_INT(mq_take(q), 0);
	mq_close(q);
	mq_unlink(name);
}

static bool build_fails_with(sandlock_builder_t *b, const char *want)
{
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	bool ok = !sb && err == SANDLOCK_ERR_INVALID && msg && strstr(msg, want);
	if (!ok)
		fprintf(stderr, "  build: err %d '%s', want INVALID with '%s'\n", err,
		        msg ? msg : "", want);
	sandlock_sandbox_free(sb);
	sandlock_string_free(msg);
	return ok;
}

/* Groups only: a single syscall or an unknown group is a build error. */
TEST(extra_allow_syscalls_rejects_bad_names)
{
	CHECK(build_fails_with(sandlock_sandbox_builder_extra_allow_syscalls(base(), "shmget"),
	                       "'shmget' is a single syscall"));
	CHECK(build_fails_with(sandlock_sandbox_builder_extra_allow_syscalls(base(), "sysv"),
	                       "unknown syscall group 'sysv'"));
	CHECK(build_fails_with(sandlock_sandbox_builder_extra_allow_syscalls(base(), ""),
	                       "empty or NULL group"));
	CHECK(build_fails_with(sandlock_sandbox_builder_extra_allow_syscalls(base(), NULL),
	                       "empty or NULL group"));
}

/* Blocked syscalls cannot be handled; an allowed group's can. */
TEST(ipc_handlers_only_when_allowed)
{
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	REQUIRE(id >= 0);
	char ids[16];
	port_str(ids, id);
	const char *argv[] = { helper(), "shm", ids, NULL };
	struct tu_counter cnt = { 0, 0 };
	for (int allowed = 0; allowed < 2; allowed++) {
		sandlock_sandbox_t *sb = tu_build(allowed ? with_ipc() : base());
		REQUIRE(sb);
		sandlock_registration_t reg = {
			"shmat", sandlock_handler_new(tu_count_and_continue, &cnt, tu_counter_free,
			                              SANDLOCK_EXCEPTION_KILL)
		};
		int err = 0;
		char *msg = NULL;
		sandlock_result_t *r = sandlock_run_with_handlers_err(sb, argv, 3, &reg, 1, &err, &msg);
		if (allowed) {
			CHECK(r && tu_out_is(r, "ok\n"));
			CHECK_EQ_INT(atomic_load(&cnt.calls), 1);
		} else {
			CHECK(!r && err == SANDLOCK_ERR_SYSCALL);
		}
		sandlock_result_free(r);
		sandlock_string_free(msg);
		sandlock_sandbox_free(sb);
	}
	CHECK_EQ_INT(atomic_load(&cnt.freed), 2);
	shmctl(id, IPC_RMID, NULL);
}

/* ================= set-id files ================= */

struct tree {
	char dir[TU_TMPDIR_LEN];
	char path[128];
};

static bool tree_make(struct tree *t)
{
	if (!tu_mkdtemp(t->dir, "contain"))
		return false;
	snprintf(t->path, sizeof t->path, "%s/f", t->dir);
	return true;
}

/* The sandbox may write t->dir. */
static sandlock_builder_t *writer(const struct tree *t)
{
	return sandlock_sandbox_builder_fs_write(base(), t->dir);
}

static mode_t mode_of(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0 ? st.st_mode : 0;
}

/* Creating a set-id file by `how`: works outside (the file is set-id),
 * refused inside (no file), while a plain mode still works inside. */
static void create_setid(const char *how, const char *mode)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	char o[LINE], in[LINE];
	umask(022);
	outside(o, ARGS("create", how, t.path, mode));
	CHECK(is(o, "ok", "outside"));
	CHECK(mode_of(t.path) & (S_ISUID | S_ISGID));
	unlink(t.path);
	inside(writer(&t), in, ARGS("create", how, t.path, mode));
	CHECK(is(in, "errno=EPERM", how));
	CHECK(access(t.path, F_OK) != 0);
	inside(writer(&t), in, ARGS("create", how, t.path, "0755"));
	CHECK(is(in, "ok", "plain 0755 inside"));
	CHECK_EQ_INT(mode_of(t.path) & 07777, 0755);
	tu_rm_rf(t.dir);
}

TEST(setuid_open_denied) { create_setid("open", "4755"); }
TEST(setuid_openat_denied) { create_setid("openat", "4755"); }
TEST(setgid_openat_denied) { create_setid("openat", "2755"); }
TEST(setuid_creat_denied) { create_setid("creat", "4755"); }
TEST(setuid_mknod_denied) { create_setid("mknod", "4755"); }

/* O_TMPFILE creates an unnamed inode with the mode (linkat names it later). */
TEST(setuid_tmpfile_denied)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	char o[LINE], in[LINE];
	outside(o, ARGS("create", "tmpfile", t.dir, "4755"));
	CHECK(is(o, "ok", "outside"));
	inside(writer(&t), in, ARGS("create", "tmpfile", t.dir, "4755"));
	CHECK(is(in, "errno=EPERM", "inside"));
	inside(writer(&t), in, ARGS("create", "tmpfile", t.dir, "0755"));
	CHECK(is(in, "no-setid-bits", "plain O_TMPFILE inside"));
	tu_rm_rf(t.dir);
}

/* openat2 carries its mode in memory the filter cannot read: ENOSYS
 * (callers fall back to openat, whose mode the filter does see). */
TEST(openat2_enosys)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	char o[LINE], in[LINE];
	outside(o, ARGS("create", "openat2", t.path, "4755"));
	CHECK(is(o, "ok", "outside"));
	CHECK(mode_of(t.path) & S_ISUID);
	unlink(t.path);
	inside(writer(&t), in, ARGS("create", "openat2", t.path, "0644"));
	CHECK(is(in, "errno=ENOSYS", "inside"));
	CHECK(access(t.path, F_OK) != 0);
	tu_rm_rf(t.dir);
}

/* mkdir never takes set-id bits from its mode (the kernel keeps only the
 * permission and sticky bits), so no rule is needed; this pins that. */
TEST(mkdir_setid_mode_ignored_by_kernel)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	char in[LINE];
	inside(writer(&t), in, ARGS("create", "mkdir", t.path, "6755"));
	CHECK(is(in, "ok", "inside"));
	CHECK(S_ISDIR(mode_of(t.path)));
	CHECK_EQ_INT(mode_of(t.path) & 07000, 0);
	tu_rm_rf(t.dir);
}

/* chmod/fchmod go through the metadata guard: no set-uid bit, and no
 * set-gid bit on a file; set-gid on a directory (group inheritance) is
 * allowed. */
TEST(chmod_setid_denied)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	REQUIRE(tu_write_file(t.path, "#!/bin/sh\n"));
	REQUIRE(chmod(t.path, 0755) == 0);
	char o[LINE], in[LINE];
	outside(o, ARGS("chmod", t.path, "4755"));
	CHECK(is(o, "ok", "outside"));
	CHECK(mode_of(t.path) & S_ISUID);
	REQUIRE(chmod(t.path, 0755) == 0);
	static const char *const bad[][2] = {
		{ "chmod", "4755" }, { "fchmod", "4755" }, { "chmod", "2755" },
		{ "fchmod", "6755" }, { "chmod", "4000" },
	};
	sandlock_sandbox_t *sb = tu_build(writer(&t));
	REQUIRE(sb);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		inside_sb(sb, in, ARGS(bad[i][0], t.path, bad[i][1]));
		CHECK(is(in, "errno=EPERM", bad[i][1]));
		CHECK_EQ_INT(mode_of(t.path) & 07777, 0755);
	}
	inside_sb(sb, in, ARGS("chmod", t.path, "0700"));
	CHECK(is(in, "ok", "plain chmod"));
	CHECK_EQ_INT(mode_of(t.path) & 07777, 0700);
	char sub[160];
	snprintf(sub, sizeof sub, "%s/d", t.dir);
	REQUIRE(mkdir(sub, 0755) == 0);
	inside_sb(sb, in, ARGS("chmod", sub, "2775"));
	CHECK(is(in, "ok", "set-gid directory"));
	CHECK_EQ_INT(mode_of(sub) & 07777, 02775);
	inside_sb(sb, in, ARGS("chmod", sub, "4775"));
	CHECK(is(in, "errno=EPERM", "set-uid directory"));
	sandlock_sandbox_free(sb);
	tu_rm_rf(t.dir);
}

/* File capabilities are set-id by another name.  Two layers refuse them
 * (the dropped CAP_SETFCAP and the guard's explicit check). */
TEST(file_capability_denied)
{
	struct tree t;
	REQUIRE(tree_make(&t));
	REQUIRE(tu_write_file(t.path, "x"));
	char o[LINE], in[LINE];
	outside(o, ARGS("setcap", t.path));
	if (strcmp(o, "ok") != 0) {
		tu_rm_rf(t.dir);
		SKIP("setting file capabilities needs CAP_SETFCAP outside too");
	}
	REQUIRE(removexattr(t.path, "security.capability") == 0);
	inside(writer(&t), in, ARGS("setcap", t.path));
	CHECK(is(in, "errno=EPERM", "inside"));
	CHECK(getxattr(t.path, "security.capability", NULL, 0) < 0 && errno == ENODATA);
	tu_rm_rf(t.dir);
}

/* ================= rules hold for trapped syscalls ================= */

/* The filter applies its argument rules before any user notification:
 * a handler on socket() never even sees a denied call. */
TEST(arg_rules_hold_when_trapped)
{
	const char *denied[] = { helper(), "socket", "2", "1", "262", NULL };
	const char *allowed[] = { helper(), "socket", "2", "1", "0", NULL };
	const char *const *argvs[2] = { denied, allowed };
	const char *want[2] = { "errno=EPERM\n", "ok\n" };
	sandlock_sandbox_t *sb = tu_build(base());
	REQUIRE(sb);
	for (int i = 0; i < 2; i++) {
		struct tu_counter cnt = { 0, 0 };
		sandlock_registration_t reg = {
			"socket", sandlock_handler_new(tu_count_and_continue, &cnt, tu_counter_free,
			                               SANDLOCK_EXCEPTION_KILL)
		};
		sandlock_result_t *r = tu_run_with(sb, argvs[i], &reg, 1);
		CHECK(r && tu_out_is(r, want[i]));
		CHECK_EQ_INT(atomic_load(&cnt.calls), i); /* denied: never notified */
		sandlock_result_free(r);
	}
	sandlock_sandbox_free(sb);
}

/* The supervisor's copy of the rules (sl_filter_arg_check) gives the
 * filter's verdicts, on the low 32 bits as the kernel reads them. */
TEST(arg_check_mirrors_filter)
{
	static const struct {
		int nr;
		uint64_t a[4];
		int want;
	} cases[] = {
		{ __NR_socket, { AF_INET, SOCK_STREAM, IPPROTO_MPTCP }, EPERM },
		{ __NR_socket, { AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0 }, 0 },
		{ __NR_socket, { AF_INET6, SOCK_STREAM, IPPROTO_TCP | (1ULL << 40) }, 0 },
		{ __NR_socket, { AF_INET, SOCK_DGRAM, 0 }, EPERM },
		{ __NR_socket, { AF_INET6, SOCK_DGRAM, IPPROTO_ICMPV6 }, EPERM },
		{ __NR_socket, { AF_UNIX | (1ULL << 32), SOCK_DGRAM, 0 }, 0 },
		{ __NR_socket, { 40 | (1ULL << 32), SOCK_STREAM, 0 }, EPERM },
		{ __NR_socket, { AF_NETLINK, SOCK_RAW, NETLINK_ROUTE }, 0 },
		{ __NR_socket, { AF_NETLINK, SOCK_RAW, 4 }, EPERM },
		{ __NR_socketpair, { AF_UNIX, SOCK_STREAM, 0 }, 0 },
		{ __NR_socketpair, { AF_INET, SOCK_STREAM, 0 }, EPERM },
		{ __NR_sendto, { 3, 0, 1, MSG_FASTOPEN | MSG_NOSIGNAL }, EPERM },
		{ __NR_sendto, { 3, 0, 1, MSG_NOSIGNAL }, 0 },
		{ __NR_sendmsg, { 3, 0, MSG_FASTOPEN }, EPERM },
		{ __NR_sendmmsg, { 3, 0, 1, MSG_FASTOPEN }, EPERM },
		{ __NR_setsockopt, { 3, IPPROTO_TCP, 30 }, EPERM },
		{ __NR_setsockopt, { 3, IPPROTO_TCP, 23 /* TCP_FASTOPEN */ }, 0 },
		{ __NR_personality, { 0xffffffffULL }, 0 },
		{ __NR_personality, { ~0ULL }, 0 },
		{ __NR_personality, { 0x0040000 }, EPERM },
		{ __NR_openat, { AT_FDCWD, 0, O_CREAT | O_WRONLY, 04755 }, EPERM },
		{ __NR_openat, { AT_FDCWD, 0, O_TMPFILE | O_WRONLY, 02755 }, EPERM },
		{ __NR_openat, { AT_FDCWD, 0, O_RDONLY, 04755 }, 0 }, /* mode unused */
		{ __NR_openat, { AT_FDCWD, 0, O_CREAT, 0755 | (1ULL << 40) }, 0 },
		{ __NR_open, { 0, O_CREAT, 06000 }, EPERM },
		{ __NR_creat, { 0, 04700 }, EPERM },
		{ __NR_mknodat, { AT_FDCWD, 0, S_IFREG | 02644 }, EPERM },
		{ __NR_openat2, { AT_FDCWD, 0, 0, 24 }, ENOSYS },
		{ __NR_ioctl, { 0, TIOCSTI | (1ULL << 32) }, EPERM },
		{ __NR_clone, { CLONE_NEWUSER | SIGCHLD }, EPERM },
		{ __NR_prctl, { PR_SET_DUMPABLE, 1 }, EPERM },
	};
	struct sl_filter_policy pol = { 0, false, false, false };
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sandlock_notif_t n;
		memset(&n, 0, sizeof n);
		n.syscall_nr = cases[i].nr;
		memcpy(n.args, cases[i].a, sizeof cases[i].a);
		int got = sl_filter_arg_check(&pol, &n);
		if (got != cases[i].want)
			fprintf(stderr, "  case %zu (nr %d): got %d want %d\n", i, cases[i].nr, got,
			        cases[i].want);
		CHECK_EQ_INT(got, cases[i].want);
	}
	/* the gate: UDP and ping sockets become the kernel's to decide */
	sandlock_notif_t n;
	memset(&n, 0, sizeof n);
	n.syscall_nr = __NR_socket;
	n.args[0] = AF_INET;
	n.args[1] = SOCK_DGRAM;
	pol.allow_udp = true;
	CHECK_EQ_INT(sl_filter_arg_check(&pol, &n), 0);
	n.args[2] = IPPROTO_ICMP;
	CHECK_EQ_INT(sl_filter_arg_check(&pol, &n), EPERM);
	pol.allow_icmp = true;
	CHECK_EQ_INT(sl_filter_arg_check(&pol, &n), 0);
	n.args[2] = 136; /* UDP-Lite */
	CHECK_EQ_INT(sl_filter_arg_check(&pol, &n), EPERM);
}

/* ================= the BPF itself agrees with the rule table ================= */

/*
 * A classic-BPF interpreter for what seccomp programs use, run on the
 * program sl_filter_build exports (prefix and libseccomp's part), so the
 * jump offsets of the hand-built prefix are checked on many inputs, not
 * only on the handful the hostile probes above send.  Returns the
 * SECCOMP_RET_* value, or 0xdeadbeef for an instruction it does not know.
 */
static uint32_t bpf_run(const struct sock_fprog *prog, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, mem[BPF_MEMWORDS] = { 0 };
	const uint8_t *data = (const uint8_t *)d;
	for (size_t pc = 0; pc < prog->len; pc++) {
		const struct sock_filter *f = &prog->filter[pc];
		uint32_t k = f->k;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k + 4 > sizeof *d)
				return 0xdeadbeef;
			memcpy(&A, data + k, 4);
			break;
		case BPF_LD | BPF_MEM: A = mem[k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: X = mem[k % BPF_MEMWORDS]; break;
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_ST: mem[k % BPF_MEMWORDS] = A; break;
		case BPF_STX: mem[k % BPF_MEMWORDS] = X; break;
		case BPF_ALU | BPF_AND | BPF_K: A &= k; break;
		case BPF_ALU | BPF_OR | BPF_K: A |= k; break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_JMP | BPF_JA: pc += k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: pc += A == k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_K: pc += A > k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_K: pc += A >= k ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JSET | BPF_K: pc += (A & k) ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JEQ | BPF_X: pc += A == X ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGT | BPF_X: pc += A > X ? f->jt : f->jf; break;
		case BPF_JMP | BPF_JGE | BPF_X: pc += A >= X ? f->jt : f->jf; break;
		case BPF_RET | BPF_K: return k;
		case BPF_RET | BPF_A: return A;
		default:
			fprintf(stderr, "  bpf: unknown opcode 0x%x at %zu\n", f->code, pc);
			return 0xdeadbeef;
		}
	}
	return 0xdeadbeef; /* fell off the end */
}

/* xorshift64: a fixed, reproducible stream of test inputs. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* An argument value likely to sit on a rule's edge. */
static uint64_t edge_value(uint64_t *s)
{
	static const uint64_t k[] = {
		0, 1, 2, 3, 4, 5, 6, 9, 10, 15, 16, 17, 38, 40, 58, 132, 136, 256, 262,
		SOCK_STREAM | SOCK_NONBLOCK, SOCK_DGRAM | SOCK_CLOEXEC, SOCK_RAW, SOCK_SEQPACKET,
		O_CREAT | O_WRONLY, O_TMPFILE | O_RDWR, 04755, 02755, 0644, S_IFREG | 04644,
		MSG_FASTOPEN, MSG_FASTOPEN | MSG_DONTWAIT, TCP_FASTOPEN_CONNECT, 23, TIOCSTI,
		TIOCLINUX, PR_SET_DUMPABLE, CLONE_NEWNET | SIGCHLD, 0x0040000, 0xffffffffULL,
		~0ULL,
	};
	uint64_t r = rnd(s);
	uint64_t v = (r & 3) == 0 ? rnd(s) : k[(r >> 2) % (sizeof k / sizeof k[0])];
	if ((r & 0x30) == 0x30) /* garbage in the half the kernel ignores */
		v ^= rnd(s) & 0xffffffff00000000ULL;
	return v;
}

/* For every syscall with argument rules, under each UDP/ICMP gate, with
 * and without those syscalls trapped, and with and without refusals
 * reported: BPF says ERRNO(e) exactly when sl_filter_arg_check says e
 * (reported: USER_NOTIF for EPERM, the supervisor answering it), and
 * otherwise ALLOW (or USER_NOTIF). */
TEST(bpf_agrees_with_arg_check)
{
	static const int nrs[] = { __NR_socket, __NR_socketpair, __NR_sendto, __NR_sendmsg,
		                   __NR_sendmmsg, __NR_setsockopt, __NR_open, __NR_openat,
		                   __NR_creat, __NR_mknod, __NR_mknodat, __NR_personality,
		                   __NR_openat2, __NR_clone, __NR_unshare, __NR_ioctl, __NR_prctl };
	const size_t nnrs = sizeof nrs / sizeof nrs[0];
	struct sl_traps trapped = { 0 };
	REQUIRE(sl_traps_add_all(&trapped, nrs, nnrs) == 0);
	sl_traps_normalize(&trapped);
	uint64_t seed = 0x5eed5eed12345ULL;
	long checked = 0;
	for (int variant = 0; variant < 16; variant++) {
		bool report = variant & 8;
		sandlock_sandbox_t *sb =
			gated(sandlock_sandbox_builder_report_filter_refusals(base(), report), variant & 1,
			      variant & 2);
		REQUIRE(sb);
		bool trap = variant & 4;
		struct sock_fprog prog;
		int err = 0;
		char *msg = NULL;
		int rc = sl_filter_build(sb, trap ? trapped.v : NULL, trap ? trapped.n : 0, true, &prog,
		                         &err, &msg);
		if (rc != 0)
			fprintf(stderr, "  sl_filter_build: %s\n", msg ? msg : "");
		sandlock_string_free(msg);
		REQUIRE(rc == 0);
		for (int i = 0; i < 4000; i++) {
			struct seccomp_data d = { .nr = nrs[rnd(&seed) % nnrs], .arch = AUDIT_ARCH_X86_64 };
			sandlock_notif_t n;
			memset(&n, 0, sizeof n);
			n.syscall_nr = d.nr;
			for (int a = 0; a < 6; a++)
				n.args[a] = d.args[a] = edge_value(&seed);
			int e = sl_filter_arg_check(&sb->filter, &n);
			uint32_t want = e == EPERM && report ? SECCOMP_RET_USER_NOTIF
			                : e ? (SECCOMP_RET_ERRNO | (uint32_t)e)
			                : trap ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_ALLOW;
			uint32_t got = bpf_run(&prog, &d);
			if (got != want) {
				fprintf(stderr, "  variant %d nr %d args %llx %llx %llx %llx: bpf %x, table %x\n",
				        variant, d.nr, (unsigned long long)d.args[0],
				        (unsigned long long)d.args[1], (unsigned long long)d.args[2],
				        (unsigned long long)d.args[3], got, want);
				CHECK_EQ_INT(got, want);
				break;
			}
			checked++;
		}
		sl_filter_free(&prog);
		sandlock_sandbox_free(sb);
	}
	sl_traps_free(&trapped);
	CHECK_EQ_INT(checked, 16 * 4000);
}
