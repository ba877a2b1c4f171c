/* The liveness rule of every link between procmgr's processes, pure.
 *
 * Each side sends something (at least a PING) every period, a third of the
 * peer timeout. A peer is lost once it has been silent for the timeout
 * beyond the period in which its next PING was due: a peer stopped for
 * less than the timeout is never lost, whatever the phase of its pings.
 *
 * A tick that fires late (this process was stopped, or starved of CPU)
 * is no evidence against the peers: what they sent meanwhile is still
 * unread in the socket. Such a tick only pings; the links are judged on
 * the next tick, after the loop has read what came. */
#ifndef PM_LIVENESS_H
#define PM_LIVENESS_H

#include <stdbool.h>
#include <stdint.h>

static inline unsigned pm_live_period(unsigned timeout_ms) { return timeout_ms / 3; }

/* A tick is late when it comes more than half a period after it was due. */
bool pm_live_late(uint64_t last_tick_ms, uint64_t now_ms, unsigned timeout_ms);

/* One tick for one link: true if the peer is lost (the caller ends the
 * link), false to ping it. *last_tick is the link's previous tick (0: none
 * yet), updated here; last_rx when it was last heard from. */
bool pm_live_lost(uint64_t *last_tick, uint64_t last_rx, uint64_t now_ms, unsigned timeout_ms);

#endif
