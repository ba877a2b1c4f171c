/* The simulation's future: a binary min-heap of events ordered by time,
 * then by insertion (events at the same time keep their order, so a run
 * is deterministic for a seed). A message in flight is kept encoded
 * (pm_msg_encode): a frame without text fits inline, and at 1,000,000
 * nodes a struct pm_msg (4 KiB of text) per message would not. Pure. */
#ifndef SIM_QUEUE_H
#define SIM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_INLINE 32 /* a frame's header and fixed fields fit */

struct sim_ev {
	uint64_t t;   /* ns */
	uint64_t seq; /* insertion order */
	uint8_t kind;
	int32_t node, arg;
	uint16_t len; /* of the frame; 0: none */
	union {
		uint8_t in[SIM_INLINE];
		uint8_t *heap;
	} f;
};

struct sim_queue {
	struct sim_ev *ev;
	size_t len, cap;
	uint64_t seq;
};

/* A frame of len bytes travels with the event (copied). -1: no memory. */
int sim_push(struct sim_queue *q, uint64_t t, int kind, int node, int arg,
	     const uint8_t *frame, size_t len);
/* The earliest event into *out; false when there is none. The caller
 * frees its frame with sim_ev_done. */
bool sim_pop(struct sim_queue *q, struct sim_ev *out);
const uint8_t *sim_ev_frame(const struct sim_ev *e);
void sim_ev_done(struct sim_ev *e);
void sim_queue_free(struct sim_queue *q);

#endif
