/*
 * report.c — --json and --status-fd (see report.h).
 */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int cli_report_check_fd(int fd, const char **why)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0) {
		*why = "not an open file descriptor";
		return -1;
	}
	if ((fl & O_ACCMODE) == O_RDONLY) {
		*why = "not open for writing";
		return -1;
	}
	/* stdio is the command's too; anything above must not reach it (the
	 * launcher closes such fds anyway: this is the second line). */
	if (fd > 2 && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
		*why = strerror(errno);
		return -1;
	}
	return 0;
}

void cli_report_begin(struct cli_report *rep)
{
	rep->start_ms = now_ms();
}

/*
 * Write all of s to fd.  A reader that went away must not kill sandlock
 * with SIGPIPE mid-run, and ignoring SIGPIPE process-wide would leak into
 * the command (an ignored disposition survives execve): block it around
 * the write and discard one it raised.
 */
static void write_all(int fd, const char *s, size_t len)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigset_t pending;
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	bool broken = false;
	while (len > 0) {
		ssize_t n = write(fd, s, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			broken = errno == EPIPE;
			break;
		}
		s += n;
		len -= (size_t)n;
	}
	if (broken && !was_pending) {
		const struct timespec zero = { 0, 0 };
		(void)sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Serialize obj as one line on fd (and free it). */
static void emit(int fd, json_t *obj)
{
	if (!obj)
		return;
	char *s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(obj);
	if (!s)
		return;
	size_t len = strlen(s);
	char *line = malloc(len + 2);
	if (line) {
		memcpy(line, s, len);
		line[len] = '\n';
		write_all(fd, line, len + 1);
		free(line);
	}
	free(s);
}

void cli_report_started(void *ud, int32_t pid)
{
	struct cli_report *rep = ud;
	if (rep->status_fd < 0)
		return;
	emit(rep->status_fd, json_pack("{s:s, s:i}", "event", "started", "child_pid", (json_int_t)pid));
}

static const char *reason_name(int reason)
{
	switch (reason) {
	case SANDLOCK_EXIT_EXITED: return "exited";
	case SANDLOCK_EXIT_SIGNALED: return "signaled";
	case SANDLOCK_EXIT_KILLED: return "killed";
	case SANDLOCK_EXIT_TIMEOUT: return "timeout";
	default: return "unknown";
	}
}

/* The first access Landlock refused (read from the audit log, where it
 * can be: explain.c): {"access": "fs.read_file", "path": "/x"}, as
 * Python's Result.denied_access.  A path that is not UTF-8 is left out. */
static void denied_access(json_t *o, const sandlock_result_t *r)
{
	const char *path = NULL, *what = sandlock_result_denied_access(r, &path);
	json_t *p = what && path ? json_string(path) : NULL;
	if (p)
		json_object_set_new(o, "denied_access", json_pack("{s:s, s:o}", "access", what, "path", p));
}

static json_t *result_object(const struct cli_report *rep, const sandlock_result_t *r,
                             int status, const char *msg)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	json_object_set_new(o, "exit_code", json_integer(status));
	if (r) {
		json_object_set_new(o, "reason", json_string(reason_name(sandlock_result_reason(r))));
		/* also for KILLED: what ended it; -1 for none, as C and Python say it */
		json_object_set_new(o, "signal", json_integer(sandlock_result_term_signal(r)));
		/* The command never ran (126/127): why, as C and Python say it. */
		const char *why = sandlock_result_error(r);
		json_t *e = why ? json_string(why) : NULL;
		if (why)
			json_object_set_new(o, "error", e ? e : json_string("(message is not UTF-8)"));
		denied_access(o, r);
	} else {
		/* A command not on PATH is an exit 127, as in C and Python (and
		 * as a missing absolute path); anything else is sandlock's. */
		bool missing = status == 127 && msg && strncmp(msg, "command not found", 17) == 0;
		json_object_set_new(o, "reason", json_string(missing ? "exited" : "error"));
		json_object_set_new(o, "signal", json_integer(-1)); /* no signal: -1, as C and Python */
		/* json_string refuses invalid UTF-8 (a path in msg may be). */
		json_t *e = json_string(msg ? msg : "failed to run the command");
		json_object_set_new(o, "error", e ? e : json_string("(message is not UTF-8)"));
	}
	/* 0 when the command never started (a configuration error). */
	uint64_t ms = rep->start_ms ? now_ms() - rep->start_ms : 0;
	json_object_set_new(o, "duration_ms", json_integer((json_int_t)ms));
	return o;
}

