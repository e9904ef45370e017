/*
 * options.c — the `sandlock run` option table (see options.h).
 */
#include "options.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* One line per option; keep lines independent so parallel additions merge. */
const struct cli_opt cli_run_opts[] = {
	{ OPT_READ, 'r', "fs-read", "read", "PATH", "Filesystem (paths must exist; everything not granted is denied):", "allow reading and executing under PATH" },
	{ OPT_WRITE, 'w', "fs-write", "write", "PATH", NULL, "allow reading and writing under PATH" },
	{ OPT_TMP, 0, "tmp", NULL, NULL, NULL, "a private empty writable TMPDIR for this run, removed at its end" },
	{ OPT_DENY, 'd', "fs-deny", "deny", "PATH", NULL, "deny PATH even inside an allowed tree" },
	{ OPT_MAX_MEMORY, 'm', "max-memory", NULL, "SIZE", "Limits:", "memory of the whole sandbox (cgroup; else per process): 512M, 1.5G" },
	{ OPT_MAX_PROCESSES, 'P', "max-processes", NULL, "N", NULL, "at most N processes at once (default 64, 0 = no limit)" },
	{ OPT_MAX_OPEN_FILES, 0, "max-open-files", NULL, "N", NULL, "RLIMIT_NOFILE of the command (capped at sandlock's own)" },
	{ OPT_MAX_CPU, 'c', "max-cpu", "cpu", "PCT", NULL, "CPU time, percent of one core (1-100; cgroup, else SIGSTOP/SIGCONT)" },
	{ OPT_CPU_CORES, 0, "cpu-cores", NULL, "LIST", NULL, "run on these cores only, e.g. 0,2-3" },
	{ OPT_NUM_CPUS, 0, "num-cpus", NULL, "N", NULL, "the command sees N CPUs (/proc/cpuinfo, nproc, affinity)" },
	{ OPT_GPU, 0, "gpu", NULL, "all|LIST", NULL, "grant GPUs: all, or indices such as 0,2 (/dev/nvidiaN, /dev/dri; CUDA_VISIBLE_DEVICES set)" },
	{ OPT_TIMEOUT, 't', "timeout", NULL, "SECS", NULL, "end the sandbox after SECS (decimals allowed); with --kill-after: SIGTERM first" },
	{ OPT_KILL_AFTER, 0, "kill-after", NULL, "SECS", NULL, "SECS after a SIGTERM/INT/HUP/QUIT sent to sandlock (forwarded to the command) or --timeout's SIGTERM, end whatever still runs" },
	{ OPT_NET_ALLOW, 0, "net-allow", NULL, "SPEC", "Network (without rules no TCP/UDP/ICMP destination and no bind is allowed):", "allow destinations [tcp://|udp://|icmp://]TARGET[:PORTS]" },
	{ OPT_NET_DENY, 0, "net-deny", NULL, "SPEC", NULL, "deny these IP/CIDR destinations, allow the rest" },
	{ OPT_NET_ALLOW_BIND, 0, "net-allow-bind", NULL, "PORTS", NULL, "allow TCP bind: N, lo-hi, * (comma-separated)" },
	{ OPT_NET_DENY_BIND, 0, "net-deny-bind", NULL, "PORTS", NULL, "deny TCP bind to these ports, allow the rest" },
	{ OPT_ALLOW_UNIX, 0, "allow-unix", NULL, "PATH", NULL, "allow connecting to unix sockets at or below PATH" },
	{ OPT_UNIX_READABLE, 0, "net-unix-readable", NULL, NULL, NULL, "also allow unix sockets inside -r trees" },
	{ OPT_PORT_REMAP, 0, "port-remap", NULL, NULL, NULL, "own port space: a bind to a taken port gets another real one" },
	{ OPT_NET_HOST_INTERFACES, 0, "net-host-interfaces", NULL, NULL, NULL, "show the host's network interfaces (else loopback only)" },
	{ OPT_HTTP_ALLOW, 0, "http-allow", NULL, "RULE", "HTTP (a proxy judges requests; docs/http.md):", "allow requests 'METHOD host/path' (* globs); others refused" },
	{ OPT_HTTP_DENY, 0, "http-deny", NULL, "RULE", NULL, "refuse requests 'METHOD host/path' (wins over --http-allow)" },
	{ OPT_HTTP_PORT, 0, "http-port", "http-ports", "PORT", NULL, "intercept this TCP port (default 80; 443 added with a CA)" },
	{ OPT_HTTP_CA, 0, "http-ca", NULL, "PEM", NULL, "terminate TLS on 443 with this CA certificate (with --http-key)" },
	{ OPT_HTTP_KEY, 0, "http-key", NULL, "PEM", NULL, "the private key of --http-ca" },
	{ OPT_HTTP_INJECT_CA, 0, "http-inject-ca", NULL, "BUNDLE", NULL, "terminate TLS with a CA made for the run, added to this trust bundle as the guest reads it" },
	{ OPT_HTTP_CA_OUT, 0, "http-ca-out", NULL, "PATH", NULL, "write the CA's certificate (never its key) to PATH" },
	{ OPT_CREDENTIAL, 0, "credential", NULL, "NAME=SRC", NULL, "load a secret into the supervisor: env:VAR, file:PATH or fd:N" },
	{ OPT_HTTP_AUTH, 0, "http-auth", NULL, "SPEC", NULL, "'METHOD HOST/PATH AUTHSPEC NAME [replace|add-only]': attach a credential" },
	{ OPT_HTTP_LOG, 0, "http-log", NULL, "FILE", NULL, "append a JSON line per proxied request to FILE" },
	{ OPT_EXTRA_ALLOW, 0, "extra-allow-syscalls", NULL, "GROUPS", "Syscalls and protections:", "re-allow syscall groups denied by default (sysv_ipc)" },
	{ OPT_EXTRA_DENY, 0, "extra-deny-syscalls", NULL, "NAMES", NULL, "also deny these syscalls or groups with EPERM" },
	{ OPT_ALLOW_DEGRADED, 0, "allow-degraded", NULL, "PROT", NULL, "run even if the kernel lacks protection PROT (repeatable)" },
	{ OPT_DISABLE, 0, "disable", NULL, "PROT", NULL, "never enforce PROT (fs_refer fs_truncate net_tcp fs_ioctl_dev signal_scope abstract_unix_socket_scope)" },
	{ OPT_CLEAN_ENV, 0, "clean-env", NULL, NULL, "Program:", "minimal environment: PATH HOME USER TERM LANG only" },
	{ OPT_ENV, 0, "env", NULL, "K=V", NULL, "set K to V in the command's environment" },
	{ OPT_CWD, 'C', "cwd", NULL, "DIR", NULL, "run the command in DIR" },
	{ OPT_NAME, 0, "name", NULL, "NAME", NULL, "name the run: its hostname (uname) and the NAME of 'sandlock ps/inspect/kill'" },
	{ OPT_NO_COREDUMP, 0, "no-coredump", NULL, NULL, NULL, "no core dumps (RLIMIT_CORE 0)" },
	{ OPT_NO_HUGE_PAGES, 0, "no-huge-pages", NULL, NULL, NULL, "no transparent huge pages" },
	{ OPT_INTERACTIVE, 'i', "interactive", NULL, NULL, NULL, "use the terminal (always on: stdio is the caller's)" },
	{ OPT_RANDOM_SEED, 0, "random-seed", NULL, "N", "Determinism:", "getrandom() returns a stream seeded with N" },
	{ OPT_TIME_START, 0, "time-start", NULL, "T", NULL, "wall clock starts at T (Unix seconds or RFC 3339)" },
	{ OPT_NO_RANDOMIZE, 0, "no-randomize-memory", NULL, NULL, NULL, "no address-space layout randomization" },
	{ OPT_DETERMINISTIC_DIRS, 0, "deterministic-dirs", NULL, NULL, NULL, "directory listings sorted by name" },
	{ OPT_CHROOT, 0, "chroot", NULL, "ROOTFS", "Virtual chroot:", "the guest sees ROOTFS as / (no privilege needed); -C and -r/-w/-d then name guest paths (missing -r/-w/-d skipped)" },
	{ OPT_IMAGE, 0, "image", NULL, "REF", NULL, "run in a local Podman/Docker image's filesystem (never pulled; its command, env and workdir are the defaults)" },
	{ OPT_FS_MOUNT, 0, "fs-mount", NULL, "VIRT:HOST[:ro]", NULL, "under --chroot, show host directory HOST at guest path VIRT (repeatable)" },
	{ OPT_WORKDIR, 0, "workdir", NULL, "DIR", "Copy-on-write workdir (writes under DIR are staged, then committed or thrown away):", "stage every write under DIR (does not set the cwd; with --chroot: the rootfs or a mount's host directory)" },
	{ OPT_FS_STORAGE, 0, "fs-storage", NULL, "DIR", NULL, "make the staging layer in DIR (default: a temporary directory)" },
	{ OPT_ON_EXIT, 0, "on-exit", NULL, "ACTION", NULL, "after success: commit (default), abort or keep" },
	{ OPT_ON_ERROR, 0, "on-error", NULL, "ACTION", NULL, "after a failure: abort (default), commit or keep" },
	{ OPT_MAX_DISK, 0, "max-disk", NULL, "SIZE", NULL, "at most SIZE bytes staged; writes past it fail with ENOSPC" },
	{ OPT_DRY_RUN, 0, "dry-run", NULL, NULL, NULL, "print the changes (A/M/D path) and commit nothing" },
	{ OPT_PROFILE, 'p', "profile", NULL, "NAME", "Profiles (flags add to a profile's lists and override its values):", "load NAME.toml from the profiles directory" },
	{ OPT_PROFILE_FILE, 0, "profile-file", NULL, "PATH", NULL, "load the profile at PATH" },
	{ OPT_JSON, 0, "json", NULL, NULL, "Output:", "print the result as one JSON object, the last line on stderr" },
	{ OPT_JSON_FILE, 0, "json-file", NULL, "PATH", NULL, "write the result as one JSON object to PATH (the command never has it)" },
	{ OPT_TRACE, 0, "trace", NULL, NULL, NULL, "a line on stderr for each file access the rules deny (JSON unless stderr is a terminal)" },
	{ OPT_QUIET, 'q', "quiet", NULL, NULL, NULL, "no end-of-run lines saying what the sandbox refused (limits, rules) and the flag that allows it" },
	{ OPT_STATUS_FD, 0, "status-fd", "json-status-fd", "FD", NULL, "JSON lines on FD: child pid at start, status at end" },
	{ OPT_OUTPUT, 'o', "output", NULL, "PATH", "Learn only (sandlock learn):", "write the learned profile to PATH instead of stdout" },
	{ OPT_MERGE, 0, "merge", NULL, "PATH", NULL, "add the learned grants to the profile at PATH and write it back" },
	{ OPT_COLLAPSE, 0, "collapse", NULL, "[N]", NULL, "grant a whole directory where N (default 4) or more of its files were used" },
	{ OPT_HELP, 'h', "help", NULL, NULL, NULL, "show this help" },
	{ 0, 0, NULL, NULL, NULL, NULL, NULL },
};

