/*
 * main.c — the `sandlock` command, a thin shell over the public C ABI.
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
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "control.h"
/* The library's control sockets: how this CLI's runs answer (libsandlock.a). */
#include "run/control.h"
#include "run/ctldir.h"
#include "explain.h"
#include "learn.h"
#include "learnhttp.h"
#include "options.h"
#include "parse.h"
#include "profile.h"
#include "reaper.h"
#include "report.h"
#include "runcfg.h"
#include "sandlock.h"
#include "signals.h"
#include "trace.h"

/* Status for "sandlock itself failed", as timeout(1)/env(1) use 125. */
#define EXIT_SANDLOCK 125
#define EXIT_NOT_FOUND 127

static const char usage_main[] =
	"Usage: sandlock run [OPTIONS] -- CMD [ARG]...\n"
	"       sandlock learn [OPTIONS] -- CMD [ARG]...\n"
	"       sandlock profile list | show NAME\n"
	"       sandlock check [--json]\n"
	"       sandlock ps [--json] | inspect NAME [--json|--toml] | kill NAME\n"
	"       sandlock stop [-t SECS] NAME\n"
	"       sandlock --help | --version\n"
	"\n"
	"Run CMD confined by Landlock, a seccomp-bpf blocklist and a seccomp\n"
	"user-notification supervisor.  No root and no namespaces are needed.\n"
	"\n"
	"Commands:\n"
	"  run       run a command in a sandbox (see 'sandlock run --help')\n"
	"  learn     run a command permissively and print a profile for what it\n"
	"            used (see 'sandlock learn --help')\n"
	"  profile   list or show TOML profiles (see 'sandlock profile --help')\n"
	"  check     report what this kernel and host give a sandbox\n"
	"  ps        list the running sandboxes started with 'run --name'\n"
	"  inspect   show one of them (pids, start time, command; --toml: its policy as a profile)\n"
	"  kill      end one of them, with every process in it\n"
	"  stop      SIGTERM to its command; after SECS (default 10) end it as kill does\n"
	"\n"
	"Options:\n"
	"  -h, --help     show this help\n"
	"  -V, --version  show the version\n";

