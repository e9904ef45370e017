/*
 * spec.c — config.json's process, and the sandbox for the rest of it.
 *
 * Mounts are mounts.c's, the engine's seccomp profile seccomp.c's and
 * sandlock.* annotations annot.c's; this file reads the process object,
 * root, hostname, linux.resources and the settings sandlock honours by
 * its own means (namespaces, capabilities, noNewPrivileges).
 */
#include "spec.h"
#include "annot.h"
#include "log.h"
#include "mounts.h"
#include "seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- process ---- */

static const struct { const char *name; int res; } rlimit_names[] = {
	{ "RLIMIT_AS", RLIMIT_AS },         { "RLIMIT_CORE", RLIMIT_CORE },
	{ "RLIMIT_CPU", RLIMIT_CPU },       { "RLIMIT_DATA", RLIMIT_DATA },
	{ "RLIMIT_FSIZE", RLIMIT_FSIZE },   { "RLIMIT_LOCKS", RLIMIT_LOCKS },
	{ "RLIMIT_MEMLOCK", RLIMIT_MEMLOCK }, { "RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE },
	{ "RLIMIT_NICE", RLIMIT_NICE },     { "RLIMIT_NOFILE", RLIMIT_NOFILE },
	{ "RLIMIT_NPROC", RLIMIT_NPROC },   { "RLIMIT_RSS", RLIMIT_RSS },
	{ "RLIMIT_RTPRIO", RLIMIT_RTPRIO }, { "RLIMIT_RTTIME", RLIMIT_RTTIME },
	{ "RLIMIT_SIGPENDING", RLIMIT_SIGPENDING }, { "RLIMIT_STACK", RLIMIT_STACK },
};

/* A NULL-terminated array of the strings of a JSON array (borrowed). */
static char **str_array(json_t *a, const char *what, size_t *n)
{
	size_t len = json_is_array(a) ? json_array_size(a) : 0;
	char **v = calloc(len + 1, sizeof *v);
	if (!v)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		const char *s = json_string_value(json_array_get(a, i));
		if (!s) {
			oci_error("%s[%zu]: not a string", what, i);
			free(v);
			return NULL;
		}
		v[i] = (char *)s;
	}
	if (n)
		*n = len;
	return v;
}

static int parse_rlimits(json_t *a, const char *what, struct oci_proc *p)
{
	size_t i;
	json_t *r;
	json_array_foreach(a, i, r) {
		const char *type = json_string_value(json_object_get(r, "type"));
		int res = -1;
		for (size_t k = 0; type && k < sizeof rlimit_names / sizeof *rlimit_names; k++)
			if (strcmp(type, rlimit_names[k].name) == 0)
				res = rlimit_names[k].res;
		if (res < 0) {
			oci_error("%s.rlimits[%zu].type '%s': not a Linux rlimit", what, i,
			          type ? type : "?");
			return -1;
		}
		for (size_t k = 0; k < p->nrl; k++)
			if (p->rl[k].resource == res) {
				oci_error("%s.rlimits: %s given twice", what, type);
				return -1;
			}
		if (p->nrl == OCI_MAX_RLIMITS)
			return -1;
		p->rl[p->nrl++] = (struct oci_rlimit){
			.resource = res,
			.soft = (uint64_t)json_integer_value(json_object_get(r, "soft")),
			.hard = (uint64_t)json_integer_value(json_object_get(r, "hard")),
		};
	}
	return 0;
}

static int parse_user(json_t *u, const char *what, struct oci_proc *p)
{
	p->uid = (uid_t)json_integer_value(json_object_get(u, "uid"));
	p->gid = (gid_t)json_integer_value(json_object_get(u, "gid"));
	json_t *um = json_object_get(u, "umask");
	if (json_is_integer(um)) {
		p->has_umask = true;
		p->umask = (mode_t)json_integer_value(um) & 0777;
	}
	if (json_object_get(u, "username")) {
		oci_error("%s.user.username: Windows only", what);
		return -1;
	}
	size_t i;
	json_t *g;
	json_array_foreach(json_object_get(u, "additionalGids"), i, g) {
		if (p->ngids == sizeof p->gids / sizeof *p->gids) {
			oci_error("%s.user.additionalGids: more than 64", what);
			return -1;
		}
		p->gids[p->ngids++] = (gid_t)json_integer_value(g);
	}
	return 0;
}

static int check_user(const struct oci_proc *p);

