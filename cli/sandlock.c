/*
 * sandlock.c — the `sandlock` command, a thin shell over the public C ABI.
 *
 *   sandlock run [options] -- CMD [ARG]...
 *
 * Exit status: the command's own status; 128+N when it died of signal N
 * (or sandlock killed it) -- except that when it died of SIGINT (Ctrl-C),
 * sandlock dies of SIGINT too; 124 when the timeout expired; 125 when sandlock
 * itself could not run it (usage, configuration, launch); 126/127 as the
 * library reports for a command that cannot be executed / found.
 */
#include <ctype.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "reaper.h"
#include "sandlock.h"
#include "signals.h"

/* Status for "sandlock itself failed", as timeout(1)/env(1) use 125. */
#define EXIT_SANDLOCK 125
#define EXIT_NOT_FOUND 127

static const char usage_main[] =
	"Usage: sandlock run [OPTIONS] -- CMD [ARG]...\n"
	"       sandlock check\n"
	"       sandlock --help | --version\n"
	"\n"
	"Run CMD confined by Landlock, a seccomp-bpf blocklist and a seccomp\n"
	"user-notification supervisor.  No root and no namespaces are needed.\n"
	"\n"
	"Commands:\n"
	"  run       run a command in a sandbox (see 'sandlock run --help')\n"
	"  check     report what this kernel and host give a sandbox\n"
	"\n"
	"Options:\n"
	"  -h, --help     show this help\n"
	"  -V, --version  show the version\n";

static const char usage_run[] =
	"Usage: sandlock run [OPTIONS] -- CMD [ARG]...\n"
	"\n"
	"Filesystem (paths must exist; everything not granted is denied):\n"
	"  -r, --read PATH          allow reading and executing under PATH\n"
	"  -w, --write PATH         allow reading and writing under PATH\n"
	"  -d, --deny PATH          deny PATH even inside an allowed tree\n"
	"Limits:\n"
	"  -m, --max-memory SIZE    memory budget of the whole sandbox (cgroup; else\n"
	"                           address space per process): bytes, or 512M, 1.5G\n"
	"  -P, --max-processes N    at most N processes at once (default 64, 0 = no limit)\n"
	"      --max-open-files N   RLIMIT_NOFILE of the command (capped at sandlock's own)\n"
	"      --max-cpu PCT        CPU time, percent of one core (1-100; needs a cgroup)\n"
	"      --cpu-cores LIST     run on these cores only, e.g. 0,2-3\n"
	"  -t, --timeout SECS       kill the sandbox after SECS (decimals allowed)\n"
	"Process:\n"
	"      --no-coredump        no core dumps (RLIMIT_CORE 0)\n"
	"      --no-huge-pages      no transparent huge pages\n"
	"      --no-randomize-memory  no address-space layout randomization\n"
	"Syscall denials and protections:\n"
	"      --extra-deny-syscalls NAME[,NAME]  also deny these syscalls or groups\n"
	"                           (groups: sysv_ipc) with EPERM\n"
	"      --allow-degraded PROT  run even if the kernel lacks PROT (repeatable)\n"
	"      --disable PROT       never enforce PROT (repeatable); PROT is one of\n"
	"                           fs_refer, fs_truncate, net_tcp, fs_ioctl_dev,\n"
	"                           signal_scope, abstract_unix_socket_scope\n"
	"Network (without rules no TCP/UDP/ICMP destination and no bind is allowed):\n"
	"      --net-allow SPEC       allow destinations [tcp://|udp://|icmp://]TARGET[:PORTS]\n"
	"                             TARGET: *, IP, [IPv6], CIDR, hostname; PORTS: N,M | *;\n"
	"                             a bare port list = any address (443 = :443)\n"
	"      --net-deny SPEC        deny these IP/CIDR destinations, allow the rest\n"
	"      --net-allow-bind PORTS allow TCP bind: N, lo-hi, * (comma-separated)\n"
	"      --net-deny-bind PORTS  deny TCP bind to these ports, allow the rest\n"
	"      --allow-unix PATH      allow connecting to unix sockets at or below PATH\n"
	"      --net-unix-readable    also allow unix sockets inside -r trees\n"
	"Syscalls:\n"
	"      --extra-allow-syscalls GROUP[,GROUP...]\n"
	"                           re-allow a syscall group denied by default\n"
	"                           (repeatable); groups: sysv_ipc (SysV IPC and\n"
	"                           POSIX message queues, shared with the host)\n"
	"Environment:\n"
	"      --clean-env          start from a minimal environment: only PATH, HOME,\n"
	"                           USER, TERM and LANG, with this process's values\n"
	"                           where set (PATH defaults to /usr/local/bin:/usr/bin:/bin)\n"
	"      --env K=V            set K to V in the command's environment\n"
	"  -C, --cwd DIR            run the command in DIR\n"
	"      --name NAME          the sandbox's hostname (uname; default sandbox-PID)\n"
	"      --random-seed N      getrandom() returns a stream seeded with N\n"
	"      --time-start T       the wall clock starts at T (Unix seconds or\n"
	"                           RFC 3339, e.g. 2000-01-01T00:00:00Z)\n"
	"  -h, --help               show this help\n"
	"\n"
	"Exit status: the command's status; 128+N if it died of signal N;\n"
	"124 on timeout; 125 if sandlock failed; 126/127 if CMD cannot be run/found.\n";

