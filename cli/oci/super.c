/*
 * super.c — the supervisor process of one sandbox.
 */
#include "super.h"
#include "console.h"
#include "ctl.h"
#include "log.h"
#include "seccomp.h"
#include "signals.h"
#include "state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_ATTACHED 64

enum phase { CREATED, RUNNING, PAUSED, STOPPED };

struct super {
	const struct oci_run *r;
	sandlock_handle_t *h;
	int pidfd;      /* the process (argv's), from spawn */
	enum phase phase;
	int done;       /* eventfd: the run ended */
	sandlock_result_t *result;
	int attached[MAX_ATTACHED]; /* exec supervisors' connections */
	size_t nattached;
	int container;  /* an exec's connection to the container's supervisor */
	bool waiting;   /* the waiter thread runs (the handle left "created") */
	pthread_t waiter;
};

/* Signals the supervisor forwards to its process (a direct signal to the
 * --pid-file pid means the container, as it does with runc). */
static const int forwarded[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
	                         SIGWINCH, SIGALRM, SIGCONT, SIGTSTP };

/* Close what the engine left open (its sync pipes must see EOF when the
 * runtime exits), keeping stdio, the preserved fds, the report pipe and
 * the log file. */
static void close_inherited(const struct oci_run *r, int report)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return;
	int self = dirfd(d);
	struct dirent *e;
	int close_list[1024];
	size_t n = 0;
	while ((e = readdir(d)) && n < 1024) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd < 3 + r->preserve_fds || fd == report || fd == self ||
		    fd == oci_log_fd() || fd == r->seccomp_fd)
			continue;
		close_list[n++] = fd;
	}
	closedir(d);
	for (size_t i = 0; i < n; i++)
		close(close_list[i]);
}

static void *waiter(void *arg)
{
	struct super *s = arg;
	s->result = sandlock_handle_wait_ms(s->h, -1, NULL, NULL);
	uint64_t one = 1;
	if (write(s->done, &one, sizeof one) < 0)
		abort(); /* an eventfd write cannot fail here */
	return NULL;
}

/* A handle can be waited for once it left "created" (started, or killed
 * before its start). */
static void start_waiter(struct super *s)
{
	if (s->waiting)
		return;
	if (pthread_create(&s->waiter, NULL, waiter, s) != 0) {
		/* Without a waiter nothing would ever see the end: end it now. */
		sandlock_handle_free(s->h);
		_exit(255);
	}
	s->waiting = true;
}

/* Signal every process below pid (the sandbox's init): a signal to the
 * whole container (`kill --all`) without killpg, which would reach init
 * and its own control signal. */
static void signal_tree(pid_t pid, int sig, int depth)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/%d/task", (int)pid);
	DIR *d = opendir(p);
	if (!d || depth > 64) {
		if (d)
			closedir(d);
		return;
	}
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char cp[300];
		snprintf(cp, sizeof cp, "/proc/%d/task/%s/children", (int)pid, e->d_name);
		FILE *f = fopen(cp, "re");
		long child;
		while (f && fscanf(f, "%ld", &child) == 1) {
			kill((pid_t)child, sig);
			signal_tree((pid_t)child, sig, depth + 1);
		}
		if (f)
			fclose(f);
	}
	closedir(d);
}

static int send_signal(struct super *s, int sig, bool all)
{
	if (s->phase == STOPPED) {
		errno = ESRCH;
		return -1;
	}
	/* Before start the process is parked inside sandlock's launch, not in
	 * its program: a signal whose default is to be ignored (the pty's
	 * SIGWINCH when the engine sizes it) does nothing, any other ends the
	 * whole sandbox, as it would end a parked runc init. */
	if (s->phase == CREATED && (sig == SIGWINCH || sig == SIGCHLD || sig == SIGURG ||
	                            sig == SIGCONT))
		return 0;
	if (sig == SIGKILL || s->phase == CREATED) {
		int rc = sandlock_handle_kill(s->h);
		start_waiter(s);
		return rc;
	}
	if (all)
		signal_tree(sandlock_handle_init_pid(s->h), sig, 0);
	else if (syscall(SYS_pidfd_send_signal, s->pidfd, sig, NULL, 0) < 0)
		return -1;
	return 0;
}

