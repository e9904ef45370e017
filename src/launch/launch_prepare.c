/*
 * launch_prepare.c — everything a run needs that allocates or may fail,
 * done in the caller before fork: the command's argv, environment and
 * executable path and the Landlock ruleset.  After fork the child may
 * only use what is prepared here (launch_child.c).  The BPF program is
 * built here too, but called for by the parent after fork
 * (sl_launch_build_prog), and sent to the child.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths/chroot.h"
#include "launch/filter.h"
#include "launch/devmin.h"
#include "builder/gpu.h"
#include "launch/landlock.h"
#include "launch/mechs.h"
#include "launch/tmpdir.h"
#include "launch/launch.h"

extern char **environ;

#define SL_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

/* Replace or append "K=V" in env, keyed on the part before '='. */
static int env_set(sl_strvec *env, const char *kv)
{
	size_t klen = strcspn(kv, "=");
	for (size_t i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], kv, klen) == 0 && env->v[i][klen] == '=') {
			char *c = strdup(kv);
			if (!c)
				return -1;
			free(env->v[i]);
			env->v[i] = c;
			return 0;
		}
	}
	return sl_strvec_push(env, kv);
}

static const char *env_get(const sl_strvec *env, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < env->n; i++)
		if (strncmp(env->v[i], key, klen) == 0 && env->v[i][klen] == '=')
			return env->v[i] + klen + 1;
	return NULL;
}

/* Remove every "K=..." of env. */
static void env_unset(sl_strvec *env, const char *key)
{
	size_t klen = strlen(key), j = 0;
	for (size_t i = 0; i < env->n; i++) {
		if (strncmp(env->v[i], key, klen) == 0 && env->v[i][klen] == '=')
			free(env->v[i]);
		else
			env->v[j++] = env->v[i];
	}
	env->n = j;
	if (env->v)
		env->v[j] = NULL;
}

/*
 * The clean environment keeps only what most programs need to behave
 * (the reference SDK's minimal set), from the caller where it has them;
 * PATH falls back to a default so bare command names still resolve.
 */
