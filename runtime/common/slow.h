/* Slow-node detection at the root: which node holds a synchronous job back,
 * and how sure. Pure: the caller feeds one summary per node per interval
 * (aggregated up the tree, so the root's work is O(nodes) per interval,
 * never O(ranks) or O(steps)), and gets back the changes of verdict.
 *
 * Two kinds of evidence, the stronger first:
 * - COMPUTE: the ranks report the time of each step spent outside waiting
 *   (compute, not blocked in collectives). A node's value is its ranks'
 *   median per interval; it is compared with the job's median of the same
 *   interval, as a ratio.
 * - PHASE: no compute time, only heartbeats carrying the step counter. In a
 *   synchronous job every rank's step time is the same, but the slow rank
 *   arrives last at each step's heartbeat. A node's value is the share of
 *   the interval's steps at which it arrived last by more than the
 *   heartbeats' resolution. With no culprit the last place is spread over
 *   the nodes (1/N each); a node last at most steps, window after window,
 *   is the culprit.
 *
 * A verdict needs evidence over a window of intervals, never one sample:
 * a node is flagged when it has been slow in at least `need` of the last
 * `window` intervals and its median over them passes the threshold; it is
 * cleared (once) when that median falls under half the threshold, so a
 * node near the line does not flap. A job whose nodes are all equally
 * noisy never passes: the comparison is with the job's own median of each
 * interval, which moves with the noise. Fewer than half the nodes can be
 * found slow (the median must be a healthy node); with 1 or 2 nodes there
 * is no majority and nothing is judged, nor is (COMPUTE) an interval in
 * which fewer than 3 nodes have a value. */
#ifndef PM_SLOW_H
#define PM_SLOW_H

#include <stddef.h>
#include <stdint.h>

enum pm_slow_kind {
	PM_SLOW_NONE,    /* no data this interval */
	PM_SLOW_COMPUTE, /* value: compute ms per step */
	PM_SLOW_PHASE,   /* value: steps arrived last by a margin, of steps seen */
};

struct pm_slow_cfg {
	double threshold;   /* COMPUTE: slower than the median by this share (0.2 = 20%) */
	double phase_share; /* PHASE: last at this share of steps or more */
	unsigned window;    /* intervals looked at, at most PM_SLOW_MAX_WINDOW */
	unsigned need;      /* of which at least this many slow */
	unsigned min_steps; /* PHASE: steps an interval needs to count */
	unsigned min_compute_steps; /* COMPUTE: the same, for a node's median */
};

#define PM_SLOW_MAX_WINDOW 32

/* threshold 0.2, phase_share 0.75, window 6, need 5, min_steps 10,
 * min_compute_steps 3. */
void pm_slow_cfg_default(struct pm_slow_cfg *c);
/* 0 or -1 with err saying which field is wrong and what is allowed. */
int pm_slow_cfg_check(const struct pm_slow_cfg *c, char *err, size_t errlen);

/* One node's summary of one interval. */
struct pm_slow_sample {
	enum pm_slow_kind kind;
	double compute_ms; /* COMPUTE: its ranks' median compute time per step */
	unsigned steps;    /* steps in the interval (both kinds) */
	unsigned last;     /* PHASE: steps at which this node arrived last */
};

enum pm_slow_change { PM_SLOW_FLAGGED, PM_SLOW_CLEARED };

struct pm_slow_verdict {
	uint32_t node;
	enum pm_slow_change change;
	enum pm_slow_kind kind; /* the evidence used */
	double ratio;           /* COMPUTE: node / median; PHASE: share of steps last */
	unsigned slow, of;      /* intervals slow, of the intervals judged */
};

struct pm_slow_node;

struct pm_slow {
	struct pm_slow_cfg cfg;
	uint32_t nodes;
	struct pm_slow_node *n;
	double *scratch;
};

int pm_slow_init(struct pm_slow *d, const struct pm_slow_cfg *cfg, uint32_t nodes,
		 char *err, size_t errlen);
void pm_slow_free(struct pm_slow *d);

/* One interval: s[i] is node i's summary (nodes entries). Writes the
 * changes of verdict into out (at most outcap; a node changes at most once
 * per interval) and returns how many. */
size_t pm_slow_feed(struct pm_slow *d, const struct pm_slow_sample *s,
		    struct pm_slow_verdict *out, size_t outcap);

/* A node lost or replaced: its history starts again (a spare in its place
 * is not the slow node). */
void pm_slow_reset_node(struct pm_slow *d, uint32_t node);

int pm_slow_is_flagged(const struct pm_slow *d, uint32_t node);

/* "node 3 is slow: its compute time 1.52x the job's median in 5 of 6
 * intervals" and the like, into buf. */
void pm_slow_describe(const struct pm_slow_verdict *v, char *buf, size_t len);

/* Per-step arrivals, merged up the tree: for one step, the latest arrival
 * of a subtree, which node it was, and the second latest (for the
 * margin). A parent merges its own and its children's; the root knows who
 * was last and by how much without seeing every node. */
struct pm_slow_arrival {
	uint64_t step;
	uint64_t last_ms, second_ms; /* 0: none */
	uint32_t last_node;
};

void pm_slow_arrival_init(struct pm_slow_arrival *a, uint64_t step, uint32_t node,
			  uint64_t at_ms);
/* Merge b into a (same step). */
void pm_slow_arrival_merge(struct pm_slow_arrival *a, const struct pm_slow_arrival *b);
/* The node that was last by more than resolution_ms, or -1 (no clear last). */
long pm_slow_arrival_culprit(const struct pm_slow_arrival *a, unsigned resolution_ms);

#endif
