/* The tree port's rules, pure (gate.c applies them).
 *
 * Room: a connection that has not said HELLO yet is held for a few
 * seconds. The step's own nodes (known by address) each have room of
 * their own, so that nobody can crowd them out; a node's room full, its
 * oldest silent connection makes way (a procmgrd says HELLO at once, so
 * the older one is not it). Everyone else (the procmgr command, other
 * users) has two bounded rooms, read early: a connection whose first bytes
 * are already there when it is accepted (the procmgr command sends its
 * signed request at once) goes to the room of those who spoke, one that
 * says nothing yet to the silent room. So a flood of silent connections
 * never crowds out a request. A room full, its oldest is told "busy" and
 * closed, and the newcomer taken: a connection whose request came a moment
 * after its accept is not refused for the flood's older ones.
 *
 * Credentials: decoding one costs munged and us a CPU slice, so those not
 * from the step's nodes are decoded at a bounded rate (a token bucket);
 * beyond it the request is refused as busy, undecoded. */
#ifndef PM_GATE_RULE_H
#define PM_GATE_RULE_H

#include <stdbool.h>
#include <stdint.h>

#define PM_GATE_NODE_ROOM 4      /* silent connections per step node's address */
#define PM_GATE_CRED_RATE 20     /* credentials decoded per second, not from nodes */
#define PM_GATE_CRED_BURST 20

enum pm_gate_verdict {
	PM_GATE_TAKE,        /* hold it until its HELLO or the deadline */
	PM_GATE_MAKE_WAY,    /* close the oldest from the same address, take it */
	PM_GATE_OLDEST_BUSY, /* tell the oldest of its room "busy", close it, take it */
};

/* A new connection: from_node if its address is one of the step's nodes';
 * same_src: ones held from that address (for nodes); for strangers, spoke:
 * its first bytes were there at accept, spoke_held and silent_held: the
 * strangers held in each room; room: how many each room holds. */
enum pm_gate_verdict pm_gate_decide(bool from_node, int same_src, bool spoke, int spoke_held,
				    int silent_held, int room);

struct pm_bucket {
	uint64_t t_ms;      /* last refill */
	unsigned tokens_milli;
};

/* One credential to decode now: false if over the rate (refuse, busy). */
bool pm_bucket_take(struct pm_bucket *b, uint64_t now_ms, unsigned rate, unsigned burst);

#endif
