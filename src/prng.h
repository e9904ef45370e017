/*
 * prng.h — the seeded generator behind random_seed (xoshiro256**, seeded
 * by splitmix64): getrandom (builtins/random.c) and the /dev/urandom view
 * (virtfiles.c) draw from it.  Reproducible by design, never secure.
 */
#ifndef SANDLOCK_PRNG_H
#define SANDLOCK_PRNG_H

#include <stddef.h>
#include <stdint.h>

struct sl_prng {
	uint64_t s[4];
};

/* The generator for seed (and a stream number, 0 for getrandom's). */
void sl_prng_seed(struct sl_prng *p, uint64_t seed, uint64_t stream);
void sl_prng_fill(struct sl_prng *p, void *buf, size_t n);

#endif /* SANDLOCK_PRNG_H */
