/*
 * fork_child.c — the processes of a COW fork (see fork.h for the
 * protocol).  The keeper stays outside the sandbox: Landlock's signal
 * scoping keeps the clones from signalling it, and as a child subreaper it
 * inherits every process of the fork whose parent dies, so it can reap the
 * clones once the template has exited and end everything they leave.  The
 * template is single-threaded (a fresh fork), so it and the clones may use
 * anything; the keeper is a fork of a caller that may have threads and
 * relies on glibc's fork keeping malloc usable (it allocates its tables).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/confine.h"
#include "fork/fork.h"
#include "run/proctree.h"
#include "util.h"

pid_t sl_fork_child(const sandlock_fork_opts_t *o)
{
	return o->fork_fn ? (pid_t)o->fork_fn(o->ud) : fork();
}

/* ------------------------------------------------------------ kill tree */

static bool pv_has(const struct sl_pidvec *pv, pid_t p)
{
	for (size_t i = 0; i < pv->n; i++)
		if (pv->v[i] == p)
			return true;
	return false;
}

/*
 * SIGKILL every descendant of the keeper, each as soon as it is found (so
 * it cannot fork again), repeated until a round finds no new one: a
 * process forked during a round is found by the next.  No killpg: once a
 * group is empty its number may be someone else's.
 */
static void kill_tree(void)
{
	struct sl_pidvec seen = { 0 }, todo = { 0 };
	for (bool fresh = true; fresh;) {
		fresh = false;
		todo.n = 0;
		sl_proc_children(getpid(), &todo);
		while (todo.n) {
			pid_t p = todo.v[--todo.n];
			if (!pv_has(&seen, p)) {
				kill(p, SIGKILL);
				sl_pidvec_push(&seen, p);
				fresh = true;
			}
			sl_proc_children(p, &todo);
		}
	}
	free(seen.v);
	free(todo.v);
}

/* --------------------------------------------------------------- keeper */

struct keeper {
	const struct sl_fork_plan *p;
	pid_t tpid;
	int64_t deadline;          /* ms, 0: none */
	pid_t *clones;             /* named by the template */
	bool *reaped;
	uint32_t nclones, nreaped;
	bool tmpl_done, pids_eof;
	int how;                   /* SL_FORK_*: what ended the rest */
	sl_buf out;                /* records not yet written to the caller */
};

static void record(struct keeper *k, pid_t pid, int status)
{
	struct sl_fork_rec r = { pid, status, k->how };
	sl_buf_append(&k->out, &r, sizeof r);
}

static void read_pids(struct keeper *k)
{
	int32_t buf[1024]; /* whole int32s: the template writes whole batches */
	for (;;) {
		ssize_t got = read(k->p->pids_r, buf, sizeof buf);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return; /* EAGAIN: nothing more for now */
		if (got == 0) {
			k->pids_eof = true;
			return;
		}
		for (size_t i = 0; i < (size_t)got / sizeof *buf && k->nclones < k->p->n; i++)
			k->clones[k->nclones++] = buf[i];
	}
}

static void reaped(struct keeper *k, pid_t pid, int status)
{
	if (pid == k->tpid) {
		k->tmpl_done = true;
		record(k, SL_FORK_TEMPLATE_PID, status);
		return;
	}
	/* A clone is reaped here only after the template exited, so every pid
	 * it named is in the pipe by now. */
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < k->nclones; i++)
			if (k->clones[i] == pid && !k->reaped[i]) {
				k->reaped[i] = true;
				k->nreaped++;
				record(k, pid, status);
				return;
			}
		if (k->pids_eof)
			return;
		read_pids(k);
	}
	/* anything else is an orphan of a clone: reaped, not reported */
}

static void reap(struct keeper *k, int flags)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, flags);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return;
		reaped(k, pid, status);
	}
}