/* Reference CLI options whose feature sandlock does not have yet: refused
 * with "not supported yet", never ignored.  One per line. */
const struct cli_unsupported cli_unsupported[] = {
	{ "no-supervisor", no_argument },
	{ "user", required_argument },
	{ "exec-shell", required_argument },
	{ NULL, 0 },
};

#define MAX_LONG 128

const struct option *cli_long_options(void)
{
	static struct option longs[MAX_LONG];
	static bool built;
	if (built)
		return longs;
	size_t n = 0;
	for (const struct cli_opt *o = cli_run_opts; o->name && n + 3 < MAX_LONG; o++) {
		/* "[N]": the argument may be left out (--collapse, as the reference) */
		int has = !o->arg ? no_argument : o->arg[0] == '[' ? optional_argument : required_argument;
		longs[n++] = (struct option){ o->name, has, NULL, o->id };
		if (o->alias)
			longs[n++] = (struct option){ o->alias, has, NULL, o->id };
	}
	for (int i = 0; cli_unsupported[i].name && n + 1 < MAX_LONG; i++)
		longs[n++] = (struct option){ cli_unsupported[i].name, cli_unsupported[i].has_arg,
					      NULL, OPT_UNSUPPORTED_BASE + i };
	longs[n] = (struct option){ NULL, 0, NULL, 0 };
	built = true;
	return longs;
}