enum {
	OPT_NET_ALLOW = 256,
	OPT_NET_ALLOW_BIND,
	OPT_CLEAN_ENV,
	OPT_ENV,
	OPT_RANDOM_SEED,
	OPT_TIME_START,
	OPT_EXTRA_ALLOW,
	OPT_MAX_OPEN_FILES,
	OPT_MAX_CPU,
	OPT_CPU_CORES,
	OPT_NO_COREDUMP,
	OPT_NO_HUGE_PAGES,
	OPT_NO_RANDOMIZE,
	OPT_EXTRA_DENY,
	OPT_ALLOW_DEGRADED,
	OPT_DISABLE,
	OPT_NAME,
	OPT_NET_DENY,
	OPT_NET_DENY_BIND,
	OPT_ALLOW_UNIX,
	OPT_UNIX_READABLE,
};

static const struct option run_options[] = {
	{ "read", required_argument, NULL, 'r' },
	{ "write", required_argument, NULL, 'w' },
	{ "deny", required_argument, NULL, 'd' },
	{ "max-memory", required_argument, NULL, 'm' },
	{ "max-processes", required_argument, NULL, 'P' },
	{ "timeout", required_argument, NULL, 't' },
	{ "cwd", required_argument, NULL, 'C' },
	{ "net-allow", required_argument, NULL, OPT_NET_ALLOW },
	{ "net-allow-bind", required_argument, NULL, OPT_NET_ALLOW_BIND },
	{ "net-deny", required_argument, NULL, OPT_NET_DENY },
	{ "net-deny-bind", required_argument, NULL, OPT_NET_DENY_BIND },
	{ "allow-unix", required_argument, NULL, OPT_ALLOW_UNIX },
	{ "net-unix-readable", no_argument, NULL, OPT_UNIX_READABLE },
	{ "clean-env", no_argument, NULL, OPT_CLEAN_ENV },
	{ "env", required_argument, NULL, OPT_ENV },
	{ "random-seed", required_argument, NULL, OPT_RANDOM_SEED },
	{ "time-start", required_argument, NULL, OPT_TIME_START },
	{ "extra-allow-syscalls", required_argument, NULL, OPT_EXTRA_ALLOW },
	{ "max-open-files", required_argument, NULL, OPT_MAX_OPEN_FILES },
	{ "max-cpu", required_argument, NULL, OPT_MAX_CPU },
	{ "cpu-cores", required_argument, NULL, OPT_CPU_CORES },
	{ "no-coredump", no_argument, NULL, OPT_NO_COREDUMP },
	{ "no-huge-pages", no_argument, NULL, OPT_NO_HUGE_PAGES },
	{ "no-randomize-memory", no_argument, NULL, OPT_NO_RANDOMIZE },
	{ "extra-deny-syscalls", required_argument, NULL, OPT_EXTRA_DENY },
	{ "allow-degraded", required_argument, NULL, OPT_ALLOW_DEGRADED },
	{ "disable", required_argument, NULL, OPT_DISABLE },
	{ "name", required_argument, NULL, OPT_NAME },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};
/* '+': stop at the first non-option so CMD's own flags are never ours;
 * leading ':': report a missing argument as ':' instead of '?'. */