static void forward_to_execs(struct super *s, int sig)
{
	char line[32];
	snprintf(line, sizeof line, "kill %d", sig);
	for (size_t i = 0; i < s->nattached; i++)
		oci_ctl_write_line(s->attached[i], line);
}

/* One request on a fresh connection; the connection is closed unless
 * it is an exec's attach. */
static void serve(struct super *s, int fd)
{
	char req[256], reply[256];
	if (!oci_ctl_peer_ok(fd) || oci_ctl_read_line(fd, req, sizeof req, 2000) <= 0) {
		close(fd);
		return;
	}
	static const char *const names[] = { "created", "running", "paused", "stopped" };
	int sig;
	char all[8] = "";
	if (strcmp(req, "status") == 0) {
		/* the pid-file pid, then the sandbox's init (an exec's budget) */
		snprintf(reply, sizeof reply, "%s %d %d", names[s->phase], (int)getpid(),
		         sandlock_handle_init_pid(s->h));
	} else if (strcmp(req, "start") == 0) {
		if (s->phase != CREATED)
			snprintf(reply, sizeof reply, "error the container is %s, not created",
			         names[s->phase]);
		else if (sandlock_handle_start(s->h) < 0)
			snprintf(reply, sizeof reply, "error the process died before it started");
		else {
			s->phase = RUNNING;
			start_waiter(s);
			snprintf(reply, sizeof reply, "ok");
		}
	} else if (strcmp(req, "pause") == 0 || strcmp(req, "resume") == 0) {
		bool pause = req[0] == 'p';
		if (s->phase != (pause ? RUNNING : PAUSED))
			snprintf(reply, sizeof reply, "error the container is %s", names[s->phase]);
		else if ((pause ? sandlock_handle_pause(s->h) : sandlock_handle_resume(s->h)) < 0)
			snprintf(reply, sizeof reply, "error %s", strerror(errno));
		else {
			s->phase = pause ? PAUSED : RUNNING;
			snprintf(reply, sizeof reply, "ok");
		}
	} else if (sscanf(req, "kill %d %7s", &sig, all) >= 1) {
		bool every = strcmp(all, "all") == 0;
		if (every)
			forward_to_execs(s, sig);
		if (send_signal(s, sig, every) < 0)
			snprintf(reply, sizeof reply, "error %s", strerror(errno));
		else
			snprintf(reply, sizeof reply, "ok");
	} else if (strcmp(req, "attach") == 0 && s->phase != STOPPED &&
	           s->nattached < MAX_ATTACHED) {
		s->attached[s->nattached++] = fd;
		oci_ctl_write_line(fd, "ok");
		return;
	} else {
		snprintf(reply, sizeof reply, "error unknown request");
	}
	oci_ctl_write_line(fd, reply);
	close(fd);
}

/* Die as the process died: the engine (conmon's waitpid) reads the
 * container's status from ours. */
static __attribute__((noreturn)) void exit_like(const sandlock_result_t *res)
{
	if (!res) {
		oci_error("the sandbox's run failed");
		_exit(255);
	}
	int sig = sandlock_result_term_signal(res); /* a SIGKILL too: die as it did */
	int code = sandlock_result_exit_code(res);
	oci_info("the process ended: status %d, signal %d", code, sig);
	if (sig > 0) {
		struct rlimit none = { 0, 0 };
		setrlimit(RLIMIT_CORE, &none); /* no core of ours for its SIGSEGV */
		cli_die_of(sig);
	}
	_exit(code);
}

/* The container's supervisor went away: an exec's process ends too. */
static void container_line(struct super *s)
{
	char line[64];
	int sig;
	if (oci_ctl_read_line(s->container, line, sizeof line, 1000) <= 0) {
		close(s->container);
		s->container = -1;
		sandlock_handle_kill(s->h);
	} else if (sscanf(line, "kill %d", &sig) == 1) {
		send_signal(s, sig, true);
	}
}

/* Execs end with the container, and before its supervisor: the engine
 * (podman) reaps the container, then refuses to clean up while an exec's
 * process still runs, as no pid namespace ends them all at once.  Each
 * exec's supervisor closes its connection when it exits (at most 2 s). */
