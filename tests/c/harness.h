/*
 * harness.h — a tiny test harness for the C tests.
 *   TEST(name) { CHECK(cond); CHECK_EQ_INT(a, b); ... }
 * Each test runs in its own forked child process, one after the other, so a
 * test that crashes (segfault, abort, sanitizer report) or hangs fails on
 * its own and the remaining tests still run: a test still running after
 * TH_TIMEOUT_S seconds (default 60; the environment variable
 * SANDLOCK_TEST_TIMEOUT overrides it) is SIGKILLed and fails.  Tests
 * therefore cannot share state through globals.
 * The binary prints one "ok"/"FAIL"/"skip" line per test and closes with
 * "N passed, N failed, N skipped"; it exits non-zero if anything failed.
 * An optional argument runs only the tests whose name contains it.
 */
#ifndef SANDLOCK_TEST_HARNESS_H
#define SANDLOCK_TEST_HARNESS_H
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef TH_TIMEOUT_S
#define TH_TIMEOUT_S 60
#endif

typedef void (*th_fn)(void);
struct th_case { const char *name; th_fn fn; };
static struct th_case th_cases[256];
static int th_ncases;
static int th_failed_now;
static int th_skipped_now;

#define TEST(tname)                                                         \
	static void tname(void);                                            \
	__attribute__((constructor)) static void th_reg_##tname(void)       \
	{ th_cases[th_ncases].name = #tname; th_cases[th_ncases++].fn = tname; } \
	static void tname(void)

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "  %s:%d: CHECK(%s) failed\n",      \
				__FILE__, __LINE__, #cond);                 \
			th_failed_now = 1;                                  \
		}                                                           \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                  \
	do {                                                                \
		long long th_a = (long long)(a), th_b = (long long)(b);     \
		if (th_a != th_b) {                                         \
			fprintf(stderr, "  %s:%d: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, #a, th_a, #b, th_b);    \
			th_failed_now = 1;                                  \
		}                                                           \
	} while (0)

/* End the test as skipped: what it checks cannot be observed here (e.g. its
 * outside-the-sandbox control needs privileges).  Never hides a failure
 * already recorded. */
#define SKIP(why)                                                           \
	do {                                                                \
		fprintf(stderr, "  skipped: %s\n", why);                   \
		th_skipped_now = 1;                                         \
		return;                                                     \
	} while (0)

/* Return from the test if a precondition fails (counts as failure). */
#define REQUIRE(cond)                                                       \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "  %s:%d: REQUIRE(%s) failed\n",    \
				__FILE__, __LINE__, #cond);                 \
			th_failed_now = 1;                                  \
			return;                                             \
		}                                                           \
	} while (0)

/* How a test's child reports its verdict.  Anything else (a signal, a
 * sanitizer's own exit status) is a failure. */
enum { TH_EXIT_PASS = 0, TH_EXIT_FAIL = 1, TH_EXIT_SKIP = 77 };
enum th_verdict { TH_PASS, TH_FAIL, TH_SKIP };

static int th_timeout_ms(void)
{
	const char *s = getenv("SANDLOCK_TEST_TIMEOUT");
	long v = s ? strtol(s, NULL, 10) : 0;
	return (v > 0 && v < 24 * 3600 ? (int)v : TH_TIMEOUT_S) * 1000;
}

static long long th_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The child: run one test and turn its flags into an exit status.  exit(),
 * not _exit(): stdio is flushed and LeakSanitizer checks this test alone. */
static void th_child(const struct th_case *c)
{
	th_failed_now = th_skipped_now = 0;
	c->fn();
	fflush(NULL);
	exit(th_failed_now ? TH_EXIT_FAIL : th_skipped_now ? TH_EXIT_SKIP : TH_EXIT_PASS);
}

/*
 * Wait for the test's child for at most timeout_ms; kill it if it is still
 * running then.  A pidfd lets poll() do the timed wait without touching
 * SIGCHLD, which the tests themselves may depend on.  Returns the wait
 * status, or -1 (with *timed_out) when the child had to be killed.
 */
static int th_wait(pid_t pid, int timeout_ms, int *timed_out)
{
	int status = 0;
	*timed_out = 0;
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0) {
		long long deadline = th_now_ms() + timeout_ms;
		struct pollfd p = { .fd = pfd, .events = POLLIN };
		for (;;) {
			long long left = deadline - th_now_ms();
			if (left <= 0) {
				*timed_out = 1;
				break;
			}
			int n = poll(&p, 1, (int)left);
			if (n > 0)
				break;
			if (n < 0 && errno != EINTR) /* cannot time it: wait unbounded */
				break;
		}
		close(pfd);
	}
	if (*timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return *timed_out ? -1 : status;
}

/* Run one test in a child; explain on stderr anything but a normal verdict. */
static enum th_verdict th_run_one(const struct th_case *c, int timeout_ms)
{
	fflush(NULL); /* or buffered output would be written by both processes */
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "  fork failed: %s\n", strerror(errno));
		return TH_FAIL;
	}
	if (pid == 0)
		th_child(c);
	int timed_out;
	int st = th_wait(pid, timeout_ms, &timed_out);
	if (timed_out) {
		fprintf(stderr, "  timed out after %d s: killed\n", timeout_ms / 1000);
		return TH_FAIL;
	}
	if (WIFSIGNALED(st)) {
		fprintf(stderr, "  crashed: killed by signal %d (%s)\n", WTERMSIG(st),
			strsignal(WTERMSIG(st)));
		return TH_FAIL;
	}
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	if (code == TH_EXIT_PASS)
		return TH_PASS;
	if (code == TH_EXIT_SKIP)
		return TH_SKIP;
	if (code != TH_EXIT_FAIL)
		fprintf(stderr, "  test process exited with status %d\n", code);
	return TH_FAIL;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	int timeout_ms = th_timeout_ms();
	for (int i = 0; i < th_ncases; i++) {
		if (argc > 1 && !strstr(th_cases[i].name, argv[1]))
			continue;
		enum th_verdict v = th_run_one(&th_cases[i], timeout_ms);
		const char *tag = v == TH_FAIL ? "FAIL" : v == TH_SKIP ? "skip" : "ok  ";
		printf("%s %s\n", tag, th_cases[i].name);
		fflush(stdout);
		if (v == TH_FAIL)
			failed++;
		else if (v == TH_SKIP)
			skipped++;
		else
			passed++;
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
#endif
