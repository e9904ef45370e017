/*
 * fork.c — sandlock_fork from the caller's side: prepare the confinement
 * (before any fork, since the keeper is a fork of a caller that may have
 * threads), fork the keeper (fork_child.c), receive the clones' pids and
 * stdout pipes, collect their output and the keeper's records, build one
 * result per clone; sandlock_reduce feeds them to a normal run's stdin.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "launch/cglimits.h"
#include "launch/confine.h"
#include "launch/filter.h"
#include "fork/fork.h"
#include "launch/landlock.h"
#include "launch/launch.h"
#include "run/result.h"
#include "util.h"

struct sandlock_fork {
	uint32_t n, got;     /* clones asked for, clones received */
	int32_t *pids;
	int *fds;            /* stdout read ends, -1 once at EOF */
	pid_t keeper;
	int ctrl, rec;       /* control socket (ours), records pipe (read end) */
	int sock;            /* from the template, -1 once all clones arrived */
	uint64_t cap;        /* max_output per clone; 0 = none */
	pthread_mutex_t lock, ctrl_lock;
	/* collected */
	struct sl_fork_rec *st; /* per clone; pid 0 until its record came */
	struct sl_fork_rec tmpl;
	bool tmpl_seen, ended;
	uint8_t recbuf[sizeof(struct sl_fork_rec)];
	size_t reclen;
	sl_buf *out;
	uint64_t *dropped;
	sandlock_result_t **results; /* after a successful wait */
};

/* ---------------------------------------------- the registry of live fds */

/* Caller-side fds of live forks: a new keeper closes them first, so no
 * fork's processes hold another's control socket or pipes open.  Held
 * across the keeper's fork; reset in every child (a clone may fork too). */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int *g_fds;
static size_t g_n, g_cap;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void registry_child(void)
{
	pthread_mutex_init(&g_lock, NULL);
	g_n = 0;
}

static void registry_init(void)
{
	pthread_atfork(NULL, NULL, registry_child);
}

static void reg_add_locked(int fd)
{
	if (g_n == g_cap) {
		size_t cap = g_cap ? g_cap * 2 : 64;
		int *v = realloc(g_fds, cap * sizeof(*v));
		if (!v)
			return; /* only hygiene: the fd still works */
		g_fds = v;
		g_cap = cap;
	}
	g_fds[g_n++] = fd;
}

static void reg_add(int fd)
{
	pthread_mutex_lock(&g_lock);
	reg_add_locked(fd);
	pthread_mutex_unlock(&g_lock);
}

static void reg_close(int *fd)
{
	if (*fd < 0)
		return;
	pthread_mutex_lock(&g_lock);
	for (size_t i = 0; i < g_n; i++)
		if (g_fds[i] == *fd) {
			g_fds[i] = g_fds[--g_n];
			break;
		}
	close(*fd);
	pthread_mutex_unlock(&g_lock);
	*fd = -1;
}

/* ------------------------------------------------------------- records */

static void take_records(struct sandlock_fork *f, const uint8_t *p, size_t len)
{
	while (len) {
		size_t k = sizeof f->recbuf - f->reclen;
		if (k > len)
			k = len;
		memcpy(f->recbuf + f->reclen, p, k);
		f->reclen += k;
		p += k;
		len -= k;
		if (f->reclen < sizeof f->recbuf)
			return;
		f->reclen = 0;
		struct sl_fork_rec r;
		memcpy(&r, f->recbuf, sizeof r);
		if (r.pid == SL_FORK_END_PID) {
			f->ended = true;
		} else if (r.pid == SL_FORK_TEMPLATE_PID) {
			f->tmpl = r;
			f->tmpl_seen = true;
		} else {
			for (uint32_t i = 0; i < f->got; i++)
				if (f->pids[i] == r.pid)
					f->st[i] = r;
		}
	}
}

/* One read of the records pipe; false at its end. */
static bool read_records(struct sandlock_fork *f)
{
	uint8_t buf[4096];
	ssize_t got = read(f->rec, buf, sizeof buf);
	if (got < 0 && errno == EINTR)
		return true;
	if (got <= 0) {
		f->ended = true;
		return false;
	}
	take_records(f, buf, (size_t)got);
	return true;
}

/* Kill what still runs (hang-up of the control socket), close the clone
 * pipes (a clone writing gets EPIPE), read the records to the end, reap
 * the keeper. */
