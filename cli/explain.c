/*
 * explain.c — say, at the end of a failed run, what the sandbox did to it.
 *
 * Why: a build that fails with "Cannot fork", a client whose connect gets
 * EACCES or a program killed at its memory limit looks, to a new user, like
 * a broken program.  The supervisor already decides those calls, so the
 * run counts its refusals by kind (from the decision hook: a few atomic
 * increments, no extra trap) and remembers the first of each; when the run
 * fails, one line per cause says which limit or rule and the flag that
 * allows it, then a summary count.  Limits the kernel enforces without
 * telling us (the memory limit, the timeout) are told from the result.
 * File accesses Landlock refuses are not seen here (no trap; --trace
 * traps opens to find them): where the caller may read the audit log the
 * library reads the first back (src/run/auditlog.c; denied.c words it);
 * an open sandlock performed for the program (the opener: /proc readable,
 * a seed, a chroot) and Landlock refused is seen here (refusedopen.c);
 * elsewhere a run that failed with nothing else to say gets the first
 * path its command line names that the rules refuse (namedpaths.c).
 * `-q` turns it all off.
 */
#include "explain.h"
#include "denied.h"
#include "namedpaths.h"
#include "refusedopen.h"
#include "trace.h"
/* What the library can reach here (libsandlock.a): pidfd_getfd. */
#include "launch/mechs.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

enum kind { K_PROCS, K_CONNECT, K_BIND, K_LISTEN, K_SEND, K_META, K_ARGS, K_DISK, K_IPC,
	    K_FILTER, K_OPEN, K_OTHER, K_N };

static const char *const k_names[K_N] = { "process creations", "connects", "binds", "listens",
	                                  "sends", "metadata changes", "argument rules",
	                                  "writes past --max-disk", "SysV IPC calls",
	                                  "blocklisted calls", "file opens", "other calls" };

struct cli_explain {
	struct cli_explain_cfg cfg;
	atomic_uint count[K_N];
	pthread_mutex_t mu;
	char first[K_N][200]; /* the first refusal of each kind, described */
	int first_errno[K_N]; /* and its errno (EPERM: not checkable here; EACCES: the rules) */
	char open_path[4096]; /* K_OPEN's first: the file (refusedopen.c) */
	bool open_write;
	sandlock_decision_fn next;
	void *next_ud;
};

struct cli_explain *cli_explain_new(const struct cli_explain_cfg *c)
{
	struct cli_explain *e = calloc(1, sizeof *e);
	if (!e)
		return NULL;
	e->cfg = *c;
	pthread_mutex_init(&e->mu, NULL);
	return e;
}

void cli_explain_free(struct cli_explain *e)
{
	if (!e)
		return;
	pthread_mutex_destroy(&e->mu);
	free(e);
}

void cli_explain_chain(struct cli_explain *e, sandlock_decision_fn next, void *next_ud)
{
	e->next = next;
	e->next_ud = next_ud;
}

/* A refusal, not a call's ordinary result (as trace.c's refusal()). */
static bool refused(const sandlock_decision_t *d)
{
	if (d->action->kind != SANDLOCK_ACTION_ERRNO || !d->decided_by ||
	    strcmp(d->decided_by, "handler") == 0)
		return false;
	int v = d->action->u.errno_value;
	if (strcmp(d->decided_by, "process count") == 0)
		return v == EAGAIN || v == EPERM;
	if (strcmp(d->decided_by, "copy-on-write workdir") == 0)
		return v == ENOSPC;
	return v == EPERM || v == EACCES;
}

static enum kind kind_of(const sandlock_decision_t *d, const char *call)
{
	const char *by = d->decided_by;
	if (strcmp(by, "process count") == 0)
		return K_PROCS;
	if (strcmp(by, "copy-on-write workdir") == 0)
		return K_DISK;
	if (strcmp(by, "metadata guard") == 0)
		return K_META;
	if (strcmp(by, "argument rules") == 0)
		return K_ARGS;
	if (strcmp(by, "SysV IPC") == 0)
		return K_IPC;
	if (strcmp(by, "syscall filter") == 0) /* seen with --trace only */
		return K_FILTER;
	if (strcmp(by, "socket destinations") == 0) {
		if (call && strcmp(call, "connect") == 0)
			return K_CONNECT;
		if (call && strcmp(call, "bind") == 0)
			return K_BIND;
		if (call && strcmp(call, "listen") == 0)
			return K_LISTEN;
		if (call && strncmp(call, "send", 4) == 0)
			return K_SEND;
	}
	/* An open the supervisor performed for the program (the opener,
	 * confined by the same rules) that Landlock refused. */
	if (call && d->action->u.errno_value == EACCES &&
	    (strncmp(call, "open", 4) == 0 || strcmp(call, "creat") == 0))
		return K_OPEN;
	return K_OTHER;
}