/* Settings sandlock applies its own way, or that the spec makes optional. */
static void log_process_extras(json_t *pr, const char *what)
{
	if (json_object_get(pr, "capabilities"))
		oci_info("%s.capabilities: every capability is dropped in a sandlock sandbox", what);
	if (json_is_false(json_object_get(pr, "noNewPrivileges")))
		oci_info("%s.noNewPrivileges false: sandlock always sets no_new_privs", what);
	static const char *const optional[] = { "apparmorProfile", "selinuxLabel",
		                                "ioPriority", "scheduler", "execCPUAffinity" };
	for (size_t i = 0; i < sizeof optional / sizeof *optional; i++)
		if (json_object_get(pr, optional[i]))
			oci_warn("%s.%s: not applied (optional; no equivalent in sandlock)", what,
			         optional[i]);
}

int oci_proc_parse(json_t *pr, const char *what, struct oci_proc *p)
{
	memset(p, 0, sizeof *p);
	if (!json_is_object(pr)) {
		oci_error("%s: missing or not an object", what);
		return -1;
	}
	p->json = json_incref(pr);
	char field[64];
	snprintf(field, sizeof field, "%s.args", what);
	p->argv = str_array(json_object_get(pr, "args"), field, &p->argc);
	if (!p->argv)
		goto fail;
	if (p->argc == 0) {
		oci_error("%s.args: empty; the container needs a command", what);
		goto fail;
	}
	snprintf(field, sizeof field, "%s.env", what);
	p->env = str_array(json_object_get(pr, "env"), field, NULL);
	if (!p->env)
		goto fail;
	p->cwd = json_string_value(json_object_get(pr, "cwd"));
	if (!p->cwd || p->cwd[0] != '/') {
		oci_error("%s.cwd: must be an absolute path", what);
		goto fail;
	}
	p->terminal = json_is_true(json_object_get(pr, "terminal"));
	json_t *cs = json_object_get(pr, "consoleSize");
	p->rows = (unsigned)json_integer_value(json_object_get(cs, "height"));
	p->cols = (unsigned)json_integer_value(json_object_get(cs, "width"));
	json_t *oom = json_object_get(pr, "oomScoreAdj");
	p->has_oom = json_is_integer(oom);
	p->oom = (int)json_integer_value(oom);
	if (parse_user(json_object_get(pr, "user"), what, p) < 0 || check_user(p) < 0 ||
	    parse_rlimits(json_object_get(pr, "rlimits"), what, p) < 0)
		goto fail;
	log_process_extras(pr, what);
	return 0;
fail:
	oci_proc_free(p);
	return -1;
}

void oci_proc_free(struct oci_proc *p)
{
	free(p->argv);
	free(p->env);
	json_decref(p->json);
	memset(p, 0, sizeof *p);
}

/* An rlimit above our own hard limit needs CAP_SYS_RESOURCE, which an
 * unprivileged runtime lacks and engines ask for by default (podman:
 * NOFILE 1048576): the limit is lowered to ours and logged, never raised. */
static int apply_rlimit(const struct oci_rlimit *r)
{
	struct rlimit want = { .rlim_cur = r->soft, .rlim_max = r->hard }, have;
	if (want.rlim_cur > want.rlim_max) {
		oci_error("process.rlimits: soft limit %llu above hard limit %llu",
		          (unsigned long long)r->soft, (unsigned long long)r->hard);
		return -1;
	}
	if (setrlimit(r->resource, &want) == 0)
		return 0;
	if (errno != EPERM || getrlimit(r->resource, &have) < 0) {
		oci_error("process.rlimits: setrlimit(%d): %s", r->resource, strerror(errno));
		return -1;
	}
	struct rlimit clamped = {
		.rlim_cur = want.rlim_cur < have.rlim_max ? want.rlim_cur : have.rlim_max,
		.rlim_max = want.rlim_max < have.rlim_max ? want.rlim_max : have.rlim_max,
	};
	oci_warn("process.rlimits: resource %d hard %llu is above the runtime's own %llu "
	         "(raising needs CAP_SYS_RESOURCE): lowered to it", r->resource,
	         (unsigned long long)r->hard, (unsigned long long)have.rlim_max);
	return setrlimit(r->resource, &clamped);
}

/*
 * The sandbox's processes run as the runtime's own user.  Another user
 * cannot work without mount namespaces, root or not: the kernel itself
 * performs the container's exec and chdir by their host path (the view
 * rewrites the guest's path, execpath.h), and that path lies in the
 * engine's storage, whose directories are private to the engine's user
 * (podman's /var/lib/containers/storage is 0700 root): the guest's user
 * could not traverse them.  Refused, naming the field and the ways out.
 */