static void end_all(struct sandlock_fork *f)
{
	pthread_mutex_lock(&f->ctrl_lock);
	reg_close(&f->ctrl);
	pthread_mutex_unlock(&f->ctrl_lock);
	reg_close(&f->sock);
	for (uint32_t i = 0; i < f->got; i++)
		reg_close(&f->fds[i]);
	while (f->rec >= 0 && !f->ended && read_records(f))
		;
	reg_close(&f->rec);
	if (f->keeper > 0) {
		while (waitpid(f->keeper, NULL, 0) < 0 && errno == EINTR)
			;
		f->keeper = 0;
	}
}

/* ------------------------------------------------------------ creating */

/* The first version's size: older callers' structs are never smaller. */
#define FORK_OPTS_V1_SIZE (offsetof(sandlock_fork_opts_t, ud) + sizeof(void *))

static int fork_validate(const sandlock_sandbox_t *sb, uint32_t n, const sandlock_fork_opts_t *o,
                         int *err, char **msg)
{
	if (!o->work)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID, "fork: no work function");
	if (n < 1 || n > (1u << 20))
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "fork: n must be 1..%u, got %u", 1u << 20, n);
	const char *what = sl_confine_refusal(sb, true);
	if (what)
		return sl_fail(err, msg, SANDLOCK_ERR_CONFLICT,
		               "fork: %s cannot be applied to fork clones (no supervisor runs for "
		               "a fork)", what);
	return sl_limits_check(sb, err, msg) < 0 ? -1 : 0;
}

/* Raise the soft RLIMIT_NOFILE when n received pipes would not fit. */
static int room_for_fds(uint32_t n, int *err, char **msg)
{
	size_t used = 64;
	DIR *d = opendir("/proc/self/fd");
	if (d) {
		used = 0;
		while (readdir(d))
			used++;
		closedir(d);
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 0;
	rlim_t need = (rlim_t)n + 64 + used;
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need)
		return sl_fail(err, msg, SANDLOCK_ERR_INVALID,
		               "fork: %u clones need %llu open files, RLIMIT_NOFILE allows %llu", n,
		               (unsigned long long)need, (unsigned long long)rl.rlim_max);
	rl.rlim_cur = need;
	setrlimit(RLIMIT_NOFILE, &rl);
	return 0;
}

static int prepare(struct sl_fork_plan *p, sl_strvec *env, int *err, char **msg)
{
	p->ruleset = sl_landlock_prepare(p->sb, err, msg);
	if (p->ruleset == -2)
		return sl_fail(err, msg, SANDLOCK_ERR_UNSUPPORTED,
		               "Landlock is not available on this kernel; refusing to run unconfined");
	if (p->ruleset < 0)
		return -1;
	if (sl_confine_filter(p->sb, &p->prog, err, msg) < 0)
		return -1;
	if (p->sb->clean_env || p->sb->env.n) {
		if (sl_launch_build_env(p->sb, env) < 0)
			return sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "fork: environment");
		p->envp = env->v;
	}
	return 0;
}

static struct sandlock_fork *fork_new(uint32_t n, uint64_t cap)
{
	struct sandlock_fork *f = calloc(1, sizeof *f);
	if (!f)
		return NULL;
	f->n = n;
	f->cap = cap;
	f->ctrl = f->rec = f->sock = -1;
	pthread_mutex_init(&f->lock, NULL);
	pthread_mutex_init(&f->ctrl_lock, NULL);
	f->pids = calloc(n, sizeof *f->pids);
	f->fds = calloc(n, sizeof *f->fds);
	f->st = calloc(n, sizeof *f->st);
	f->out = calloc(n, sizeof *f->out);
	f->dropped = calloc(n, sizeof *f->dropped);
	if (!f->pids || !f->fds || !f->st || !f->out || !f->dropped) {
		sandlock_fork_free(f);
		return NULL;
	}
	return f;
}

/* Fork the keeper with the registry locked (its snapshot is what it closes). */
static int start_keeper(struct sandlock_fork *f, struct sl_fork_plan *p, int *err, char **msg)
{
	int ctl[2], rec[2], pids[2], sock[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ctl) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "fork: creating pipes: %s",
		               strerror(errno));
	if (pipe2(rec, O_CLOEXEC) < 0 || pipe2(pids, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sock) < 0)
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "fork: creating pipes: %s",
		               strerror(errno)); /* (a few fds lost on this path: EMFILE) */
	f->ctrl = sl_fd_high(ctl[0]);
	f->rec = sl_fd_high(rec[0]);
	f->sock = sl_fd_high(sock[0]);
	p->ctrl = ctl[1];
	p->rec_w = rec[1];
	p->pids_r = pids[0];
	p->pids_w = pids[1];
	p->sock = sock[1];
	pthread_once(&g_once, registry_init);
	pthread_mutex_lock(&g_lock);
	reg_add_locked(f->ctrl);
	reg_add_locked(f->rec);
	reg_add_locked(f->sock);
	p->close_fds = g_fds;
	p->nclose = g_n;
	f->keeper = sl_fork_child(&p->o);
	if (f->keeper == 0)
		sl_fork_keeper_main(p);
	int e = errno;
	pthread_mutex_unlock(&g_lock);
	close(p->ctrl);
	close(p->rec_w);
	close(p->pids_r);
	close(p->pids_w);
	close(p->sock);
	if (f->keeper < 0) {
		f->keeper = 0;
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "fork: %s", strerror(e));
	}
	return 0;
}