/* Print "sandlock: <msg>" plus a hint, return the usage-error status. */
static int usage_error(const char *fmt, const char *a, const char *b)
{
	fputs("sandlock: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs("\nTry 'sandlock run --help' for more information.\n", stderr);
	return EXIT_SANDLOCK;
}

static void print_run_help(void)
{
	fputs("Usage: sandlock run [OPTIONS] -- CMD [ARG]...\n"
	      "       sandlock run -p PROFILE [OPTIONS] [-- CMD [ARG]...]\n"
	      "\n",
	      stdout);
	cli_print_run_options(stdout);
	fputs("\n"
	      "Every sandbox may use /dev/null, /dev/zero, /dev/full, /dev/random,\n"
	      "/dev/urandom, its own stdin/stdout/stderr (/dev/stdin, /dev/fd/N) and, when\n"
	      "they are a terminal, /dev/tty; no other device unless granted.\n"
	      "\n"
	      "Exit status: the command's status; 128+N if it died of signal N;\n"
	      "124 on timeout; 125 if sandlock failed; 126/127 if CMD cannot be run/found.\n",
	      stdout);
}

static int bad_value(int id, const char *arg, const char *why)
{
	char name[48];
	fprintf(stderr, "sandlock: invalid value '%s' for %s: %s\n", arg,
		cli_opt_label(id, name, sizeof(name)), why);
	fputs("Try 'sandlock run --help' for more information.\n", stderr);
	return EXIT_SANDLOCK;
}

static int out_of_memory(void)
{
	fputs("sandlock: out of memory\n", stderr);
	return EXIT_SANDLOCK;
}

/* Everything `run` was told, before the profile is merged in. */
struct run_args {
	struct cli_cfg flags;
	const char *profile;      /* --profile NAME */
	const char *profile_file; /* --profile-file PATH */
	struct cli_report rep;
	struct cli_learn_opts learn; /* learn only: -o, --merge, --collapse */
	int learn_flag;              /* the first learn-only option given, or 0 */
	bool trace;
	bool help;
	bool image; /* --image: the command may come from the image */
};

static int set_string(char **dst, const char *s)
{
	free(*dst);
	*dst = strdup(s);
	return *dst ? 0 : out_of_memory();
}

static int add_path(struct cli_list *l, const char *arg)
{
	return cli_list_add(l, arg) < 0 ? out_of_memory() : 0;
}

/* Apply one numeric limit option.  Returns 0 or an exit status. */
static int apply_limit(struct cli_cfg *c, int id, const char *arg)
{
	uint64_t v = 0;
	const char *why = NULL;
	switch (id) {
	case OPT_MAX_MEMORY: {
		int pr = sandlock_parse_memory_size(arg, &v);
		if (pr < 0)
			return bad_value(id, arg, pr == -2   ? "must be greater than zero"
			                          : pr == -3 ? "number too large"
			                                     : "expected a size such as 4096, 512M or 1.5G");
		c->has_max_memory = true;
		c->max_memory = v;
		return 0;
	}
	case OPT_MAX_PROCESSES:
		if (cli_parse_uint(arg, 0, UINT32_MAX, &v, &why))
			return bad_value(id, arg, why);
		c->has_max_processes = true;
		c->max_processes = (uint32_t)v;
		return 0;
	case OPT_KILL_AFTER:
		if (cli_parse_seconds(arg, &v, &why))
			return bad_value(id, arg, why);
		c->has_kill_after = true;
		c->kill_after_ms = v;
		return 0;
	default: /* OPT_TIMEOUT */
		if (cli_parse_seconds(arg, &v, &why))
			return bad_value(id, arg, why);
		c->has_timeout = true;
		c->timeout_ms = v;
		return 0;
	}
}

/* --extra-allow-syscalls a,b: the groups, split at commas. */
static int apply_extra_allow(struct cli_cfg *c, const char *arg)
{
	const char *p = arg;
	for (;;) {
		size_t len = strcspn(p, ",");
		if (len == 0)
			return bad_value(OPT_EXTRA_ALLOW, arg, "expected GROUP[,GROUP...]");
		char *group = strndup(p, len);
		int rc = group ? cli_list_add(&c->extra_allow, group) : -1;
		free(group);
		if (rc < 0)
			return out_of_memory();
		if (p[len] == '\0')
			return 0;
		p += len + 1;
	}
}

/* --random-seed N, --time-start T.  Returns 0 or an exit status. */
static int apply_determinism(struct cli_cfg *c, int id, const char *arg)
{
	const char *why = NULL;
	if (id == OPT_RANDOM_SEED) {
		uint64_t seed;
		if (cli_parse_uint(arg, 0, UINT64_MAX, &seed, &why))
			return bad_value(id, arg, why);
		c->has_random_seed = true;
		c->random_seed = seed;
		return 0;
	}
	int64_t ns;
	if (cli_parse_time(arg, &ns, &why))
		return bad_value(id, arg, why);
	c->has_time_start = true;
	c->time_start_ns = ns;
	return 0;
}

static int apply_output(struct run_args *ra, int id, const char *arg)
{
	if (id == OPT_JSON) {
		ra->rep.json = true;
		return 0;
	}
	if (id == OPT_JSON_FILE) {
		/* Opened now, before anything runs: the command never holds it
		 * (close-on-exec, and the launcher closes every fd above 2). */
		if (ra->rep.json_fd >= 0)
			close(ra->rep.json_fd);
		ra->rep.json_fd = open(arg, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		return ra->rep.json_fd < 0 ? bad_value(id, arg, strerror(errno)) : 0;
	}
	uint64_t fd = 0;
	const char *why = NULL;
	if (cli_parse_uint(arg, 0, INT32_MAX, &fd, &why))
		return bad_value(id, arg, why);
	if (cli_report_check_fd((int)fd, &why))
		return bad_value(id, arg, why);
	ra->rep.status_fd = (int)fd;
	return 0;
}

/* The reference's default for a bare --collapse. */
#define CLI_COLLAPSE_DEFAULT 4

/* learn's -o/--output, --merge, --collapse [N] (refused by run later). */
static int apply_learn(struct run_args *ra, int id, const char *arg)
{
	if (!ra->learn_flag)
		ra->learn_flag = id;
	if (id == OPT_OUTPUT)
		ra->learn.output = arg;
	else if (id == OPT_MERGE)
		ra->learn.merge = arg;
	else {
		uint64_t n = CLI_COLLAPSE_DEFAULT;
		const char *why = NULL;
		if (arg && cli_parse_uint(arg, 1, 1000000, &n, &why))
			return bad_value(id, arg, why);
		ra->learn.collapse = (unsigned)n;
	}
	return 0;
}

/* A rule option checked here, so the error names the flag: why is the
 * checker's verdict (NULL: well-formed; freed here). */
static int add_checked_rule(struct cli_cfg *c, int id, const char *arg, char *why)
{
	if (why) {
		fprintf(stderr, "sandlock: --%s '%s': %s\n", cli_opt_by_id(id)->name, arg, why);
		sandlock_string_free(why);
		return EXIT_SANDLOCK;
	}
	return cli_ops_add(&c->ops, id, arg) < 0 ? out_of_memory() : 0;
}

/* Apply one parsed option.  Returns 0 or an exit status.  Path validity
 * is the library's job: it reports bad paths at build time. */
static int apply_option(struct run_args *ra, int id, const char *arg)
{
	struct cli_cfg *c = &ra->flags;
	const char *why = NULL;
	switch (id) {
	case OPT_READ: return add_path(&c->read, arg);
	case OPT_WRITE: return add_path(&c->write, arg);
	case OPT_DENY: return add_path(&c->deny, arg);
	case OPT_CWD: return set_string(&c->cwd, arg);
	case OPT_NAME: return set_string(&c->name, arg);
	case OPT_MAX_MEMORY:
	case OPT_MAX_PROCESSES:
	case OPT_TIMEOUT:
	case OPT_KILL_AFTER:
		return apply_limit(c, id, arg);
	case OPT_NET_ALLOW:
	case OPT_NET_DENY:
		return add_checked_rule(c, id, arg, sandlock_net_spec_error(arg, id == OPT_NET_DENY));
	case OPT_HTTP_ALLOW:
	case OPT_HTTP_DENY:
		return add_checked_rule(c, id, arg, sandlock_http_rule_error(arg));
	case OPT_HTTP_PORT:
	case OPT_HTTP_CA:
	case OPT_HTTP_KEY:
	case OPT_HTTP_INJECT_CA:
	case OPT_HTTP_CA_OUT:
	case OPT_CREDENTIAL:
	case OPT_HTTP_AUTH:
	case OPT_HTTP_LOG:
	case OPT_NET_ALLOW_BIND: /* port syntax checked by the build */
	case OPT_NET_DENY_BIND:
	case OPT_ALLOW_UNIX:
	case OPT_UNIX_READABLE:
	case OPT_PORT_REMAP:
	case OPT_NET_HOST_INTERFACES:
	case OPT_TMP:
		return cli_ops_add(&c->ops, id, arg) < 0 ? out_of_memory() : 0;
	case OPT_CLEAN_ENV:
		c->clean_env = 1;
		return 0;
	case OPT_ENV:
		if (cli_env_add(&c->env, arg, &why))
			return bad_value(id, arg, why);
		return 0;
	case OPT_INTERACTIVE:
		return 0; /* stdio and the terminal are always the caller's */
	case OPT_RANDOM_SEED:
	case OPT_TIME_START:
		return apply_determinism(c, id, arg);
	case OPT_EXTRA_ALLOW:
		return apply_extra_allow(c, arg);
	case OPT_MAX_OPEN_FILES:
	case OPT_MAX_CPU:
	case OPT_CPU_CORES:
	case OPT_NUM_CPUS:
	case OPT_GPU:
	case OPT_DETERMINISTIC_DIRS:
	case OPT_NO_COREDUMP:
	case OPT_NO_HUGE_PAGES:
	case OPT_NO_RANDOMIZE:
	case OPT_EXTRA_DENY:
	case OPT_ALLOW_DEGRADED:
	case OPT_DISABLE:
	case OPT_WORKDIR:
	case OPT_CHROOT:
	case OPT_FS_MOUNT:
	case OPT_FS_STORAGE:
	case OPT_ON_EXIT:
	case OPT_ON_ERROR:
	case OPT_MAX_DISK:
		return cli_ops_add(&c->ops, id, arg) < 0 ? out_of_memory() : 0;
	case OPT_IMAGE:
		ra->image = true;
		return cli_ops_add(&c->ops, id, arg) < 0 ? out_of_memory() : 0;
	case OPT_DRY_RUN:
		ra->rep.dry_run = true;
		return 0;
	case OPT_PROFILE:
		ra->profile = arg;
		return 0;
	case OPT_PROFILE_FILE:
		ra->profile_file = arg;
		return 0;
	case OPT_JSON:
	case OPT_JSON_FILE:
	case OPT_STATUS_FD:
		return apply_output(ra, id, arg);
	case OPT_TRACE:
		ra->trace = true;
		return 0;
	case OPT_QUIET:
		ra->rep.quiet = true;
		return 0;
	case OPT_OUTPUT:
	case OPT_MERGE:
	case OPT_COLLAPSE:
		return apply_learn(ra, id, arg);
	default:
		if (id >= OPT_UNSUPPORTED_BASE)
			return usage_error("option --%s is not supported yet by this sandlock%s",
					   cli_unsupported[id - OPT_UNSUPPORTED_BASE].name, "");
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
	int matches = 0, first_val = -1;
	for (const struct option *o = cli_long_options(); o->name; o++)
		if (len > 0 && strncmp(o->name, name, len) == 0) {
			/* an option and its own alias are one match */
			if (matches == 0 || o->val != first_val)
				matches++;
			first_val = o->val;
		}
	return matches > 1;
}

/*
 * getopt_long takes a unique prefix for the whole option ("--cpu" for
 * --cpu-cores): a security tool must not guess, so an option is only
 * accepted spelled in full.  spelled: the argv word getopt read it from.
 */
static int check_spelled_in_full(const char *spelled, int longindex)
{
	if (longindex < 0 || strncmp(spelled, "--", 2) != 0)
		return 0; /* a short option */
	const char *name = cli_long_options()[longindex].name;
	size_t len = strcspn(spelled + 2, "=");
	if (len == strlen(name) && strncmp(spelled + 2, name, len) == 0)
		return 0;
	char given[64], full[64];
	snprintf(given, sizeof(given), "%.*s", (int)(len + 2), spelled);
	snprintf(full, sizeof(full), "--%s", name);
	return usage_error("option '%s' is abbreviated: write it in full (%s)", given, full);
}

/* The argv word the option getopt just returned was spelled in: with a
 * separate argument ("--name X"), the word before the argument. */
static const char *spelled_word(char **argv, const char *arg)
{
	const char *w = argv[optind - 1];
	if (arg && w == arg)
		w = argv[optind - 2];
	return w;
}

/* Turn a getopt error (':' missing argument, '?' unknown) into a message. */
static int getopt_error(int c, char **argv)
{
	char name[48];
	const char *spelled = argv[optind - 1];
	if (c == ':') {
		/* For a long option optopt is its val; for a short one the letter. */
		const char *n = strncmp(spelled, "--", 2) == 0 ? spelled
							      : cli_opt_label(optopt, name, sizeof(name));
		return usage_error("option %s requires an argument%s", n, "");
	}
	if (optopt != 0 && optopt < 256) {
		snprintf(name, sizeof(name), "-%c", optopt);
		return usage_error("unknown option '%s'%s", name, "");
	}
	return usage_error(is_ambiguous(spelled) ? "ambiguous option '%s'%s"
						 : "unknown option '%s'%s", spelled, "");
}

/* The option's id: getopt returns the letter for a short option. */
static int option_id(int c)
{
	if (c >= 256)
		return c;
	const struct cli_opt *o = cli_opt_by_id(c);
	return o ? o->id : -1;
}

/* An optional argument given as the next word ("--collapse 5", as the
 * reference parses it): getopt takes only "--collapse=5".  A number is
 * taken (never the "--" or an option). */
static const char *optional_separate_arg(int argc, char **argv)
{
	if (optind >= argc || !argv[optind][0] || strspn(argv[optind], "0123456789") != strlen(argv[optind]))
		return NULL;
	return argv[optind++];
}

/* After the options: "-- CMD..." (required unless a profile names one). */
static int parse_command(int argc, char **argv, const char *last_optarg, struct run_args *ra)
{
	/* getopt consumed a "--" iff argv[optind-1] is "--" and was not the
	 * argument of the previous option (as in "-C --"). */
	bool saw_dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0 &&
			    argv[optind - 1] != last_optarg;
	bool have_profile = ra->profile || ra->profile_file;
	if (!saw_dashdash) {
		if (optind < argc)
			return usage_error("expected '--' before the command, got '%s'%s",
					   argv[optind], "");
		if (have_profile || ra->image)
			return 0; /* the profile's [program] exec or the image's, checked later */
		return usage_error("missing '--' and a command to run%s%s", "", "");
	}
	if (optind >= argc)
		return usage_error("missing command after '--'%s%s", "", "");
	for (int i = optind; i < argc; i++)
		if (cli_list_add(&ra->flags.argv, argv[i]) < 0)
			return out_of_memory();
	return 0;
}

/* Flags that mean nothing, or the opposite of what is asked, together. */
static int check_combinations(const struct run_args *ra)
{
	bool workdir = false, disk = false, commit = false;
	const char *commit_flag = NULL;
	for (size_t i = 0; i < ra->flags.ops.n; i++) {
		const struct cli_op *op = &ra->flags.ops.v[i];
		workdir |= op->id == OPT_WORKDIR;
		disk |= op->id == OPT_MAX_DISK;
		if ((op->id == OPT_ON_EXIT || op->id == OPT_ON_ERROR) && strcmp(op->arg, "commit") == 0) {
			commit = true;
			commit_flag = op->id == OPT_ON_EXIT ? "--on-exit" : "--on-error";
		}
	}
	bool from_profile = ra->profile || ra->profile_file; /* may name the workdir */
	if (disk && !workdir && !from_profile)
		return usage_error("--max-disk caps what a --workdir run stages: add --workdir DIR, "
		                   "or drop --max-disk%s%s", "", "");
	if (ra->rep.dry_run && commit)
		return usage_error("--dry-run commits nothing: drop %s commit (or --dry-run)%s",
		                   commit_flag, "");
	return 0;
}

/*
 * Parse `run`'s options.  argv[0] is "run".  Returns 0, or an exit status
 * after printing the error.  The command must follow "--": requiring it
 * keeps a typo'd option from being run as a command.
 */
static int parse_run(int argc, char **argv, struct run_args *ra)
{
	const char *last_optarg = NULL;
	int c, rc;
	optind = 1;
	opterr = 0; /* we print our own messages, prefixed "sandlock:" */
	int longindex = -1;
	while ((c = getopt_long(argc, argv, cli_short_options(), cli_long_options(), &longindex)) !=
	       -1) {
		if (c == ':' || c == '?')
			return getopt_error(c, argv);
		if ((rc = check_spelled_in_full(spelled_word(argv, optarg), longindex)) != 0)
			return rc;
		longindex = -1;
		int id = option_id(c);
		if (id == OPT_HELP) {
			ra->help = true;
			return 0;
		}
		const char *arg = optarg;
		if (id == OPT_COLLAPSE && !arg)
			arg = optional_separate_arg(argc, argv);
		last_optarg = arg;
		if ((rc = apply_option(ra, id, arg)) != 0)
			return rc;
	}
	if (ra->profile && ra->profile_file)
		return usage_error("give only one of --profile and --profile-file%s%s", "", "");
	if ((rc = check_combinations(ra)) != 0)
		return rc;
	return parse_command(argc, argv, last_optarg, ra);
}

/* Load the profile (if any) and lay the flags over it into *out. */
static int resolve_config(const struct run_args *ra, struct cli_cfg *out)
{
	struct cli_cfg prof;
	cli_cfg_init(&prof);
	char *err = NULL, *path = NULL;
	if (ra->profile && !(path = cli_profile_path(ra->profile, &err)))
		goto fail;
	const char *file = path ? path : ra->profile_file;
	if (file && cli_profile_load(file, &prof, &err) < 0)
		goto fail;
	free(path);
	path = NULL;
	int rc = cli_cfg_merge(out, &prof, &ra->flags);
	cli_cfg_free(&prof);
	if (rc < 0)
		return out_of_memory();
	if (out->argv.n == 0 && !ra->image)
		return usage_error("the profile has no [program] exec: give the command after '--'%s%s",
				   "", "");
	return 0;
fail:
	fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
	free(err);
	free(path);
	return EXIT_SANDLOCK;
}

/* Map a failed sandlock_run to an exit status, after printing why. */
static int launch_failure(int err, const char *msg)
{
	char *said = msg ? cli_flag_words(msg) : NULL; /* the flags, not the API's names */
	fprintf(stderr, "sandlock: %s\n", said ? said : msg ? msg : "failed to run the command");
	free(said);
	if (err == SANDLOCK_ERR_NOT_FOUND)
		return EXIT_NOT_FOUND;
	return EXIT_SANDLOCK;
}

/* A failure before or while launching: report it, return the status. */
static int run_failed(struct cli_report *rep, int status, const char *msg)
{
	cli_report_end(rep, NULL, status, msg);
	return status;
}

/* No command given with --image: the image's own (Entrypoint + Cmd). */
static int image_command(const sandlock_sandbox_t *sb, struct cli_cfg *cfg)
{
	uint32_t n = 0;
	const char *const *v = sandlock_sandbox_image_argv(sb, &n);
	for (uint32_t i = 0; i < n; i++)
		if (cli_list_add(&cfg->argv, v[i]) < 0)
			return out_of_memory(), -1;
	if (n == 0)
		fprintf(stderr, "sandlock: the image has no command (Entrypoint/Cmd): give one "
		                "after '--'\n");
	return n ? 0 : -1;
}

/* ---- knobs: handed to the builder as given (see struct cli_op) ---- */

/* --http-*, --credential: handed to the builder (which checks them). */
static const struct {
	int id;
	sandlock_builder_t *(*set)(sandlock_builder_t *, const char *);
} k_http_opts[] = {
	{ OPT_HTTP_ALLOW, sandlock_sandbox_builder_http_allow },
	{ OPT_HTTP_DENY, sandlock_sandbox_builder_http_deny },
	{ OPT_HTTP_CA, sandlock_sandbox_builder_http_ca },
	{ OPT_HTTP_KEY, sandlock_sandbox_builder_http_key },
	{ OPT_HTTP_INJECT_CA, sandlock_sandbox_builder_http_inject_ca },
	{ OPT_HTTP_CA_OUT, sandlock_sandbox_builder_http_ca_out },
	{ OPT_CREDENTIAL, sandlock_sandbox_builder_credential },
	{ OPT_HTTP_AUTH, sandlock_sandbox_builder_http_auth },
	{ OPT_HTTP_LOG, sandlock_sandbox_builder_http_log },
};

static int apply_http(sandlock_builder_t *b, const struct cli_op *op)
{
	if (op->id == OPT_HTTP_PORT) {
		uint64_t v = 0;
		const char *why = NULL;
		if (cli_parse_uint(op->arg, 1, 65535, &v, &why))
			return bad_value(op->id, op->arg, "expected a TCP port, 1-65535");
		sandlock_sandbox_builder_http_port(b, (uint16_t)v);
		return 0;
	}
	for (size_t i = 0; i < sizeof k_http_opts / sizeof k_http_opts[0]; i++)
		if (k_http_opts[i].id == op->id)
			k_http_opts[i].set(b, op->arg);
	return 0;
}

/* --cpu-cores 0,2-3: a comma-separated list of cores and ranges. */
static int apply_cores(sandlock_builder_t *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return out_of_memory();
	int rc = 0;
	bool any = false;
	for (char *t = strtok_r(dup, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		uint64_t lo, hi = 0;
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

/* --gpu all | 0,2: every GPU, or these indices. */
static int apply_gpu(sandlock_builder_t *b, const char *arg)
{
	const char *hint = "expected all, or GPU indices such as 0,2 (0-255)";
	if (strcmp(arg, "all") == 0) {
		sandlock_sandbox_builder_gpu_devices(b, NULL, 0);
		return 0;
	}
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return out_of_memory();
	uint32_t ids[64], n = 0;
	int rc = 0;
	for (char *t = strtok_r(dup, ",", &save); t && !rc; t = strtok_r(NULL, ",", &save)) {
		uint64_t v = 0;
		const char *why = NULL;
		if (n == 64 || cli_parse_uint(t, 0, 255, &v, &why))
			rc = bad_value(OPT_GPU, arg, hint);
		else
			ids[n++] = (uint32_t)v;
	}
	free(dup);
	if (!rc && n == 0)
		rc = bad_value(OPT_GPU, arg, hint);
	if (!rc)
		sandlock_sandbox_builder_gpu_devices(b, ids, n);
	return rc;
}

/* --extra-deny-syscalls a,b: each a syscall or a group; the library checks. */
static int apply_extra_deny(sandlock_builder_t *b, const char *arg)
{
	char *dup = strdup(arg), *save = NULL;
	if (!dup)
		return out_of_memory();
	bool any = false;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		sandlock_sandbox_builder_extra_deny_syscalls(b, t);
		any = true;
	}
	free(dup);
	return any ? 0 : bad_value(OPT_EXTRA_DENY, arg, "expected syscall or group names");
}

/* --allow-degraded / --disable PROT: a protection's name (- or _, any case). */
static int apply_protection(sandlock_builder_t *b, int id, const char *arg)
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
		if (id == OPT_ALLOW_DEGRADED)
			sandlock_sandbox_builder_allow_degraded(b, p);
		else
			sandlock_sandbox_builder_disable(b, p);
		return 0;
	}
	return bad_value(id, arg, "unknown protection (see 'sandlock run --help')");
}

/* --on-exit / --on-error ACTION, --max-disk SIZE. */
static int apply_branch(sandlock_builder_t *b, const struct cli_op *op)
{
	static const char *const names[] = { "commit", "abort", "keep" };
	if (op->id == OPT_MAX_DISK) {
		uint64_t v = 0;
		int pr = sandlock_parse_memory_size(op->arg, &v);
		if (pr < 0)
			return bad_value(op->id, op->arg, pr == -2   ? "must be greater than zero"
			                                  : pr == -3 ? "number too large"
			                                             : "expected a size such as 4096, 100M or 1G");
		sandlock_sandbox_builder_max_disk(b, v);
		return 0;
	}
	for (int a = SANDLOCK_BRANCH_COMMIT; a <= SANDLOCK_BRANCH_KEEP; a++) {
		if (strcmp(op->arg, names[a]) != 0)
			continue;
		if (op->id == OPT_ON_EXIT)
			sandlock_sandbox_builder_on_exit(b, a);
		else
			sandlock_sandbox_builder_on_error(b, a);
		return 0;
	}
	return bad_value(op->id, op->arg, "expected commit, abort or keep");
}

/* --fs-mount VIRT:HOST[:ro] (":rw" is the default, also accepted). */
static int apply_fs_mount(sandlock_builder_t *b, const char *arg)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || !colon[1]) {
		fprintf(stderr, "sandlock: --fs-mount '%s': expected VIRTUAL:HOST[:ro], e.g. "
		                "--fs-mount /work:/home/me/project\n", arg);
		return EXIT_SANDLOCK;
	}
	char *virt = strndup(arg, (size_t)(colon - arg));
	char *host = strdup(colon + 1);
	if (!virt || !host) {
		free(virt);
		free(host);
		return out_of_memory();
	}
	size_t n = strlen(host);
	bool ro = n > 3 && strcmp(host + n - 3, ":ro") == 0;
	if (ro || (n > 3 && strcmp(host + n - 3, ":rw") == 0))
		host[n - 3] = '\0';
	if (ro)
		sandlock_sandbox_builder_fs_mount_ro(b, virt, host);
	else
		sandlock_sandbox_builder_fs_mount(b, virt, host);
	free(virt);
	free(host);
	return 0;
}

static int apply_knob(sandlock_builder_t *b, const struct cli_op *op)
{
	uint64_t v = 0;
	const char *why = NULL;
	switch (op->id) {
	case OPT_MAX_OPEN_FILES:
		if (cli_parse_uint(op->arg, 1, UINT32_MAX, &v, &why))
			return bad_value(op->id, op->arg, why);
		sandlock_sandbox_builder_max_open_files(b, (uint32_t)v);
		return 0;
	case OPT_MAX_CPU:
		if (cli_parse_uint(op->arg, 1, 100, &v, &why))
			return bad_value(op->id, op->arg, "expected a percentage of one core, 1-100");
		sandlock_sandbox_builder_max_cpu(b, (uint32_t)v);
		return 0;
	case OPT_CPU_CORES:
		return apply_cores(b, op->arg);
	case OPT_GPU:
		return apply_gpu(b, op->arg);
	case OPT_NO_COREDUMP:
		sandlock_sandbox_builder_no_coredump(b, true);
		return 0;
	case OPT_NO_HUGE_PAGES:
		sandlock_sandbox_builder_no_huge_pages(b, true);
		return 0;
	case OPT_NO_RANDOMIZE:
		sandlock_sandbox_builder_no_randomize_memory(b, true);
		return 0;
	case OPT_DETERMINISTIC_DIRS:
		sandlock_sandbox_builder_deterministic_dirs(b, true);
		return 0;
	case OPT_NUM_CPUS:
		if (cli_parse_uint(op->arg, 1, 1024, &v, &why))
			return bad_value(op->id, op->arg, "expected a CPU count, 1-1024");
		sandlock_sandbox_builder_num_cpus(b, (uint32_t)v);
		return 0;
	case OPT_EXTRA_DENY:
		return apply_extra_deny(b, op->arg);
	case OPT_NET_ALLOW:
		sandlock_sandbox_builder_net_allow_spec(b, op->arg);
		return 0;
	case OPT_NET_DENY:
		sandlock_sandbox_builder_net_deny(b, op->arg);
		return 0;
	case OPT_NET_ALLOW_BIND:
		sandlock_sandbox_builder_net_allow_bind_spec(b, op->arg);
		return 0;
	case OPT_NET_DENY_BIND:
		sandlock_sandbox_builder_net_deny_bind(b, op->arg);
		return 0;
	case OPT_ALLOW_UNIX:
		sandlock_sandbox_builder_net_allow_unix(b, op->arg);
		return 0;
	case OPT_UNIX_READABLE:
		sandlock_sandbox_builder_net_unix_readable(b, true);
		return 0;
	case OPT_WORKDIR:
		sandlock_sandbox_builder_workdir(b, op->arg);
		return 0;
	case OPT_CHROOT:
		sandlock_sandbox_builder_chroot(b, op->arg);
		return 0;
	case OPT_IMAGE:
		sandlock_sandbox_builder_image(b, op->arg);
		return 0;
	case OPT_FS_MOUNT:
		return apply_fs_mount(b, op->arg);
	case OPT_FS_STORAGE:
		sandlock_sandbox_builder_fs_storage(b, op->arg);
		return 0;
	case OPT_ON_EXIT:
	case OPT_ON_ERROR:
	case OPT_MAX_DISK:
		return apply_branch(b, op);
	case OPT_PORT_REMAP:
		sandlock_sandbox_builder_port_remap(b, true);
		return 0;
	case OPT_NET_HOST_INTERFACES:
		sandlock_sandbox_builder_net_host_interfaces(b, true);
		return 0;
	case OPT_TMP:
		sandlock_sandbox_builder_private_tmp(b, true);
		return 0;
	case OPT_HTTP_ALLOW:
	case OPT_HTTP_DENY:
	case OPT_HTTP_PORT:
	case OPT_HTTP_CA:
	case OPT_HTTP_KEY:
	case OPT_HTTP_INJECT_CA:
	case OPT_HTTP_CA_OUT:
	case OPT_CREDENTIAL:
	case OPT_HTTP_AUTH:
	case OPT_HTTP_LOG:
		return apply_http(b, op);
	default: /* OPT_ALLOW_DEGRADED, OPT_DISABLE */
		return apply_protection(b, op->id, op->arg);
	}
}

/* learn: the command's captured output, after the run, on our stderr
 * (stdout carries the profile). */
static void forward_output(const sandlock_result_t *r)
{
	size_t n = 0;
	const uint8_t *p = sandlock_result_stdout_bytes(r, &n);
	if (p && n)
		fwrite(p, 1, n, stderr);
	p = sandlock_result_stderr_bytes(r, &n);
	if (p && n)
		fwrite(p, 1, n, stderr);
	fflush(stderr);
}

/* A "stop" request (sandlock stop NAME): as if SIGTERM were sent to this
 * sandlock, forwarded to the command with this run's --kill-after. */
static int stop_requested(void *ud)
{
	(void)ud;
	return cli_signals_request(SIGTERM);
}

/*
 * The run's control socket (the library serves it, run/control.h) answers
 * "stop" and `inspect --toml` as this CLI would; with --name the name is
 * the run's own or the run fails (a sandbox of that name already runs).
 */
static void configure_control(const sandlock_sandbox_t *sb, const struct cli_cfg *cfg,
                              struct sl_control_opts *co, char **policy)
{
	size_t plen = 0;
	FILE *pf = open_memstream(policy, &plen);
	if (pf) {
		cli_profile_print(cfg, pf);
		if (fclose(pf) != 0)
			*policy = NULL;
	}
	*co = (struct sl_control_opts){ *policy, stop_requested, NULL, cfg->name != NULL };
	sl_control_configure((sandlock_sandbox_t *)sb, co);
}

static sandlock_result_t *run_sandbox(const sandlock_sandbox_t *sb, const struct cli_cfg *cfg,
                                      struct cli_trace *trace, int *err, char **msg)
{
	sandlock_registration_t regs[32];
	size_t nregs = trace ? cli_trace_registrations(trace, regs, 32) : 0;
	if (trace && nregs == 0) {
		*err = SANDLOCK_ERR_NOMEM;
		*msg = NULL;
		return NULL;
	}
	if (cfg->name && !sl_control_valid_name(cfg->name)) {
		fprintf(stderr, "sandlock: invalid --name '%s': use 1-64 letters, digits, '.', "
		                "'_' or '-', not starting with '.'\n", cfg->name);
		*err = SANDLOCK_ERR_INVALID;
		*msg = NULL;
		return NULL;
	}
	if (cfg->name) { /* say which candidate directories are passed over (the run then takes one) */
		char dir[SL_CTLDIR_LEN];
		const char *why;
		(void)sl_control_dir(dir, sizeof dir, true, stderr, &why);
	}
	struct sl_control_opts co;
	char *policy = NULL;
	configure_control(sb, cfg, &co, &policy);
	sandlock_result_t *r = sandlock_run_with_handlers_err(
		sb, (const char *const *)cfg->argv.v, (uint32_t)cfg->argv.n, regs, nregs, err, msg);
	sl_control_configure((sandlock_sandbox_t *)sb, NULL);
	free(policy);
	return r;
}

static bool has_http_rules(const struct cli_cfg *cfg)
{
	for (size_t i = 0; i < cfg->ops.n; i++)
		if (cfg->ops.v[i].id == OPT_HTTP_ALLOW || cfg->ops.v[i].id == OPT_HTTP_DENY)
			return true;
	return false;
}

/* The end-of-run explanation's view of cfg (explain.c). */
static struct cli_explain *explain_new(const struct cli_cfg *cfg)
{
	struct cli_explain_cfg c = {
		.has_timeout = cfg->has_timeout, .timeout_ms = cfg->timeout_ms,
		.has_max_memory = cfg->has_max_memory, .max_memory = cfg->max_memory,
		.has_max_processes = cfg->has_max_processes, .max_processes = cfg->max_processes,
		.on_error_abort = true, .run = cfg,
	};
	for (size_t i = 0; i < cfg->ops.n; i++) {
		const struct cli_op *op = &cfg->ops.v[i];
		if (op->id == OPT_WORKDIR) {
			c.workdir = true;
			c.workdir_path = op->arg;
		} else if (op->id == OPT_ON_ERROR && op->arg) {
			c.on_error_abort = strcmp(op->arg, "abort") == 0;
		}
	}
	return cli_explain_new(&c);
}

static int run_config_ex(struct cli_cfg *cfg, struct cli_report *rep, struct cli_trace *trace,
                         bool learn, struct cli_explain *ex);

/* Build the sandbox from cfg and run its command.  Returns the status.
 * trace: --trace or learn's recorder (NULL: none); learn captures output. */
static int run_config(struct cli_cfg *cfg, struct cli_report *rep, struct cli_trace *trace,
                      bool learn)
{
	struct cli_explain *ex = learn || rep->quiet ? NULL : explain_new(cfg);
	int rc = run_config_ex(cfg, rep, trace, learn, ex);
	cli_explain_free(ex);
	return rc;
}

static int run_config_ex(struct cli_cfg *cfg, struct cli_report *rep, struct cli_trace *trace,
                         bool learn, struct cli_explain *ex)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	if (!b)
		return run_failed(rep, out_of_memory(), "out of memory");
	cli_cfg_apply(cfg, b);
	for (size_t i = 0; i < cfg->ops.n; i++) {
		int rc = apply_knob(b, &cfg->ops.v[i]);
		if (rc) {
			sandlock_sandbox_builder_free(b);
			return run_failed(rep, rc, "invalid option value");
		}
		rep->workdir |= cfg->ops.v[i].id == OPT_WORKDIR;
	}
	if (rep->dry_run && !rep->workdir) {
		sandlock_sandbox_builder_free(b);
		fprintf(stderr, "sandlock: --dry-run needs --workdir DIR\n");
		return run_failed(rep, EXIT_SANDLOCK, "--dry-run needs --workdir DIR");
	}
	if (rep->dry_run) { /* whatever a profile or flag asked: nothing is applied */
		sandlock_sandbox_builder_on_exit(b, SANDLOCK_BRANCH_ABORT);
		sandlock_sandbox_builder_on_error(b, SANDLOCK_BRANCH_ABORT);
	}
	/* Stream the command's output live instead of capturing it. */
	sandlock_sandbox_builder_inherit_stdio(b, !learn);
	if (rep->status_fd >= 0)
		sandlock_sandbox_builder_on_start(b, cli_report_started, rep);
	if (ex) { /* it passes each decision on to --trace's printer */
		cli_explain_chain(ex, trace ? cli_trace_decision : NULL, trace);
		sandlock_sandbox_builder_on_decision(b, cli_explain_decision, ex);
	} else if (trace && !learn) {
		sandlock_sandbox_builder_on_decision(b, cli_trace_decision, trace);
	}
	if (trace && !learn && has_http_rules(cfg)) /* the egress log's lines too */
		sandlock_sandbox_builder_http_log_fd(b, STDERR_FILENO);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb) {
		char *said = msg ? cli_flag_words(msg) : NULL;
		fprintf(stderr, "sandlock: %s\n", said ? said : msg ? msg : "invalid configuration");
		free(said);
		int rc = run_failed(rep, EXIT_SANDLOCK, msg ? msg : "invalid configuration");
		sandlock_string_free(msg);
		return rc;
	}
	if (cfg->argv.n == 0 && image_command(sb, cfg) < 0) {
		sandlock_sandbox_free(sb);
		return run_failed(rep, EXIT_SANDLOCK, "no command");
	}
	fflush(NULL); /* nothing of ours may be written after the child's output */
	struct cli_signal_opts so = {
		.kill_after_ms = cfg->has_kill_after ? cfg->kill_after_ms : 0,
		.term_after_ms = cfg->has_kill_after && cfg->has_timeout ? cfg->timeout_ms : 0,
	};
	if (cli_signals_install(&so) < 0) {
		perror("sandlock: sigaction");
		sandlock_sandbox_free(sb);
		return run_failed(rep, EXIT_SANDLOCK, "sigaction failed");
	}
	/* Orphans of an init that died early come to us, not the host's init
	 * (reaper.c); without it the cgroup (where one can be made) is the
	 * only sweep that reaches them. */
	if (cli_reaper_install() < 0)
		perror("sandlock: warning: prctl(PR_SET_CHILD_SUBREAPER)");
	cli_report_begin(rep);
	sandlock_result_t *r = run_sandbox(sb, cfg, trace, &err, &msg);
	sandlock_sandbox_free(sb);
	cli_reaper_sweep(); /* nothing of the sandbox outlives us */
	if (!r) {
		/* A signal during setup: the run ended; die of it as asked. */
		if (cli_signals_received()) {
			fflush(NULL);
			cli_die_of(cli_signals_received());
		}
		int rc = launch_failure(err, msg);
		run_failed(rep, rc, msg);
		sandlock_string_free(msg);
		return rc;
	}
	int status = sandlock_result_exit_code(r);
	/* A commit that could not apply everything is sandlock's failure, not
	 * a success of the command's to build on (the layer is kept). */
	if (status == 0 && cli_report_branch_failed(r))
		status = 125;
	/* --timeout with --kill-after: the command obeyed the timeout's
	 * SIGTERM (or not); either way the run timed out, as timeout(1) says. */
	if (cli_signals_timed_out())
		status = 124;
	/* The command died of SIGINT (Ctrl-C reaches the sandbox directly when
	 * it is the terminal's foreground) or of a signal sent to us and
	 * forwarded: die of it too, so our caller sees what it sent. */
	int died_of = sandlock_result_reason(r) == SANDLOCK_EXIT_SIGNALED ? sandlock_result_signal(r) : 0;
	bool interrupted = !cli_signals_timed_out() && died_of &&
	                   (died_of == SIGINT || died_of == cli_signals_received());
	if (learn) /* before the report: the result stays stderr's last line */
		forward_output(r);
	if (!cli_signals_received()) /* not for a run the user ended */
		cli_explain_end(ex, r, status); /* before --json's line, stderr's last */
	cli_report_end(rep, r, status, NULL);
	sandlock_result_free(r);
	/*
	 * With the sandbox in the terminal's foreground, Ctrl-C reaches only the
	 * sandbox.  A shell decides whether the user interrupted a script by
	 * whether its child died of SIGINT, so die of it as the command did.
	 */
	if (interrupted) {
		fflush(NULL);
		cli_die_of(died_of);
	}
	return status;
}