/* "1.2.3.4:443", "[::1]:80", "unix /path": the address the call names,
 * read from the caller (still held).  Best effort: it is for a message. */
static void describe_addr(const sandlock_notif_t *n, uint64_t ptr, uint64_t len, char *out,
                          size_t size)
{
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof ss);
	size_t want = len < sizeof ss ? (size_t)len : sizeof ss;
	out[0] = '\0';
	if (!ptr || !want || !cli_read_caller((pid_t)n->pid, ptr, &ss, want))
		return;
	char ip[INET6_ADDRSTRLEN];
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip);
		snprintf(out, size, "%s:%u", ip, ntohs(a->sin_port));
	} else if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip);
		snprintf(out, size, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else if (ss.ss_family == AF_UNIX) {
		struct sockaddr_un *a = (struct sockaddr_un *)&ss;
		a->sun_path[sizeof a->sun_path - 1] = '\0';
		snprintf(out, size, "unix %s", a->sun_path[0] ? a->sun_path : "(abstract)");
	}
}

static void remember(struct cli_explain *e, enum kind k, const sandlock_decision_t *d,
                     const char *call)
{
	char addr[136] = "", path[sizeof e->open_path];
	bool write = false, opened = k == K_OPEN && call &&
	                              cli_refused_open(d->notif, call, path, sizeof path, &write);
	if (k == K_CONNECT || k == K_BIND)
		describe_addr(d->notif, d->notif->args[1], d->notif->args[2], addr, sizeof addr);
	else if (k == K_SEND && call && strcmp(call, "sendto") == 0)
		describe_addr(d->notif, d->notif->args[4], d->notif->args[5], addr, sizeof addr);
	pthread_mutex_lock(&e->mu);
	if (!e->first[k][0]) {
		snprintf(e->first[k], sizeof e->first[k], "%s%s%s", call ? call : "?",
		         addr[0] ? " " : "", addr);
		e->first_errno[k] = d->action->u.errno_value;
		if (opened) {
			memcpy(e->open_path, path, sizeof path);
			e->open_write = write;
		}
	}
	pthread_mutex_unlock(&e->mu);
}

void cli_explain_decision(void *ud, const sandlock_decision_t *d)
{
	struct cli_explain *e = ud;
	if (refused(d)) {
		char *call = sandlock_syscall_name(d->notif->syscall_nr);
		enum kind k = kind_of(d, call);
		if (atomic_fetch_add(&e->count[k], 1) == 0)
			remember(e, k, d, call);
		sandlock_string_free(call);
	}
	if (e->next)
		e->next(e->next_ud, d);
}

/* ---------------------------------------------------------------- the end */

static void say(const char *what)
{
	fprintf(stderr, "sandlock: %s\n", what);
}

/* The address part of a first refusal ("connect 1.2.3.4:443" -> "1.2.3.4:443"). */
static const char *addr_of(const char *first)
{
	const char *sp = strchr(first, ' ');
	return sp ? sp + 1 : NULL;
}

static void explain_network(const struct cli_explain *e)
{
	char line[768];
	unsigned c = e->count[K_CONNECT], b = e->count[K_BIND], s = e->count[K_SEND];
	if (c) {
		const char *a = addr_of(e->first[K_CONNECT]);
		bool unix_ = a && strncmp(a, "unix ", 5) == 0;
		snprintf(line, sizeof line,
		         "%u connect%s refused by the network rules (first: %s); allow with %s %s",
		         c, c == 1 ? "" : "s", e->first[K_CONNECT], unix_ ? "--allow-unix" : "--net-allow",
		         a ? (unix_ ? a + 5 : a) : "HOST:PORT");
		say(line);
	}
	/* Without pidfd_getfd, EPERM is sandlock unable to check the call on
	 * the program's own socket; EACCES is still the rules' answer. */
	const char *nogetfd = sl_mech_getfd_why();
	if (b && nogetfd && e->first_errno[K_BIND] == EPERM) {
		/* Here a trapped bind on a socket sandlock cannot remake (one
		 * bound or connected before, a raw one) is refused. */
		snprintf(line, sizeof line,
		         "%u bind%s refused (first: %s): sandlock performs binds on a socket it "
		         "makes like the program's, and cannot on this one (bound or connected "
		         "before, or of a kind it does not make); on the program's own socket it "
		         "cannot act here: %s; see docs/containers.md", b,
		         b == 1 ? "" : "s", e->first[K_BIND], nogetfd);
		say(line);
	} else if (b) {
		const char *a = addr_of(e->first[K_BIND]);
		const char *port = a ? strrchr(a, ':') : NULL;
		snprintf(line, sizeof line,
		         "%u bind%s refused by the network rules (first: %s); allow with "
		         "--net-allow-bind %s", b, b == 1 ? "" : "s", e->first[K_BIND],
		         port ? port + 1 : "PORT");
		say(line);
	}
	unsigned l = e->count[K_LISTEN];
	if (l) {
		snprintf(line, sizeof line,
		         "%u listen%s refused: a server may listen only on a port the bind rules "
		         "grant (--net-allow-bind PORT), after a bind (an unbound socket would get "
		         "a port the kernel picks; in a container without pidfd_getfd also a socket "
		         "sandlock did not bind, see docs/containers.md)", l,
		         l == 1 ? "" : "s");
		say(line);
	}
	if (s && nogetfd && e->first_errno[K_SEND] == EPERM) {
		/* A send sandlock could not check (a socket it cannot hold). */
		snprintf(line, sizeof line,
		         "%u send%s with an address refused (first: %s): sandlock cannot check them "
		         "on the program's own socket here: %s; see docs/containers.md", s,
		         s == 1 ? "" : "s", e->first[K_SEND], nogetfd);
		say(line);
	} else if (s) {
		const char *a = addr_of(e->first[K_SEND]);
		bool unix_ = a && strncmp(a, "unix ", 5) == 0;
		snprintf(line, sizeof line,
		         "%u send%s refused by the network rules (first: %s); allow the "
		         "destination with %s %s", s, s == 1 ? "" : "s", e->first[K_SEND],
		         unix_ ? "--allow-unix" : "--net-allow", unix_ ? a + 5 : "udp://HOST:PORT");
		say(line);
	}
}