/* The failure the template reported ('E' message), as *err / *msg. */
static int template_error(struct sandlock_fork *f, const uint8_t *m, size_t len, int *err,
                          char **msg)
{
	int32_t code = 0;
	if (len >= 6)
		memcpy(&code, m + 2, sizeof code);
	char *text = sl_asprintf("%.*s", len > 6 ? (int)(len - 6) : 0, (const char *)m + 6);
	int rc;
	if (len >= 2 && m[1] == SL_FORK_ERR_CONFINE)
		rc = sl_fail(err, msg, code ? code : SANDLOCK_ERR_SYSTEM, "%s", text ? text : "");
	else if (len >= 2 && m[1] == SL_FORK_ERR_INIT)
		rc = sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "fork: init failed in the template: %s",
		             text ? text : "");
	else
		rc = sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		             "fork: the template failed after %u of %u clones: %s", f->got, f->n,
		             text ? text : "");
	free(text);
	return rc;
}

/* The template hung up early: the keeper's record says why. */
static int template_gone(struct sandlock_fork *f, int *err, char **msg)
{
	end_all(f);
	if (f->tmpl_seen && f->tmpl.how == SL_FORK_TIMEOUT)
		return sl_fail(err, msg, SANDLOCK_ERR_RUNNING,
		               "fork: the timeout expired before the clones were made");
	if (f->tmpl_seen && WIFSIGNALED(f->tmpl.status))
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		               "fork: the template died of signal %d before making %u clones",
		               WTERMSIG(f->tmpl.status), f->n);
	return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
	               "fork: the template ended before making %u clones", f->n);
}

/* One message of the template: a batch of clones, an error, or EOF. */
static int receive_one(struct sandlock_fork *f, int *err, char **msg)
{
	uint8_t data[1 + SL_FORK_BATCH * sizeof(int32_t) + 4096];
	union {
		char buf[CMSG_SPACE(SL_FORK_BATCH * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { data, sizeof data };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
	                    .msg_controllen = sizeof ctl.buf };
	ssize_t got = recvmsg(f->sock, &m, MSG_CMSG_CLOEXEC);
	if (got < 0 && errno == EINTR)
		return 0;
	int fds[SL_FORK_BATCH];
	size_t nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); got > 0 && c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
			size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (size_t i = 0; i < k && nfds < SL_FORK_BATCH; i++)
				memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
		}
	size_t npids = got > 0 ? ((size_t)got - 1) / sizeof(int32_t) : 0;
	bool ok = got > 0 && data[0] == 'P' && npids == nfds && !(m.msg_flags & MSG_CTRUNC) &&
	          f->got + npids <= f->n;
	if (!ok) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (got > 0 && data[0] == 'E') {
			template_error(f, data, (size_t)got, err, msg);
			end_all(f);
			return -1;
		}
		if (got <= 0)
			return template_gone(f, err, msg);
		end_all(f);
		return sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		               "fork: the clones' pipes could not all be received (%u clones so "
		               "far; RLIMIT_NOFILE too low?)", f->got);
	}
	for (size_t i = 0; i < npids; i++) {
		memcpy(&f->pids[f->got], data + 1 + i * sizeof(int32_t), sizeof(int32_t));
		f->fds[f->got] = fds[i];
		reg_add(fds[i]);
		f->got++;
	}
	return 0;
}

