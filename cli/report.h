/*
 * report.h — machine-readable output of `sandlock run`, via jansson.
 *
 *   --json          one JSON object on stderr after the command ended and
 *                   every process of the sandbox is gone, on a line of its
 *                   own (a newline first: a guest line without one cannot
 *                   join it), so it is always the last line and stdout
 *                   stays the command's:
 *                   {"exit_code", "reason", "signal", "duration_ms"}, or
 *                   {"exit_code", "reason": "error", "error"} when sandlock
 *                   could not run it.
 *                   With --workdir, also "changes" [{"kind", "path"}], and
 *                   "conflicts" / "kept" when a commit left changes out.
 *   --dry-run       without --json, the change list as "K path" lines on
 *                   stdout after the command's own output.
 *   --json-file P   the same object alone in file P (opened before the
 *                   run, written after it: a channel the command never has).
 *   --status-fd FD  JSON lines on FD: {"event": "started", "child_pid"}
 *                   once the sandbox runs, then the same object as --json
 *                   with "event": "exited".
 */
#ifndef SANDLOCK_CLI_REPORT_H
#define SANDLOCK_CLI_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "sandlock.h"

struct cli_report {
	bool json;
	int status_fd; /* -1: none */
	int json_fd;   /* --json-file, opened by the parser; -1: none */
	uint64_t start_ms;
	bool workdir; /* a COW workdir: report its changes */
	bool dry_run; /* --dry-run: print the change list */
	bool quiet;   /* -q: no end-of-run explanation (explain.c) */
};

/* Check FD is open for writing and keep it out of the sandbox.
 * 0, or -1 with *why. */
int cli_report_check_fd(int fd, const char **why);
/* Remember when the run starts (for duration_ms). */
void cli_report_begin(struct cli_report *rep);
/* A sandlock_start_fn: ud is the struct cli_report. */
void cli_report_started(void *ud, int32_t pid);
/* After the run: r is the result, or NULL with status and msg. */
void cli_report_end(struct cli_report *rep, const sandlock_result_t *r, int status,
                    const char *msg);

/* The COW workdir's commit left changes out or failed (the layer is kept). */
bool cli_report_branch_failed(const sandlock_result_t *r);

#endif