static const char run_shortopts[] = "+:r:w:d:m:P:t:C:h";

/* Print "sandlock: <msg>" plus a hint, return the usage-error status. */
static int usage_error(const char *fmt, const char *a, const char *b)
{
	fputs("sandlock: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs("\nTry 'sandlock run --help' for more information.\n", stderr);
	return EXIT_SANDLOCK;
}

/* The option as the user spelled it, for error messages. */
static const char *opt_name(int c, char *buf, size_t len)
{
	for (const struct option *o = run_options; o->name; o++) {
		if (o->val == c && c >= 256) {
			snprintf(buf, len, "--%s", o->name);
			return buf;
		}
	}
	snprintf(buf, len, "-%c", c);
	return buf;
}

static int bad_value(int c, const char *arg, const char *why)
{
	char name[32];
	fprintf(stderr, "sandlock: invalid value '%s' for %s: %s\n", arg,
		opt_name(c, name, sizeof(name)), why);
	fputs("Try 'sandlock run --help' for more information.\n", stderr);
	return EXIT_SANDLOCK;
}

/* --env K=V: K must be non-empty and free of '=' (the first '=' splits). */
static int apply_env(sandlock_builder_t *b, const char *arg)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg)
		return bad_value(OPT_ENV, arg, "expected K=V");
	size_t klen = (size_t)(eq - arg);
	char *key = malloc(klen + 1);
	if (!key) {
		fputs("sandlock: out of memory\n", stderr);
		return EXIT_SANDLOCK;
	}
	memcpy(key, arg, klen);
	key[klen] = '\0';
	sandlock_sandbox_builder_env_var(b, key, eq + 1);
	free(key);
	return 0;
}

/* --extra-allow-syscalls a,b: each group goes to the builder, which
 * rejects unknown groups and single syscalls at build time. */
