/*
 * respond.c — turning a decided action into the kernel's answer.
 *
 * Only the dispatcher calls this (dispatch.c), from the supervisor thread
 * and from deferred completions: the ioctls are thread-safe and the only
 * shared state touched here is the atomic "killed" flag and the
 * mutex-protected list of held ids.
 *
 * Every INJECT action owns its srcfd: it is closed on every path, once.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "supervisor/childfd.h"
#include "supervisor/childmem.h"
#include "compat.h"
#include "supervisor/handler.h"
#include "launch/init.h"
#include "run/pause.h"
#include "supervisor/respond.h"

static void send_resp(struct sl_responder *s, uint64_t id, int64_t val, int32_t error,
                      uint32_t flags)
{
	struct seccomp_notif_resp r;
	memset(&r, 0, sizeof(r));
	r.id = id;
	r.val = val;
	r.error = error;
	r.flags = flags;
	/* ENOENT: the caller died meanwhile; nothing left to answer. */
	while (ioctl(s->listener, SECCOMP_IOCTL_NOTIF_SEND, &r) < 0 && errno == EINTR)
		;
}

static void respond_errno(struct sl_responder *s, const sandlock_notif_t *n, int err)
{
	if (err < 1 || err > 4095)
		err = EPERM; /* never let a bad value become "success" */
	send_resp(s, n->id, 0, -err, 0);
}

static void respond_continue(struct sl_responder *s, const sandlock_notif_t *n)
{
	send_resp(s, n->id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE);
}

/* Signal the caller through a pidfd: it may have left the process group.
 * The pidfd is confirmed with ID_VALID so a recycled pid is never hit. */
static void signal_caller(struct sl_responder *s, const sandlock_notif_t *n, int sig)
{
	int pfd = sl_child_pidfd(s->listener, n);
	if (pfd < 0)
		return;
	syscall(__NR_pidfd_send_signal, pfd, sig, NULL, 0);
	close(pfd);
}

/*
 * Kill the sandbox.  The pgid a handler supplies is never trusted (it
 * could name the caller of sandlock itself): only the sandbox's own group
 * and the notifying process are signalled.
 *
 * s->init is also the pid of the sandbox's init (init.c), which ends the
 * whole sandbox, processes that left the group included, and then exits
 * as the command did.  So the notifying process and the group get sig
 * first (the command dies of sig, as reported), then init is asked.  The
 * group gets no SIGKILL from here: it would kill init before it could
 * act (init ignores any other signal); run.c falls back to killpg if init
 * does not answer.  A SIGKILL goes to every other descendant of init
 * first and to the caller last (sl_kill_tree), so no parent woken by the
 * caller's death runs another step before init's sweep.
 */
static void kill_sandbox(struct sl_responder *s, const sandlock_notif_t *n, int sig)
{
	if (sig < 1 || sig > 64)
		sig = SIGKILL;
	/* Record first so the run reports KILLED even if it reaps at once. */
	atomic_store(&s->kill_sig, sig);
	atomic_store(&s->killed, 1);
	if (sig == SIGKILL && s->init > 1) {
		/* The rest first, the caller's process last (a worker thread's
		 * call names the thread: the tree lists its thread group). */
		long tgid = sl_child_tgid(n);
		sl_kill_tree(s->init, tgid > 0 ? (pid_t)tgid : (pid_t)n->pid);
	}
	if ((pid_t)n->pid != s->init) /* init's own call: init ends it all below */
		signal_caller(s, n, sig);
	if (s->init > 1) {
		if (sig != SIGKILL)
			killpg(s->init, sig);
		sl_init_request_kill(s->init);
	}
}

static void respond_inject(struct sl_responder *s, const sandlock_notif_t *n,
                           sandlock_action_t *act)
{
	int fd = act->u.inject.srcfd;
	act->u.inject.srcfd = -1;
	int rc = -1;
	if (fd >= 0) {
		struct seccomp_notif_addfd a;
		memset(&a, 0, sizeof(a));
		a.id = n->id;
		a.flags = SECCOMP_ADDFD_FLAG_SEND; /* install + answer atomically */
		a.srcfd = (uint32_t)fd;
		/* Only O_CLOEXEC is meaningful for the new fd. */
		a.newfd_flags = act->u.inject.newfd_flags & O_CLOEXEC;
		do
			rc = ioctl(s->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &a);
		while (rc < 0 && errno == EINTR);
		close(fd);
	}
	/* Never CONTINUE after a failed inject: the real call would run. */
	if (rc < 0)
		respond_errno(s, n, EACCES);
}

static void remember_held(struct sl_responder *s, uint64_t id)
{
	pthread_mutex_lock(&s->held_lock);
	if (s->nheld == s->capheld) {
		size_t cap = s->capheld ? s->capheld * 2 : 16;
		uint64_t *p = realloc(s->held, cap * sizeof(*p));
		if (p) {
			s->held = p;
			s->capheld = cap;
		}
	}
	if (s->nheld < s->capheld)
		s->held[s->nheld++] = id;
	pthread_mutex_unlock(&s->held_lock);
}

void sl_respond(struct sl_responder *s, const sandlock_notif_t *n, sandlock_action_t *act)
{
	switch (act->kind) {
	case SANDLOCK_ACTION_CONTINUE:
		respond_continue(s, n);
		break;
	case SANDLOCK_ACTION_ERRNO:
		respond_errno(s, n, act->u.errno_value);
		break;
	case SANDLOCK_ACTION_RETURN_VALUE:
		send_resp(s, n->id, act->u.return_value, 0, 0);
		break;
	case SANDLOCK_ACTION_INJECT_FD_SEND:
	case SANDLOCK_ACTION_INJECT_FD_SEND_TRACKED:
		/* TRACKED differs only by the caller's token, which the kernel
		 * has no use for; it is answered exactly like SEND. */
		respond_inject(s, n, act);
		break;
	case SANDLOCK_ACTION_HOLD:
		/* Left pending on purpose; it ends when the run kills the
		 * sandbox (the filter uses WAIT_KILLABLE_RECV). */
		remember_held(s, n->id);
		break;
	case SANDLOCK_ACTION_KILL:
		kill_sandbox(s, n, act->u.kill.sig);
		respond_errno(s, n, EPERM); /* harmless: the caller is dying */
		break;
	default:
		respond_errno(s, n, EPERM); /* unreachable: dispatch validated */
		break;
	}
}

void sl_responder_init(struct sl_responder *r)
{
	memset(r, 0, sizeof(*r));
	r->listener = -1;
	pthread_mutex_init(&r->held_lock, NULL);
}

void sl_responder_bind(struct sl_responder *r, int listener, pid_t init)
{
	r->listener = listener;
	r->init = init;
}

void sl_responder_destroy(struct sl_responder *r)
{
	free(r->held);
	r->held = NULL;
	pthread_mutex_destroy(&r->held_lock);
}

int sl_responder_killed(struct sl_responder *r, int *sig)
{
	int k = atomic_load(&r->killed);
	if (sig)
		*sig = k ? atomic_load(&r->kill_sig) : 0;
	return k;
}
