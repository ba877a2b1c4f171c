#include "common/liveness.h"

bool pm_live_late(uint64_t last_tick_ms, uint64_t now_ms, unsigned timeout_ms)
{
	unsigned p = pm_live_period(timeout_ms);

	return last_tick_ms && now_ms > last_tick_ms && now_ms - last_tick_ms > p + p / 2;
}

bool pm_live_lost(uint64_t *last_tick, uint64_t last_rx, uint64_t now_ms, unsigned timeout_ms)
{
	bool late = pm_live_late(*last_tick, now_ms, timeout_ms);

	*last_tick = now_ms;
	if (!timeout_ms || late)
		return false;
	return now_ms > last_rx && now_ms - last_rx >= timeout_ms + pm_live_period(timeout_ms);
}
