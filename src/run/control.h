/*
 * control.h — every run's control socket (control.c): `sandlock ps`,
 * `inspect NAME`, `kill NAME` and `stop NAME` reach a sandbox whoever
 * started it (the CLI, Python, a C program), as the reference's do.
 *
 * One Unix stream socket per run, NAME.sock in the user's control
 * directory (run/ctldir.h's candidates: a directory only the user can
 * enter), plus an abstract name derived from the directory and NAME that
 * no guest can delete.  The server answers only a peer of the same uid
 * that is no more confined than the caller; a request is one line
 * ("inspect", "kill", "stop", "policy"), the answer one line of JSON
 * ("policy": the run's policy as a TOML profile, until the connection
 * closes).  The CLI's clients (cli/control.c) use the helpers below.
 */
#ifndef SANDLOCK_RUN_CONTROL_H
#define SANDLOCK_RUN_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "sandlock.h"

#define SL_CONTROL_NAME_MAX 64
#define SL_CONTROL_ABSTRACT_TRIES 8 /* names NAME, NAME/1 ... if someone took the first */

/* Letters, digits, '.', '_', '-'; not starting with '.'; 1..64 bytes. */
bool sl_control_valid_name(const char *name);

/*
 * The control directory into out (made if create and missing): the first
 * usable candidate of ctldir.h; one that belongs to another user, or is
 * missing and cannot be made, is passed over.  0, or -1 with *why (a
 * static string, to follow out when out is not empty: the directory
 * refused) when none is usable.  say: where to warn about a
 * candidate passed over because another user holds it (NULL: silent).
 */
int sl_control_dir(char *out, size_t len, bool create, FILE *say, const char **why);
/* The abstract name (without its leading NUL) of try i of the run name
 * whose control directory is dir. */
void sl_control_abstract_name(const char *dir, const char *name, int i, char *out, size_t len);
/* A connection to a unix address: a path, or an abstract name; -1. */
int sl_control_connect(const char *name, bool abstract);
/* ... and one that itself holds the socket listening at path / at the
 * abstract name aname: a supervisor's on-behalf listen carries our
 * credentials, only the guest holds that socket. */
bool sl_control_trusted_server(int fd, const char *path, pid_t *pid);
bool sl_control_trusted_abstract(int fd, const char *aname, pid_t *pid);
/* All of s to fd (a request or an answer). */
void sl_control_send(int fd, const char *s);

/* ---------------- the server of one run ---------------- */

struct sl_control;

/* How a run wants its "stop" and "policy" answered (the CLI's: its own
 * signal forwarding with --kill-after, its profile printer). */
struct sl_control_opts {
	const char *policy;      /* TOML profile text, or NULL: not available */
	int (*stop)(void *ud);   /* 0 if SIGTERM reached the command; NULL: init forwards it */
	void *stop_ud;
	bool strict;             /* a name in use fails the run (else NAME.PID is used) */
};

/*
 * Open the control socket of the run named name (NULL: "sandbox-INIT",
 * as its hostname), served from sl_control_serve until sl_control_close.
 * NULL when none can be made: with *why when the run must fail (strict
 * and the name is in use or invalid, or no control directory is usable;
 * a heap string), else *why NULL (the run goes on unlisted).
 */
struct sl_control *sl_control_open(const char *name, pid_t init, bool strict, char **why);
/* Serve h (argv: the command, copied) on a thread; "kill" calls kill(h)
 * (run.c's sandlock_handle_kill, passed in: run.c calls this file).
 * 0 or -1. */
int sl_control_serve(struct sl_control *c, sandlock_handle_t *h, int (*kill)(sandlock_handle_t *),
                     const char *const *argv, size_t argc, const struct sl_control_opts *o);
/* Stop serving, remove the socket, free.  NULL is ok. */
void sl_control_close(struct sl_control *c);

/* Remove from control directory dir the socket files of runs that died
 * (ctlsweep.c): nobody listens, older than a minute; with any false only
 * those named for an init that is gone, at most once a minute (what every
 * run does: no connect to a live server), with any true every one
 * (`sandlock ps`). */
void sl_control_sweep(const char *dir, bool any);
/* The answers sb's runs give (o borrowed: it must outlive them). */
void sl_control_configure(sandlock_sandbox_t *sb, const struct sl_control_opts *o);

#endif