static void end_execs(struct super *s)
{
	forward_to_execs(s, SIGKILL);
	for (int waited = 0; s->nattached && waited < 2000; waited += 10) {
		struct pollfd p[MAX_ATTACHED];
		for (size_t i = 0; i < s->nattached; i++)
			p[i] = (struct pollfd){ .fd = s->attached[i], .events = POLLIN };
		if (poll(p, s->nattached, 10) < 0 && errno != EINTR)
			break;
		for (size_t i = s->nattached; i-- > 0;) {
			char c;
			if (p[i].revents && read(s->attached[i], &c, 1) <= 0) {
				close(s->attached[i]);
				s->attached[i] = s->attached[--s->nattached];
			}
		}
	}
	for (size_t i = 0; i < s->nattached; i++)
		close(s->attached[i]);
	s->nattached = 0;
}

static void drop_attached(struct super *s, size_t i)
{
	close(s->attached[i]);
	s->attached[i] = s->attached[--s->nattached];
}

static void loop(struct super *s, int lfd, int sfd)
{
	for (;;) {
		struct pollfd p[5 + MAX_ATTACHED];
		nfds_t n = 0;
		p[n++] = (struct pollfd){ .fd = s->done, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = s->container, .events = POLLIN };
		/* A parked process that died (OOM, an outside SIGKILL) before start. */
		p[n++] = (struct pollfd){ .fd = s->waiting ? -1 : s->pidfd, .events = POLLIN };
		for (size_t i = 0; i < s->nattached; i++)
			p[n++] = (struct pollfd){ .fd = s->attached[i], .events = POLLIN };
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			send_signal(s, SIGKILL, false);
		}
		if (p[0].revents)
			return;
		struct signalfd_siginfo si;
		if (p[1].revents && read(sfd, &si, sizeof si) == sizeof si) {
			oci_info("signal %u from pid %u: forwarded", si.ssi_signo, si.ssi_pid);
			send_signal(s, (int)si.ssi_signo, false);
		}
		if (p[3].revents)
			container_line(s);
		if (p[4].revents)
			send_signal(s, SIGKILL, false);
		/* An attached exec went away (its process ended).  Downwards: the
		 * last entry, moved into a dropped one's place, was seen already.
		 * Before serving: a new attach has no poll result yet. */
		for (size_t i = n - 5; i-- > 0;)
			if (p[5 + i].revents)
				drop_attached(s, i);
		if (p[2].revents) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (c >= 0)
				serve(s, c);
		}
	}
}

static int block_signals(void)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof forwarded / sizeof *forwarded; i++)
		sigaddset(&set, forwarded[i]);
	sigprocmask(SIG_BLOCK, &set, NULL);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

/* The exec's link to its container: "attach", answered "ok" while the
 * container runs. */
