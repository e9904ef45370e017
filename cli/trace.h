/*
 * trace.h — `sandlock run --trace` and `sandlock learn`.
 *
 * Landlock denies file access inside the kernel, where the supervisor never
 * sees it.  To show what the sandbox refused, the CLI traps the calls that
 * name a file (open, openat, creat, execve, execveat) with a handler that
 * always lets the call proceed (CONTINUE: the kernel still decides), works
 * out which file the call names, and compares it with the same rules the
 * sandbox was built from (-r, -w, -d).  --trace prints one JSON line per
 * call those rules refuse, with the flag that would allow it; learn runs
 * the command with all of / readable, records every file it used, and
 * prints a profile that grants exactly those.
 *
 * This is a diagnostic: the path is read after the fact, so a program that
 * races its own arguments can mislead it (never the sandbox, which Landlock
 * enforces whatever the trace says).
 */
#ifndef SANDLOCK_CLI_TRACE_H
#define SANDLOCK_CLI_TRACE_H

#include <stdbool.h>
#include <stdio.h>

#include "runcfg.h"
#include "sandlock.h"

struct cli_trace;

/* cfg: the rules the run uses (copied).  out: where --trace's JSON lines
 * go (NULL in learn mode, which only records).  NULL on allocation failure. */
struct cli_trace *cli_trace_new(const struct cli_cfg *cfg, FILE *out, bool learn);
/* For a command the sandbox could not execute (EACCES): why, by cfg's
 * rules, and the flag that allows it ("not under any -r/-w; allow with -r
 * /opt/tool"), or NULL when the rules allow it (then it is not the
 * rules': a file without execute permission, a noexec mount).  Heap. */
char *cli_trace_exec_hint(const struct cli_cfg *cfg, const char *path);
/* The same for reading path (which must exist), or writing it (it may be
 * a name to create): "not under any -w; allow with -w /out", or NULL. */
char *cli_trace_path_hint(const struct cli_cfg *cfg, const char *path, bool write);
void cli_trace_free(struct cli_trace *t);
/* Fill regs (room for max) with this trace's handlers; returns the count.
 * The handlers borrow t: free t only after the run. */
size_t cli_trace_registrations(struct cli_trace *t, sandlock_registration_t *regs, size_t max);
/* A sandlock_decision_fn for --trace (ud: the struct cli_trace): one JSON
 * line for each call the supervisor itself refused (errno or kill). */
void cli_trace_decision(void *ud, const sandlock_decision_t *d);
/* learn: print the profile for what the command used (argv: its command).
 * base: a profile the learned grants are added to (--merge), or NULL.
 * collapse: grant a whole directory where at least this many of its
 * entries were used (0: never).  0, or -1 (out of memory). */
int cli_trace_print_profile(const struct cli_trace *t, const struct cli_cfg *cfg,
                            const struct cli_cfg *base, unsigned collapse, FILE *out);

#endif
