/*
 * random.c — random_seed: getrandom() returns a reproducible stream.
 *
 * WHY: reproducible builds and tests need the same "random" bytes on every
 * run.  getrandom is performed here instead of in the kernel: the bytes
 * come from a PRNG seeded with cfg->random_seed (xoshiro256**, seeded by
 * splitmix64), written into the caller's buffer, and the count returned.
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

#include "builtin.h"

#define RANDOM_MAX_CALL (256u << 10)

struct prng {
	uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t next64(struct prng *p)
{
	uint64_t *s = p->s;
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

static void fill(struct prng *p, uint8_t *buf, size_t n)
{
	while (n > 0) {
		uint64_t v = next64(p);
		size_t k = n < sizeof v ? n : sizeof v;
		memcpy(buf, &v, k);
		buf += k;
		n -= k;
	}
}

static int random_syscalls(const struct sandlock_sandbox *cfg, struct sl_nrset *out)
{
	return cfg->has_random_seed ? sl_nrset_add(out, __NR_getrandom) : 0;
}

static int random_init(const struct sandlock_sandbox *cfg, void **state, char **msg)
{
	if (!cfg->has_random_seed)
		return 0;
	struct prng *p = calloc(1, sizeof(*p));
	if (!p) {
		*msg = sl_strdup("out of memory");
		return -1;
	}
	uint64_t x = cfg->random_seed;
	for (int i = 0; i < 4; i++)
		p->s[i] = splitmix64(&x);
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
	fill(state, buf, len);
	int32_t rc = len ? sandlock_mem_write(call->mem, n->args[0], buf, len) : 0;
	free(buf);
	if (rc != 0)
		sandlock_action_set_errno(act, EFAULT);
	else
		sandlock_action_set_return_value(act, (int64_t)len);
	return true;
}

const struct sl_builtin sl_builtin_random = {
	.name = "random seed",
	.phase = SL_PHASE_FIRST,
	.syscalls = random_syscalls,
	.init = random_init,
	.free = free,
	.decide = random_decide,
};