static int push_minimal_env(sl_strvec *env)
{
	static const char *const keep[] = { "PATH", "HOME", "USER", "TERM", "LANG" };
	for (size_t i = 0; i < sizeof(keep) / sizeof(keep[0]); i++) {
		const char *v = getenv(keep[i]);
		if (!v && i == 0)
			v = SL_DEFAULT_PATH;
		if (!v)
			continue;
		char *kv = sl_asprintf("%s=%s", keep[i], v);
		int rc = kv ? sl_strvec_push(env, kv) : -1;
		free(kv);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* gpu_devices with indices: the GPU runtimes number only those (before
 * the overrides, so an explicit env setting wins). */
static int gpu_env(const struct sandlock_sandbox *cfg, sl_strvec *env)
{
	char vis[SL_MAX_GPUS * 4 + 1], kv[sizeof vis + 32];
	if (!sl_gpu_visible(cfg, vis, sizeof vis))
		return 0;
	snprintf(kv, sizeof kv, "CUDA_VISIBLE_DEVICES=%s", vis);
	if (env_set(env, kv) < 0)
		return -1;
	snprintf(kv, sizeof kv, "ROCR_VISIBLE_DEVICES=%s", vis);
	return env_set(env, kv);
}

/*
 * Without pidfd_getfd (a container's default seccomp profile), a
 * sendmsg/sendmmsg is performed on a socket sandlock made and keeps in
 * the caller's place (netdest/ndsock.c), each one a trip through the
 * supervisor, but a plain send() on a connected socket is never trapped.
 * glibc's resolver connects its UDP socket and then sends its A and AAAA
 * queries together with sendmmsg, unless told "single-request", when it
 * sends them one at a time with send().  RES_OPTIONS (resolv.conf(5))
 * says so without touching any file (the connect is still checked
 * against the rules).  Added to what the environment has; an explicit
 * env override still wins.
 */
static int resolver_env(sl_strvec *env)
{
	if (sl_mech_getfd())
		return 0;
	const char *cur = env_get(env, "RES_OPTIONS");
	if (cur && strstr(cur, "single-request"))
		return 0;
	char *kv = sl_asprintf("RES_OPTIONS=%s%ssingle-request", cur ? cur : "",
	                       cur && *cur ? " " : "");
	int rc = kv ? env_set(env, kv) : -1;
	free(kv);
	return rc;
}

/* The sandbox environment: inherited or clean, then the overrides. */
int sl_launch_build_env(const struct sandlock_sandbox *cfg, sl_strvec *env)
{
	if (cfg->clean_env) {
		if (push_minimal_env(env) < 0)
			return -1;
	} else {
		for (char **e = environ; e && *e; e++)
			if (strchr(*e, '=') && env_set(env, *e) < 0)
				return -1;
	}
	if (gpu_env(cfg, env) < 0 || resolver_env(env) < 0)
		return -1;
	for (size_t i = 0; i < cfg->env.n; i++)
		if (env_set(env, cfg->env.v[i]) < 0)
			return -1;
	/* A credential's env: variable never reaches the guest (the proxy
	 * holds its value), even when an override named it again. */
	for (size_t i = 0; i < cfg->http.creds.n; i++)
		if (cfg->http.creds.v[i].env_var)
			env_unset(env, cfg->http.creds.v[i].env_var);
	return 0;
}

/* argv[0] with a '/' is used as is; otherwise search the sandbox's PATH. */
static char *resolve_exe(const char *name, const sl_strvec *env)
{
	if (strchr(name, '/'))
		return sl_strdup(name);
	const char *path = env_get(env, "PATH");
	if (!path || !*path)
		path = SL_DEFAULT_PATH;
	char *dup = sl_strdup(path);
	if (!dup)
		return NULL;
	char *save = NULL, *found = NULL;
	for (char *dir = strtok_r(dup, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		char *cand = sl_asprintf("%s/%s", *dir ? dir : ".", name);
		if (cand && access(cand, X_OK) == 0)
			found = cand;
		else
			free(cand);
	}
	free(dup);
	return found;
}

/* A PATH_MAX buffer holding name: the chroot builtin overwrites it with
 * the host path of the exec, which may be longer. */
static char *guest_exe_buf(const char *name)
{
	char *b = calloc(1, PATH_MAX);
	if (b)
		snprintf(b, PATH_MAX, "%s", name);
	return b;
}

/*
 * Under chroot: the command is a guest path (the chroot builtin rewrites
 * the exec), found on PATH inside the view.  NULL if not found there.
 */
static char *resolve_guest_exe(const struct sl_view *v, const char *name, const sl_strvec *env)
{
	if (strchr(name, '/'))
		return guest_exe_buf(name);
	const char *path = env_get(env, "PATH");
	char *dup = v ? sl_strdup(path && *path ? path : SL_DEFAULT_PATH) : NULL;
	char *save = NULL, *found = NULL;
	for (char *dir = dup ? strtok_r(dup, ":", &save) : NULL; dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char *cand = dir[0] == '/' ? sl_asprintf("%s/%s", dir, name) : NULL;
		bool ro;
		int fd = cand ? sl_view_open(v, cand, O_PATH, &ro) : -1;
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			found = guest_exe_buf(cand);
		free(cand);
		if (fd >= 0)
			close(fd);
	}
	free(dup);
	return found;
}

static int copy_argv(struct sl_launch *L, const char *const *argv, uint32_t argc)
{
	L->argv = calloc((size_t)argc + 1, sizeof(char *));
	if (!L->argv)
		return -1;
	for (uint32_t i = 0; i < argc; i++)
		if (!(L->argv[i] = strdup(argv[i])))
			return -1;
	return 0;
}

static void launch_init(struct sl_launch *L, const struct sandlock_sandbox *cfg)
{
	memset(L, 0, sizeof(*L));
	L->cfg = cfg;
	L->ruleset_fd = L->pidfd = L->cmd_pidfd = L->listener = -1;
	L->out_fd = L->err_fd = L->sync_fd = -1;
	L->pid = L->cmd_pid = -1;
	for (int i = 0; i < 3; i++) {
		L->stdio_mode[i] = cfg->inherit_stdio ? SANDLOCK_STDIO_INHERIT : SANDLOCK_STDIO_CAPTURE;
		L->stdio_fd[i] = L->pipe_fd[i] = -1;
	}
	L->cgroup_dir = L->cgroup_procs = -1;
	sl_tty_init(&L->tty);
	sl_cg_init(&L->cg);
}

bool sl_launch_inherits_all(const struct sl_launch *L)
{
	for (int i = 0; i < 3; i++)
		if (L->stdio_mode[i] != SANDLOCK_STDIO_INHERIT)
			return false;
	return true;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* pass_fds: open caller fds above 2, copied; sorted and unique, or, in
 * order, as given (then a repeat is an error: it would hold two places). */
static int set_keep_fds(struct sl_launch *L, const int32_t *fds, size_t n, int *err, char **msg)
{
	if (L->pass_in_order && n > SL_PASS_IN_ORDER_MAX)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "pass_fds: %zu fds given in order, at most %d", n, SL_PASS_IN_ORDER_MAX);
	if (n == 0)
		return 0;
	if (!fds)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "pass_fds is NULL with npass_fds %zu", n);
	if (!(L->keep_fds = malloc(n * sizeof(int))))
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (fds[i] <= 2 || fcntl(fds[i], F_GETFD) < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
			               "pass_fds: %d is not an open fd above 2", (int)fds[i]);
		for (size_t j = 0; L->pass_in_order && j < i; j++)
			if (L->keep_fds[j] == fds[i])
				return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
				               "pass_fds: %d is given twice", (int)fds[i]);
		L->keep_fds[i] = fds[i];
	}
	if (L->pass_in_order) {
		L->nkeep = n;
		return 0;
	}
	qsort(L->keep_fds, n, sizeof(int), cmp_int);
	size_t u = 0;
	for (size_t i = 0; i < n; i++)
		if (u == 0 || L->keep_fds[u - 1] != L->keep_fds[i])
			L->keep_fds[u++] = L->keep_fds[i];
	L->nkeep = u;
	return 0;
}

