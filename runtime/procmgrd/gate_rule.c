#include "gate_rule.h"

enum pm_gate_verdict pm_gate_decide(bool from_node, int same_src, bool spoke, int spoke_held,
				    int silent_held, int room)
{
	if (from_node)
		return same_src < PM_GATE_NODE_ROOM ? PM_GATE_TAKE : PM_GATE_MAKE_WAY;
	return (spoke ? spoke_held : silent_held) < room ? PM_GATE_TAKE : PM_GATE_OLDEST_BUSY;
}

bool pm_bucket_take(struct pm_bucket *b, uint64_t now_ms, unsigned rate, unsigned burst)
{
	uint64_t full = (uint64_t)burst * 1000, t = b->tokens_milli;

	if (!b->t_ms) {
		t = full;
	} else if (now_ms > b->t_ms) {
		/* rate tokens a second: rate milli-tokens a millisecond. */
		uint64_t add = (now_ms - b->t_ms) * rate;
		t = t + add > full ? full : t + add;
	}
	if (now_ms > b->t_ms || !b->t_ms)
		b->t_ms = now_ms;
	if (t < 1000) {
		b->tokens_milli = (unsigned)t;
		return false;
	}
	b->tokens_milli = (unsigned)(t - 1000);
	return true;
}