/* The change list (or the conflicts) as [{"kind", "path"}]. */
static json_t *changes_array(const sandlock_result_t *r, bool conflicts)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < sandlock_result_change_count(r, conflicts); i++) {
		char k[2] = { 0, 0 };
		const char *p = sandlock_result_change(r, conflicts, i, &k[0]);
		json_t *path = json_string(p);
		json_array_append_new(a, json_pack("{s:s, s:o}", "kind", k, "path",
		                                   path ? path : json_string("(path is not UTF-8)")));
	}
	return a;
}

static void add_changes(json_t *o, const sandlock_result_t *r)
{
	json_object_set_new(o, "changes", changes_array(r, false));
	if (sandlock_result_change_count(r, true))
		json_object_set_new(o, "conflicts", changes_array(r, true));
	const char *kept = sandlock_result_cow_kept(r);
	if (kept)
		json_object_set_new(o, "kept", json_string(kept));
	const char *e = sandlock_result_cow_error(r);
	if (e)
		json_object_set_new(o, "workdir_error", json_string(e));
}

/* What a commit could not do, said on stderr (the work is kept). */
static void warn_branch(const sandlock_result_t *r)
{
	const char *e = sandlock_result_cow_error(r), *kept = sandlock_result_cow_kept(r);
	size_t n = sandlock_result_change_count(r, true);
	if (e)
		fprintf(stderr, "sandlock: workdir: %s\n", e);
	for (size_t i = 0; i < n; i++) {
		char k;
		const char *p = sandlock_result_change(r, true, i, &k);
		fprintf(stderr, "sandlock: workdir: not committed (changed meanwhile): %c %s\n", k, p);
	}
	if (kept && (e || n))
		fprintf(stderr, "sandlock: workdir: staged changes kept in %s\n", kept);
}

bool cli_report_branch_failed(const sandlock_result_t *r)
{
	return sandlock_result_cow_error(r) || sandlock_result_change_count(r, true) > 0;
}

void cli_report_end(struct cli_report *rep, const sandlock_result_t *r, int status,
                    const char *msg)
{
	if (r && rep->workdir)
		warn_branch(r);
	if (r && rep->dry_run) {
		for (size_t i = 0; i < sandlock_result_change_count(r, false); i++) {
			char k;
			const char *p = sandlock_result_change(r, false, i, &k);
			printf("%c %s\n", k, p);
		}
		fflush(stdout);
	}
	if (rep->json || rep->json_fd >= 0) {
		fflush(NULL);
		json_t *o = result_object(rep, r, status, msg);
		if (o && r && rep->workdir)
			add_changes(o, r);
		if (o && rep->json_fd >= 0 && ftruncate(rep->json_fd, 0) == 0)
			emit(rep->json_fd, json_incref(o));
		if (o && rep->json) {
			write_all(STDERR_FILENO, "\n", 1);
			emit(STDERR_FILENO, json_incref(o));
		}
		json_decref(o);
	}
	if (rep->status_fd >= 0) {
		json_t *o = result_object(rep, r, status, msg);
		if (o) {
			json_t *line = json_pack("{s:s}", "event", "exited");
			if (line) {
				json_object_update(line, o);
				emit(rep->status_fd, line);
			}
			json_decref(o);
		}
	}
}