static void flush(struct keeper *k)
{
	size_t off = 0;
	while (off < k->out.len) {
		ssize_t w = write(k->p->rec_w, k->out.data + off, k->out.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			off = k->out.len; /* the caller is gone: nobody to tell */
		if (w < 0)
			break;
		off += (size_t)w;
	}
	memmove(k->out.data, k->out.data + off, k->out.len - off);
	k->out.len -= off;
}

/* End everything now; the records say how. */
static void kill_all(struct keeper *k, int how)
{
	if (k->how == SL_FORK_OWN)
		k->how = how;
	kill_tree();
	for (;;) { /* killed processes' children become ours as they die */
		int status;
		pid_t pid = waitpid(-1, &status, 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break; /* ECHILD: nothing of the fork is left */
		reaped(k, pid, status);
		kill_tree();
	}
	while (!k->pids_eof) /* every writer is dead: EOF comes at once */
		read_pids(k);
}

static bool finished(const struct keeper *k)
{
	return k->pids_eof && k->tmpl_done && k->nreaped == k->nclones;
}

static void keeper_loop(struct keeper *k, int sfd)
{
	while (!finished(k)) {
		reap(k, WNOHANG);
		if (finished(k))
			break;
		struct pollfd fds[4] = {
			{ .fd = k->p->ctrl, .events = POLLIN },
			{ .fd = sfd, .events = POLLIN },
			{ .fd = k->pids_eof ? -1 : k->p->pids_r, .events = POLLIN },
			{ .fd = k->out.len ? k->p->rec_w : -1, .events = POLLOUT },
		};
		int wait = -1;
		if (k->deadline && k->how == SL_FORK_OWN) {
			int64_t left = k->deadline - sl_now_ms();
			wait = left < 0 ? 0 : (int)left;
		}
		if (poll(fds, 4, wait) < 0 && errno != EINTR) {
			kill_all(k, SL_FORK_KILLED);
			return;
		}
		if (fds[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
				if (si.ssi_signo != SIGCHLD)
					kill_all(k, SL_FORK_KILLED); /* SIGTERM / SIGHUP */
		}
		if (fds[2].revents)
			read_pids(k);
		if (fds[3].revents)
			flush(k);
		if (fds[0].revents)
			kill_all(k, SL_FORK_KILLED);
		if (k->deadline && k->how == SL_FORK_OWN && sl_now_ms() >= k->deadline)
			kill_all(k, SL_FORK_TIMEOUT);
	}
}

_Noreturn static void template_main(const struct sl_fork_plan *p);

_Noreturn void sl_fork_keeper_main(const struct sl_fork_plan *p)
{
	for (size_t i = 0; i < p->nclose; i++)
		close(p->close_fds[i]);
	signal(SIGINT, SIG_IGN);  /* the caller decides, not ^C */
	signal(SIGPIPE, SIG_IGN); /* a caller gone is seen as EPIPE */
	sigset_t set, old;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		_exit(1); /* the caller sees the template's socket hang up */
	pid_t tpid = sl_fork_child(&p->o);
	if (tpid == 0) {
		close(sfd);
		close(p->ctrl);
		close(p->rec_w);
		close(p->pids_r);
		sigprocmask(SIG_SETMASK, &old, NULL);
		signal(SIGINT, SIG_DFL);
		template_main(p);
	}
	close(p->pids_w);
	close(p->sock);
	struct keeper k = { .p = p, .tpid = tpid };
	k.clones = calloc(p->n ? p->n : 1, sizeof *k.clones);
	k.reaped = calloc(p->n ? p->n : 1, sizeof *k.reaped);
	if (tpid < 0 || !k.clones || !k.reaped) {
		kill_tree();
		_exit(1);
	}
	k.deadline = p->timeout_ms ? sl_now_ms() + (int64_t)p->timeout_ms : 0;
	fcntl(p->pids_r, F_SETFL, O_NONBLOCK);
	fcntl(p->rec_w, F_SETFL, O_NONBLOCK);
	keeper_loop(&k, sfd);
	/* Every clone has ended: nothing they started outlives the fork. */
	kill_tree();
	reap(&k, 0);
	record(&k, SL_FORK_END_PID, 0);
	fcntl(p->rec_w, F_SETFL, 0);
	flush(&k);
	_exit(0);
}

/* ------------------------------------------------------------- template */

static void send_error(int sock, char kind, int code, const char *text)
{
	char msg[4096];
	int32_t c = code;
	msg[0] = 'E';
	msg[1] = kind;
	memcpy(msg + 2, &c, sizeof c);
	size_t len = strlen(text ? text : "");
	if (len > sizeof msg - 6)
		len = sizeof msg - 6;
	memcpy(msg + 6, text ? text : "", len);
	send(sock, msg, 6 + len, MSG_NOSIGNAL);
}

/* Name the batch's clones to the keeper, then hand pids and pipes over. */
static int send_batch(const struct sl_fork_plan *p, int32_t *pids, int *fds, size_t n)
{
	char data[1 + SL_FORK_BATCH * sizeof(int32_t)];
	union {
		char buf[CMSG_SPACE(SL_FORK_BATCH * sizeof(int))];
		struct cmsghdr align;
	} ctl;
	size_t len = n * sizeof(int32_t);
	if (write(p->pids_w, pids, len) != (ssize_t)len)
		return -1;
	data[0] = 'P';
	memcpy(data + 1, pids, len);
	struct iovec iov = { data, 1 + len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
	                    .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	ssize_t sent = sendmsg(p->sock, &m, MSG_NOSIGNAL);
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	return sent < 0 ? -1 : 0;
}

_Noreturn static void clone_main(const struct sl_fork_plan *p, uint32_t id, int r, int w,
                                 const int *batch, size_t nbatch)
{
	close(r);
	dup2(w, 1); /* clears close-on-exec on fd 1 */
	close(w);
	for (size_t i = 0; i < nbatch; i++) /* earlier clones' ends not yet sent */
		close(batch[i]);
	close(p->pids_w);
	close(p->sock);
	char idbuf[16];
	snprintf(idbuf, sizeof idbuf, "%u", id);
	setenv("CLONE_ID", idbuf, 1);
	int code = p->o.work(p->o.ud, id);
	fflush(stdout);
	fflush(stderr);
	_exit(code & 0xff);
}

/* Stdin at EOF: a pipe with no writer (no path needed, unlike /dev/null,
 * which a fork from inside a sandbox may not open). */
static void stdin_at_eof(void)
{
	int e[2];
	if (pipe(e) == 0) {
		close(e[1]);
		dup2(e[0], 0);
		close(e[0]);
	}
}

static void fork_clones(const struct sl_fork_plan *p)
{
	int32_t pids[SL_FORK_BATCH];
	int fds[SL_FORK_BATCH];
	size_t nb = 0;
	for (uint32_t i = 0; i < p->n; i++) {
		int pp[2];
		int rc = pipe2(pp, O_CLOEXEC);
		if (rc < 0 && errno == EMFILE && nb) { /* a small max_open_files */
			if (send_batch(p, pids, fds, nb) < 0)
				break;
			nb = 0;
			rc = pipe2(pp, O_CLOEXEC);
		}
		if (rc < 0) {
			send_error(p->sock, SL_FORK_ERR_TEMPLATE, errno, strerror(errno));
			_exit(1);
		}
		pid_t pid = sl_fork_child(&p->o);
		if (pid == 0)
			clone_main(p, i, pp[0], pp[1], fds, nb);
		int e = errno;
		close(pp[1]);
		if (pid < 0) {
			close(pp[0]);
			send_error(p->sock, SL_FORK_ERR_TEMPLATE, e, strerror(e));
			_exit(1);
		}
		pids[nb] = pid;
		fds[nb++] = pp[0];
		if ((nb == SL_FORK_BATCH || i + 1 == p->n) && send_batch(p, pids, fds, nb) < 0) {
			send_error(p->sock, SL_FORK_ERR_TEMPLATE, errno, strerror(errno));
			_exit(1);
		}
		if (nb == SL_FORK_BATCH || i + 1 == p->n)
			nb = 0;
	}
}

_Noreturn static void template_main(const struct sl_fork_plan *p)
{
	extern char **environ;
	setpgid(0, 0);
	stdin_at_eof();
	if (p->sb->cwd && chdir(p->sb->cwd) < 0) {
		char text[512];
		snprintf(text, sizeof text, "fork: cwd '%s': %s", p->sb->cwd, strerror(errno));
		send_error(p->sock, SL_FORK_ERR_TEMPLATE, errno, text);
		_exit(1);
	}
	if (p->envp)
		environ = p->envp;
	int err = 0;
	char *msg = NULL;
	struct sock_fprog prog = p->prog;
	if (sl_confine_apply(p->sb, p->ruleset, &prog, &err, &msg) < 0) {
		send_error(p->sock, SL_FORK_ERR_CONFINE, err, msg ? msg : "confine failed");
		_exit(1);
	}
	close(p->ruleset);
	if (p->o.init) {
		char why[4000] = "";
		int rc = p->o.init(p->o.ud, why, sizeof why);
		if (rc) {
			why[sizeof why - 1] = '\0';
			if (!why[0])
				snprintf(why, sizeof why, "init returned %d", rc);
			send_error(p->sock, SL_FORK_ERR_INIT, rc, why);
			_exit(1);
		}
	}
	fflush(stdout); /* or every clone would repeat init's buffered output */
	fflush(stderr);
	fork_clones(p);
	_exit(0);
}
