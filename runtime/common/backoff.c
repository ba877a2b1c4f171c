/* Exponential backoff with "equal jitter": half of each wait is fixed, so
 * that a retry does not come too soon, half random, so that retries that
 * began together spread out. */
#include "backoff.h"

/* splitmix64: any seed, 0 included, gives a good sequence. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void pm_backoff_init(struct pm_backoff *b, unsigned base_ms, unsigned cap_ms,
		     uint64_t deadline_ms, uint64_t seed)
{
	b->base_ms = base_ms ? base_ms : 1;
	b->cap_ms = cap_ms < b->base_ms ? b->base_ms : cap_ms;
	b->deadline_ms = deadline_ms;
	b->attempt = 0;
	b->rng = seed;
}

long pm_backoff_next(struct pm_backoff *b, uint64_t now_ms)
{
	uint64_t e = b->base_ms, d;

	if (now_ms >= b->deadline_ms)
		return -1;
	/* Doubling stops at the cap: no shift can overflow. */
	for (unsigned i = 0; i < b->attempt && e < b->cap_ms; i++)
		e *= 2;
	if (e > b->cap_ms)
		e = b->cap_ms;
	if (b->attempt < 64)
		b->attempt++;
	d = e / 2 + next_rand(&b->rng) % (e - e / 2 + 1);
	if (d == 0)
		d = 1;
	if (d > b->deadline_ms - now_ms)
		d = b->deadline_ms - now_ms;
	return (long)d;
}
