/*
 * throttle.h — max_cpu without a CPU cgroup: the run loop stops and
 * continues the whole sandbox so that it gets at most max_cpu percent of
 * one core (run.c calls it from its loop; pause.c sends the signals).
 */
#ifndef SANDLOCK_THROTTLE_H
#define SANDLOCK_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sl_throttle {
	uint32_t pct;       /* 0: off */
	pid_t init;         /* the sandbox's init (unreaped while the loop runs) */
	int cg_dirfd;       /* the run's v2 group (usage from cpu.stat), or -1 */
	bool stopped;       /* the throttle holds the sandbox stopped */
	int64_t due_ms;     /* when the current phase ends */
	int64_t last_ms;    /* last accounting */
	int64_t used_ns;    /* CPU time at the last accounting */
	int64_t credit_ns;  /* CPU time still allowed (negative: debt) */
};

void sl_throttle_init(struct sl_throttle *t, uint32_t pct, pid_t init, int cg_dirfd);
/* ms until sl_throttle_tick has work (0: now), or -1 when off. */
int64_t sl_throttle_wait_ms(const struct sl_throttle *t);
/*
 * At the end of a phase: account the CPU time used since the last tick;
 * while it exceeds the allowance stop the sandbox (every descendant of
 * init), else let it run.  paused: the caller paused the sandbox
 * (sandlock_handle_pause): the throttle then never continues it.  The
 * caller holds the lock under which pause/resume signal the sandbox.
 */
void sl_throttle_tick(struct sl_throttle *t, bool paused);

#endif /* SANDLOCK_THROTTLE_H */
