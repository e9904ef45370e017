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

#include "cglimits.h"
#include "landlock.h"
#include "proxy.h"

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

static void yama(char *buf, size_t cap)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "re");
	int v = -1;
	if (f && fscanf(f, "%d", &v) == 1)
		snprintf(buf, cap, "%d%s", v,
		         v >= 2 ? " (pidfd_getfd and /proc/PID/mem of the sandbox may be refused)"
		                : "");
	else
		snprintf(buf, cap, "not present (no Yama restriction)");
	if (f)
		fclose(f);
}

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

SL_EXPORT char *sandlock_check_report(void)
{
	int abi = sl_landlock_abi();
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	if (!f)
		return NULL;
	fprintf(f, "Landlock ABI: %d%s (the strict default needs %d)\n", abi,
	        abi < 1 ? " (unavailable: sandlock refuses to run)" : "",
	        sandlock_min_landlock_abi());
	fprintf(f, "protections:\n");
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++) {
		int need = sandlock_protection_min_abi(p);
		fprintf(f, "  %-28s ABI %d  %s\n", sandlock_protection_name(p), need,
		        abi >= need ? "available"
		                    : "MISSING (runs are refused unless allow_degraded or disable)");
	}
	int sc = seccomp_features();
	fprintf(f, "seccomp:\n");
	fprintf(f, "  %-28s %s\n", "user notification", yes(sc & SC_NOTIF));
	fprintf(f, "  %-28s %s\n", "SYNC_WAKE_UP", yes(sc & SC_SYNC_WAKE));
	fprintf(f, "  %-28s %s\n", "ADDFD", yes(sc & SC_ADDFD));
	struct sl_cg_probe cg;
	sl_cg_probe(&cg);
	fprintf(f, "cgroups:\n");
	if (cg.v2_path[0])
		fprintf(f, "  %-28s %s (%s; controllers: %s)\n", "v2 group", cg.v2_path,
		        cg.v2_writable ? "delegated: writable" : "not delegated: read-only",
		        cg.v2_controllers[0] ? cg.v2_controllers : "none");
	else
		fprintf(f, "  %-28s none\n", "v2 group");
	fprintf(f, "  %-28s %s\n", "v1 memory (writable)", yes(cg.v1_memory));
	fprintf(f, "  %-28s %s\n", "v1 cpu (writable)", yes(cg.v1_cpu));
	bool v2mem = cg.v2_writable && strstr(cg.v2_controllers, "memory");
	bool v2cpu = cg.v2_writable && strstr(cg.v2_controllers, "cpu");
	fprintf(f, "  %-28s %s\n", "max_memory",
	        v2mem || cg.v1_memory ? "whole sandbox (cgroup)"
	                              : "per process (RLIMIT_AS fallback)");
	fprintf(f, "  %-28s %s\n", "max_cpu",
	        v2cpu || cg.v1_cpu ? "available (cgroup)"
	                           : "available (supervisor throttle: SIGSTOP/SIGCONT)");
	char tls[128];
	bool tls_ok = sl_proxy_tls_probe(tls, sizeof tls);
	fprintf(f, "HTTP proxy:\n");
	fprintf(f, "  %-28s yes (HTTP/1.1, http-parser %lu.%lu.%lu)\n", "http_allow / http_deny",
	        (sl_http_parser_version() >> 16) & 255, (sl_http_parser_version() >> 8) & 255,
	        sl_http_parser_version() & 255);
	fprintf(f, "  %-28s %s (%s)\n", "TLS interception", yes(tls_ok), tls);
	char y[128];
	yama(y, sizeof y);
	fprintf(f, "Yama ptrace_scope: %s\n", y);
	fclose(f);
	return s;
}
