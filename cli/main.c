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
#include "knobs.h"
#include "explain.h"
#include "learn.h"
#include "learnhttp.h"
#include "options.h"
#include "parse.h"
#include "profile.h"
#include "reaper.h"
#include "report.h"
#include "runargs.h"
#include "runcfg.h"
#include "sandlock.h"
#include "signals.h"
#include "trace.h"

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
			return cli_out_of_memory(), -1;
	if (n == 0)
		fprintf(stderr, "sandlock: the image has no command (Entrypoint/Cmd): give one "
		                "after '--'\n");
	return n ? 0 : -1;
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
static struct cli_explain *explain_new(const struct cli_cfg *cfg, bool traced)
{
	struct cli_explain_cfg c = {
		.has_timeout = cfg->has_timeout, .timeout_ms = cfg->timeout_ms,
		.has_max_memory = cfg->has_max_memory, .max_memory = cfg->max_memory,
		.has_max_processes = cfg->has_max_processes, .max_processes = cfg->max_processes,
		.on_error_abort = true, .run = cfg, .traced = traced,
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
	struct cli_explain *ex = learn || rep->quiet ? NULL : explain_new(cfg, trace != NULL);
	int rc = run_config_ex(cfg, rep, trace, learn, ex);
	cli_explain_free(ex);
	return rc;
}

static int run_config_ex(struct cli_cfg *cfg, struct cli_report *rep, struct cli_trace *trace,
                         bool learn, struct cli_explain *ex)
{
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	if (!b)
		return run_failed(rep, cli_out_of_memory(), "out of memory");
	cli_cfg_apply(cfg, b);
	for (size_t i = 0; i < cfg->ops.n; i++) {
		int rc = cli_apply_knob(b, &cfg->ops.v[i]);
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
	/* The first access Landlock refused, where we may read the audit log
	 * (--trace names every one itself; SANDLOCK_AUDIT=off: never, so that
	 * what a run says does not depend on the host's audit state). */
	const char *audit = getenv("SANDLOCK_AUDIT");
	if (ex && !trace && !(audit && (strcmp(audit, "off") == 0 || strcmp(audit, "0") == 0)))
		sandlock_sandbox_builder_audit_denials(b, true);
	if (ex) { /* it passes each decision on to --trace's printer */
		cli_explain_chain(ex, trace ? cli_trace_decision : NULL, trace);
		sandlock_sandbox_builder_on_decision(b, cli_explain_decision, ex);
	} else if (trace && !learn) {
		sandlock_sandbox_builder_on_decision(b, cli_trace_decision, trace);
	}
	/* --trace: the filter's own refusals (ptrace, mount, argument rules)
	 * come through the supervisor too, so its printer names them. */
	if (trace && !learn)
		sandlock_sandbox_builder_report_filter_refusals(b, true);
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
	int rc = cli_parse_run(argc, argv, &ra); /* prints its own errors */
	if (rc == 0 && ra.learn_flag) {
		char name[48];
		rc = cli_usage_error("option %s belongs to 'sandlock learn'%s",
		                 cli_opt_label(ra.learn_flag, name, sizeof(name)), "");
	}
	if (rc == 0 && ra.help) {
		print_run_help();
	} else if (rc == 0 && (rc = cli_resolve_config(&ra, &cfg)) == 0) {
		struct cli_trace *t = ra.trace ? cli_trace_new(&cfg, stderr, false) : NULL;
		if (ra.trace && !t)
			rc = cli_out_of_memory();
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
		return cli_out_of_memory();
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
	int rc = cli_parse_run(argc, argv, &ra);
	if (rc == 0 && ra.help) {
		fputs(usage_learn, stdout);
	} else if (rc == 0 && (rc = cli_learn_check(&ra.learn)) == 0 &&
	           (rc = cli_resolve_config(&ra, &cfg)) == 0) {
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
			rc = cli_out_of_memory();
		} else {
			rc = run_config(&open_cfg, &ra.rep, t, true);
			if (rc != EXIT_SANDLOCK && lfd >= 0 && cli_learn_http_rules(&cfg, log) < 0)
				rc = cli_out_of_memory();
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
