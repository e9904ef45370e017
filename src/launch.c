/*
 * launch.c — prepare everything that allocates before fork, then fork a
 * child that confines itself (Landlock + seccomp with a notification
 * listener) and waits for "ready".  The parent takes the listener out of
 * the child with pidfd_getfd, so the child never has to make a (possibly
 * trapped) call for it.  On "ready" the child forks the command, which
 * execs, and stays behind as the sandbox's init (init.c).  After fork both
 * use only async-signal-safe calls and raw syscalls: the parent may be
 * multi-threaded.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "caps.h"
#include "filter.h"
#include "init.h"
#include "landlock.h"
#include "launch.h"

extern char **environ;

#define SL_DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"
/* Bound on the child's setup (it makes no trappable call the parent waits for). */
#define SL_SETUP_TIMEOUT_MS 10000
/* The "ready" byte: go, and whether init mirrors the command's stops. */
#define SL_READY 'R'
#define SL_READY_TTY 'T'


/* Child setup steps, reported to the parent when one fails. */
enum {
	ST_OK = 0,
	ST_SETPGID,
	ST_PDEATHSIG,
	ST_PARENT_GONE,
	ST_STDIO,
	ST_CHDIR,
	ST_RLIMIT,
	ST_NO_NEW_PRIVS,
	ST_CAPS,
	ST_LANDLOCK,
	ST_SECCOMP,
	ST_SIGNALS,
	ST_SUBREAPER,
};

static const char *step_name(int step)
{
	static const char *const names[] = {
		[ST_OK] = "ok",
		[ST_SETPGID] = "setpgid",
		[ST_PDEATHSIG] = "prctl(PR_SET_PDEATHSIG)",
		[ST_PARENT_GONE] = "parent check",
		[ST_STDIO] = "dup2(stdio)",
		[ST_CHDIR] = "chdir",
		[ST_RLIMIT] = "setrlimit(RLIMIT_AS)",
		[ST_NO_NEW_PRIVS] = "prctl(PR_SET_NO_NEW_PRIVS)",
		[ST_CAPS] = "capability drop",
		[ST_LANDLOCK] = "landlock_restrict_self",
		[ST_SECCOMP] = "seccomp(SET_MODE_FILTER)",
		[ST_SIGNALS] = "signal reset",
		[ST_SUBREAPER] = "prctl(PR_SET_CHILD_SUBREAPER)",
	};
	if (step < 0 || step > ST_SUBREAPER)
		return "child setup";
	return names[step];
}

/* ---------------- preparation (parent, before fork) ---------------- */

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

/* The sandbox environment: inherited or clean, then the overrides. */
static int build_env(const struct sandlock_sandbox *cfg, sl_strvec *env)
{
	if (cfg->clean_env) {
		if (push_minimal_env(env) < 0)
			return -1;
	} else {
		for (char **e = environ; e && *e; e++)
			if (strchr(*e, '=') && env_set(env, *e) < 0)
				return -1;
	}
	for (size_t i = 0; i < cfg->env.n; i++)
		if (env_set(env, cfg->env.v[i]) < 0)
			return -1;
	return 0;
}

static const char *env_get(const sl_strvec *env, const char *key)
{
	size_t klen = strlen(key);
	for (size_t i = 0; i < env->n; i++)
		if (strncmp(env->v[i], key, klen) == 0 && env->v[i][klen] == '=')
			return env->v[i] + klen + 1;
	return NULL;
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
	L->ruleset_fd = L->pidfd = L->listener = -1;
	L->out_fd = L->err_fd = L->sync_fd = L->scope_fd = -1;
	L->pid = -1;
	sl_tty_init(&L->tty);
}

/*
 * The command runs in a Landlock domain nested in the sandbox's, whose
 * only rule is signal scoping: a process may signal only its own domain
 * and the ones nested in it, so nothing the command starts can signal the
 * sandbox's init (which lives in the outer domain).  That matters for the
 * two signals init cannot block: SIGKILL would orphan the sandbox's
 * processes to the host's init (a setsid()ed one then escapes every
 * cleanup), SIGSTOP would stall the sandbox's reaping.  Kernel-generated
 * signals (SIGCHLD to init, the terminal's) are not subject to scoping.
 */
