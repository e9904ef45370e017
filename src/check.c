/*
 * check.c — what this host gives a sandbox (`sandlock check`), and the
 * memory-size parser shared by the CLI and the Python package.
 */
#include <errno.h>
#include <linux/filter.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/cglimits.h"
#include "launch/landlock.h"
#include "launch/mechs.h"
#include "proxy/proxy.h"

/* ---------------- "1.5G" ---------------- */

/* Binary multiplier of a unit ("", "k", "KiB", "mb", ...), or 0 if unknown. */
static uint64_t unit_mult(const char *u)
{
	static const char units[] = "kmgt";
	if (!*u)
		return 1;
	const char *p = strchr(units, (char)(*u | 0x20));
	if (!p || !*u)
		return strcasecmp(u, "b") == 0 ? 1 : 0;
	const char *rest = u + 1;
	if (*rest && strcasecmp(rest, "b") != 0 && strcasecmp(rest, "ib") != 0)
		return 0;
	return 1ull << (10 * (p - units + 1));
}

SL_EXPORT int sandlock_parse_memory_size(const char *s, uint64_t *out)
{
	if (!s || !out)
		return -1;
	while (*s == ' ')
		s++;
	/* digits, optionally one '.' and more digits: no sign, no exponent */
	const char *p = s;
	uint64_t whole = 0;
	bool digits = false;
	for (; *p >= '0' && *p <= '9'; p++, digits = true) {
		if (whole > (UINT64_MAX - 9) / 10)
			return -3;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	uint64_t frac = 0, scale = 1;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, digits = true)
			if (scale < 1000000000000ull) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
	if (!digits)
		return -1;
	char unit[8];
	size_t n = strcspn(p, " ");
	if (n >= sizeof unit || p[n + strspn(p + n, " ")] != '\0')
		return -1;
	memcpy(unit, p, n);
	unit[n] = 0;
	uint64_t m = unit_mult(unit);
	if (!m)
		return -1;
	if (whole && whole > UINT64_MAX / m)
		return -3;
	/* whole*m + floor(frac*m/scale): unsigned __int128 keeps it exact */
	unsigned __int128 v = (unsigned __int128)whole * m + (unsigned __int128)frac * m / scale;
	if (v == 0)
		return -2;
	if (v > UINT64_MAX)
		return -3;
	*out = (uint64_t)v;
	return 0;
}

/* ---------------- the report ---------------- */

enum { SC_NOTIF = 1, SC_SYNC_WAKE = 2, SC_ADDFD = 4, SC_PROBED = 64 };

/*
 * Which user-notification features the kernel has: a throwaway child
 * installs an allow-everything filter with a listener and tries them.
 */
static int seccomp_features(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = { 1, &allow };
		int bits = SC_PROBED;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
			_exit(bits);
		long fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
		                  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
		if (fd < 0)
			_exit(bits);
		bits |= SC_NOTIF;
		uint64_t flags = SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP;
		if (ioctl((int)fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, flags) == 0)
			bits |= SC_SYNC_WAKE;
		struct seccomp_notif_addfd a = { .id = 0, .srcfd = 0 };
		if (ioctl((int)fd, SECCOMP_IOCTL_NOTIF_ADDFD, &a) < 0 && errno == ENOENT)
			bits |= SC_ADDFD; /* known ioctl, no such notification */
		_exit(bits);
	}
	int st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 0;
	return WEXITSTATUS(st);
}

/*
 * The report is written once, as text or as JSON, through this emitter:
 * sections of key/value items.  Values are ours (no quotes, no control
 * characters) except the cgroup path, which is escaped.
 */
struct out {
	FILE *f;
	bool json;
	int n; /* items written in the current object */
};

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void sep(struct out *o)
{
	if (o->json && o->n++)
		fputc(',', o->f);
}

static void section(struct out *o, const char *title, const char *key)
{
	if (!o->json) {
		fprintf(o->f, "%s:\n", title);
		return;
	}
	sep(o);
	json_str(o->f, key);
	fputs(":{", o->f);
	o->n = 0;
}

static void section_end(struct out *o)
{
	if (o->json) {
		fputc('}', o->f);
		o->n = 1;
	}
}

/* One item: text "  label  value", JSON "key": value (a string, or raw
 * for numbers and booleans). */
static void item(struct out *o, const char *label, const char *key, const char *value, bool raw)
{
	if (!o->json) {
		fprintf(o->f, "  %-28s %s\n", label, value);
		return;
	}
	sep(o);
	json_str(o->f, key);
	fputc(':', o->f);
	if (raw)
		fputs(value, o->f);
	else
		json_str(o->f, value);
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

static const char *tf(bool b)
{
	return b ? "true" : "false";
}

static void report_landlock(struct out *o, int abi)
{
	char v[96];
	if (o->json) {
		snprintf(v, sizeof v, "%d", abi);
		item(o, "", "landlock_abi", v, true);
		snprintf(v, sizeof v, "%d", sandlock_min_landlock_abi());
		item(o, "", "landlock_abi_needed", v, true);
	} else {
		fprintf(o->f, "Landlock ABI: %d%s (the strict default needs %d)\n", abi,
		        abi < 1 ? " (unavailable: sandlock refuses to run)" : "",
		        sandlock_min_landlock_abi());
	}
	section(o, "protections", "protections");
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++) {
		int need = sandlock_protection_min_abi(p);
		const char *st = abi >= need ? "available"
		                             : "MISSING (runs are refused unless allow_degraded or disable)";
		snprintf(v, sizeof v, "ABI %d  %s", need, st);
		item(o, sandlock_protection_name(p), sandlock_protection_name(p),
		     o->json ? (abi >= need ? "available" : "missing") : v, false);
	}
	section_end(o);
}