static int apply_extra_allow(sandlock_builder_t *b, const char *arg)
{
	const char *p = arg;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (len == 0)
			return bad_value(OPT_EXTRA_ALLOW, arg, "expected GROUP[,GROUP...]");
		char *group = strndup(p, len);
		if (!group) {
			fputs("sandlock: out of memory\n", stderr);
			return EXIT_SANDLOCK;
		}
		sandlock_sandbox_builder_extra_allow_syscalls(b, group);
		free(group);
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* --net-allow / --net-deny SPEC: checked here so the error names the flag. */
static int apply_net(sandlock_builder_t *b, int c, const char *arg)
{
	char name[32];
	char *why = sandlock_net_spec_error(arg, c == OPT_NET_DENY);
	if (why) {
		fprintf(stderr, "sandlock: %s '%s': %s\n", opt_name(c, name, sizeof name), arg, why);
		sandlock_string_free(why);
		return EXIT_SANDLOCK;
	}
	if (c == OPT_NET_ALLOW)
		sandlock_sandbox_builder_net_allow_spec(b, arg);
	else
		sandlock_sandbox_builder_net_deny(b, arg);
	return 0;
}

/* Apply one numeric limit option.  Returns 0 or an exit status. */
static int apply_limit(sandlock_builder_t *b, int c, const char *arg)
{
	uint64_t v = 0;
	const char *why = NULL;
	switch (c) {
	case 'm': {
		int pr = sandlock_parse_memory_size(arg, &v);
		if (pr < 0)
			return bad_value(c, arg, pr == -2   ? "must be greater than zero"
			                         : pr == -3 ? "number too large"
			                                    : "expected a size such as 4096, 512M or 1.5G");
		sandlock_sandbox_builder_max_memory(b, v);
		return 0;
	}
	case 'P':
		if (cli_parse_uint(arg, 0, UINT32_MAX, &v, &why))
			return bad_value(c, arg, why);
		sandlock_sandbox_builder_max_processes(b, (uint32_t)v);
		return 0;
	case OPT_MAX_OPEN_FILES:
		if (cli_parse_uint(arg, 1, UINT32_MAX, &v, &why))
			return bad_value(c, arg, why);
		sandlock_sandbox_builder_max_open_files(b, (uint32_t)v);
		return 0;
	case OPT_MAX_CPU:
		if (cli_parse_uint(arg, 1, 100, &v, &why))
			return bad_value(c, arg, "expected a percentage of one core, 1-100");
		sandlock_sandbox_builder_max_cpu(b, (uint32_t)v);
		return 0;
	default: /* 't' */
		if (cli_parse_seconds(arg, &v, &why))
			return bad_value(c, arg, why);
		sandlock_sandbox_builder_timeout_ms(b, v);
		return 0;
	}
}

/* --random-seed N, --time-start T.  Returns 0 or an exit status. */
static int apply_determinism(sandlock_builder_t *b, int c, const char *arg)
{
	const char *why = NULL;
	if (c == OPT_RANDOM_SEED) {
		uint64_t seed;
		if (cli_parse_uint(arg, 0, UINT64_MAX, &seed, &why))
			return bad_value(c, arg, why);
		sandlock_sandbox_builder_random_seed(b, seed);
		return 0;
	}
	int64_t ns;
	if (cli_parse_time(arg, &ns, &why))
		return bad_value(c, arg, why);
	sandlock_sandbox_builder_time_start_ns(b, ns);
	return 0;
}

/* --cpu-cores 0,2-3: a comma-separated list of cores and ranges. */
static int apply_cores(sandlock_builder_t *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup) {
		fputs("sandlock: out of memory\n", stderr);
		return EXIT_SANDLOCK;
	}
	int rc = 0;
	bool any = false;
	for (char *t = strtok_r(dup, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi;
		const char *why;
		char *dash = strchr(t, '-');
		if (dash)
			*dash = '\0';
		if (cli_parse_uint(t, 0, 1023, &lo, &why) ||
		    (dash && cli_parse_uint(dash + 1, 0, 1023, &hi, &why)) || (dash && hi < lo)) {
			rc = bad_value(OPT_CPU_CORES, arg, "expected cores such as 0,2-3 (0-1023)");
			break;
		}
		for (uint64_t c = lo; c <= (dash ? hi : lo); c++)
			sandlock_sandbox_builder_cpu_core(b, (uint32_t)c);
		any = true;
	}
	free(dup);
	if (!rc && !any)
		rc = bad_value(OPT_CPU_CORES, arg, "expected cores such as 0,2-3");
	return rc;
}

/* --extra-deny-syscalls a,b: each a syscall or a group; the library checks. */
static int apply_deny(sandlock_builder_t *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup) {
		fputs("sandlock: out of memory\n", stderr);
		return EXIT_SANDLOCK;
	}
	bool any = false;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		sandlock_sandbox_builder_extra_deny_syscalls(b, t);
		any = true;
	}
	free(dup);
	return any ? 0 : bad_value(OPT_EXTRA_DENY, arg, "expected syscall or group names");
}

/* --allow-degraded / --disable PROT: a protection's name (- or _, any case). */
static int apply_protection(sandlock_builder_t *b, int c, const char *arg)
{
	for (uint32_t p = 0; p < SANDLOCK_PROTECTION_COUNT; p++) {
		const char *name = sandlock_protection_name(p);
		size_t i = 0;
		for (; name[i] && arg[i]; i++) {
			char a = arg[i] == '-' ? '_' : (char)tolower((unsigned char)arg[i]);
			if (a != name[i])
				break;
		}
		if (name[i] || arg[i])
			continue;
		if (c == OPT_ALLOW_DEGRADED)
			sandlock_sandbox_builder_allow_degraded(b, p);
		else
			sandlock_sandbox_builder_disable(b, p);
		return 0;
	}
	return bad_value(c, arg, "unknown protection (see 'sandlock run --help')");
}

/* Apply one parsed option to the builder.  Returns 0 or an exit status.
 * Path validity is the library's job: it reports bad paths at build time. */