static int cmd_run(int argc, char **argv)
{
	struct run_args ra = { 0 };
	cli_cfg_init(&ra.flags);
	ra.rep.status_fd = ra.rep.json_fd = -1;
	struct cli_cfg cfg;
	cli_cfg_init(&cfg);
	int rc = parse_run(argc, argv, &ra); /* prints its own errors */
	if (rc == 0 && ra.learn_flag) {
		char name[48];
		rc = usage_error("option %s belongs to 'sandlock learn'%s",
		                 cli_opt_label(ra.learn_flag, name, sizeof(name)), "");
	}
	if (rc == 0 && ra.help) {
		print_run_help();
	} else if (rc == 0 && (rc = resolve_config(&ra, &cfg)) == 0) {
		struct cli_trace *t = ra.trace ? cli_trace_new(&cfg, stderr, false) : NULL;
		if (ra.trace && !t)
			rc = out_of_memory();
		else
			rc = run_config(&cfg, &ra.rep, t, false);
		cli_trace_free(t);
	}
	cli_cfg_free(&cfg);
	cli_cfg_free(&ra.flags);
	return rc;
}

static const char usage_learn[] =
	"Usage: sandlock learn [OPTIONS] -- CMD [ARG]...\n"
	"\n"
	"Run CMD with all of / readable (and the -w paths writable), record every\n"
	"file it opens or executes, and print on stdout a profile that grants\n"
	"exactly those files (directories it read are granted whole), with CMD as\n"
	"[program] exec/args.  CMD's output goes to stderr after it ends, and its\n"
	"stdin is empty.  Takes the options of 'sandlock run' (see its --help),\n"
	"and:\n"
	"  -o, --output PATH  write the profile to PATH instead of stdout\n"
	"  --merge PATH       add what was learned to the profile at PATH (rewritten)\n"
	"  --collapse [N]     grant a whole directory where N (default 4) of its entries\n"
	"                     were used\n"
	"Use the profile with 'sandlock run --profile-file FILE'.\n"
	"Exit status: CMD's, as for 'sandlock run'.\n";