static void report_seccomp(struct out *o)
{
	int sc = seccomp_features();
	section(o, "seccomp", "seccomp");
	item(o, "user notification", "user_notification", o->json ? tf(sc & SC_NOTIF) : yes(sc & SC_NOTIF), o->json);
	item(o, "SYNC_WAKE_UP", "sync_wake_up", o->json ? tf(sc & SC_SYNC_WAKE) : yes(sc & SC_SYNC_WAKE), o->json);
	item(o, "ADDFD", "addfd", o->json ? tf(sc & SC_ADDFD) : yes(sc & SC_ADDFD), o->json);
	section_end(o);
}

static void report_cgroups(struct out *o)
{
	struct sl_cg_probe cg;
	sl_cg_probe(&cg);
	char v[sizeof cg.v2_path + sizeof cg.v2_controllers + 64];
	section(o, "cgroups", "cgroups");
	if (cg.v2_path[0])
		snprintf(v, sizeof v, "%s (%s; controllers: %s)", cg.v2_path,
		         cg.v2_writable ? "delegated: writable" : "not delegated: read-only",
		         cg.v2_controllers[0] ? cg.v2_controllers : "none");
	item(o, "v2 group", "v2_group", cg.v2_path[0] ? v : "none", false);
	bool b = o->json;
	item(o, "v1 memory (writable)", "v1_memory", b ? tf(cg.v1_memory) : yes(cg.v1_memory), b);
	item(o, "v1 cpu (writable)", "v1_cpu", b ? tf(cg.v1_cpu) : yes(cg.v1_cpu), b);
	bool v2mem = cg.v2_writable && strstr(cg.v2_controllers, "memory");
	bool v2cpu = cg.v2_writable && strstr(cg.v2_controllers, "cpu");
	item(o, "max_memory", "max_memory",
	     v2mem || cg.v1_memory ? "whole sandbox (cgroup)" : "per process (RLIMIT_AS fallback)",
	     false);
	item(o, "max_cpu", "max_cpu",
	     v2cpu || cg.v1_cpu ? "available (cgroup)"
	                        : "available (supervisor throttle: SIGSTOP/SIGCONT)",
	     false);
	section_end(o);
}

/* /.dockerenv, /run/.containerenv: what the runtimes leave in their containers. */
static const char *container(void)
{
	if (access("/run/.containerenv", F_OK) == 0)
		return "yes (podman)";
	if (access("/.dockerenv", F_OK) == 0)
		return "yes (docker)";
	return "not detected";
}

/*
 * How the supervisor reaches the sandboxed processes here (mechs.h): the
 * one mechanism in use for each need, or the features refused and why.
 */
static void report_mechanisms(struct out *o)
{
	const struct sl_mechs *m = sl_mechs();
	const char *getfd_why = sl_mech_getfd_why();
	const char *mem_why = sl_mech_attach_why();
	char yama[64];
	if (m->yama >= 0)
		snprintf(yama, sizeof yama, "%d", m->yama);
	else
		snprintf(yama, sizeof yama, "not present");
	section(o, "mechanisms (how the supervisor reaches sandboxed processes)", "mechanisms");
	item(o, "container", "container", container(), false);
	item(o, "Yama ptrace_scope", "yama_ptrace_scope", yama, false);
	item(o, "listener hand-over", "listener",
	     m->getfd ? "pidfd_getfd" : "SCM_RIGHTS from a helper sharing the command's fd table",
	     false);
	item(o, "caller's memory", "memory",
	     mem_why ? "UNAVAILABLE: every call checked on behalf is refused" : "/proc/PID/mem",
	     false);
	item(o, "caller's files", "files",
	     m->getfd ? "pidfd_getfd"
	              : "reopened through /proc/PID/fd, installed back with ADDFD (SETFD)",
	     false);
	item(o, "caller's sockets", "sockets",
	     m->getfd ? "pidfd_getfd"
	              : "connect: a socket made like the caller's replaces it; a datagram "
	                "socket's first bind or send too, and it is kept for its later calls; "
	                "a stream socket's bind too, and it is kept until its listen; calls on "
	                "a socket bound or connected otherwise and SCM_RIGHTS sends: "
	                "UNAVAILABLE, refused with EPERM",
	     false);
	if (getfd_why || mem_why)
		item(o, "why", "why", mem_why ? mem_why : getfd_why, false);
	section_end(o);
}

static void report_proxy(struct out *o)
{
	char tls[128], v[160];
	bool tls_ok = sl_proxy_tls_probe(tls, sizeof tls);
	unsigned long hp = sl_http_parser_version();
	section(o, "HTTP proxy", "http_proxy");
	snprintf(v, sizeof v, "yes (HTTP/1.1, http-parser %lu.%lu.%lu)", (hp >> 16) & 255,
	         (hp >> 8) & 255, hp & 255);
	item(o, "http_allow / http_deny", "http_allow_deny", v, false);
	snprintf(v, sizeof v, "%s (%s)", yes(tls_ok), tls);
	item(o, "TLS interception", "tls_interception", v, false);
	section_end(o);
}

static char *report(bool json)
{
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	struct out o = { f, json, 0 };
	if (json)
		fputc('{', f);
	report_landlock(&o, sl_landlock_abi());
	report_seccomp(&o);
	report_cgroups(&o);
	report_proxy(&o);
	report_mechanisms(&o);
	if (json)
		fputs("}\n", f);
	fclose(f);
	return s;
}

SL_EXPORT char *sandlock_check_report(void)
{
	return report(false);
}

SL_EXPORT char *sandlock_check_report_json(void)
{
	return report(true);
}
