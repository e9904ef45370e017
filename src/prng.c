/*
 * prng.c — xoshiro256** seeded by splitmix64 (see prng.h).
 */
#include "prng.h"

#include <string.h>

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

static uint64_t next64(struct sl_prng *p)
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

void sl_prng_seed(struct sl_prng *p, uint64_t seed, uint64_t stream)
{
	/* Stream 0 is the seed as given (getrandom's stream is unchanged);
	 * other streams start from a mix of both, so they never overlap it. */
	uint64_t x = seed;
	if (stream)
		x ^= splitmix64(&stream) ^ 0x5eed0f0dd0f0ULL;
	for (int i = 0; i < 4; i++)
		p->s[i] = splitmix64(&x);
}

void sl_prng_fill(struct sl_prng *p, void *out, size_t n)
{
	unsigned char *buf = out;
	while (n > 0) {
		uint64_t v = next64(p);
		size_t k = n < sizeof v ? n : sizeof v;
		memcpy(buf, &v, k);
		buf += k;
		n -= k;
	}
}