static int apply_option(sandlock_builder_t *b, int c, const char *arg)
{
	switch (c) {
	case 'r':
		sandlock_sandbox_builder_fs_read(b, arg);
		return 0;
	case 'w':
		sandlock_sandbox_builder_fs_write(b, arg);
		return 0;
	case 'd':
		sandlock_sandbox_builder_fs_deny(b, arg);
		return 0;
	case 'C':
		sandlock_sandbox_builder_cwd(b, arg);
		return 0;
	case OPT_NAME:
		sandlock_sandbox_builder_name(b, arg);
		return 0;
	case 'm':
	case 'P':
	case 't':
	case OPT_MAX_OPEN_FILES:
	case OPT_MAX_CPU:
		return apply_limit(b, c, arg);
	case OPT_CPU_CORES:
		return apply_cores(b, arg);
	case OPT_NO_COREDUMP:
		sandlock_sandbox_builder_no_coredump(b, true);
		return 0;
	case OPT_NO_HUGE_PAGES:
		sandlock_sandbox_builder_no_huge_pages(b, true);
		return 0;
	case OPT_NO_RANDOMIZE:
		sandlock_sandbox_builder_no_randomize_memory(b, true);
		return 0;
	case OPT_EXTRA_DENY:
		return apply_deny(b, arg);
	case OPT_ALLOW_DEGRADED:
	case OPT_DISABLE:
		return apply_protection(b, c, arg);
	case OPT_NET_ALLOW:
	case OPT_NET_DENY:
		return apply_net(b, c, arg);
	case OPT_NET_ALLOW_BIND: /* port syntax checked by the build */
		sandlock_sandbox_builder_net_allow_bind_spec(b, arg);
		return 0;
	case OPT_NET_DENY_BIND:
		sandlock_sandbox_builder_net_deny_bind(b, arg);
		return 0;
	case OPT_ALLOW_UNIX:
		sandlock_sandbox_builder_net_allow_unix(b, arg);
		return 0;
	case OPT_UNIX_READABLE:
		sandlock_sandbox_builder_net_unix_readable(b, true);
		return 0;
	case OPT_CLEAN_ENV:
		sandlock_sandbox_builder_clean_env(b, true);
		return 0;
	case OPT_ENV:
		return apply_env(b, arg);
	case OPT_RANDOM_SEED:
	case OPT_TIME_START:
		return apply_determinism(b, c, arg);
	case OPT_EXTRA_ALLOW:
		return apply_extra_allow(b, arg);
	default:
		return usage_error("internal error: unhandled option%s%s", "", "");
	}
}

/* getopt_long accepts unique prefixes ("--time"); say so when a prefix
 * matched several long options instead of calling it unknown. */
static bool is_ambiguous(const char *spelled)
{
	if (strncmp(spelled, "--", 2) != 0)
		return false;
	const char *name = spelled + 2;
	size_t len = strcspn(name, "=");
	int matches = 0;
	for (const struct option *o = run_options; o->name; o++)
		if (len > 0 && strncmp(o->name, name, len) == 0)
			matches++;
	return matches > 1;
}

/* Turn a getopt error (':' missing argument, '?' unknown) into a message. */
static int getopt_error(int c, char **argv)
{
	char name[32];
	const char *spelled = argv[optind - 1];
	if (c == ':') {
		/* For a long option optopt is its val; for a short one the letter. */
		const char *n = strncmp(spelled, "--", 2) == 0 ? spelled : opt_name(optopt, name, sizeof(name));
		return usage_error("option %s requires an argument%s", n, "");
	}
	if (optopt != 0) {
		snprintf(name, sizeof(name), "-%c", optopt);
		return usage_error("unknown option '%s'%s", name, "");
	}
	return usage_error(is_ambiguous(spelled) ? "ambiguous option '%s'%s"
						 : "unknown option '%s'%s", spelled, "");
}

struct run_args {
	sandlock_builder_t *b;
	char **cmd; /* NULL-terminated, points into argv */
	int ncmd;
	bool help;
};

/*
 * Parse `run`'s options into a builder.  argv[0] is "run".  Returns 0, or
 * an exit status after printing the error.  The command must follow "--":
 * requiring it keeps a typo'd option from being run as a command.
 */
static int parse_run(int argc, char **argv, struct run_args *ra)
{
	const char *last_optarg = NULL;
	int c, rc;
	optind = 1;
	opterr = 0; /* we print our own messages, prefixed "sandlock:" */
	while ((c = getopt_long(argc, argv, run_shortopts, run_options, NULL)) != -1) {
		if (c == ':' || c == '?')
			return getopt_error(c, argv);
		if (c == 'h') {
			ra->help = true;
			return 0;
		}
		last_optarg = optarg;
		if ((rc = apply_option(ra->b, c, optarg)) != 0)
			return rc;
	}
	/* getopt consumed a "--" iff argv[optind-1] is "--" and was not the
	 * argument of the previous option (as in "-C --"). */
	bool saw_dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0 &&
			    argv[optind - 1] != last_optarg;
	if (!saw_dashdash) {
		if (optind < argc)
			return usage_error("expected '--' before the command, got '%s'%s",
					   argv[optind], "");
		return usage_error("missing '--' and a command to run%s%s", "", "");
	}
	if (optind >= argc)
		return usage_error("missing command after '--'%s%s", "", "");
	ra->cmd = &argv[optind];
	ra->ncmd = argc - optind;
	return 0;
}

