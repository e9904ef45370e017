/*
 * opener.c — the on-behalf opener (see opener.h for why).
 *
 * THE THREAD.  One per run, started before the listener is served.  It
 * unshares its fs_struct (its own umask), sets NO_NEW_PRIVS on itself,
 * applies the sandbox's Landlock ruleset with landlock_restrict_self
 * (which confines only the calling thread) and drops every capability
 * (capset is per thread): the supervisor may be root with
 * CAP_DAC_OVERRIDE while the sandboxed program dropped everything
 * (caps.c).  From then on it can open exactly what the program could,
 * with the same DAC checks.  It performs one openat2 per request.
 *
 *
 * What one request does is opencall.c (openerint.h: what the two share).
 * Files served in place of the ones opened come from whoever started the
 * opener (sl_opener_serve_fn: the builtins' and the synthetic views).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "opener/opener.h"
#include "opener/openerint.h"
#include "util.h"

/* ---------------- the thread ---------------- */

/*
 * True when our real, effective and saved uids (and gids) are all equal.
 * The sandboxed program inherited them and has no capabilities, so it can
 * then never act as anyone else (setresuid/setfsuid without CAP_SETUID may
 * only pick one of the current ids): its ids need no per-call check.
 */
static bool ids_fixed(void)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	if (getresuid(&r, &e, &s) < 0 || getresgid(&gr, &ge, &gs) < 0)
		return false;
	return r == e && e == s && gr == ge && ge == gs;
}

/* Confine the calling thread: own umask, the ruleset, no capabilities. */
static int confine_self(int ruleset_fd)
{
	if (unshare(CLONE_FS) < 0)
		return errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return errno;
	if (ruleset_fd < 0)
		return EPERM; /* never an unconfined opener */
	/* Its refusals are the program's accesses, which Landlock does not
	 * log unless the run reads them (run/auditlog.c reads only the
	 * command's domain): not the host's log's noise.  EINVAL: ABI < 7. */
	if (syscall(__NR_landlock_restrict_self, ruleset_fd,
	            LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF) < 0 &&
	    (errno != EINVAL || syscall(__NR_landlock_restrict_self, ruleset_fd, 0) < 0))
		return errno;
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		return errno;
	return 0;
}

/* bind(2) from the caller's cwd (this thread's own: unshared), then
 * back home. */
static void perform_bind(struct sl_open_req *r, int home)
{
	umask(r->umask);
	int rc = fchdir(r->cwd) < 0 ? -1 : bind(r->sock, r->addr, r->alen);
	r->err = rc < 0 ? (errno ? errno : EIO) : 0;
	if (fchdir(home) < 0)
		sl_warn("opener: cannot go back to its directory: %s", strerror(errno));
}

void sl_opener_perform(struct sl_open_req *r)
{
	if (r->set_umask)
		umask(r->umask);
	int fd = (int)syscall(SYS_openat2, r->base, r->path, &r->how, sizeof r->how);
	r->fd = fd;
	r->err = fd < 0 ? (errno ? errno : EIO) : 0;
}