static void explain_calls(const struct cli_explain *e)
{
	char line[512];
	unsigned p = e->count[K_PROCS];
	if (p) {
		char lim[32] = "the default 64";
		if (e->cfg.has_max_processes)
			snprintf(lim, sizeof lim, "%u", e->cfg.max_processes);
		snprintf(line, sizeof line,
		         "%u process creation%s refused (\"Cannot fork\", EAGAIN): the sandbox "
		         "reached its process limit (%s); raise it with --max-processes N "
		         "(0 = no limit)", p, p == 1 ? "" : "s", lim);
		say(line);
	}
	if (e->count[K_META]) {
		snprintf(line, sizeof line,
		         "%u metadata change%s refused (first: %s): allowed only inside a -w tree",
		         e->count[K_META], e->count[K_META] == 1 ? "" : "s", e->first[K_META]);
		say(line);
	}
	if (e->count[K_DISK]) {
		snprintf(line, sizeof line, "%u write%s failed with ENOSPC at the --max-disk limit",
		         e->count[K_DISK], e->count[K_DISK] == 1 ? "" : "s");
		say(line);
	}
	if (e->count[K_IPC]) {
		snprintf(line, sizeof line,
		         "%u SysV IPC call%s refused (first: %s): shared memory, semaphores and "
		         "message queues are the host's; allow with --extra-allow-syscalls sysv_ipc",
		         e->count[K_IPC], e->count[K_IPC] == 1 ? "" : "s", e->first[K_IPC]);
		say(line);
	}
	if (e->count[K_FILTER]) {
		snprintf(line, sizeof line,
		         "%u call%s refused by the syscall filter (first: %s): sandlock's blocklist "
		         "or --extra-deny-syscalls",
		         e->count[K_FILTER], e->count[K_FILTER] == 1 ? "" : "s", e->first[K_FILTER]);
		say(line);
	}
	if (e->count[K_ARGS]) {
		snprintf(line, sizeof line,
		         "%u call%s refused by the filter's argument rules (first: %s)",
		         e->count[K_ARGS], e->count[K_ARGS] == 1 ? "" : "s", e->first[K_ARGS]);
		say(line);
	}
}

static void fmt_size(uint64_t v, char *out, size_t size)
{
	static const char units[] = "KMGT";
	int u = -1;
	while (v >= 1024 && v % 1024 == 0 && u < 3) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(out, size, "%llu", (unsigned long long)v);
	else
		snprintf(out, size, "%llu%c", (unsigned long long)v, units[u]);
}