static int make_scope_ruleset(struct sl_launch *L, int *err, char **msg)
{
	if (sl_landlock_abi() < 6)
		return 0; /* already warned: signals are not scoped at all */
	struct sl_ll_ruleset_attr attr = { .scoped = LANDLOCK_SCOPE_SIGNAL };
	L->scope_fd = (int)syscall(__NR_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (L->scope_fd < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "landlock_create_ruleset (scope): %s",
		               strerror(errno));
	return 0;
}

int sl_launch_prepare(struct sl_launch *L, const struct sandlock_sandbox *cfg,
                      const char *const *argv, uint32_t argc, const int *trapped,
                      size_t ntrapped, int *err, char **msg)
{
	launch_init(L, cfg);
	sl_strvec env = { 0 };
	if (build_env(cfg, &env) < 0 || copy_argv(L, argv, argc) < 0) {
		sl_strvec_free(&env);
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	}
	L->exe = resolve_exe(argv[0], &env);
	if (!L->exe) {
		sl_strvec_free(&env);
		return sl_fail(err, msg, SANDLOCK_ERR_NOT_FOUND, "command not found: %s", argv[0]);
	}
	if (!env.v && !(env.v = calloc(1, sizeof(char *)))) /* empty environment */
		return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
	L->envp = env.v; /* NULL-terminated by sl_strvec; now owned by L */
	L->ruleset_fd = sl_landlock_prepare(cfg, err, msg);
	if (L->ruleset_fd == -2) {
		L->ruleset_fd = -1;
		return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
		               "Landlock is not available on this kernel; refusing to run unconfined");
	}
	if (L->ruleset_fd < 0)
		return -1;
	if (make_scope_ruleset(L, err, msg) < 0)
		return -1;
	return sl_filter_build(cfg, trapped, ntrapped, &L->prog, err, msg);
}

/* ---------------- child (after fork: async-signal-safe only) ---------------- */

struct child_fds {
	int sync, devnull, out_w, err_w;
	pid_t parent;
	pid_t self; /* asked before confinement: getpid may be trapped after */
};

static __attribute__((noreturn)) void child_fail(int sync, int step, int e)
{
	int32_t m[2] = { step, e };
	(void)send(sync, m, sizeof m, MSG_NOSIGNAL);
	_exit(127);
}

/* dup2 that also works when fd already is target (clears close-on-exec). */
static int move_fd(int fd, int target)
{
	if (fd == target)
		return fcntl(fd, F_SETFD, 0);
	return dup2(fd, target) < 0 ? -1 : 0;
}

static void child_stdio(const struct sl_launch *L, const struct child_fds *c)
{
	if (L->cfg->inherit_stdio)
		return;
	if (move_fd(c->devnull, 0) < 0 || move_fd(c->out_w, 1) < 0 || move_fd(c->err_w, 2) < 0)
		child_fail(c->sync, ST_STDIO, errno);
}

/*
 * Undo what the caller's runtime (e.g. Python ignores SIGPIPE) would leak
 * into exec.  SIGCHLD too: ignored, init's children would be reaped
 * without a status.  The mask stays fully blocked (sl_init_block_signals):
 * init takes its signals synchronously; the command unblocks its own.
 */
static void child_signals(const struct child_fds *c)
{
	if (signal(SIGPIPE, SIG_DFL) == SIG_ERR || signal(SIGXFSZ, SIG_DFL) == SIG_ERR ||
	    signal(SIGCHLD, SIG_DFL) == SIG_ERR)
		child_fail(c->sync, ST_SIGNALS, errno);
}

/*
 * init's view of its own children (init.c), opened while /proc may still
 * be read: Landlock applies to opens, not to reads of an open file.  Kept
 * off 0..2, which belong to the command.  -1 without /proc: init then
 * kills only the command and the parent's group sweep does the rest.
 */
static int open_children_list(void)
{
	int fd = open("/proc/thread-self/children", O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && fd <= 2) {
		int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		close(fd);
		fd = moved;
	}
	return fd;
}

