/* The packer of a sweep: which task slots a trial runs on. Pure.
 *
 * The step's slots are nodes x slots_per_node; slot s is on node
 * s / slots_per_node. A trial of at most slots_per_node ranks runs on one
 * node (its ranks talk through shared memory, and a small trial spread over
 * nodes would leave holes everywhere); it goes to the usable node with the
 * FEWEST free slots that still holds it (best fit). Best fit fills nodes
 * that are already partly used and keeps whole nodes whole, so that a later
 * node-sized or multi-node trial finds them: worst fit scatters one-rank
 * trials over every node and leaves no node empty, and first fit breaks
 * into a whole low-numbered node while a higher one has just the room.
 * Among equal nodes the one whose count changed last is taken (at the
 * start, the lowest-numbered).
 * A larger trial takes the nodes with the most free slots (whole free nodes
 * first) until what remains fits on one node, and that remainder goes to
 * the best-fitting node: the fewest nodes possible, whole nodes where there
 * are. Ranks are numbered node by node in that order, slots ascending in a
 * node; rank 0's node is the trial's MASTER_ADDR.
 * Every choice costs O(slots_per_node + nodes used): free nodes are kept in
 * lists by their free count. */
#ifndef PM_SWEEP_PACK_H
#define PM_SWEEP_PACK_H

#include <stdbool.h>

enum pm_pack_result {
	PM_PACK_OK = 0,
	PM_PACK_WAIT,  /* not now: it fits once enough slots are released */
	PM_PACK_NEVER, /* more ranks than the usable nodes have slots */
};

struct pm_pack {
	int nodes, slots;    /* slots per node */
	unsigned char *used; /* nodes x slots, 1 = taken */
	int *nfree;          /* free slots per node */
	bool *lost;          /* lost nodes are never chosen again */
	int *next, *prev;    /* usable nodes in lists by free count */
	int *head;           /* head[k]: first usable node with k free slots, or -1 */
	int usable_nodes;
	long free_total;     /* free slots on usable nodes */
};

/* 0, or -1 with err (sizes out of range, out of memory). */
int pm_pack_init(struct pm_pack *p, int nodes, int slots_per_node, char *err, unsigned errlen);
void pm_pack_free(struct pm_pack *p);
/* Chooses ranks slots and marks them taken: slot_of_rank[r] for r in
 * 0..ranks-1 (room for ranks entries). Nothing changes unless PM_PACK_OK. */
enum pm_pack_result pm_pack_take(struct pm_pack *p, int ranks, int *slot_of_rank);
/* Whether pm_pack_take would succeed now, without taking. */
enum pm_pack_result pm_pack_fits(const struct pm_pack *p, int ranks);
/* Gives a trial's slots back (those of a lost node stay out of use). */
void pm_pack_release(struct pm_pack *p, int ranks, const int *slot_of_rank);
/* The node is gone: none of its slots is chosen again. Trials on it are
 * the caller's (the queue requeues them and releases their slots). */
void pm_pack_node_lost(struct pm_pack *p, int node);
/* A node out of use (a spare kept out with pm_pack_node_lost) joins: its
 * free slots are chosen again. */
void pm_pack_node_join(struct pm_pack *p, int node);
static inline int pm_pack_node_of(const struct pm_pack *p, int slot)
{
	return slot / p->slots;
}

#endif