const char *cli_short_options(void)
{
	/* '+': stop at the first non-option so CMD's own flags are never ours;
	 * leading ':': report a missing argument as ':' instead of '?'. */
	static char s[64] = "+:";
	static bool built;
	if (built)
		return s;
	size_t n = strlen(s);
	for (const struct cli_opt *o = cli_run_opts; o->name && n + 3 < sizeof(s); o++) {
		if (!o->short_name)
			continue;
		s[n++] = o->short_name;
		if (o->arg)
			s[n++] = ':';
	}
	s[n] = '\0';
	built = true;
	return s;
}

const struct cli_opt *cli_opt_by_id(int id)
{
	for (const struct cli_opt *o = cli_run_opts; o->name; o++)
		if (o->id == id || (id < 256 && id > 0 && o->short_name == id))
			return o;
	return NULL;
}

const char *cli_opt_label(int id, char *buf, size_t len)
{
	const struct cli_opt *o = cli_opt_by_id(id);
	if (!o)
		snprintf(buf, len, "-%c", id > 0 && id < 128 ? id : '?');
	else if (o->short_name)
		snprintf(buf, len, "-%c/--%s", o->short_name, o->name);
	else
		snprintf(buf, len, "--%s", o->name);
	return buf;
}

void cli_print_run_options(FILE *f)
{
	for (const struct cli_opt *o = cli_run_opts; o->name; o++) {
		char left[64];
		if (o->group)
			fprintf(f, "%s\n", o->group);
		snprintf(left, sizeof(left), "%c%c%c --%s%s%s", o->short_name ? '-' : ' ',
			 o->short_name ? o->short_name : ' ', o->short_name ? ',' : ' ', o->name,
			 o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-26s %s", left, o->help);
		if (o->alias)
			fprintf(f, " (also --%s)", o->alias);
		fputc('\n', f);
	}
	fputs("Reference options not supported yet (refused):\n ", f);
	size_t col = 1;
	for (int i = 0; cli_unsupported[i].name; i++) {
		size_t w = strlen(cli_unsupported[i].name) + 3;
		if (col + w > 78) {
			fputs("\n ", f);
			col = 1;
		}
		fprintf(f, " --%s", cli_unsupported[i].name);
		col += w;
	}
	fputc('\n', f);
}

/* Library setting names, as the user's flags.  Longer names first, so a
 * prefix (net_allow) never takes a longer one's place (net_allow_bind). */
static const struct { const char *api, *flag; } g_words[] = {
	{ "extra_allow_syscalls", "--extra-allow-syscalls" },
	{ "extra_deny_syscalls", "--extra-deny-syscalls" },
	{ "net_allow_bind", "--net-allow-bind" },
	{ "net_deny_bind", "--net-deny-bind" },
	{ "net_allow_unix", "--allow-unix" },
	{ "max_processes", "-P/--max-processes" },
	{ "max_memory", "-m/--max-memory" },
	{ "fs_storage", "--fs-storage" },
	{ "net_allow", "--net-allow" },
	{ "net_deny", "--net-deny" },
	{ "cpu_cores", "--cpu-cores" },
	{ "fs_write", "-w/--fs-write" },
	{ "fs_mount", "--fs-mount" },
	{ "max_disk", "--max-disk" },
	{ "fs_deny", "-d/--fs-deny" },
	{ "fs_read", "-r/--fs-read" },
	{ "workdir", "--workdir" },
	{ "chroot", "--chroot" },
	{ "tmp", "--tmp" },
	{ "cwd", "-C/--cwd" },
};

static bool word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
	       c == '/' || c == '.';
}

char *cli_flag_words(const char *msg)
{
	size_t cap = strlen(msg) * 2 + 64, n = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	bool quoted = false; /* never rewrite inside '...' (a user's path) */
	for (const char *p = msg; *p;) {
		size_t hit = 0;
		const char *flag = NULL;
		if (*p == '\'')
			quoted = !quoted;
		else if (!quoted && (p == msg || !word_char(p[-1])))
			for (size_t i = 0; i < sizeof g_words / sizeof g_words[0] && !flag; i++) {
				size_t l = strlen(g_words[i].api);
				if (strncmp(p, g_words[i].api, l) == 0 && !word_char(p[l]))
					hit = l, flag = g_words[i].flag;
			}
		const char *src = flag ? flag : p;
		size_t len = flag ? strlen(flag) : 1;
		if (n + len + 1 > cap) {
			char *t = realloc(out, cap = (n + len + 1) * 2);
			if (!t) {
				free(out);
				return NULL;
			}
			out = t;
		}
		memcpy(out + n, src, len);
		n += len;
		p += flag ? hit : 1;
	}
	out[n] = '\0';
	return out;
}
