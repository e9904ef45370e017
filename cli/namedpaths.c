/*
 * namedpaths.c — after a failed run, the first path its command line
 * names that the rules refuse.
 *
 * WHY: Landlock refuses a file access in the kernel and tells only the
 * audit log, which the run reads where it may (src/run/auditlog.c: audit
 * on and CAP_AUDIT_READ); elsewhere the first access a run was refused
 * cannot be read back without --trace (docs/cli.md says why: seccomp sees
 * a call before its result; trapping every open would cost every run).  But a new user's failing command
 * usually names the file: `cat /data/x`, `sh -c 'date > /out/f'`,
 * `python3 script.py`.  Checking those words against the rules once the
 * run has failed costs nothing to a run that succeeds, and
 * what it says is a fact about the rules ("/data/x is not under any
 * -r/-w"), never a guess about what the program did.
 */
#include "namedpaths.h"
#include "options.h"
#include "trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Shell and option punctuation around the paths a word may hold
 * ("--out=/x", "a:b", "> /f", "'/x'"). */
#define DELIMS " \t\n;|&<>()'\"`=,:"
#define MAX_CANDIDATES 256 /* words; a huge command line is not worth scanning whole */

struct found {
	char *first; /* the first refused path's line */
	unsigned more;
	unsigned seen;
};

bool cli_host_paths(const struct cli_cfg *cfg)
{
	for (size_t i = 0; i < cfg->ops.n; i++)
		if (cfg->ops.v[i].id == OPT_CHROOT || cfg->ops.v[i].id == OPT_IMAGE)
			return false;
	return true;
}

/* Judge one word as a path (relative: under the run's cwd): read when it
 * exists, written when a '>' came before it (it may be a name to make). */
static void judge_word(const struct cli_cfg *cfg, const char *cwd, const char *w, size_t len,
                       bool redirect, struct found *f)
{
	if (len == 0 || f->seen++ >= MAX_CANDIDATES)
		return;
	char *path = NULL;
	if (asprintf(&path, "%s%s%.*s", w[0] == '/' ? "" : cwd, w[0] == '/' ? "" : "/", (int)len,
	             w) < 0)
		return;
	char *hint = cli_trace_path_hint(cfg, path, redirect);
	if (hint && f->first)
		f->more++;
	else if (hint && asprintf(&f->first, "%s, named in its command line, is %s", path,
	                          hint) < 0)
		f->first = NULL;
	free(hint);
	free(path);
}

/* Every word of one argument, split at DELIMS. */
static void scan_arg(const struct cli_cfg *cfg, const char *cwd, const char *arg,
                     struct found *f)
{
	bool redirect = false;
	for (const char *p = arg; *p;) {
		size_t gap = strcspn(p, DELIMS) == 0 ? strspn(p, DELIMS) : 0;
		if (gap) {
			redirect = memchr(p, '>', gap) != NULL;
			p += gap;
			continue;
		}
		size_t len = strcspn(p, DELIMS);
		judge_word(cfg, cwd, p, len, redirect, f);
		p += len;
	}
}

char *cli_named_path_hint(const struct cli_cfg *cfg)
{
	if (!cli_host_paths(cfg) || cfg->argv.n == 0)
		return NULL;
	char *here = cfg->cwd ? NULL : getcwd(NULL, 0);
	const char *cwd = cfg->cwd ? cfg->cwd : here;
	struct found f = { NULL, 0, 0 };
	for (size_t i = 1; cwd && i < cfg->argv.n; i++) /* argv[0]: the exec hint's */
		scan_arg(cfg, cwd, cfg->argv.v[i], &f);
	char *line = NULL;
	if (f.first && asprintf(&line, "the command failed; %s%s (--trace lists every refused "
	                                "access)", f.first,
	                        f.more ? "; more of the paths it names are refused too" : "") < 0)
		line = NULL;
	free(f.first);
	free(here);
	return line;
}