/* One stream's mode; an FD-mode fd is duplicated above 2 now, so that the
 * child's dup2 onto 0..2 cannot clobber another stream's source. */
static int set_stream(struct sl_launch *L, int i, const sandlock_stdio_t *s, int *err, char **msg)
{
	static const char *const names[3] = { "stdin", "stdout", "stderr" };
	switch (s->mode) {
	case SANDLOCK_STDIO_DEFAULT:
		return 0;
	case SANDLOCK_STDIO_CAPTURE:
	case SANDLOCK_STDIO_INHERIT:
	case SANDLOCK_STDIO_DEVNULL:
	case SANDLOCK_STDIO_PIPE:
		L->stdio_mode[i] = s->mode;
		return 0;
	case SANDLOCK_STDIO_FD:
		L->stdio_fd[i] = s->fd < 0 ? -1 : fcntl(s->fd, F_DUPFD_CLOEXEC, 3);
		if (L->stdio_fd[i] < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "%s: fd %d is not open",
			               names[i], (int)s->fd);
		L->stdio_mode[i] = s->mode;
		return 0;
	default:
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "%s: unknown stdio mode %d", names[i],
		               (int)s->mode);
	}
}

/* The first version's size: older callers' structs are never smaller. */
#define SPAWN_OPTS_V1_SIZE (offsetof(sandlock_spawn_opts_t, npass_fds) + sizeof(size_t))

int sl_launch_set_options(struct sl_launch *L, const sandlock_spawn_opts_t *o, int *err,
                          char **msg)
{
	if (!o)
		return 0;
	sandlock_spawn_opts_t copy;
	if (sl_opts_copy(&copy, sizeof copy, SPAWN_OPTS_V1_SIZE, o, o->size,
	                 "sandlock_spawn_opts_t", err, msg) < 0)
		return -1;
	o = &copy;
	if (o->flags & ~(SANDLOCK_SPAWN_CREATE | SANDLOCK_SPAWN_PASS_IN_ORDER))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "unknown spawn flags 0x%x", o->flags);
	L->pass_in_order = (o->flags & SANDLOCK_SPAWN_PASS_IN_ORDER) != 0;
	for (int i = 0; i < 3; i++)
		if (set_stream(L, i, &o->stdio[i], err, msg) < 0)
			return -1;
	return set_keep_fds(L, o->pass_fds, o->npass_fds, err, msg);
}

