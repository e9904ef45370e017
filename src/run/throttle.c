/*
 * throttle.c — max_cpu by SIGSTOP/SIGCONT, where no cgroup with the cpu
 * controller can be made (the reference SDK's only mechanism).
 *
 * Accounting, not sampling: every tick adds pct% of the wall time since
 * the last tick to a credit and subtracts the CPU time the whole sandbox
 * used meanwhile (usage.c: the run's v2 group's cpu.stat, else /proc).
 * While the credit is negative the sandbox is stopped for exactly as long
 * as it takes the allowance to repay it; then it runs for one window.  So
 * a busy single thread at 20% runs 20 ms and stops 80 ms, two busy threads
 * stop twice as long, and an idle sandbox is never stopped.  Because the
 * balance is cumulative, the coarse clock ticks of /proc (10 ms) do not
 * add up to an error.  The credit is capped at one period's allowance, so
 * a sandbox that idled a while cannot then burst at full speed.
 *
 * Only init's descendants are stopped (sl_pause_tree): init stays awake
 * to reap, to time out and to end the sandbox.  init does not mirror a
 * SIGSTOP of the command to the terminal (init.c), so throttling never
 * stops the caller's job.
 */
#include "run/throttle.h"
#include "run/pause.h"
#include "run/usage.h"
#include "util.h"

/* The accounting period: the allowance is pct ms of CPU per SL_THR_PERIOD_MS. */
#define SL_THR_PERIOD_MS 100
/* Shortest run window (ms): shorter ones cost more signals than they save. */
#define SL_THR_MIN_WINDOW_MS 10
/* Longest single stop (ms) before the balance is looked at again. */
#define SL_THR_MAX_STOP_MS 1000

void sl_throttle_init(struct sl_throttle *t, uint32_t pct, pid_t init, int cg_dirfd)
{
	*t = (struct sl_throttle){ .pct = pct, .init = init, .cg_dirfd = cg_dirfd };
	if (!pct)
		return;
	t->last_ms = sl_now_ms();
	t->used_ns = sl_usage_cpu_ns(init, cg_dirfd);
	t->due_ms = t->last_ms + SL_THR_MIN_WINDOW_MS;
}

int64_t sl_throttle_wait_ms(const struct sl_throttle *t)
{
	if (!t->pct)
		return -1;
	int64_t left = t->due_ms - sl_now_ms();
	return left > 0 ? left : 0;
}

/* The run window: pct ms of every period, at least the minimum. */
static int64_t window_ms(const struct sl_throttle *t)
{
	int64_t w = (int64_t)t->pct * SL_THR_PERIOD_MS / 100;
	return w < SL_THR_MIN_WINDOW_MS ? SL_THR_MIN_WINDOW_MS : w;
}

/* Add the allowance since the last tick, subtract what was used. */
static void account(struct sl_throttle *t, int64_t now)
{
	int64_t used = sl_usage_cpu_ns(t->init, t->cg_dirfd);
	if (used < 0 || t->used_ns < 0) { /* unreadable: no charge this time */
		t->used_ns = used;
		t->last_ms = now;
		return;
	}
	int64_t allow = (now - t->last_ms) * 1000000 * (int64_t)t->pct / 100;
	t->credit_ns += allow - (used > t->used_ns ? used - t->used_ns : 0);
	int64_t cap = (int64_t)SL_THR_PERIOD_MS * 1000000 * t->pct / 100;
	if (t->credit_ns > cap)
		t->credit_ns = cap;
	t->used_ns = used;
	t->last_ms = now;
}

void sl_throttle_tick(struct sl_throttle *t, bool paused)
{
	int64_t now = sl_now_ms();
	if (!t->pct || now < t->due_ms)
		return;
	account(t, now);
	if (t->credit_ns < 0) {
		/* Repaid at pct% of wall time: debt * 100 / pct. */
		int64_t stop = -t->credit_ns * 100 / t->pct / 1000000 + 1;
		if (stop > SL_THR_MAX_STOP_MS)
			stop = SL_THR_MAX_STOP_MS;
		if (!t->stopped && !paused)
			t->stopped = sl_pause_tree(t->init, true) == 0;
		t->due_ms = now + stop;
		return;
	}
	/* A caller's pause wins: the tree stays stopped until resume(). */
	if (t->stopped && !paused)
		(void)sl_pause_tree(t->init, false);
	t->stopped = false;
	t->due_ms = now + window_ms(t);
}