static int check_user(const struct oci_proc *p)
{
	if (p->uid != getuid() || p->gid != getgid()) {
		oci_error("process.user %u:%u: sandlock-oci runs the container as the runtime's "
		          "own user (%u:%u): without mount namespaces the kernel runs the command "
		          "by its host path in the engine's storage, which another user cannot "
		          "traverse. Run it as %u:%u (podman: no --user, or --user %u:%u over an "
		          "image USER), run the engine as user %u, or use runc for this container",
		          (unsigned)p->uid, (unsigned)p->gid, (unsigned)getuid(),
		          (unsigned)getgid(), (unsigned)getuid(), (unsigned)getgid(),
		          (unsigned)getuid(), (unsigned)getgid(), (unsigned)p->uid);
		return -1;
	}
	for (size_t i = 0; i < p->ngids; i++)
		if (p->gids[i] != getgid()) {
			oci_warn("process.user.additionalGids: %u not applied (the runtime's own "
			         "groups stay)", (unsigned)p->gids[i]);
		}
	return 0;
}

int oci_proc_apply_self(const struct oci_proc *p)
{
	for (size_t i = 0; i < p->nrl; i++)
		if (apply_rlimit(&p->rl[i]) < 0)
			return -1;
	if (p->has_umask)
		umask(p->umask);
	if (p->has_oom) {
		int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
		char v[16];
		int n = snprintf(v, sizeof v, "%d", p->oom);
		if (fd < 0 || write(fd, v, (size_t)n) != n)
			oci_warn("process.oomScoreAdj %d: %s", p->oom, strerror(errno));
		if (fd >= 0)
			close(fd);
	}
	return 0;
}

/* ---- the configuration ---- */

json_t *oci_spec_load(const char *path)
{
	json_error_t je;
	json_t *c = json_load_file(path, 0, &je);
	if (!c) {
		oci_error("%s: %s (line %d)", path, je.text, je.line);
		return NULL;
	}
	const char *v = json_string_value(json_object_get(c, "ociVersion"));
	if (!v || strncmp(v, "1.", 2) != 0) {
		oci_error("%s: ociVersion '%s': this runtime implements 1.x", path, v ? v : "");
		json_decref(c);
		return NULL;
	}
	if (!json_string_value(json_object_get(json_object_get(c, "root"), "path"))) {
		oci_error("%s: root.path missing (sandlock needs the root filesystem as a "
		          "directory)", path);
		json_decref(c);
		return NULL;
	}
	return c;
}

/* Keys of an object that must be absent: the spec requires them honoured. */
static int refuse(json_t *obj, const char *prefix, const char *const *keys, size_t n,
                  const char *why)
{
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_object_get(obj, keys[i]);
		if (v && !json_is_null(v) &&
		    !(json_is_array(v) && json_array_size(v) == 0) &&
		    !(json_is_object(v) && json_object_size(v) == 0)) {
			oci_error("%s%s: %s", prefix, keys[i], why);
			return -1;
		}
	}
	return 0;
}

/* Present, but not applied: optional or logged by intent. */
static void note(json_t *obj, const char *prefix, const char *const *keys, size_t n,
                 const char *why)
{
	for (size_t i = 0; i < n; i++)
		if (json_object_get(obj, keys[i]))
			oci_warn("%s%s: %s", prefix, keys[i], why);
}

#define ARRAY_N(a) (sizeof(a) / sizeof *(a))

static int resources_cpu(sandlock_builder_t *b, json_t *cpu)
{
	json_t *quota = json_object_get(cpu, "quota");
	long long period = json_integer_value(json_object_get(cpu, "period"));
	if (json_is_integer(quota) && json_integer_value(quota) > 0) {
		if (period <= 0)
			period = 100000; /* the kernel's default CFS period */
		long long pct = json_integer_value(quota) * 100 / period;
		if (pct > 100) {
			oci_error("linux.resources.cpu: quota/period = %lld%% of a core; sandlock's "
			          "max_cpu is at most one core (100%%): ask for --cpus 1 or less", pct);
			return -1;
		}
		sandlock_sandbox_builder_max_cpu(b, pct < 1 ? 1 : (uint32_t)pct);
	}
	const char *cpus = json_string_value(json_object_get(cpu, "cpus"));
	for (const char *p = cpus; p && *p;) {
		char *end;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;
		if (*end == '-')
			hi = strtoul(end + 1, &end, 10);
		if (end == p || hi < lo || hi > 4095 || (*end && *end != ',')) {
			oci_error("linux.resources.cpu.cpus '%s': not a CPU list", cpus);
			return -1;
		}
		for (unsigned long c = lo; c <= hi; c++)
			sandlock_sandbox_builder_cpu_core(b, (uint32_t)c);
		p = *end ? end + 1 : end;
	}
	static const char *const weights[] = { "shares", "realtimeRuntime", "realtimePeriod",
		                               "mems", "idle", "burst" };
	note(cpu, "linux.resources.cpu.", weights, ARRAY_N(weights),
	     "not applied (a weight or placement, no limit; sandlock has no equivalent)");
	return 0;
}