int sl_launch_grant_stdio(struct sl_launch *L, int *err, char **msg)
{
	if (L->ruleset_fd < 0)
		return 0;
	uint64_t handled = sl_landlock_handled(L->cfg);
	bool tty = false;
	for (int i = 0; i < 3; i++) {
		int fd = L->stdio_mode[i] == SANDLOCK_STDIO_INHERIT ? i
		         : L->stdio_mode[i] == SANDLOCK_STDIO_FD   ? L->stdio_fd[i]
		                                                   : -1;
		int rc = sl_devmin_grant_stdio(L->ruleset_fd, handled, fd, &tty);
		if (rc < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_add_rule(fd %d): %s", i,
			               strerror(-rc));
	}
	int rc = tty && !L->cfg->chroot ? sl_devmin_grant_tty(L->ruleset_fd, handled) : 0;
	if (rc < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_add_rule('/dev/tty'): %s",
		               strerror(-rc));
	return 0;
}

/* ---------------- the sandbox's BPF programs ---------------- */

#define SL_PROG_CACHE_SLOTS 4

struct prog_entry {
	struct sl_trap *nrs; /* the trapped set (normalized), NULL = empty slot */
	size_t n;
	struct sock_filter *insns;
	unsigned short len;
};

struct sl_prog_cache {
	pthread_mutex_t lock;
	struct prog_entry e[SL_PROG_CACHE_SLOTS];
	size_t next; /* slot to replace when all are taken */
};

struct sl_prog_cache *sl_prog_cache_new(void)
{
	struct sl_prog_cache *c = calloc(1, sizeof(*c));
	if (c && pthread_mutex_init(&c->lock, NULL) != 0) {
		free(c);
		return NULL;
	}
	return c;
}

static void entry_clear(struct prog_entry *e)
{
	free(e->nrs);
	free(e->insns);
	memset(e, 0, sizeof(*e));
}

void sl_prog_cache_free(struct sl_prog_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < SL_PROG_CACHE_SLOTS; i++)
		entry_clear(&c->e[i]);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static bool same_set(const struct prog_entry *e, const struct sl_trap *nrs, size_t n)
{
	if (!e->nrs || e->n != n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!sl_trap_eq(&e->nrs[i], &nrs[i]))
			return false;
	return true;
}

/* A heap copy of insns[0..len) into out (which sl_filter_free frees). */
static int copy_prog(const struct sock_filter *insns, unsigned short len,
                     struct sock_fprog *out)
{
	out->filter = malloc((size_t)len * sizeof(*insns));
	if (!out->filter)
		return -1;
	memcpy(out->filter, insns, (size_t)len * sizeof(*insns));
	out->len = len;
	return 0;
}

/* Under c->lock: remember prog for the trapped set (best effort: no room
 * in memory only means the next run builds it again). */
static void cache_store(struct sl_prog_cache *c, const struct sl_trap *nrs, size_t n,
                        const struct sock_fprog *prog)
{
	struct prog_entry *e = &c->e[c->next];
	c->next = (c->next + 1) % SL_PROG_CACHE_SLOTS;
	entry_clear(e);
	struct sock_fprog copy;
	struct sl_trap *set = malloc((n ? n : 1) * sizeof(*set));
	if (!set || copy_prog(prog->filter, prog->len, &copy) < 0) {
		free(set);
		return;
	}
	if (n)
		memcpy(set, nrs, n * sizeof(*set));
	*e = (struct prog_entry){ set, n, copy.filter, copy.len };
}

