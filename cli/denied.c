/*
 * denied.c — name the first access Landlock refused a failed run, and the
 * -r/-w/-x that would allow it.
 *
 * WHY: a program refused a file says "Permission denied" (if anything);
 * which of the hundreds of files a build touched, and which flag would
 * allow it, is what a new user needs.  The library reads the denial from
 * the kernel's audit log where the caller may (src/run/auditlog.c); here
 * Landlock's own words (blockers=fs.make_reg path="/out") become the
 * user's: the kind of access, the path, and the same "not under any -w;
 * allow with -w /out" --trace would print (trace.c judges it against the
 * run's rules).  An open the supervisor performed for the program
 * (refusedopen.c) is worded the same way.
 */
#include "denied.h"
#include "namedpaths.h"
#include "trace.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum what { W_READ, W_WRITE, W_EXEC, W_OTHER };

/* Does the comma-separated list hold one of names (NULL-terminated)? */
static bool has_any(const char *blockers, const char *const *names)
{
	for (const char *b = blockers; *b;) {
		size_t n = strcspn(b, ",");
		for (size_t i = 0; names[i]; i++)
			if (strlen(names[i]) == n && strncmp(b, names[i], n) == 0)
				return true;
		b += n + (b[n] == ',');
	}
	return false;
}

/* Landlock's access rights (landlock(7)) grouped as the CLI grants them. */
static enum what what_of(const char *blockers)
{
	static const char *const exec[] = { "fs.execute", NULL };
	static const char *const write[] = { "fs.write_file", "fs.remove_dir", "fs.remove_file",
		                             "fs.make_char", "fs.make_dir", "fs.make_reg",
		                             "fs.make_sock", "fs.make_fifo", "fs.make_block",
		                             "fs.make_sym", "fs.refer", "fs.truncate", NULL };
	static const char *const read[] = { "fs.read_file", "fs.read_dir", NULL };
	if (has_any(blockers, exec))
		return W_EXEC;
	if (has_any(blockers, write))
		return W_WRITE;
	if (has_any(blockers, read))
		return W_READ;
	return W_OTHER;
}

/* blockers: Landlock's words for it, or NULL (an open refused on the
 * program's behalf: the supervisor saw the call, not Landlock's record). */
static char *line_for(const struct cli_cfg *cfg, enum what w, const char *path,
                      const char *blockers)
{
	static const char *const verbs[] = { "read", "write", "execute", "access" };
	char *hint = NULL;
	if (w != W_OTHER && path[0] == '/' && cli_host_paths(cfg))
		hint = w == W_EXEC ? cli_trace_exec_hint(cfg, path)
		                   : cli_trace_path_hint(cfg, path, w == W_WRITE);
	char *line = NULL;
	if (asprintf(&line, "the first access the sandbox refused: %s %s%s%s%s%s%s%s", verbs[w],
	             path, blockers ? " (Landlock: " : "", blockers ? blockers : "",
	             blockers ? ")" : "", hint ? "; it is " : "", hint ? hint : "",
	             hint ? "" : "; --trace lists every refused access") < 0)
		line = NULL;
	free(hint);
	return line;
}

char *cli_denied_line(const struct cli_cfg *cfg, const char *blockers, const char *path)
{
	return line_for(cfg, what_of(blockers), path, blockers);
}

char *cli_denied_open_line(const struct cli_cfg *cfg, bool write, const char *path)
{
	return line_for(cfg, write ? W_WRITE : W_READ, path, NULL);
}
