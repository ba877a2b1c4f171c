/* Retries until a deadline, with exponential backoff and jitter: the
 * thousands of children of a large step that find their parent not yet
 * listening must not retry it in lockstep. Pure: the caller gives the time
 * and the seed. */
#ifndef PM_BACKOFF_H
#define PM_BACKOFF_H

#include <stdint.h>

struct pm_backoff {
	unsigned base_ms, cap_ms; /* first wait's ceiling, every wait's ceiling */
	uint64_t deadline_ms;     /* no wait ends after it */
	unsigned attempt;
	uint64_t rng;
};

/* base_ms >= 1, cap_ms >= base_ms; seed: anything that differs between the
 * processes that retry (a node's index, its pid). */
void pm_backoff_init(struct pm_backoff *b, unsigned base_ms, unsigned cap_ms,
		     uint64_t deadline_ms, uint64_t seed);

/* The wait before the next try, in ms: uniform in [e/2, e] for
 * e = min(cap, base * 2^attempt), at least 1, cut to end at the deadline;
 * -1 once now_ms has reached the deadline (give up). */
long pm_backoff_next(struct pm_backoff *b, uint64_t now_ms);

#endif
