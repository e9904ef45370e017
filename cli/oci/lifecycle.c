/*
 * lifecycle.c — create, start, state, kill, delete: the runtime spec's
 * operations, each a short talk with the container's supervisor.
 */
#include "cmds.h"
#include "ctl.h"
#include "log.h"
#include "seccomp.h"
#include "spec.h"
#include "state.h"
#include "super.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int oci_container_dir(const struct oci_global *g, const char *id, char *dir, size_t cap)
{
	char root[OCI_PATH_MAX];
	if (!id) {
		oci_error("a container id is needed");
		return -1;
	}
	if (oci_state_root(g->root, root, sizeof root) < 0 ||
	    oci_state_dir(root, id, dir, cap) < 0)
		return -1;
	if (!oci_state_exists(dir)) {
		oci_error("container \"%s\" does not exist", id);
		return -1;
	}
	return 0;
}

int oci_write_pid_file(const char *path, int pid)
{
	char tmp[OCI_PATH_MAX];
	if (snprintf(tmp, sizeof tmp, "%s.sandlock-tmp", path) >= (int)sizeof tmp)
		return -1;
	FILE *f = fopen(tmp, "we");
	if (!f || fprintf(f, "%d", pid) < 0 || fclose(f) != 0 || rename(tmp, path) < 0) {
		oci_error("--pid-file %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* "created" / "running" from the supervisor, "stopped" once it is gone. */
static void status_of(const char *dir, char *status, size_t cap, int *pid)
{
	char reply[128];
	*pid = 0;
	if (oci_state_alive(dir) && oci_ctl_request(dir, "status", reply, sizeof reply) == 0 &&
	    sscanf(reply, "%15s %d", status, pid) == 2)
		return;
	snprintf(status, cap, "stopped");
	*pid = 0;
}

static void rfc3339_now(char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + n, cap - n, ".%09ldZ", ts.tv_nsec);
}

static json_t *new_state(const char *id, const char *bundle, json_t *config, pid_t pid)
{
	char created[64];
	rfc3339_now(created, sizeof created);
	json_t *ann = json_object_get(config, "annotations");
	return json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:O}", "ociVersion", "1.1.0", "id", id,
	                 "pid", (json_int_t)pid, "bundle", bundle, "rootfs",
	                 json_string_value(json_object_get(json_object_get(config, "root"),
	                                                   "path")),
	                 "created", created, "annotations", ann ? ann : json_object());
}

int oci_prepare(const char *root, json_t *config, const struct oci_proc *proc,
                const char *bundle, const char *dir, bool make, struct oci_run *run)
{
	char helper[OCI_PATH_MAX];
	run->seccomp_fd = oci_seccomp_compile(json_object_get(json_object_get(config, "linux"),
	                                                      "seccomp"));
	if (run->seccomp_fd == -2 ||
	    (run->seccomp_fd >= 0 && oci_helper_dir(root, helper, sizeof helper) < 0)) {
		if (run->seccomp_fd >= 0)
			close(run->seccomp_fd);
		return -1;
	}
	run->sb = oci_spec_sandbox(config, proc, bundle, dir, make,
	                           run->seccomp_fd >= 0 ? helper : NULL, run->budget);
	if (!run->sb && run->seccomp_fd >= 0)
		close(run->seccomp_fd);
	return run->sb ? 0 : -1;
}

