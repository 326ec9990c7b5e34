/*
 * prng.h - the simulator's one source of chance: xoshiro256** seeded
 * through splitmix64, so that a 64-bit seed names a whole run.
 */
#ifndef MRTX_SIM_PRNG_H
#define MRTX_SIM_PRNG_H

#include <stdint.h>

typedef struct prng {
	uint64_t s[4];
} prng;

static inline uint64_t prng_splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline void prng_seed(prng *p, uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		p->s[i] = prng_splitmix(&seed);
}

static inline uint64_t prng_rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t prng_next(prng *p)
{
	uint64_t *s = p->s, r = prng_rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = prng_rotl(s[3], 45);
	return r;
}

/* Uniform in [0, n), n > 0 (Lemire's multiply-shift, rejecting the bias). */
static inline uint64_t prng_below(prng *p, uint64_t n)
{
	unsigned __int128 m = (unsigned __int128)prng_next(p) * n;
	uint64_t lo = (uint64_t)m;

	if (lo < n) {
		uint64_t floor = -n % n;

		while (lo < floor) {
			m = (unsigned __int128)prng_next(p) * n;
			lo = (uint64_t)m;
		}
	}
	return (uint64_t)(m >> 64);
}

/* 1 with probability rate (0..1). */
static inline int prng_chance(prng *p, double rate)
{
	return rate > 0 && (double)(prng_next(p) >> 11) * 0x1.0p-53 < rate;
}

#endif