static void child_limits(const struct sl_launch *L, const struct child_fds *c)
{
	if (L->cfg->cwd && chdir(L->cfg->cwd) < 0)
		child_fail(c->sync, ST_CHDIR, errno);
	if (L->cfg->max_memory) {
		struct rlimit rl = { L->cfg->max_memory, L->cfg->max_memory };
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			child_fail(c->sync, ST_RLIMIT, errno);
	}
}

/* The lowest fd number not in use: where the kernel will put the next new fd. */
static int lowest_free_fd(void)
{
	int fd = 0;
	while (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
		fd++;
	return fd;
}

/*
 * Landlock, then tell the parent where the listener will appear, then
 * seccomp.  The announcement must happen before the filter exists: any
 * syscall made afterwards may be one a user handler traps (sendmsg,
 * write, ...), and nobody answers trapped calls until the parent has the
 * listener and runs the supervisor.  So the parent fetches the listener
 * itself with pidfd_getfd().
 *
 * The number is exact: the kernel installs the listener at the lowest free
 * fd, and between the probe and seccomp() nothing in this child creates an
 * fd: it is single-threaded after fork, send() on an existing socket makes
 * none, and no code of ours runs in between.  (Only a caller's signal
 * handler could, if someone signalled this brand-new process in that
 * window; the parent then finds no listener at N and fails the launch
 * rather than use a wrong fd.)  Before seccomp() the slot is simply empty.
 */
static void child_confine(const struct sl_launch *L, const struct child_fds *c)
{
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(c->sync, ST_NO_NEW_PRIVS, errno);
	/* A sandbox started by root keeps no capability (caps.c). */
	int cr = sl_caps_drop();
	if (cr < 0)
		child_fail(c->sync, ST_CAPS, -cr);
	if (L->ruleset_fd >= 0) {
		int rc = sl_landlock_apply(L->ruleset_fd);
		if (rc < 0)
			child_fail(c->sync, ST_LANDLOCK, -rc);
	}
	int32_t m[2] = { ST_OK, lowest_free_fd() };
	if (send(c->sync, m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m)
		_exit(127);
	long fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
	                  SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV,
	                  &L->prog);
	/* Still unfiltered when seccomp() failed: the report cannot be trapped. */
	if (fd < 0)
		child_fail(c->sync, ST_SECCOMP, errno);
	/* fd == m[1]; the parent verifies what it fetched, nothing to do here. */
}

/* "errno N" into buf (at least 24 bytes), without stdio. */
static const char *errno_number(char *buf, int e)
{
	char digits[12];
	int n = 0;
	unsigned v = e < 0 ? 0u : (unsigned)e;
	do
		digits[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < (int)sizeof digits);
	memcpy(buf, "errno ", 6);
	char *p = buf + 6;
	while (n)
		*p++ = digits[--n];
	*p = '\0';
	return buf;
}

/*
 * A failed execve would otherwise end in a bare 126/127: say why on the
 * child's stderr (the capture pipe or the caller's).  One writev of
 * strings that already exist: async-signal-safe (strerrorname_np only
 * indexes glibc's static table).  A user handler may trap this write too;
 * the supervisor is running by now, so it is answered.
 */
static void report_failure(const char *what, const char *exe, int e)
{
	char num[24];
	const char *name = strerrorname_np(e);
	if (!name)
		name = errno_number(num, e);
	struct iovec iov[] = {
		{ (void *)"sandlock: ", 10 },
		{ (void *)what, strlen(what) },
		{ (void *)exe, strlen(exe) },
		{ (void *)": ", 2 },
		{ (void *)name, strlen(name) },
		{ (void *)"\n", 1 },
	};
	(void)writev(2, iov, sizeof iov / sizeof iov[0]);
}

/*
 * The command: init's child.  It unblocks its signals, dies with init
 * (only a SIGKILL from outside the sandbox can end init early), enters
 * the signal-scoping Landlock domain (make_scope_ruleset), and execs.
 */
static __attribute__((noreturn)) void command_main(const struct sl_launch *L)
{
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigset_t none;
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (L->scope_fd >= 0) {
		int rc = sl_landlock_apply(L->scope_fd);
		if (rc < 0) {
			report_failure("cannot confine ", L->exe, -rc);
			_exit(126);
		}
	}
	/* Nothing of ours (listener, rulesets, sync socket) may survive into exec. */
	if (syscall(__NR_close_range, 3, ~0U, 0) < 0)
		_exit(127);
	execve(L->exe, L->argv, L->envp);
	int e = errno;
	report_failure("cannot execute ", L->exe, e);
	_exit(e == ENOENT || e == ENOTDIR ? 127 : 126);
}

/* Start the command and become the sandbox's init (init.c). */
static __attribute__((noreturn)) void become_init(const struct sl_launch *L,
                                                  const struct child_fds *c, int children_fd,
                                                  bool mirror_stops)
{
	/* _Fork: no atfork handlers of the caller's libraries in here. */
	pid_t cmd = _Fork();
	if (cmd == 0)
		command_main(L);
	if (cmd < 0) {
		report_failure("cannot start ", L->exe, errno);
		_exit(126);
	}
	/* init needs no fd but its children list: not the listener, not the
	 * terminal, not the capture pipes (their EOF is the command's). */
	if (children_fd > 0)
		(void)syscall(__NR_close_range, 0, (unsigned)children_fd - 1, 0);
	(void)syscall(__NR_close_range, (unsigned)children_fd + 1, ~0U, 0);
	struct sl_init in = { c->self, c->parent, children_fd, mirror_stops };
	sl_init_main(&in, cmd);
}

static __attribute__((noreturn)) void child_main(const struct sl_launch *L,
                                                 const struct child_fds *c)
{
	sl_init_block_signals();
	if (setpgid(0, 0) < 0)
		child_fail(c->sync, ST_SETPGID, errno);
	/* Catchable, unlike SIGKILL: init ends the whole sandbox first. */
	if (prctl(PR_SET_PDEATHSIG, SL_INIT_SIG_PDEATH, 0, 0, 0) < 0)
		child_fail(c->sync, ST_PDEATHSIG, errno);
	if (getppid() != c->parent) /* parent died before PDEATHSIG was armed */
		_exit(127);
	/* Every orphan of the sandbox becomes ours, setsid() or not. */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		child_fail(c->sync, ST_SUBREAPER, errno);
	child_signals(c);
	child_stdio(L, c);
	child_limits(L, c);
	int children_fd = open_children_list();
	child_confine(L, c);
	/*
	 * From here on every syscall may be trapped; the parent depends on none
	 * of them.  It fetches the listener, starts the supervisor and only
	 * then sends "ready", so a trapped read() here is answered.
	 */
	char go;
	ssize_t n;
	while ((n = read(c->sync, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1) /* parent gave up */
		_exit(127);
	become_init(L, c, children_fd, go == SL_READY_TTY);
}

/* ---------------- parent ---------------- */

/* Keep our descriptors off 0..2 so the child's dup2 onto stdio cannot clobber them. */
static int above_stdio(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int n = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return n;
}

struct parent_fds {
	int sv[2], outp[2], errp[2], devnull;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void parent_fds_close(struct parent_fds *p)
{
	close_fd(&p->sv[0]);
	close_fd(&p->sv[1]);
	close_fd(&p->outp[0]);
	close_fd(&p->outp[1]);
	close_fd(&p->errp[0]);
	close_fd(&p->errp[1]);
	close_fd(&p->devnull);
}

static int make_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	p[0] = above_stdio(p[0]);
	p[1] = above_stdio(p[1]);
	return (p[0] < 0 || p[1] < 0) ? -1 : 0;
}

static int parent_fds_open(const struct sl_launch *L, struct parent_fds *p)
{
	p->sv[0] = p->sv[1] = p->outp[0] = p->outp[1] = p->errp[0] = p->errp[1] = p->devnull = -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, p->sv) < 0)
		return -1;
	p->sv[0] = above_stdio(p->sv[0]);
	p->sv[1] = above_stdio(p->sv[1]);
	if (p->sv[0] < 0 || p->sv[1] < 0)
		return -1;
	if (L->cfg->inherit_stdio)
		return 0;
	if (make_pipe(p->outp) < 0 || make_pipe(p->errp) < 0)
		return -1;
	p->devnull = above_stdio(open("/dev/null", O_RDONLY | O_CLOEXEC));
	return p->devnull < 0 ? -1 : 0;
}

/* Kill and reap a child that never got released. */
static void abort_child(struct sl_launch *L)
{
	if (L->pid > 0) {
		kill(L->pid, SIGKILL);
		while (waitpid(L->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	L->pid = -1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *errname(int e)
{
	return strerrorname_np(e) ? strerrorname_np(e) : strerror(e);
}

/* One {step, value} report from the child: 1 = got one, 0 = none yet, -1 = EOF/error. */
static int read_report(int sync, int32_t m[2], int flags)
{
	ssize_t n;
	while ((n = recv(sync, m, 2 * sizeof(int32_t), flags)) < 0 && errno == EINTR)
		;
	if (n == (ssize_t)(2 * sizeof(int32_t)))
		return 1;
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return -1;
}

/* Turn a failure report (m[0] > 0) or a silent death into an error. */
static int setup_error(int rc, const int32_t m[2], int *err, char **msg)
{
	if (rc == 1 && m[0] > 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "%s failed: %s", step_name(m[0]),
		               errname(m[1]));
	return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "sandboxed child exited during setup");
}

/* The child's first report: the fd number its listener will get, or a failure. */
static int recv_announcement(struct sl_launch *L, int64_t deadline, int *fdnum, int *err,
                             char **msg)
{
	struct pollfd pf = { L->sync_fd, POLLIN, 0 };
	int pr;
	do {
		int64_t left_ms = (deadline - now_ns()) / 1000000;
		pr = poll(&pf, 1, left_ms > 0 ? (int)left_ms : 0);
	} while (pr < 0 && errno == EINTR);
	if (pr == 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "sandboxed child did not finish setup");
	int32_t m[2] = { -1, 0 };
	int rc = read_report(L->sync_fd, m, 0);
	if (rc == 1 && m[0] == ST_OK && m[1] >= 0) {
		*fdnum = m[1];
		return 0;
	}
	return setup_error(rc, m, err, msg);
}

/*
 * True if fd is a seccomp user-notification fd.  The child cannot run
 * untrusted code yet, so this is a consistency check of the fd-number
 * protocol, not a defence: a wrong fd would silently leave the sandbox
 * without a supervisor.  Only a listener knows this ioctl (ENOENT: no
 * notification 0 pending; anything else answers ENOTTY/EINVAL).
 */
static bool is_seccomp_listener(int fd)
{
	char path[64], link[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(path, link, sizeof link - 1);
	if (n >= 0) { /* /proc may be absent; when present it must agree */
		link[n] = 0;
		if (strcmp(link, "anon_inode:seccomp notify") != 0)
			return false;
	}
	uint64_t id = 0;
	return ioctl(fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) < 0 && errno == ENOENT;
}

/*
 * Wait for the listener to appear at fd number fdnum in the child and take
 * a copy with pidfd_getfd.  Until seccomp() returns the slot is empty
 * (EBADF); the kernel installs the fd only once the filter is attached, so
 * success also means the child is confined.  Between attempts, sleep with
 * exponential backoff while watching the sync socket (a seccomp failure
 * report) and the pidfd (the child died).
 */
static int fetch_listener(struct sl_launch *L, int fdnum, int64_t deadline, int *err,
                          char **msg)
{
	long wait_ns = 10000;
	for (;;) {
		int fd = (int)syscall(__NR_pidfd_getfd, L->pidfd, fdnum, 0);
		if (fd >= 0) {
			if (is_seccomp_listener(fd)) {
				L->listener = fd; /* pidfd_getfd sets close-on-exec */
				return 0;
			}
			close(fd);
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
			               "fd %d of the sandboxed child is not its seccomp listener", fdnum);
		}
		if (errno != EBADF && errno != ESRCH && errno != EINTR)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "pidfd_getfd: %s%s",
			               errname(errno),
			               errno == EPERM ? " (ptrace access to the child is restricted)" : "");
		struct pollfd pf[2] = { { L->sync_fd, POLLIN, 0 }, { L->pidfd, POLLIN, 0 } };
		struct timespec ts = { 0, wait_ns };
		if (ppoll(pf, 2, &ts, NULL) > 0) {
			int32_t m[2] = { -1, 0 };
			int rc = read_report(L->sync_fd, m, MSG_DONTWAIT);
			if (rc != 0 || pf[1].revents)
				return setup_error(rc, m, err, msg);
		}
		if (now_ns() >= deadline)
			return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
			               "sandboxed child did not finish setup");
		wait_ns = wait_ns * 2 > 5000000 ? 5000000 : wait_ns * 2;
	}
}

/* The listener, or the child's failure report, within the setup timeout. */
static int get_listener(struct sl_launch *L, int *err, char **msg)
{
	int64_t deadline = now_ns() + (int64_t)SL_SETUP_TIMEOUT_MS * 1000000;
	int fdnum = -1;
	if (recv_announcement(L, deadline, &fdnum, err, msg) < 0)
		return -1;
	return fetch_listener(L, fdnum, deadline, err, msg);
}

int sl_launch_start(struct sl_launch *L, int *err, char **msg)
{
	struct parent_fds p;
	if (parent_fds_open(L, &p) < 0) {
		int e = errno;
		parent_fds_close(&p);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "creating pipes: %s", strerror(e));
	}
	struct child_fds c = { p.sv[1], p.devnull, p.outp[1], p.errp[1], getpid(), 0 };
	pid_t pid = fork();
	if (pid == 0) {
		c.self = getpid();
		child_main(L, &c);
	}
	if (pid < 0) {
		int e = errno;
		parent_fds_close(&p);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "fork: %s", strerror(e));
	}
	L->pid = pid;
	L->sync_fd = p.sv[0];
	L->out_fd = p.outp[0];
	L->err_fd = p.errp[0];
	p.sv[0] = p.outp[0] = p.errp[0] = -1;
	parent_fds_close(&p); /* the child's ends: EOF detection depends on this */
	L->pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (L->pidfd < 0) {
		int e = errno;
		abort_child(L);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "pidfd_open: %s", strerror(e));
	}
	if (get_listener(L, err, msg) < 0) {
		abort_child(L);
		return -1;
	}
	return 0;
}