static int create(const char *root, const char *dir, const char *bundle, const char *pid_file,
                  const char *console, int preserve)
{
	char cfg_path[OCI_PATH_MAX], copy[OCI_PATH_MAX];
	if (snprintf(cfg_path, sizeof cfg_path, "%s/config.json", bundle) >= (int)sizeof cfg_path ||
	    oci_state_path(dir, "config.json", copy, sizeof copy) < 0)
		return -1;
	json_t *config = oci_spec_load(cfg_path);
	if (!config)
		return -1;
	struct oci_proc proc;
	int rc = -1;
	if (oci_proc_parse(json_object_get(config, "process"), "process", &proc) < 0)
		goto out_config;
	/* exec rebuilds the sandbox from this copy, whatever the bundle becomes */
	if (json_dump_file(config, copy, JSON_COMPACT) < 0) {
		oci_error("cannot write %s", copy);
		goto out_proc;
	}
	struct oci_run run = { .dir = dir, .proc = &proc, .console_socket = console,
		               .preserve_fds = preserve, .seccomp_fd = -1 };
	if (oci_prepare(root, config, &proc, bundle, dir, true, &run) < 0)
		goto out_proc;
	pid_t pid = oci_super_fork(&run);
	sandlock_sandbox_free(run.sb);
	if (run.seccomp_fd >= 0)
		close(run.seccomp_fd);
	if (pid < 0)
		goto out_proc;
	json_t *st = new_state(strrchr(dir, '/') + 1, bundle, config, pid);
	rc = st && oci_state_write(dir, st) == 0 &&
	     (!pid_file || oci_write_pid_file(pid_file, pid) == 0) ? 0 : -1;
	json_decref(st);
	if (rc < 0) {
		kill(pid, SIGKILL);
		oci_state_wait_dead(dir, 5000);
	}
out_proc:
	oci_proc_free(&proc);
out_config:
	json_decref(config);
	return rc;
}

int oci_cmd_create(const struct oci_global *g, int argc, char **argv)
{
	const char *bundle = ".", *pid_file = NULL, *console = NULL, *preserve = NULL, *pos[1];
	bool ignored;
	const struct oci_opt opts[] = {
		{ "bundle", 'b', true, &bundle, NULL, NULL, NULL },
		{ "pid-file", 0, true, &pid_file, NULL, NULL, NULL },
		{ "console-socket", 0, true, &console, NULL, NULL, NULL },
		{ "preserve-fds", 0, true, &preserve, NULL, NULL, NULL },
		{ "no-pivot", 0, false, NULL, &ignored, NULL, NULL },
		{ "no-new-keyring", 0, false, NULL, &ignored, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL, NULL },
	};
	if (oci_parse(argc, argv, opts, pos, 1, false) != 1) {
		oci_error("create: usage: create ID [--bundle DIR] [--pid-file F] ...");
		return 1;
	}
	char root[OCI_PATH_MAX], dir[OCI_PATH_MAX], abs_bundle[PATH_MAX];
	if (!realpath(bundle, abs_bundle)) {
		oci_error("--bundle %s: %s", bundle, strerror(errno));
		return 1;
	}
	int npreserve = preserve ? atoi(preserve) : 0;
	if (npreserve < 0 || npreserve > 256) {
		oci_error("--preserve-fds %s: 0..256", preserve);
		return 1;
	}
	if (oci_state_root(g->root, root, sizeof root) < 0 ||
	    oci_state_dir(root, pos[0], dir, sizeof dir) < 0 || oci_state_make(dir, pos[0]) < 0)
		return 1;
	if (create(root, dir, abs_bundle, pid_file, console, npreserve) < 0) {
		oci_state_remove(dir);
		return 1;
	}
	return 0;
}

/* start / pause / resume: one request, answered "ok". */
static int simple_request(const struct oci_global *g, int argc, char **argv, const char *req)
{
	const char *pos[1];
	char dir[OCI_PATH_MAX], reply[256];
	if (oci_parse(argc, argv, NULL, pos, 1, false) < 0 ||
	    oci_container_dir(g, pos[0], dir, sizeof dir) < 0)
		return 1;
	if (!oci_state_alive(dir) || oci_ctl_request(dir, req, reply, sizeof reply) < 0) {
		oci_error("cannot %s container \"%s\": it is stopped", req, pos[0]);
		return 1;
	}
	if (strcmp(reply, "ok") != 0) {
		oci_error("cannot %s container \"%s\": %s", req, pos[0], reply + 6);
		return 1;
	}
	return 0;
}

int oci_cmd_start(const struct oci_global *g, int argc, char **argv)
{
	return simple_request(g, argc, argv, "start");
}

int oci_cmd_pause(const struct oci_global *g, int argc, char **argv)
{
	return simple_request(g, argc, argv, "pause");
}

int oci_cmd_resume(const struct oci_global *g, int argc, char **argv)
{
	return simple_request(g, argc, argv, "resume");
}