static void *opener_main(void *arg)
{
	struct sl_opener *op = arg;
	int e = confine_self(op->ruleset_fd);
	/* Above the stdio numbers: a caller with fd 0-2 closed must not
	 * have them taken (the launch fills them with /dev/null). */
	int home = e ? -1 : sl_fd_high(open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (!e && home < 0)
		e = errno;
	pthread_mutex_lock(&op->mu);
	op->setup_err = e;
	op->ready = true;
	pthread_cond_broadcast(&op->cv);
	while (!e) {
		while (!op->req && !op->stop)
			pthread_cond_wait(&op->cv, &op->mu);
		if (op->stop)
			break;
		struct sl_open_req *r = op->req;
		op->req = NULL;
		pthread_mutex_unlock(&op->mu);
		if (r->bind)
			perform_bind(r, home);
		else
			sl_opener_perform(r);
		pthread_mutex_lock(&op->mu);
		r->done = true;
		pthread_cond_broadcast(&op->cv);
	}
	pthread_mutex_unlock(&op->mu);
	if (home >= 0)
		close(home);
	return NULL;
}

/* Hand r to the thread and wait for the answer.  (Spinning instead of
 * sleeping was measured slower on a loaded 2-core machine: the spinner
 * takes the core the other side needs.) */
void sl_opener_submit(struct sl_opener *op, struct sl_open_req *r)
{
	pthread_mutex_lock(&op->call_lock);
	pthread_mutex_lock(&op->mu);
	r->done = false;
	op->req = r;
	pthread_cond_broadcast(&op->cv);
	while (!r->done)
		pthread_cond_wait(&op->cv, &op->mu);
	pthread_mutex_unlock(&op->mu);
	pthread_mutex_unlock(&op->call_lock);
}

static void stop_thread(struct sl_opener *op)
{
	if (!op->started)
		return;
	pthread_mutex_lock(&op->mu);
	op->stop = true;
	pthread_cond_broadcast(&op->cv);
	pthread_mutex_unlock(&op->mu);
	pthread_join(op->thread, NULL);
	op->started = false;
}

static void opener_destroy(struct sl_opener *op)
{
	stop_thread(op);
	if (op->taskdir >= 0)
		close(op->taskdir);
	if (op->procfd >= 0)
		close(op->procfd);
	pthread_cond_destroy(&op->cv);
	pthread_mutex_destroy(&op->mu);
	pthread_mutex_destroy(&op->call_lock);
	free(op);
}

struct sl_opener *sl_opener_new(int ruleset_fd, const struct sl_view *view,
                                sl_opener_serve_fn serve, void *ud, int *err, char **msg)
{
	struct sl_opener *op = calloc(1, sizeof(*op));
	if (!op) {
		sl_fail(err, msg, SANDLOCK_ERR_NOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&op->call_lock, NULL);
	pthread_mutex_init(&op->mu, NULL);
	pthread_cond_init(&op->cv, NULL);
	op->listener = -1;
	op->procfd = -1;
	op->ruleset_fd = ruleset_fd;
	op->view = view;
	op->serve = serve;
	op->serve_ud = ud;
	op->fixed_ids = ids_fixed();
	op->taskdir = sl_fd_high(open("/proc/self/task", O_PATH | O_DIRECTORY | O_CLOEXEC));
	if (op->taskdir < 0) {
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "opener: /proc/self/task: %s",
		        strerror(errno));
		opener_destroy(op);
		return NULL;
	}
	/* No signal of the caller's may run on the opener. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&op->thread, NULL, opener_main, op);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM, "opener thread: %s", strerror(rc));
		opener_destroy(op);
		return NULL;
	}
	op->started = true;
	pthread_mutex_lock(&op->mu);
	while (!op->ready)
		pthread_cond_wait(&op->cv, &op->mu);
	int e = op->setup_err;
	pthread_mutex_unlock(&op->mu);
	op->ruleset_fd = -1;
	if (e) {
		sl_fail(err, msg, SANDLOCK_ERR_SYSTEM,
		        "opener: cannot confine the on-behalf opener thread: %s", strerror(e));
		opener_destroy(op);
		return NULL;
	}
	return op;
}

void sl_opener_guard_proc(struct sl_opener *op, pid_t init, bool fast_self)
{
	op->procfd = sl_fd_high(open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC));
	op->init = init;
	op->proc_fast = fast_self && op->procfd >= 0;
	op->proc_guard = true; /* without procfd every /proc open is refused */
}

/* ---------------- finding a run's opener ---------------- */

#define MAX_BOUND 64 /* concurrent runs in one process */

static pthread_mutex_t g_reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_opener *g_reg[MAX_BOUND];

int sl_opener_bind(struct sl_opener *op, int listener)
{
	int rc = -1;
	pthread_mutex_lock(&g_reg_mu);
	for (size_t i = 0; i < MAX_BOUND; i++)
		if (!g_reg[i]) {
			g_reg[i] = op;
			op->listener = listener;
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&g_reg_mu);
	return rc;
}

struct sl_opener *sl_opener_find(int listener)
{
	struct sl_opener *op = NULL;
	pthread_mutex_lock(&g_reg_mu);
	for (size_t i = 0; i < MAX_BOUND && !op; i++)
		if (g_reg[i] && g_reg[i]->listener == listener)
			op = g_reg[i];
	pthread_mutex_unlock(&g_reg_mu);
	return op;
}

void sl_opener_free(struct sl_opener *op)
{
	if (!op)
		return;
	pthread_mutex_lock(&g_reg_mu);
	for (size_t i = 0; i < MAX_BOUND; i++)
		if (g_reg[i] == op)
			g_reg[i] = NULL;
	pthread_mutex_unlock(&g_reg_mu);
	opener_destroy(op);
}

