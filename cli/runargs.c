/*
 * runargs.c — `sandlock run` and `learn` command lines into a struct
 * run_args: each option applied as it comes (getopt_long over the option
 * table of options.c, long options spelled in full, values checked where
 * they are parsed), the command after "--", the combinations refused, and
 * the profile merged under the flags (cli_resolve_config).  Also the usage
 * errors every part of the CLI prints.  Split from main.c.
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
#include "runargs.h"

/* Print "sandlock: <msg>" plus a hint, return the usage-error status. */
int cli_usage_error(const char *fmt, const char *a, const char *b)
{
	fputs("sandlock: ", stderr);
	fprintf(stderr, fmt, a, b);
	fputs("\nTry 'sandlock run --help' for more information.\n", stderr);
	return EXIT_SANDLOCK;
}

int cli_bad_value(int id, const char *arg, const char *why)
{
	char name[48];
	fprintf(stderr, "sandlock: invalid value '%s' for %s: %s\n", arg,
		cli_opt_label(id, name, sizeof(name)), why);
	fputs("Try 'sandlock run --help' for more information.\n", stderr);
	return EXIT_SANDLOCK;
}

int cli_size_value(int id, const char *arg, const char *examples, uint64_t *v)
{
	char why[96];
	int pr = sandlock_parse_memory_size(arg, v);
	if (pr >= 0)
		return 0;
	if (pr == -2 || pr == -3)
		return cli_bad_value(id, arg, pr == -2 ? "must be greater than zero" : "number too large");
	snprintf(why, sizeof why, "expected a size such as %s", examples);
	return cli_bad_value(id, arg, why);
}

int cli_out_of_memory(void)
{
	fputs("sandlock: out of memory\n", stderr);
	return EXIT_SANDLOCK;
}

static int set_string(char **dst, const char *s)
{
	free(*dst);
	*dst = strdup(s);
	return *dst ? 0 : cli_out_of_memory();
}

static int add_path(struct cli_list *l, const char *arg)
{
	return cli_list_add(l, arg) < 0 ? cli_out_of_memory() : 0;
}

/* Apply one numeric limit option.  Returns 0 or an exit status. */
static int apply_limit(struct cli_cfg *c, int id, const char *arg)
{
	uint64_t v = 0;
	const char *why = NULL;
	switch (id) {
	case OPT_MAX_MEMORY: {
		int rc = cli_size_value(id, arg, "4096, 512M or 1.5G", &v);
		if (rc)
			return rc;
		c->has_max_memory = true;
		c->max_memory = v;
		return 0;
	}
	case OPT_MAX_PROCESSES:
		if (cli_parse_uint(arg, 0, UINT32_MAX, &v, &why))
			return cli_bad_value(id, arg, why);
		c->has_max_processes = true;
		c->max_processes = (uint32_t)v;
		return 0;
	case OPT_KILL_AFTER:
		if (cli_parse_seconds(arg, &v, &why))
			return cli_bad_value(id, arg, why);
		c->has_kill_after = true;
		c->kill_after_ms = v;
		return 0;
	default: /* OPT_TIMEOUT */
		if (cli_parse_seconds(arg, &v, &why))
			return cli_bad_value(id, arg, why);
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
			return cli_bad_value(OPT_EXTRA_ALLOW, arg, "expected GROUP[,GROUP...]");
		char *group = strndup(p, len);
		int rc = group ? cli_list_add(&c->extra_allow, group) : -1;
		free(group);
		if (rc < 0)
			return cli_out_of_memory();
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
			return cli_bad_value(id, arg, why);
		c->has_random_seed = true;
		c->random_seed = seed;
		return 0;
	}
	int64_t ns;
	if (cli_parse_time(arg, &ns, &why))
		return cli_bad_value(id, arg, why);
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
		return ra->rep.json_fd < 0 ? cli_bad_value(id, arg, strerror(errno)) : 0;
	}
	uint64_t fd = 0;
	const char *why = NULL;
	if (cli_parse_uint(arg, 0, INT32_MAX, &fd, &why))
		return cli_bad_value(id, arg, why);
	if (cli_report_check_fd((int)fd, &why))
		return cli_bad_value(id, arg, why);
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
			return cli_bad_value(id, arg, why);
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
	return cli_ops_add(&c->ops, id, arg) < 0 ? cli_out_of_memory() : 0;
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
		return cli_ops_add(&c->ops, id, arg) < 0 ? cli_out_of_memory() : 0;
	case OPT_CLEAN_ENV:
		c->clean_env = 1;
		return 0;
	case OPT_ENV:
		if (cli_env_add(&c->env, arg, &why))
			return cli_bad_value(id, arg, why);
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
		return cli_ops_add(&c->ops, id, arg) < 0 ? cli_out_of_memory() : 0;
	case OPT_IMAGE:
		ra->image = true;
		return cli_ops_add(&c->ops, id, arg) < 0 ? cli_out_of_memory() : 0;
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
			return cli_usage_error("option --%s is not supported yet by this sandlock%s",
					   cli_unsupported[id - OPT_UNSUPPORTED_BASE].name, "");
		return cli_usage_error("internal error: unhandled option%s%s", "", "");
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
	return cli_usage_error("option '%s' is abbreviated: write it in full (%s)", given, full);
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
		return cli_usage_error("option %s requires an argument%s", n, "");
	}
	if (optopt != 0 && optopt < 256) {
		snprintf(name, sizeof(name), "-%c", optopt);
		return cli_usage_error("unknown option '%s'%s", name, "");
	}
	return cli_usage_error(is_ambiguous(spelled) ? "ambiguous option '%s'%s"
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
			return cli_usage_error("expected '--' before the command, got '%s'%s",
					   argv[optind], "");
		if (have_profile || ra->image)
			return 0; /* the profile's [program] exec or the image's, checked later */
		return cli_usage_error("missing '--' and a command to run%s%s", "", "");
	}
	if (optind >= argc)
		return cli_usage_error("missing command after '--'%s%s", "", "");
	for (int i = optind; i < argc; i++)
		if (cli_list_add(&ra->flags.argv, argv[i]) < 0)
			return cli_out_of_memory();
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
		return cli_usage_error("--max-disk caps what a --workdir run stages: add --workdir DIR, "
		                   "or drop --max-disk%s%s", "", "");
	if (ra->rep.dry_run && commit)
		return cli_usage_error("--dry-run commits nothing: drop %s commit (or --dry-run)%s",
		                   commit_flag, "");
	return 0;
}

/*
 * Parse `run`'s options.  argv[0] is "run".  Returns 0, or an exit status
 * after printing the error.  The command must follow "--": requiring it
 * keeps a typo'd option from being run as a command.
 */
int cli_parse_run(int argc, char **argv, struct run_args *ra)
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
		return cli_usage_error("give only one of --profile and --profile-file%s%s", "", "");
	if ((rc = check_combinations(ra)) != 0)
		return rc;
	return parse_command(argc, argv, last_optarg, ra);
}

/* Load the profile (if any) and lay the flags over it into *out. */
int cli_resolve_config(const struct run_args *ra, struct cli_cfg *out)
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
		return cli_out_of_memory();
	if (out->argv.n == 0 && !ra->image)
		return cli_usage_error("the profile has no [program] exec: give the command after '--'%s%s",
				   "", "");
	return 0;
fail:
	fprintf(stderr, "sandlock: %s\n", err ? err : "out of memory");
	free(err);
	free(path);
	return EXIT_SANDLOCK;
}
