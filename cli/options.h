/*
 * options.h — the table of `sandlock run` options.
 *
 * One line per option in options.c: id, short letter, the reference CLI's
 * long name, an older alias, the argument's name and a one-line help.  The
 * getopt tables and `sandlock run --help` are generated from it, so adding
 * an option is one enum entry here, one table line there, and one case in
 * the code that applies it.  Options of the reference CLI whose feature
 * sandlock does not have yet are listed separately and refused by name.
 */
#ifndef SANDLOCK_CLI_OPTIONS_H
#define SANDLOCK_CLI_OPTIONS_H

#include <getopt.h>
#include <stdio.h>

enum cli_opt_id {
	OPT_READ = 256,
	OPT_WRITE,
	OPT_DENY,
	OPT_MAX_MEMORY,
	OPT_MAX_PROCESSES,
	OPT_TIMEOUT,
	OPT_KILL_AFTER,
	OPT_NET_ALLOW,
	OPT_NET_ALLOW_BIND,
	OPT_NET_DENY,
	OPT_NET_DENY_BIND,
	OPT_ALLOW_UNIX,
	OPT_UNIX_READABLE,
	OPT_PORT_REMAP,
	OPT_NET_HOST_INTERFACES,
	OPT_CLEAN_ENV,
	OPT_ENV,
	OPT_CWD,
	OPT_NAME,
	OPT_INTERACTIVE,
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
	OPT_PROFILE,
	OPT_PROFILE_FILE,
	OPT_JSON,
	OPT_TRACE,
	OPT_QUIET,
	OPT_STATUS_FD,
	OPT_NUM_CPUS,
	OPT_GPU,
	OPT_DETERMINISTIC_DIRS,
	OPT_WORKDIR,
	OPT_CHROOT,
	OPT_IMAGE,
	OPT_FS_MOUNT,
	OPT_FS_STORAGE,
	OPT_ON_EXIT,
	OPT_ON_ERROR,
	OPT_MAX_DISK,
	OPT_DRY_RUN,
	OPT_OUTPUT,   /* learn only */
	OPT_MERGE,    /* learn only */
	OPT_COLLAPSE, /* learn only */
	OPT_HELP,
	OPT_TMP,
	OPT_HTTP_ALLOW,
	OPT_HTTP_DENY,
	OPT_HTTP_PORT,
	OPT_HTTP_CA,
	OPT_HTTP_KEY,
	OPT_HTTP_INJECT_CA,
	OPT_HTTP_CA_OUT,
	OPT_CREDENTIAL,
	OPT_HTTP_AUTH,
	OPT_HTTP_LOG,
	OPT_JSON_FILE,
	/* getopt's val for the i-th entry of cli_unsupported[] */
	OPT_UNSUPPORTED_BASE = 1024,
};

/* msg (a library message naming its settings: "fs_read: ...",
 * "workdir '/': ...") with each setting named by the flag a user typed
 * (-r, --workdir).  Heap string, or NULL when out of memory. */
char *cli_flag_words(const char *msg);

struct cli_opt {
	int id;
	char short_name;   /* 0: none */
	const char *name;  /* long name (the reference CLI's) */
	const char *alias; /* second long name, or NULL */
	const char *arg;   /* argument name for --help; NULL: takes none; "[N]": optional */
	const char *group; /* --help section it starts, or NULL */
	const char *help;  /* one line */
};

struct cli_unsupported {
	const char *name;
	int has_arg;
};

extern const struct cli_opt cli_run_opts[];
extern const struct cli_unsupported cli_unsupported[];

/* getopt_long's tables for the options above (static storage). */
const struct option *cli_long_options(void);
const char *cli_short_options(void);
/* The entry with this id (or short letter), or NULL. */
const struct cli_opt *cli_opt_by_id(int id);
/* "-m/--max-memory" or "--net-allow", for messages. */
const char *cli_opt_label(int id, char *buf, size_t len);
/* Print the option lines of `sandlock run --help`. */
void cli_print_run_options(FILE *f);

#endif
