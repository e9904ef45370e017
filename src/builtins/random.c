/*
 * random.c — random_seed: getrandom() returns a reproducible stream.
 *
 * WHY: reproducible builds and tests need the same "random" bytes on every
 * run.  getrandom is performed here instead of in the kernel: the bytes
 * come from a PRNG seeded with cfg->random_seed (prng.h), written into
 * the caller's buffer, and the count returned.
 * Calls are answered in the order the supervisor receives them, so a
 * single-threaded program sees the same stream every run.  This is a
 * determinism knob, not a security one: the bytes are predictable by
 * design.  Requests are capped at 256 KiB per call (getrandom may return
 * fewer bytes than asked; callers loop).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "prng.h"
#include "builtins/builtin.h"

#define RANDOM_MAX_CALL (256u << 10)

static int random_syscalls(const struct sandlock_sandbox *cfg, struct sl_traps *out)
{
	return cfg->has_random_seed ? sl_traps_add(out, __NR_getrandom) : 0;
}

static int random_init(const struct sandlock_sandbox *cfg, struct sl_services *sv, void **state,
                       char **msg)
{
	(void)sv;
	if (!cfg->has_random_seed)
		return 0;
	struct sl_prng *p = calloc(1, sizeof(*p));
	if (!p) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	sl_prng_seed(p, cfg->random_seed, 0);
	*state = p;
	return 0;
}

static bool random_decide(void *state, const struct sl_call *call, sandlock_action_t *act)
{
	const sandlock_notif_t *n = call->n;
	if (!state || n->syscall_nr != __NR_getrandom)
		return false;
	size_t len = n->args[1] > RANDOM_MAX_CALL ? RANDOM_MAX_CALL : (size_t)n->args[1];
	uint8_t *buf = len ? malloc(len) : NULL;
	if (len && !buf) {
		sandlock_action_set_errno(act, ENOMEM);
		return true;
	}
	sl_prng_fill(state, buf, len);
	int32_t rc = len ? sandlock_mem_poke(call->mem, n->args[0], buf, len) : 0;
	free(buf);
	if (rc != 0)
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, (int64_t)len);
	return true;
}

const struct sl_builtin sl_builtin_random = {
	.name = "random seed",
	.setting = "random_seed (getrandom is answered by the supervisor)",
	.phase = SL_PHASE_FIRST,
	.syscalls = random_syscalls,
	.init = random_init,
	.free = free,
	.decide = random_decide,
};