SL_EXPORT sandlock_fork_t *sandlock_fork_start(const sandlock_sandbox_t *sb, uint32_t n,
                                         const sandlock_fork_opts_t *opts, int *err,
                                         char **err_msg)
{
	if (err)
		*err = SANDLOCK_OK;
	if (err_msg)
		*err_msg = NULL;
	sandlock_fork_opts_t o;
	if (!sb || !opts) {
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "fork: NULL sandbox or options");
		return NULL;
	}
	if (sl_opts_copy(&o, sizeof o, FORK_OPTS_V1_SIZE, opts, opts->size, "fork: opts", err,
	                 err_msg) < 0 ||
	    fork_validate(sb, n, &o, err, err_msg) < 0 || room_for_fds(n, err, err_msg) < 0)
		return NULL;
	struct sandlock_fork *f = fork_new(n, sb->max_output);
	if (!f) {
		sl_fail(err, err_msg, SANDLOCK_ERR_NOMEM, "fork: out of memory");
		return NULL;
	}
	struct sl_fork_plan p = { .sb = sb, .n = n, .o = o, .ruleset = -1,
	                          .timeout_ms = sb->timeout_ms };
	sl_strvec env = { 0 };
	int rc = prepare(&p, &env, err, err_msg);
	if (rc == 0)
		rc = start_keeper(f, &p, err, err_msg);
	sl_strvec_free(&env);
	sl_filter_free(&p.prog);
	if (p.ruleset >= 0)
		close(p.ruleset);
	while (rc == 0 && f->got < n)
		rc = receive_one(f, err, err_msg);
	if (rc < 0) {
		sandlock_fork_free(f);
		return NULL;
	}
	reg_close(&f->sock);
	return f;
}

/* ------------------------------------------------------------- waiting */

static void read_clone(struct sandlock_fork *f, uint32_t i)
{
	uint8_t buf[65536];
	ssize_t got = read(f->fds[i], buf, sizeof buf);
	if (got < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (got <= 0) {
		reg_close(&f->fds[i]);
		return;
	}
	size_t keep = (size_t)got;
	if (f->cap && f->out[i].len + keep > f->cap)
		keep = f->out[i].len < f->cap ? f->cap - f->out[i].len : 0;
	if (keep && sl_buf_append(&f->out[i], buf, keep) < 0)
		keep = 0;
	f->dropped[i] += (uint64_t)got - keep;
}

/* Poll every open clone pipe and the records until all ended. 0, or -1 at the deadline. */
static int collect(struct sandlock_fork *f, int64_t deadline)
{
	struct pollfd *pf = calloc(f->n + 1, sizeof *pf);
	uint32_t *who = calloc(f->n + 1, sizeof *who);
	int rc = 0;
	while (pf && who) {
		nfds_t k = 0;
		for (uint32_t i = 0; i < f->got; i++)
			if (f->fds[i] >= 0) {
				pf[k] = (struct pollfd){ .fd = f->fds[i], .events = POLLIN };
				who[k++] = i;
			}
		nfds_t rec_at = k; /* == k after the loop: no records slot */
		if (!f->ended)
			pf[k++] = (struct pollfd){ .fd = f->rec, .events = POLLIN };
		if (!k)
			break;
		int wait = -1;
		if (deadline >= 0) {
			int64_t left = deadline - sl_now_ms();
			if (left <= 0) {
				rc = -1;
				break;
			}
			wait = left > 1000000 ? 1000000 : (int)left;
		}
		if (poll(pf, k, wait) < 0 && errno != EINTR)
			break;
		for (nfds_t j = 0; j < k; j++) {
			if (!pf[j].revents)
				continue;
			if (j == rec_at)
				read_records(f);
			else
				read_clone(f, who[j]);
		}
	}
	if (!pf || !who)
		rc = -2;
	free(pf);
	free(who);
	return rc;
}

static sandlock_result_t *clone_result(struct sandlock_fork *f, uint32_t i)
{
	sandlock_result_t *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	const struct sl_fork_rec *s = &f->st[i];
	int st = s->status;
	bool have = s->pid != 0;
	if (have && WIFEXITED(st)) {
		r->reason = SANDLOCK_EXIT_EXITED;
		r->exit_code = WEXITSTATUS(st);
	} else {
		r->signal = have ? WTERMSIG(st) : SIGKILL;
		r->exit_code = 128 + r->signal;
		if (have && s->how == SL_FORK_TIMEOUT) {
			r->reason = SANDLOCK_EXIT_TIMEOUT;
			r->exit_code = 124;
		} else if (!have || s->how == SL_FORK_KILLED) {
			r->reason = SANDLOCK_EXIT_KILLED;
		} else {
			r->reason = SANDLOCK_EXIT_SIGNALED;
		}
	}
	r->out = f->out[i];
	memset(&f->out[i], 0, sizeof f->out[i]);
	r->out_dropped = f->dropped[i];
	return r;
}

SL_EXPORT int sandlock_fork_wait(sandlock_fork_t *f, int64_t timeout_ms, int *err,
                                 char **err_msg)
{
	if (err)
		*err = SANDLOCK_OK;
	if (err_msg)
		*err_msg = NULL;
	if (!f)
		return sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "NULL fork");
	pthread_mutex_lock(&f->lock);
	int rc = 0;
	if (!f->results) {
		rc = collect(f, timeout_ms < 0 ? -1 : sl_now_ms() + timeout_ms);
		if (rc == 0) {
			end_all(f);
			f->results = calloc(f->n, sizeof *f->results);
			for (uint32_t i = 0; f->results && i < f->n; i++)
				f->results[i] = clone_result(f, i);
			if (!f->results)
				rc = -2;
		}
	}
	pthread_mutex_unlock(&f->lock);
	if (rc == -1)
		return sl_fail(err, err_msg, SANDLOCK_ERR_RUNNING, "fork: clones are still running");
	if (rc < 0)
		return sl_fail(err, err_msg, SANDLOCK_ERR_NOMEM, "fork: out of memory");
	return 0;
}