static int attach(const char *dir)
{
	char reply[64];
	int fd = oci_ctl_connect(dir);
	if (fd < 0 || oci_ctl_write_line(fd, "attach") < 0 ||
	    oci_ctl_read_line(fd, reply, sizeof reply, 5000) <= 0 || strcmp(reply, "ok") != 0) {
		oci_error("exec: the container is not running");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* argv, or with an engine profile the seccomp step before it. */
static const char **command(const struct oci_run *r, char *fdnum, size_t cap, uint32_t *argc)
{
	const char **v = calloc(r->proc->argc + 4, sizeof *v);
	if (!v)
		return NULL;
	size_t n = 0;
	if (r->seccomp_fd >= 0) {
		snprintf(fdnum, cap, "%d", r->seccomp_fd);
		v[n++] = OCI_HELPER_GUEST_DIR "/" OCI_HELPER_NAME;
		v[n++] = "seccomp-exec";
		v[n++] = fdnum;
	}
	for (size_t i = 0; i < r->proc->argc; i++)
		v[n++] = r->proc->argv[i];
	*argc = (uint32_t)n;
	return v;
}

static sandlock_handle_t *spawn(const struct oci_run *r)
{
	int32_t pass[257];
	size_t npass = 0;
	for (int i = 0; i < r->preserve_fds && npass < 256; i++)
		pass[npass++] = 3 + i;
	if (r->seccomp_fd >= 0)
		pass[npass++] = r->seccomp_fd;
	char fdnum[16];
	uint32_t argc;
	const char **argv = command(r, fdnum, sizeof fdnum, &argc);
	sandlock_spawn_opts_t o = { .size = sizeof o, .flags = r->exec ? 0 : SANDLOCK_SPAWN_CREATE,
		                    .pass_fds = pass, .npass_fds = npass };
	for (int i = 0; i < 3; i++)
		o.stdio[i].mode = SANDLOCK_STDIO_INHERIT;
	int err = 0;
	char *msg = NULL;
	sandlock_handle_t *h = argv ? sandlock_spawn(r->sb, argv, argc, NULL, 0, &o, &err, &msg)
	                            : NULL;
	free(argv);
	if (!h)
		oci_error("cannot start %s: %s", r->proc->argv[0], msg ? msg : "launch failed");
	sandlock_string_free(msg);
	return h;
}

static void report(int fd, const char *what)
{
	if (write(fd, what, strlen(what)) < 0)
		return; /* the runtime died: it cannot be told */
}

static __attribute__((noreturn)) void super_main(const struct oci_run *r, int rep)
{
	struct super s = { .r = r, .pidfd = -1, .container = -1 };
	int lfd = -1;
	setsid();
	close_inherited(r, rep);
	if (r->exec)
		s.container = attach(r->dir);
	else if (oci_state_lock(r->dir) < 0 || (lfd = oci_ctl_listen(r->dir)) < 0)
		oci_error("the state directory %s is in use", r->dir);
	if ((r->exec ? s.container : lfd) < 0)
		_exit(1);
	if ((r->proc->terminal && oci_console_setup(r->console_socket, r->proc->rows,
	                                            r->proc->cols) < 0) ||
	    oci_proc_apply_self(r->proc) < 0)
		_exit(1);
	int sfd = block_signals();
	s.done = eventfd(0, EFD_CLOEXEC);
	/* Orphans of the sandbox come to us, not to the engine's reaper. */
	prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	s.h = spawn(r);
	if (!s.h || sfd < 0 || s.done < 0)
		_exit(1);
	s.pidfd = (int)syscall(SYS_pidfd_open, sandlock_handle_pid(s.h), 0);
	if (s.pidfd < 0) {
		oci_error("cannot watch the process: %s", strerror(errno));
		sandlock_handle_free(s.h);
		_exit(1);
	}
	s.phase = r->exec ? RUNNING : CREATED;
	if (r->exec)
		start_waiter(&s);
	report(rep, "ok");
	close(rep);
	oci_log_quiet();
	loop(&s, lfd, sfd);
	pthread_join(s.waiter, NULL);
	s.phase = STOPPED;
	end_execs(&s);
	sandlock_handle_free(s.h);
	/* Orphans that escaped init's sweep (it died early): end them. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	exit_like(s.result);
}

pid_t oci_super_fork(const struct oci_run *in)
{
	struct oci_run copy = *in, *r = &copy;
	/* The profile's fd above the preserved fds, which keep their numbers. */
	if (r->seccomp_fd >= 0 && r->seccomp_fd < 3 + r->preserve_fds) {
		r->seccomp_fd = fcntl(in->seccomp_fd, F_DUPFD_CLOEXEC, 3 + r->preserve_fds);
		if (r->seccomp_fd < 0) {
			oci_error("fcntl: %s", strerror(errno));
			return -1;
		}
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0) {
		oci_error("pipe: %s", strerror(errno));
		return -1;
	}
	/* Above the preserved fds, which keep their numbers. */
	int w = fcntl(p[1], F_DUPFD_CLOEXEC,
	              (r->seccomp_fd > 3 + r->preserve_fds ? r->seccomp_fd : 3 + r->preserve_fds) + 1);
	close(p[1]);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		oci_error("fork: %s", strerror(errno));
		close(p[0]);
		close(w);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		super_main(r, w);
	}
	close(w);
	if (r->seccomp_fd != in->seccomp_fd)
		close(r->seccomp_fd);
	char buf[16] = "";
	ssize_t n = read(p[0], buf, sizeof buf - 1);
	close(p[0]);
	if (n == 2 && strncmp(buf, "ok", 2) == 0)
		return pid;
	/* It said why on stderr; reap it so nothing is left. */
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}
