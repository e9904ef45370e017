/*
 * signals.c — forward the signals `sandlock` receives to the sandbox's
 * command, and end the sandbox when asked to stop waiting for it.
 *
 * Why forward: the sandboxed command runs in its own process group, so a
 * `kill`, a service manager's stop, a CI runner's cancel or a terminal's
 * hangup reaches only this process.  The command must get the chance to
 * clean up (flush, remove its lock files, tell its children), exactly as
 * if it ran without us: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2
 * and SIGWINCH go to the sandbox's process group (the command with
 * whatever stayed in its group — what a terminal would reach; init sends
 * them for us), followed by SIGCONT for the terminating ones so a stopped
 * job can act on them.  The run then ends when the command does:
 * init ends everything else of the sandbox (src/launch/init.c), and we exit with
 * its status, or die of its signal.
 *
 * Escalation (--kill-after, like timeout(1)): after a forwarded
 * terminating signal, a timer asks init to end the whole sandbox (the
 * library's SANDLOCK_SIG_END_SANDBOX request, which reaches processes that
 * left the group too).  --timeout with --kill-after sends SIGTERM at the
 * timeout; the library's own timeout, set kill_after later, is the
 * backstop.  Without --kill-after a forwarded signal is only forwarded:
 * SIGKILL to sandlock still ends everything (PR_SET_PDEATHSIG in init).
 *
 * The C ABI does not expose the child's pid; it is our only child and its
 * pid is its process-group id (the library calls setpgid(0, 0) in it), so
 * the handler reads it from /proc/self/task/<tid>/children of the thread
 * that forked it.  Pid reuse cannot bite: the handler runs on that thread
 * (the library's own threads block all signals, and requests from other
 * threads are redirected to it with pthread_kill), which is also the one
 * that reaps the child, so the child cannot be reaped between reading its
 * pid and signalling it.  Everything in the handler is async-signal-safe.
 */
#include "signals.h"

#include <sandlock.h>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static const int k_terminating[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static const int k_passed[] = { SIGUSR1, SIGUSR2, SIGWINCH };

enum alarm_phase { ALARM_NONE, ALARM_TERM, ALARM_KILL };

static volatile sig_atomic_t g_received;
static volatile sig_atomic_t g_timed_out;
static volatile sig_atomic_t g_phase;
static uint64_t g_kill_after_ms;
static char g_children_path[64];
static pthread_t g_main;

/* Format "/proc/self/task/<tid>/children" without stdio (done up front). */
static void build_children_path(void)
{
	char digits[24];
	int n = 0;
	for (unsigned long v = (unsigned long)gettid(); v || n == 0; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	char *p = g_children_path;
	const char *prefix = "/proc/self/task/";
	size_t plen = strlen(prefix);
	memcpy(p, prefix, plen);
	p += plen;
	while (n)
		*p++ = digits[--n];
	memcpy(p, "/children", sizeof("/children"));
}

/* Call fn(pid, sig) for each child of the forking thread (one: init). */
static void each_child(void (*fn)(pid_t, int), int sig)
{
	char buf[256];
	int fd = open(g_children_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = '\0';
	long pid = 0;
	for (char *s = buf;; s++) {
		if (*s >= '0' && *s <= '9') {
			pid = pid * 10 + (*s - '0');
			continue;
		}
		if (pid > 0)
			fn((pid_t)pid, sig);
		pid = 0;
		if (*s == '\0')
			break;
	}
}

/* init passes sig to the sandbox's group (SANDLOCK_SIG_FORWARD; a kill
 * of the group from here would reach init, which takes SIGUSR1/2 from us
 * as its own requests).  After a terminating signal, SIGCONT: a stopped
 * command must be able to act on it (as kill(1) does for a job), and init
 * itself may be stopped mirroring that stop. */
static void signal_group(pid_t init, int sig)
{
	bool terminating = sig != SIGWINCH && sig != SIGUSR1 && sig != SIGUSR2;
	if (terminating)
		(void)kill(init, SIGCONT);
	(void)sigqueue(init, SANDLOCK_SIG_FORWARD, (union sigval){ .sival_int = sig });
	if (terminating)
		(void)sigqueue(init, SANDLOCK_SIG_FORWARD, (union sigval){ .sival_int = SIGCONT });
}

/* Ask init to end the whole sandbox: it reaches every process of the
 * tree, including those that left the group (setsid), which a killpg
 * would miss.  SIGCONT in case init is stopped (mirroring a job stop);
 * before it is init (setup), the request's default action ends it. */
static void end_sandbox(pid_t init, int unused)
{
	(void)unused;
	(void)kill(init, SANDLOCK_SIG_END_SANDBOX);
	(void)kill(init, SIGCONT);
}

static void arm(enum alarm_phase phase, uint64_t ms)
{
	struct itimerval it = { 0 };
	it.it_value.tv_sec = (time_t)(ms / 1000);
	it.it_value.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	if (ms && it.it_value.tv_sec == 0 && it.it_value.tv_usec == 0)
		it.it_value.tv_usec = 1;
	g_phase = phase;
	(void)setitimer(ITIMER_REAL, &it, NULL);
}

/* A terminating signal (ours, or the timeout's SIGTERM): forward it and
 * start the --kill-after clock, once. */
static void terminate(int sig)
{
	if (!g_received)
		g_received = sig;
	each_child(signal_group, sig);
	if (g_kill_after_ms && g_phase != ALARM_KILL)
		arm(ALARM_KILL, g_kill_after_ms);
}

static void on_alarm(void)
{
	if (g_phase == ALARM_TERM) {
		g_timed_out = 1;
		g_phase = ALARM_NONE;
		each_child(signal_group, SIGTERM);
		if (g_kill_after_ms)
			arm(ALARM_KILL, g_kill_after_ms);
	} else if (g_phase == ALARM_KILL) {
		each_child(end_sandbox, 0);
	}
}

static void on_signal(int sig)
{
	if (sig == SIGALRM)
		on_alarm();
	else if (sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGWINCH)
		each_child(signal_group, sig);
	else
		terminate(sig);
}

static int catch(int sig, const struct sigaction *sa)
{
	struct sigaction old;
	/* A signal ignored by our parent (nohup, `cmd &` without job
	 * control) stays ignored, as for any well-behaved command. */
	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN && sig != SIGALRM)
		return 0;
	return sigaction(sig, sa, NULL);
}

int cli_signals_install(const struct cli_signal_opts *o)
{
	build_children_path();
	g_main = pthread_self();
	g_kill_after_ms = o ? o->kill_after_ms : 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof(k_terminating) / sizeof(k_terminating[0]); i++)
		if (catch(k_terminating[i], &sa) < 0)
			return -1;
	for (size_t i = 0; i < sizeof(k_passed) / sizeof(k_passed[0]); i++)
		if (catch(k_passed[i], &sa) < 0)
			return -1;
	if (catch(SIGALRM, &sa) < 0)
		return -1;
	if (o && o->term_after_ms)
		arm(ALARM_TERM, o->term_after_ms);
	return 0;
}

int cli_signals_received(void)
{
	return g_received;
}

bool cli_signals_timed_out(void)
{
	return g_timed_out != 0;
}

int cli_signals_request(int sig)
{
	return pthread_kill(g_main, sig) == 0 ? 0 : -1;
}

void cli_die_of(int sig)
{
	signal(sig, SIG_DFL);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
}