int sl_launch_release(struct sl_launch *L)
{
	/* The child has called setpgid(0, 0) (before it announced its listener)
	 * and does not run the program yet: make its group the terminal's
	 * foreground now, so that the program's first read of it works. */
	if (L->cfg->inherit_stdio)
		sl_tty_start(&L->tty, L->pid);
	/* With a terminal, init mirrors the command's job-control stops for
	 * sl_tty_watch; without one nobody watches them, and an init stopped
	 * after a stop that someone in the sandbox undoes would stall the run. */
	char go = L->tty.fd >= 0 ? SL_READY_TTY : SL_READY;
	ssize_t n;
	while ((n = send(L->sync_fd, &go, 1, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	close_fd(&L->sync_fd);
	return n == 1 ? 0 : -1;
}

void sl_launch_cleanup(struct sl_launch *L)
{
	sl_tty_end(&L->tty); /* every path, also when the run failed */
	close_fd(&L->ruleset_fd);
	close_fd(&L->scope_fd);
	close_fd(&L->pidfd);
	close_fd(&L->listener);
	close_fd(&L->out_fd);
	close_fd(&L->err_fd);
	close_fd(&L->sync_fd);
	free(L->exe);
	L->exe = NULL;
	for (char **a = L->argv; a && *a; a++)
		free(*a);
	free(L->argv);
	L->argv = NULL;
	for (char **e = L->envp; e && *e; e++)
		free(*e);
	free(L->envp);
	L->envp = NULL;
	sl_filter_free(&L->prog);
}