/* The limits the kernel enforced: told from the result. */
static void explain_limits(const struct cli_explain *e, const sandlock_result_t *r)
{
	char line[256];
	sandlock_exit_reason why = sandlock_result_reason(r);
	if (why == SANDLOCK_EXIT_TIMEOUT) {
		snprintf(line, sizeof line,
		         "the command ran out of time: stopped at --timeout %.3g s (raise it)",
		         (double)e->cfg.timeout_ms / 1000.0);
		say(line);
		return;
	}
	/* The cgroup's OOM kill is a SIGKILL nobody in the run asked for. */
	if (sandlock_result_term_signal(r) == SIGKILL && !sandlock_result_killed_by_handler(r) &&
	    e->cfg.has_max_memory) {
		char sz[32];
		fmt_size(e->cfg.max_memory, sz, sizeof sz);
		snprintf(line, sizeof line,
		         "the command was killed (SIGKILL), most likely at the memory limit: "
		         "--max-memory %s (raise it)", sz);
		say(line);
		return;
	}
	/* Without a memory cgroup (unprivileged) --max-memory is an address-space
	 * limit of each process: an exec or a stack it makes too small ends in
	 * SIGSEGV, a failed allocation some programs do not check in SIGSEGV or
	 * SIGABRT, rather than in the cgroup's SIGKILL. */
	int sig = sandlock_result_term_signal(r);
	if ((sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT) && e->cfg.has_max_memory &&
	    !sandlock_result_killed_by_handler(r)) {
		char sz[32];
		fmt_size(e->cfg.max_memory, sz, sizeof sz);
		snprintf(line, sizeof line,
		         "the command was killed (SIG%s); if the memory limit stopped it: "
		         "--max-memory %s (raise it)", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?", sz);
		say(line);
	}
}

/* A command the rules would not let it execute ("cannot execute P: EACCES"
 * was said already, by the sandbox): the -r that allows it. */
static void explain_exec(const struct cli_explain *e, const sandlock_result_t *r)
{
	const char *why = sandlock_result_error(r), *pre = "cannot execute ";
	size_t n = strlen(pre), len = why ? strlen(why) : 0;
	if (!e->cfg.run || len <= n + 8 || strncmp(why, pre, n) != 0 ||
	    strcmp(why + len - 8, ": EACCES") != 0)
		return;
	char *path = strndup(why + n, len - n - 8);
	char *hint = path ? cli_trace_exec_hint(e->cfg.run, path) : NULL;
	if (hint) {
		char line[4400];
		snprintf(line, sizeof line, "cannot execute %s: %s", path, hint);
		say(line);
	}
	free(hint);
	free(path);
}

static void explain_workdir(const struct cli_explain *e, const sandlock_result_t *r)
{
	size_t n = sandlock_result_change_count(r, false);
	if (!e->cfg.workdir || !e->cfg.on_error_abort || n == 0 || sandlock_result_cow_kept(r))
		return;
	char line[4200];
	snprintf(line, sizeof line,
	         "the command failed: its %zu change%s under %s %s discarded (keep them with "
	         "--on-error keep, or apply them with --on-error commit)", n, n == 1 ? "" : "s",
	         e->cfg.workdir_path ? e->cfg.workdir_path : "the workdir", n == 1 ? "was" : "were");
	say(line);
}

/* The first access Landlock refused, read from the audit log, else the
 * first open refused on the program's behalf (denied.c); true when there
 * was one. */
static bool explain_denied(const struct cli_explain *e, const sandlock_result_t *r)
{
	const char *path = NULL, *blockers = sandlock_result_denied_access(r, &path);
	/* A command that never ran: explain_exec said why already. */
	if (e->cfg.traced || !e->cfg.run || sandlock_result_error(r))
		return false;
	char *line = NULL;
	if (blockers && path)
		line = cli_denied_line(e->cfg.run, blockers, path);
	else if (e->count[K_OPEN] && e->open_path[0])
		line = cli_denied_open_line(e->cfg.run, e->open_write, e->open_path);
	else
		return false;
	if (line)
		say(line);
	free(line);
	return true;
}

/* A command that exited with a failure nobody refused anything of: maybe
 * Landlock did, unseen; a path it names that the rules refuse, if any. */
static void explain_named(const struct cli_explain *e, const sandlock_result_t *r,
                          unsigned total)
{
	if (total || e->cfg.traced || !e->cfg.run || sandlock_result_error(r) ||
	    sandlock_result_reason(r) != SANDLOCK_EXIT_EXITED)
		return;
	char *line = cli_named_path_hint(e->cfg.run);
	if (line)
		say(line);
	free(line);
}

void cli_explain_end(struct cli_explain *e, const sandlock_result_t *r, int status)
{
	if (!e || !r || status == 0)
		return;
	explain_limits(e, r);
	explain_exec(e, r);
	explain_network(e);
	explain_calls(e);
	explain_workdir(e, r);
	unsigned total = 0;
	for (int k = 0; k < K_N; k++)
		total += e->count[k];
	if (!explain_denied(e, r))
		explain_named(e, r, total);
	if (total > 1) {
		char line[512];
		int len = snprintf(line, sizeof line, "denied:");
		for (int k = 0; k < K_N && len < (int)sizeof line; k++)
			if (e->count[k])
				len += snprintf(line + len, sizeof line - (size_t)len, " %u %s,",
				                e->count[k], k_names[k]);
		if (len > 0 && len < (int)sizeof line && line[len - 1] == ',')
			line[len - 1] = '\0';
		say(line);
	}
}