static int resources(sandlock_builder_t *b, json_t *res)
{
	json_t *mem = json_object_get(res, "memory");
	long long limit = json_integer_value(json_object_get(mem, "limit"));
	if (limit > 0)
		sandlock_sandbox_builder_max_memory(b, (uint64_t)limit);
	static const char *const memx[] = { "reservation", "swap", "kernel", "kernelTCP",
		                            "swappiness", "disableOOMKiller", "useHierarchy",
		                            "checkBeforeUpdate" };
	note(mem, "linux.resources.memory.", memx, ARRAY_N(memx),
	     "not applied (sandlock enforces the limit only)");
	json_t *pids = json_object_get(json_object_get(res, "pids"), "limit");
	if (json_is_integer(pids)) {
		long long n = json_integer_value(pids);
		if (n > UINT32_MAX) {
			oci_error("linux.resources.pids.limit %lld: too large", n);
			return -1;
		}
		/* 0 and -1 mean no limit in the spec; so does sandlock's 0. */
		sandlock_sandbox_builder_max_processes(b, n > 0 ? (uint32_t)n : 0);
	} else {
		sandlock_sandbox_builder_max_processes(b, 0); /* the engine set none */
	}
	if (resources_cpu(b, json_object_get(res, "cpu")) < 0)
		return -1;
	static const char *const other[] = { "blockIO", "hugepageLimits", "network", "rdma",
		                             "unified" };
	note(res, "linux.resources.", other, ARRAY_N(other),
	     "not applied (no cgroup of its own; see docs/oci.md)");
	return 0;
}

/* Namespaces are sandlock's by intent: the view is the mount namespace,
 * the /proc policy the pid one, the virtual hostname the uts one, the
 * SysV IPC deny the ipc one, the network rules the network one. */
static int namespaces(sandlock_builder_t *b, json_t *linux, bool *net_isolated)
{
	size_t i;
	json_t *ns;
	*net_isolated = false;
	json_array_foreach(json_object_get(linux, "namespaces"), i, ns) {
		const char *type = json_string_value(json_object_get(ns, "type"));
		const char *path = json_string_value(json_object_get(ns, "path"));
		if (!type) {
			oci_error("linux.namespaces[%zu].type missing", i);
			return -1;
		}
		if (strcmp(type, "user") == 0 || strcmp(type, "cgroup") == 0 ||
		    strcmp(type, "time") == 0) {
			if (strcmp(type, "cgroup") == 0) {
				oci_info("linux.namespaces: cgroup: the sandbox sees no cgroup tree");
				continue;
			}
			oci_error("linux.namespaces: a %s namespace is not supported by sandlock "
			          "(no namespaces); drop it (podman: --userns=host)", type);
			return -1;
		}
		if (strcmp(type, "network") == 0)
			*net_isolated = true;
		if (path)
			oci_warn("linux.namespaces: %s path %s not joined: sandlock confines "
			         "without namespaces", type, path);
	}
	(void)b;
	if (json_array_size(json_object_get(linux, "uidMappings")) ||
	    json_array_size(json_object_get(linux, "gidMappings"))) {
		oci_error("linux.uidMappings/gidMappings: user namespaces are not supported by "
		          "sandlock; run without an id mapping (podman: --userns=host)");
		return -1;
	}
	return 0;
}