static const char usage_check[] =
	"Usage: sandlock check [--json]\n"
	"\n"
	"Report what this kernel and host give a sandbox (Landlock ABI, seccomp\n"
	"user notification, cgroups, ...) and which options they limit.\n"
	"  --json  the same as one JSON object\n";

/* `sandlock check`: the library's report of this host. */
static int cmd_check(int argc, char **argv)
{
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage_check, stdout);
		return 0;
	}
	bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
	if (argc != 1 && !json) {
		fprintf(stderr, "sandlock: 'check' takes no arguments but --json\n%s", usage_check);
		return EXIT_SANDLOCK;
	}
	char *s = json ? sandlock_check_report_json() : sandlock_check_report();
	if (!s)
		return out_of_memory();
	fputs(s, stdout);
	sandlock_string_free(s);
	return 0;
}

/* `sandlock learn`: a permissive run whose trace becomes a profile. */
static int cmd_learn(int argc, char **argv)
{
	struct run_args ra = { 0 };
	cli_cfg_init(&ra.flags);
	ra.rep.status_fd = ra.rep.json_fd = -1;
	struct cli_cfg cfg;
	cli_cfg_init(&cfg);
	int rc = parse_run(argc, argv, &ra);
	if (rc == 0 && ra.help) {
		fputs(usage_learn, stdout);
	} else if (rc == 0 && (rc = cli_learn_check(&ra.learn)) == 0 &&
	           (rc = resolve_config(&ra, &cfg)) == 0) {
		struct cli_trace *t = cli_trace_new(&cfg, NULL, true);
		struct cli_cfg open_cfg;
		cli_cfg_init(&open_cfg);
		struct cli_cfg everything;
		cli_cfg_init(&everything);
		/* HTTP: every request admitted and logged, rules proposed. */
		char log[] = "/tmp/sandlock-learn-http-XXXXXX";
		int lfd = cli_learn_http_wanted(&cfg) ? mkstemp(log) : -1;
		if (lfd >= 0)
			close(lfd);
		if (!t || cli_list_add(&everything.read, "/") < 0 ||
		    cli_cfg_merge(&open_cfg, &cfg, &everything) < 0 ||
		    (lfd >= 0 && cli_learn_http_open(&open_cfg, log) < 0)) {
			rc = out_of_memory();
		} else {
			rc = run_config(&open_cfg, &ra.rep, t, true);
			if (rc != EXIT_SANDLOCK && lfd >= 0 && cli_learn_http_rules(&cfg, log) < 0)
				rc = out_of_memory();
			int wrc = rc != EXIT_SANDLOCK ? cli_learn_emit(t, &cfg, &ra.learn) : 0;
			if (wrc)
				rc = wrc;
		}
		if (lfd >= 0)
			unlink(log);
		cli_cfg_free(&everything);
		cli_cfg_free(&open_cfg);
		cli_trace_free(t);
	}
	cli_cfg_free(&cfg);
	cli_cfg_free(&ra.flags);
	return rc;
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
		if (argc > 2) {
			fprintf(stderr, "sandlock: %s takes no argument (got '%s')\n", sub, argv[2]);
			return EXIT_SANDLOCK;
		}
		printf("sandlock %s\n", sandlock_version());
		return 0;
	}
	if (strcmp(sub, "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(sub, "ps") == 0)
		return cli_cmd_ps(argc - 1, argv + 1);
	if (strcmp(sub, "inspect") == 0)
		return cli_cmd_inspect(argc - 1, argv + 1);
	if (strcmp(sub, "kill") == 0)
		return cli_cmd_kill(argc - 1, argv + 1);
	if (strcmp(sub, "stop") == 0)
		return cli_cmd_stop(argc - 1, argv + 1);
	if (strcmp(sub, "check") == 0)
		return cmd_check(argc - 1, argv + 1);
	if (strcmp(sub, "learn") == 0)
		return cmd_learn(argc - 1, argv + 1);
	if (strcmp(sub, "profile") == 0)
		return cli_profile_command(argc - 1, argv + 1);
	fprintf(stderr, "sandlock: unknown command '%s'\n"
			"Try 'sandlock --help' for more information.\n", sub);
	return EXIT_SANDLOCK;
}
