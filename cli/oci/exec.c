/*
 * exec.c — a new process in a running container: a second sandbox built
 * from the container's config.json (same rootfs view, mounts and their
 * scratch directories, policy and limits), with the process of
 * --process or of the command line.  Its supervisor attaches to the
 * container's, so it ends with the container and `kill --all` reaches it.
 * Its limits are the container's budget, shared (share_budget: its
 * cgroups below the container's, processes counted with the container's),
 * as runc's exec joins the container's cgroup.
 */
#include "cmds.h"
#include "ctl.h"
#include "log.h"
#include "spec.h"
#include "state.h"
#include "super.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The process from the command line: the container's process with args,
 * cwd, env and terminal replaced. */
static json_t *cli_process(json_t *base, const char **args, int nargs, const char *cwd,
                           const char **env, int nenv, bool tty)
{
	json_t *p = json_deep_copy(base);
	json_t *a = json_array();
	for (int i = 0; i < nargs; i++)
		json_array_append_new(a, json_string(args[i]));
	json_object_set_new(p, "args", a);
	if (cwd)
		json_object_set_new(p, "cwd", json_string(cwd));
	json_t *e = json_object_get(p, "env");
	if (!json_is_array(e))
		json_object_set_new(p, "env", e = json_array());
	for (int i = 0; i < nenv; i++)
		json_array_append_new(e, json_string(env[i]));
	json_object_set_new(p, "terminal", json_boolean(tty));
	return p;
}

/* The init of the container's sandbox (its supervisor's "status" reply):
 * the exec shares its budget.  0 if the container is not running. */
static pid_t container_init(const char *dir)
{
	char reply[128], status[16];
	int sup = 0, init = 0;
	if (oci_ctl_request(dir, "status", reply, sizeof reply) < 0 ||
	    sscanf(reply, "%15s %d %d", status, &sup, &init) != 3 ||
	    (strcmp(status, "running") && strcmp(status, "paused")))
		return 0;
	return (pid_t)init;
}

/* Can a cgroup be made below the v2 group of pid (share_budget)?  Not
 * for a rootless engine without delegation: the exec then keeps a
 * budget of its own, said in the log, rather than fail every exec. */
static bool can_share(pid_t pid)
{
	char file[64], line[1024] = "", dir[OCI_PATH_MAX];
	snprintf(file, sizeof file, "/proc/%d/cgroup", (int)pid);
	FILE *f = fopen(file, "re");
	while (f && fgets(line, sizeof line, f) && strncmp(line, "0::", 3) != 0)
		line[0] = '\0';
	if (f)
		fclose(f);
	line[strcspn(line, "\n")] = '\0';
	/* cgroup2 at /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host */
	static const char *const mounts[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
	for (size_t i = 0; line[0] && i < 2; i++) {
		char probe[OCI_PATH_MAX + 16];
		if (snprintf(dir, sizeof dir, "%s%s", mounts[i], line + 3) >= (int)sizeof dir)
			return false;
		snprintf(probe, sizeof probe, "%s/cgroup.procs", dir);
		if (access(probe, F_OK) == 0)
			return access(dir, W_OK) == 0;
	}
	return false;
}

static int wait_status(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 255;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int oci_cmd_exec(const struct oci_global *g, int argc, char **argv)
{
	const char *process = NULL, *pid_file = NULL, *console = NULL, *cwd = NULL,
	           *preserve = NULL, *ignored = NULL, *env[64], *pos[256];
	int nenv = 0;
	bool detach = false, tty = false, flag = false;
	const struct oci_opt opts[] = {
		{ "process", 'p', true, &process, NULL, NULL, NULL },
		{ "pid-file", 0, true, &pid_file, NULL, NULL, NULL },
		{ "console-socket", 0, true, &console, NULL, NULL, NULL },
		{ "cwd", 0, true, &cwd, NULL, NULL, NULL },
		{ "env", 'e', true, NULL, NULL, env, &nenv },
		{ "preserve-fds", 0, true, &preserve, NULL, NULL, NULL },
		{ "user", 'u', true, &ignored, NULL, NULL, NULL },
		{ "process-label", 0, true, &ignored, NULL, NULL, NULL },
		{ "apparmor", 0, true, &ignored, NULL, NULL, NULL },
		{ "cap", 'c', true, &ignored, NULL, NULL, NULL },
		{ "detach", 'd', false, NULL, &detach, NULL, NULL },
		{ "tty", 't', false, NULL, &tty, NULL, NULL },
		{ "no-new-privs", 0, false, NULL, &flag, NULL, NULL },
		{ NULL, 0, false, NULL, NULL, NULL, NULL },
	};
	int npos = oci_parse(argc, argv, opts, pos, 256, true);
	char dir[OCI_PATH_MAX], cfg_path[OCI_PATH_MAX];
	if (npos < 1 || oci_container_dir(g, pos[0], dir, sizeof dir) < 0)
		return npos < 1 ? (oci_error("exec: a container id is needed"), 1) : 1;
	if (ignored)
		oci_warn("exec: --user/--cap/--apparmor/--process-label ignored");
	json_t *st = oci_state_read(dir);
	json_t *config = oci_state_path(dir, "config.json", cfg_path, sizeof cfg_path) == 0
	                 ? oci_spec_load(cfg_path) : NULL;
	json_t *pj = NULL;
	if (process) {
		json_error_t je;
		pj = json_load_file(process, 0, &je);
		if (!pj)
			oci_error("--process %s: %s", process, je.text);
	} else if (npos < 2) {
		oci_error("exec: give --process FILE or a command");
	} else if (config) {
		pj = cli_process(json_object_get(config, "process"), pos + 1, npos - 1, cwd, env, nenv,
		                 tty);
	}
	struct oci_proc proc;
	int rc = 1;
	if (!st || !config || !pj || oci_proc_parse(pj, "process", &proc) < 0)
		goto out;
	struct oci_run run = { .dir = dir, .proc = &proc, .console_socket = console,
		               .preserve_fds = preserve ? atoi(preserve) : 0, .exec = true,
		               .seccomp_fd = -1, .budget = container_init(dir) };
	if (run.budget <= 0) {
		oci_error("exec: container %s is not running", pos[0]);
		goto out_proc;
	}
	if (!can_share(run.budget)) {
		oci_warn("exec: no cgroup can be made below the container's (a rootless engine "
		         "without cgroup v2 delegation): the exec's limits are a budget of its own");
		run.budget = 0;
	}
	char root[OCI_PATH_MAX];
	pid_t pid = oci_state_root(g->root, root, sizeof root) == 0 &&
	            oci_prepare(root, config, &proc, json_string_value(json_object_get(st, "bundle")),
	                        dir, false, &run) == 0 ? oci_super_fork(&run) : -1;
	sandlock_sandbox_free(run.sb);
	if (run.seccomp_fd >= 0)
		close(run.seccomp_fd);
	if (pid > 0 && (!pid_file || oci_write_pid_file(pid_file, pid) == 0))
		rc = detach ? 0 : wait_status(pid);
	else if (pid > 0)
		kill(pid, SIGKILL);
out_proc:
	oci_proc_free(&proc);
out:
	json_decref(pj);
	json_decref(config);
	json_decref(st);
	return rc;
}