static int linux_section(sandlock_builder_t *b, json_t *linux)
{
	bool net_isolated;
	if (namespaces(b, linux, &net_isolated) < 0 ||
	    resources(b, json_object_get(linux, "resources")) < 0)
		return -1;
	/* No network namespace: the container shares the host's network, so no
	 * network rule; with one, sandlock's default (no TCP, UDP, ICMP) is the
	 * isolated stack, opened by sandlock.net-allow annotations. */
	if (!net_isolated) {
		sandlock_sandbox_builder_net_allow_spec(b, "*:*");
		sandlock_sandbox_builder_net_allow_bind_spec(b, "*");
	}
	static const char *const hard[] = { "intelRdt", "personality", "devices" };
	if (refuse(linux, "linux.", hard, ARRAY_N(hard), "not supported by sandlock") < 0)
		return -1;
	if (json_object_size(json_object_get(linux, "sysctl")))
		oci_warn("linux.sysctl: not applied (sysctls are per-namespace kernel settings; "
		         "the sandbox shares the host's)");
	if (json_object_get(linux, "rootfsPropagation") || json_object_get(linux, "mountLabel"))
		oci_info("linux.rootfsPropagation/mountLabel: no mounts are made");
	if (json_object_get(linux, "cgroupsPath"))
		oci_info("linux.cgroupsPath: the sandbox's limits use sandlock's own cgroups");
	return 0;
}

/* Does a bind mount bring a host /dev (or a directory in it) into the view? */
static bool binds_devices(json_t *c)
{
	size_t i;
	json_t *m;
	json_array_foreach(json_object_get(c, "mounts"), i, m) {
		const char *src = json_string_value(json_object_get(m, "source"));
		const char *type = json_string_value(json_object_get(m, "type"));
		if (src && type && strcmp(type, "bind") == 0 &&
		    (strcmp(src, "/dev") == 0 || strncmp(src, "/dev/", 5) == 0 || strcmp(src, "/") == 0))
			return true;
	}
	return false;
}

sandlock_sandbox_t *oci_spec_sandbox(json_t *c, const struct oci_proc *proc,
                                     const char *bundle, const char *scratch, bool make,
                                     const char *helper_dir, pid_t budget)
{
	static const char *const hard[] = { "hooks", "windows", "solaris", "vm", "zos" };
	if (refuse(c, "", hard, ARRAY_N(hard), "not supported by sandlock-oci") < 0)
		return NULL;
	sandlock_builder_t *b = sandlock_sandbox_builder_new();
	if (!b)
		return NULL;
	const char *host = json_string_value(json_object_get(c, "hostname"));
	if (host && *host)
		sandlock_sandbox_builder_name(b, host);
	if (json_object_get(c, "domainname"))
		oci_warn("domainname: not applied (sandlock virtualizes the hostname only)");
	/* env: the runtime's own environment never reaches the container. */
	sandlock_sandbox_builder_clean_env(b, true);
	for (char **e = proc->env; *e; e++) {
		char *eq = strchr(*e, '=');
		if (!eq) {
			oci_error("process.env '%s': not KEY=VALUE", *e);
			goto fail;
		}
		*eq = '\0';
		sandlock_sandbox_builder_env_var(b, *e, eq + 1);
		*eq = '=';
	}
	if (oci_mounts_apply(b, c, bundle, scratch, make) < 0 ||
	    linux_section(b, json_object_get(c, "linux")) < 0 ||
	    oci_annot_apply(b, json_object_get(c, "annotations")) < 0)
		goto fail;
	if (helper_dir)
		sandlock_sandbox_builder_fs_mount_ro(b, OCI_HELPER_GUEST_DIR, helper_dir);
	/* An exec: one budget with its container (memory, CPU, processes),
	 * as runc's exec joins the container's cgroup. */
	if (budget > 0)
		sandlock_sandbox_builder_share_budget(b, (int32_t)budget);
	sandlock_sandbox_builder_cwd(b, proc->cwd);
	/* The container's stdio are the engine's fds (or our pty). */
	sandlock_sandbox_builder_inherit_stdio(b, true);
	/* A terminal's shell opens /dev/tty (the pty, through the minimal /dev)
	 * and asks it for its foreground group: an ioctl Landlock's device
	 * rule refuses on a file opened inside the sandbox, which turns job
	 * control off.  The view holds no other device an ioctl could reach
	 * unless a bind mount brings one: then it stays refused. */
	if (proc->terminal && !binds_devices(c))
		sandlock_sandbox_builder_disable(b, SANDLOCK_PROTECTION_FS_IOCTL_DEV);
	int err = 0;
	char *msg = NULL;
	sandlock_sandbox_t *sb = sandlock_sandbox_build(b, &err, &msg);
	if (!sb) {
		oci_error("config.json: %s", msg ? msg : "invalid configuration");
		sandlock_string_free(msg);
	}
	return sb;
fail:
	sandlock_sandbox_builder_free(b);
	return NULL;
}