SL_EXPORT const sandlock_result_t *sandlock_fork_result(const sandlock_fork_t *f,
                                                       uint32_t clone_id)
{
	return f && f->results && clone_id < f->n ? f->results[clone_id] : NULL;
}

SL_EXPORT uint32_t sandlock_fork_count(const sandlock_fork_t *f)
{
	return f ? f->n : 0;
}

SL_EXPORT int32_t sandlock_fork_pid(const sandlock_fork_t *f, uint32_t clone_id)
{
	return f && clone_id < f->got ? f->pids[clone_id] : -1;
}

SL_EXPORT void sandlock_fork_kill(sandlock_fork_t *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->ctrl_lock);
	if (f->ctrl >= 0)
		send(f->ctrl, "k", 1, MSG_NOSIGNAL); /* fails only once the keeper is gone */
	pthread_mutex_unlock(&f->ctrl_lock);
}

SL_EXPORT void sandlock_fork_free(sandlock_fork_t *f)
{
	if (!f)
		return;
	pthread_mutex_lock(&f->lock);
	if (f->fds)
		end_all(f);
	pthread_mutex_unlock(&f->lock);
	for (uint32_t i = 0; f->out && i < f->n; i++)
		sl_buf_free(&f->out[i]);
	for (uint32_t i = 0; f->results && i < f->n; i++)
		sandlock_result_free(f->results[i]);
	free(f->results);
	free(f->pids);
	free(f->fds);
	free(f->st);
	free(f->out);
	free(f->dropped);
	pthread_mutex_destroy(&f->lock);
	pthread_mutex_destroy(&f->ctrl_lock);
	free(f);
}

/* -------------------------------------------------------------- reduce */

/* Write everything to fd; a reader that went away early is not an error
 * (SIGPIPE blocked on this thread, and consumed if we caused it). */
static void feed(int fd, const sandlock_fork_t *f)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigpending(&pending);
	bool was_pending = sigismember(&pending, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	bool broken = false;
	for (uint32_t i = 0; i < f->n && !broken; i++) {
		const sl_buf *b = &f->results[i]->out;
		for (size_t off = 0; off < b->len;) {
			ssize_t w = write(fd, b->data + off, b->len - off);
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0) {
				broken = true;
				break;
			}
			off += (size_t)w;
		}
	}
	if (broken && !was_pending) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

SL_EXPORT sandlock_result_t *sandlock_fork_reduce(const sandlock_sandbox_t *sb,
                                             const char *const *argv, uint32_t argc,
                                             sandlock_fork_t *f, int *err, char **err_msg)
{
	if (!f) {
		sl_fail(err, err_msg, SANDLOCK_ERR_INVALID, "reduce: NULL fork");
		return NULL;
	}
	if (sandlock_fork_wait(f, -1, err, err_msg) < 0)
		return NULL;
	for (uint32_t i = 0; i < f->n; i++)
		if (!f->results[i]) {
			sl_fail(err, err_msg, SANDLOCK_ERR_NOMEM, "reduce: out of memory");
			return NULL;
		}
	sandlock_spawn_opts_t o = { .size = sizeof o };
	o.stdio[0].mode = SANDLOCK_STDIO_PIPE;
	o.stdio[1].mode = SANDLOCK_STDIO_CAPTURE;
	o.stdio[2].mode = SANDLOCK_STDIO_CAPTURE;
	sandlock_handle_t *h = sandlock_spawn(sb, argv, argc, NULL, 0, &o, err, err_msg);
	if (!h)
		return NULL;
	int in = sandlock_handle_stdin_fd(h);
	if (in >= 0) {
		feed(in, f);
		close(in);
	}
	sandlock_result_t *r = sandlock_handle_wait_ms(h, -1, err, err_msg);
	sandlock_handle_free(h);
	return r;
}