/* Map a failed sandlock_run to an exit status, after printing why. */
static int launch_failure(int err, char *msg)
{
	fprintf(stderr, "sandlock: %s\n", msg ? msg : "failed to run the command");
	sandlock_string_free(msg);
	if (err == SANDLOCK_ERR_NOT_FOUND)
		return EXIT_NOT_FOUND;
	return EXIT_SANDLOCK;
}

static int cmd_run(int argc, char **argv)
{
	struct run_args ra = { 0 };
	ra.b = sandlock_sandbox_builder_new();
	if (!ra.b) {
		fputs("sandlock: out of memory\n", stderr);
		return EXIT_SANDLOCK;
	}
	int rc = parse_run(argc, argv, &ra);
	if (rc != 0 || ra.help) {
		sandlock_sandbox_builder_free(ra.b);
		if (ra.help)
			fputs(usage_run, stdout);
		return rc;
	}
	/* Stream the command's output live instead of capturing it. */
	sandlock_sandbox_builder_inherit_stdio(ra.b, true);

	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(ra.b, &err, &msg);
	if (!sb) {
		fprintf(stderr, "sandlock: %s\n", msg ? msg : "invalid configuration");
		sandlock_string_free(msg);
		return EXIT_SANDLOCK;
	}
	fflush(NULL); /* nothing of ours may be written after the child's output */
	if (cli_signals_install() < 0) {
		perror("sandlock: sigaction");
		sandlock_sandbox_free(sb);
		return EXIT_SANDLOCK;
	}
	/* Orphans of an init that died early come to us, not the host's init
	 * (reaper.c); without it the cgroup (where one can be made) is the
	 * only sweep that reaches them. */
	if (cli_reaper_install() < 0)
		perror("sandlock: warning: prctl(PR_SET_CHILD_SUBREAPER)");
	sandlock_result_t *r = sandlock_run(sb, (const char *const *)ra.cmd, (uint32_t)ra.ncmd,
					    &err, &msg);
	sandlock_sandbox_free(sb);
	cli_reaper_sweep(); /* nothing of the sandbox outlives us */
	/* Ctrl-C / kill: the group is already dead; now die of the signal. */
	cli_signals_reraise();
	if (!r)
		return launch_failure(err, msg);
	int status = sandlock_result_exit_code(r);
	bool interrupted = sandlock_result_reason(r) == SANDLOCK_EXIT_SIGNALED &&
			   sandlock_result_signal(r) == SIGINT;
	sandlock_result_free(r);
	/*
	 * With the sandbox in the terminal's foreground, Ctrl-C reaches only the
	 * sandbox.  A shell decides whether the user interrupted a script by
	 * whether its child died of SIGINT, so die of it as the command did.
	 */
	if (interrupted) {
		fflush(NULL);
		cli_die_of(SIGINT);
	}
	return status;
}

/* `sandlock check`: the library's report of this host. */
static int cmd_check(int argc)
{
	if (argc > 1) {
		fputs("sandlock: 'check' takes no arguments\n", stderr);
		return EXIT_SANDLOCK;
	}
	char *s = sandlock_check_report();
	if (!s) {
		fputs("sandlock: out of memory\n", stderr);
		return EXIT_SANDLOCK;
	}
	fputs(s, stdout);
	sandlock_string_free(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(usage_main, stderr);
		return EXIT_SANDLOCK;
	}
	const char *sub = argv[1];
	if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
		fputs(usage_main, stdout);
		return 0;
	}
	if (strcmp(sub, "--version") == 0 || strcmp(sub, "-V") == 0) {
		printf("sandlock %s\n", sandlock_version());
		return 0;
	}
	if (strcmp(sub, "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(sub, "check") == 0)
		return cmd_check(argc - 1);
	fprintf(stderr, "sandlock: unknown command '%s'\n"
			"Try 'sandlock --help' for more information.\n", sub);
	return EXIT_SANDLOCK;
}
