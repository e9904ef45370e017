/*
 * auditlog.c — the first access Landlock refused a run, from the audit log.
 *
 * WHY: Landlock refuses a file access in the kernel and tells the program
 * only EACCES; sandlock traps no open (that would cost every run), so
 * without --trace a failed run could not say which file it was refused.
 * Since ABI 7 Landlock can log its denials to audit: an AUDIT_LANDLOCK_ACCESS
 * record per denial (domain=ID blockers=fs.read_file path="/etc/x" ...),
 * and with a domain's first logged denial an AUDIT_LANDLOCK_DOMAIN record
 * naming the process that made the domain (domain=ID status=allocated
 * ... pid=N).  A process with CAP_AUDIT_READ may read every record from
 * the AUDIT_NLGRP_READLOG multicast group, with no auditd.
 *
 * HOW: the run binds such a socket before the command starts (only then
 * does it ask Landlock to log the program's denials: launch_child.c,
 * LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON); nothing is read while it runs.
 * After a failed run it reads what queued up: the DOMAIN record whose pid
 * is the command (which made the run's domain) names the run's domain,
 * and the first ACCESS record of that domain, just before it, is the
 * first denial.  (Not matched by the event's serial: a task without an
 * audit context, as under the common `-a task,never` rule, gets one
 * serial per record.)  Records of
 * other sandboxes (other domains, other creators) are skipped, so
 * concurrent runs never see each other's denials.
 *
 * Records reach the group asynchronously (kauditd), in the order they
 * were queued, and a denial is queued during the denied call itself.  So
 * once the run's processes are gone, a record we queue ourselves (an
 * AUDIT_USER message, CAP_AUDIT_WRITE) comes back after every denial of
 * the run: reading up to it is reading everything, without guessing a
 * delay.  Without that right, a short wait instead.
 *
 * The kernel logs Landlock denials only while audit is enabled (auditd
 * running, or `auditctl -e 1`): when it says it is off (AUDIT_GET, for a
 * caller that may ask) the run does not listen, so a failed run waits for
 * nothing.  docs/cli.md has the user's side.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/netlink.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "compat.h"
#include "launch/landlock.h"
#include "run/auditlog.h"

/* Domains whose first ACCESS record is kept until their DOMAIN record
 * says whose they are. */
#define PENDING 16
#define REC_MAX 8970 /* MAX_AUDIT_MESSAGE_LENGTH + header room */
/* Without CAP_AUDIT_WRITE (no marker): how long records may take. */
#define NO_MARKER_WAIT_MS 50

struct pending {
	char domain[24];
	char *rest; /* blockers=... and what follows; heap */
};

struct reader {
	pid_t creator;
	unsigned long marker; /* our AUDIT_USER record's nonce; 0: none sent */
	bool marker_seen;
	struct pending p[PENDING];
	size_t next;
	char *blockers, *object; /* the answer */
};

/* Is audit off (AUDIT_GET says enabled 0)?  Then nothing will come, and
 * a failed run must not wait for its marker.  Unknown (no
 * CAP_AUDIT_CONTROL to ask): false, the run listens. */
static bool audit_off(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (fd < 0)
		return false;
	struct nlmsghdr q = { .nlmsg_len = NLMSG_LENGTH(0), .nlmsg_type = AUDIT_GET,
		              .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1 };
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	struct timeval tv = { 0, 200000 }; /* the kernel answers at once */
	union {
		struct nlmsghdr h;
		char b[NLMSG_SPACE(sizeof(struct audit_status))];
	} a;
	bool off = false;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (sendto(fd, &q, q.nlmsg_len, 0, (struct sockaddr *)&k, sizeof k) >= 0) {
		ssize_t n = recv(fd, &a, sizeof a, 0);
		/* An NLMSG_ERROR (EPERM) is "unknown". */
		if (n >= (ssize_t)NLMSG_LENGTH(2 * sizeof(uint32_t)) && a.h.nlmsg_type == AUDIT_GET) {
			const struct audit_status *st = NLMSG_DATA(&a.h);
			off = st->enabled == 0;
		}
	}
	close(fd);
	return off;
}

int sl_auditlog_open(void)
{
	if (sl_landlock_abi() < 7)
		return -1; /* no audit records from Landlock */
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_AUDIT);
	if (fd < 0)
		return -1;
	struct sockaddr_nl a = { .nl_family = AF_NETLINK,
		                 .nl_groups = 1u << (AUDIT_NLGRP_READLOG - 1) };
	/* EPERM: no CAP_AUDIT_READ. */
	if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || audit_off()) {
		close(fd);
		return -1;
	}
	/* Everything the host logs during the run queues here until the end:
	 * room for a busy log (root may raise it past rmem_max). */
	int sz = 4 << 20;
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz);
	return fd;
}

/* The value of " key=" in text (up to a space), copied into out. */
static bool field(const char *text, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);
	for (const char *p = text; (p = strstr(p, key)) != NULL; p += kl) {
		if ((p != text && p[-1] != ' ') || p[kl] != '=')
			continue;
		p += kl + 1;
		size_t n = strcspn(p, " ");
		if (n >= size)
			return false;
		memcpy(out, p, n);
		out[n] = '\0';
		return true;
	}
	return false;
}

/* audit_log_untrustedstring's form: "quoted" or, when the value holds a
 * space, a quote or a control character, hex.  Heap. */
