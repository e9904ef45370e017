/*
 * signals.c — forward a terminating signal to the sandbox's process group.
 *
 * Why: the sandboxed command runs in its own process group, so a `kill`
 * (or a terminal's Ctrl-C when the library could not make the sandbox the
 * terminal's foreground group) reaches only this process.  The library arms
 * PR_SET_PDEATHSIG on the direct child, but grandchildren in the group
 * would survive us, orphaned and unsupervised.  So on SIGINT/SIGTERM/
 * SIGHUP/SIGQUIT we SIGKILL the group, let sandlock_run finish its normal
 * cleanup, and then die of the signal we received.
 *
 * The C ABI does not expose the child's pid; it is our only child and its
 * pid is its process-group id (the library calls setpgid(0, 0) in it), so
 * the handler reads it from /proc/self/task/<tid>/children of the thread
 * that forked it (this one: libsandlock forks in the calling thread).
 * Pid reuse cannot bite: the handler runs on the main thread (the
 * library's own threads block all signals), and the main thread is the one
 * that reaps the child, so the child cannot be reaped between reading its
 * pid and signalling it.  Everything here is async-signal-safe.
 */
#include "signals.h"

#include <sandlock.h>

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static const int k_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
static volatile sig_atomic_t g_received;
static char g_children_path[64];

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

static void kill_children_groups(void)
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
		if (pid > 0) {
			/* Our child is the sandbox's init (src/init.c): asking it
			 * to end the sandbox reaches every process of the tree,
			 * including those that left the process group (setsid),
			 * which a killpg would miss.  SIGCONT in case it is
			 * stopped (job control).  Before it is init (setup), the
			 * request's default action ends it just as well. */
			kill((pid_t)pid, SANDLOCK_SIG_END_SANDBOX);
			kill((pid_t)pid, SIGCONT);
		}
		pid = 0;
		if (*s == '\0')
			break;
	}
}

static void on_signal(int sig)
{
	if (!g_received)
		g_received = sig;
	kill_children_groups();
}

int cli_signals_install(void)
{
	build_children_path();
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigfillset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof(k_signals) / sizeof(k_signals[0]); i++) {
		struct sigaction old;
		/* A signal ignored by our parent (nohup, `cmd &` without job
		 * control) stays ignored, as for any well-behaved command. */
		if (sigaction(k_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		if (sigaction(k_signals[i], &sa, NULL) < 0)
			return -1;
	}
	return 0;
}

void cli_signals_reraise(void)
{
	if (g_received)
		cli_die_of(g_received);
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