int oci_cmd_state(const struct oci_global *g, int argc, char **argv)
{
	const char *pos[1];
	char dir[OCI_PATH_MAX], status[16];
	int pid;
	if (oci_parse(argc, argv, NULL, pos, 1, false) < 0 ||
	    oci_container_dir(g, pos[0], dir, sizeof dir) < 0)
		return 1;
	json_t *st = oci_state_read(dir);
	if (!st) {
		oci_error("container \"%s\": its state is unreadable (still being created?)", pos[0]);
		return 1;
	}
	status_of(dir, status, sizeof status, &pid);
	json_object_set_new(st, "status", json_string(status));
	json_object_set_new(st, "pid", json_integer(pid));
	char *out = json_dumps(st, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (out)
		puts(out);
	free(out);
	json_decref(st);
	return out ? 0 : 1;
}

/* "9", "KILL", "SIGKILL" (any case): the number, or -1. */
static int parse_signal(const char *s)
{
	char *end;
	long n = strtol(s, &end, 10);
	if (*s && !*end)
		return n > 0 && n < NSIG ? (int)n : -1;
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (int sig = 1; sig < NSIG; sig++) {
		const char *name = sigabbrev_np(sig);
		if (name && strcasecmp(name, s) == 0)
			return sig;
	}
	return -1;
}

int oci_cmd_kill(const struct oci_global *g, int argc, char **argv)
{
	const char *pos[2];
	bool all = false;
	const struct oci_opt opts[] = {
		{ "all", 'a', false, NULL, &all, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL, NULL },
	};
	char dir[OCI_PATH_MAX], req[64], reply[256];
	if (oci_parse(argc, argv, opts, pos, 2, false) < 0 ||
	    oci_container_dir(g, pos[0], dir, sizeof dir) < 0)
		return 1;
	int sig = pos[1] ? parse_signal(pos[1]) : SIGTERM;
	if (sig < 0) {
		oci_error("kill: '%s' is not a signal", pos[1]);
		return 1;
	}
	snprintf(req, sizeof req, "kill %d%s", sig, all ? " all" : "");
	if (!oci_state_alive(dir) || oci_ctl_request(dir, req, reply, sizeof reply) < 0) {
		oci_error("container \"%s\" is not running", pos[0]);
		return 1;
	}
	if (strcmp(reply, "ok") != 0) {
		oci_error("kill container \"%s\": %s", pos[0], reply + 6);
		return 1;
	}
	return 0;
}

int oci_cmd_delete(const struct oci_global *g, int argc, char **argv)
{
	const char *pos[1];
	bool force = false;
	const struct oci_opt opts[] = {
		{ "force", 'f', false, NULL, &force, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL, NULL },
	};
	char root[OCI_PATH_MAX], dir[OCI_PATH_MAX], status[16], reply[64];
	int pid;
	if (oci_parse(argc, argv, opts, pos, 1, false) != 1 ||
	    oci_state_root(g->root, root, sizeof root) < 0 ||
	    oci_state_dir(root, pos[0], dir, sizeof dir) < 0)
		return 1;
	if (!oci_state_exists(dir)) {
		if (force)
			return 0; /* as runc: nothing to delete is done */
		oci_error("container \"%s\" does not exist", pos[0]);
		return 1;
	}
	status_of(dir, status, sizeof status, &pid);
	if ((strcmp(status, "running") == 0 || strcmp(status, "paused") == 0) && !force) {
		oci_error("cannot delete container \"%s\": it is %s (stop it, or --force)",
		          pos[0], status);
		return 1;
	}
	if (strcmp(status, "stopped") != 0) {
		/* created (never started) or forced: end it, then wait for the
		 * supervisor, so nothing of it outlives the state directory. */
		oci_ctl_request(dir, "kill 9 all", reply, sizeof reply);
		if (!oci_state_wait_dead(dir, 10000)) {
			oci_error("container \"%s\": its supervisor (pid %d) does not exit", pos[0], pid);
			return 1;
		}
	}
	return oci_state_remove(dir) < 0 ? 1 : 0;
}