/* The BPF program for the trapped set: the sandbox's copy, or built now. */
static int get_prog(const struct sandlock_sandbox *cfg, const struct sl_trap *trapped,
                    size_t ntrapped, struct sock_fprog *out, int *err, char **msg)
{
	struct sl_prog_cache *c = cfg->progs;
	if (!c)
		return sl_filter_build(cfg, trapped, ntrapped, true, out, err, msg);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < SL_PROG_CACHE_SLOTS; i++) {
		if (!same_set(&c->e[i], trapped, ntrapped))
			continue;
		int rc = copy_prog(c->e[i].insns, c->e[i].len, out);
		pthread_mutex_unlock(&c->lock);
		return rc == 0 ? 0 : sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_unlock(&c->lock);
	/* Built outside the lock: concurrent runs need not wait for each other. */
	if (sl_filter_build(cfg, trapped, ntrapped, true, out, err, msg) < 0)
		return -1;
	pthread_mutex_lock(&c->lock);
	cache_store(c, trapped, ntrapped, out);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

/* KEY=TMPDIR/SUB in env unless the command's environment already sets KEY. */
static int tmp_default(sl_strvec *env, const char *key, const char *tmpdir, const char *sub)
{
	if (env_get(env, key))
		return 0;
	char *kv = sl_asprintf("%s=%s/%s", key, tmpdir, sub);
	int rc = kv ? env_set(env, kv) : -1;
	free(kv);
	return rc;
}

/* The run's private TMPDIR (tmpdir.c), named in its environment.  The
 * per-user caches go there too: with only the project writable, npm fails
 * outright on an unwritable ~/.npm (even `npm ci --offline` of a tarball
 * dependency goes through its cache), and go, pip, yarn... on ~/.cache.
 * A cache the caller names (npm_config_cache, XDG_CACHE_HOME) is kept. */
static int private_tmp(struct sl_launch *L, sl_strvec *env, int *err, char **msg)
{
	L->tmpdir = sl_private_tmp_run(L->cfg->tmp_root, err, msg);
	if (!L->tmpdir)
		return -1;
	char *kv = sl_asprintf("TMPDIR=%s", L->tmpdir);
	int rc = kv ? env_set(env, kv) : -1;
	free(kv);
	if (rc == 0)
		rc = tmp_default(env, "XDG_CACHE_HOME", L->tmpdir, ".cache");
	if (rc == 0 && !env_get(env, "NPM_CONFIG_CACHE")) /* npm reads either case */
		rc = tmp_default(env, "npm_config_cache", L->tmpdir, ".npm");
	return rc < 0 ? sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory") : 0;
}

int sl_launch_prepare(struct sl_launch *L, const struct sandlock_sandbox *cfg,
                      const struct sl_view *view, const char *const *argv, uint32_t argc,
                      const struct sl_trap *trapped, size_t ntrapped, int *err, char **msg)
{
	launch_init(L, cfg);
	sl_strvec env = { 0 };
	if (sl_launch_build_env(cfg, &env) < 0 || copy_argv(L, argv, argc) < 0) {
		sl_strvec_free(&env);
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	if (cfg->tmp_root && private_tmp(L, &env, err, msg) < 0) {
		sl_strvec_free(&env);
		return -1;
	}
	L->exe = cfg->chroot ? resolve_guest_exe(view, argv[0], &env) : resolve_exe(argv[0], &env);
	if (!L->exe) {
		sl_strvec_free(&env);
		return sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "command not found: %s", argv[0]);
	}
	if (!env.v && !(env.v = calloc(1, sizeof(char *)))) /* empty environment */
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	L->envp = env.v; /* NULL-terminated by sl_strvec; now owned by L */
	L->ruleset_fd = sl_fd_high(sl_landlock_prepare(cfg, err, msg));
	if (L->ruleset_fd == -2) {
		L->ruleset_fd = -1;
		return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
		               "Landlock is not available on this kernel; refusing to run unconfined");
	}
	if (L->ruleset_fd < 0 || sl_cg_prepare(cfg, &L->cg, err, msg) < 0)
		return -1;
	L->trapped = trapped;
	L->ntrapped = ntrapped;
	return 0;
}

int sl_launch_build_prog(struct sl_launch *L, int *err, char **msg)
{
	return get_prog(L->cfg, L->trapped, L->ntrapped, &L->prog, err, msg);
}
