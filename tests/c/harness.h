/*
 * harness.h — a tiny test harness for the C tests.
 *   TEST(name) { CHECK(cond); CHECK_EQ_INT(a, b); ... }
 * Each test runs in the test binary's own process, in order.  The binary
 * prints one "ok"/"FAIL"/"skip" line per test and closes with
 * "N passed, N failed, N skipped";
 * it exits non-zero if anything failed.
 */
#ifndef SANDLOCK_TEST_HARNESS_H
#define SANDLOCK_TEST_HARNESS_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, skipped = 0;
	for (int i = 0; i < th_ncases; i++) {
		if (argc > 1 && !strstr(th_cases[i].name, argv[1]))
			continue;
		th_failed_now = th_skipped_now = 0;
		th_cases[i].fn();
		const char *tag = th_failed_now ? "FAIL" : th_skipped_now ? "skip" : "ok  ";
		printf("%s %s\n", tag, th_cases[i].name);
		fflush(stdout);
		if (th_failed_now)
			failed++;
		else if (th_skipped_now)
			skipped++;
		else
			passed++;
	}
	printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
	return failed ? 1 : 0;
}
#endif