static char *untrusted(const char *v)
{
	if (v[0] == '"') {
		size_t n = strcspn(v + 1, "\"");
		return strndup(v + 1, n);
	}
	size_t n = strcspn(v, " ");
	char *out = malloc(n / 2 + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i + 1 < n; i += 2) {
		unsigned c;
		if (sscanf(v + i, "%2x", &c) != 1)
			break;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return out;
}

/* The answer from an ACCESS record's "blockers=B path=P ..." part. */
static void answer(struct reader *r, const char *rest)
{
	char b[256];
	if (!field(rest, "blockers", b, sizeof b))
		return;
	const char *path = strstr(rest, " path=");
	const char *after = rest + strlen("blockers=") + strlen(b);
	r->blockers = strdup(b);
	r->object = path ? untrusted(path + 6) : strdup(*after == ' ' ? after + 1 : after);
}

/* The first ACCESS record of each domain (a domain's later ones are not
 * its first; they must not push out other domains' first). */
static void keep_access(struct reader *r, const char *text)
{
	char dom[24];
	const char *rest = strstr(text, "blockers=");
	if (!rest || !field(text, "domain", dom, sizeof dom))
		return;
	for (size_t i = 0; i < PENDING; i++)
		if (r->p[i].rest && strcmp(r->p[i].domain, dom) == 0)
			return;
	struct pending *p = &r->p[r->next++ % PENDING];
	free(p->rest);
	snprintf(p->domain, sizeof p->domain, "%s", dom);
	p->rest = strdup(rest);
}

/* A DOMAIN record: is it the run's domain, allocated (logged with its
 * first denial)?  That domain's kept ACCESS record is the answer. */
static void on_domain(struct reader *r, const char *text)
{
	char dom[24], pid[16], status[24];
	if (!field(text, "domain", dom, sizeof dom) || !field(text, "pid", pid, sizeof pid) ||
	    !field(text, "status", status, sizeof status) || strcmp(status, "allocated") != 0 ||
	    strtol(pid, NULL, 10) != (long)r->creator)
		return;
	for (size_t i = 0; i < PENDING && !r->blockers; i++)
		if (r->p[i].rest && strcmp(r->p[i].domain, dom) == 0)
			answer(r, r->p[i].rest);
}

/* One record: "audit(SECONDS.MS:SERIAL): fields". */
static void on_record(struct reader *r, int type, const char *msg)
{
	const char *text = strstr(msg, "audit(");
	text = text ? strstr(text, "): ") : NULL;
	if (!text)
		return;
	text += 3;
	if (type == AUDIT_LANDLOCK_ACCESS)
		keep_access(r, text);
	else if (type == AUDIT_LANDLOCK_DOMAIN)
		on_domain(r, text);
	else if (type == AUDIT_USER && r->marker) {
		char want[64];
		snprintf(want, sizeof want, "sandlock-sync=%lu", r->marker);
		r->marker_seen |= strstr(text, want) != NULL;
	}
}

/* Read what is queued; false when nothing was. */
static bool drain(struct reader *r, int fd, char *buf)
{
	bool any = false;
	for (;;) {
		ssize_t n = recv(fd, buf, REC_MAX, MSG_DONTWAIT);
		if (n < 0 && errno == ENOBUFS) /* overflowed: what was queued first is kept */
			continue;
		if (n < (ssize_t)NLMSG_HDRLEN)
			return any;
		any = true;
		struct nlmsghdr *h = (struct nlmsghdr *)buf;
		size_t len = (size_t)n - NLMSG_HDRLEN;
		char *text = NLMSG_DATA(h);
		text[len < REC_MAX - NLMSG_HDRLEN ? len : REC_MAX - NLMSG_HDRLEN - 1] = '\0';
		on_record(r, h->nlmsg_type, text);
		if (r->blockers || r->marker_seen)
			return true;
	}
}

/* Queue our own record behind the run's (see the top); its nonce. */
static unsigned long send_marker(void)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_AUDIT);
	if (fd < 0)
		return 0;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	unsigned long nonce = ((unsigned long)ts.tv_nsec ^ ((unsigned long)getpid() << 20)) | 1;
	struct {
		struct nlmsghdr h;
		char text[64];
	} m;
	memset(&m, 0, sizeof m);
	int len = snprintf(m.text, sizeof m.text, "sandlock-sync=%lu", nonce);
	m.h.nlmsg_len = NLMSG_LENGTH((size_t)len + 1);
	m.h.nlmsg_type = AUDIT_USER;
	m.h.nlmsg_flags = NLM_F_REQUEST;
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	bool ok = sendto(fd, &m, m.h.nlmsg_len, 0, (struct sockaddr *)&k, sizeof k) >= 0;
	close(fd);
	return ok ? nonce : 0;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

bool sl_auditlog_first(int fd, pid_t creator, int wait_ms, char **blockers, char **object)
{
	*blockers = *object = NULL;
	char *buf = malloc(REC_MAX);
	struct reader *r = calloc(1, sizeof *r);
	if (fd < 0 || !buf || !r) {
		free(buf);
		free(r);
		return false;
	}
	r->creator = creator;
	drain(r, fd, buf); /* usually there already */
	if (!r->blockers) {
		r->marker = send_marker();
		if (!r->marker && wait_ms > NO_MARKER_WAIT_MS)
			wait_ms = NO_MARKER_WAIT_MS;
	}
	for (long end = now_ms() + wait_ms; !r->blockers && !r->marker_seen;) {
		long left = end - now_ms();
		struct pollfd pf = { fd, POLLIN, 0 };
		if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
			break;
		drain(r, fd, buf);
	}
	for (size_t i = 0; i < PENDING; i++)
		free(r->p[i].rest);
	*blockers = r->blockers;
	*object = r->object;
	bool found = r->blockers && r->object;
	if (!found) {
		free(r->blockers);
		free(r->object);
		*blockers = *object = NULL;
	}
	free(r);
	free(buf);
	return found;
}
