/* The slow-node detector's inputs, from the ranks' heartbeats to the
 * root's samples (common/slow.h decides). Pure: no I/O, time is an
 * argument.
 *
 * - A heartbeat file holds "STEP" or "STEP COMPUTE_MS" (the Python
 *   module's heartbeat(step, compute=seconds)); procmgr-rank reads it at
 *   each change and tells procmgrd the step, when it saw it, and the
 *   compute time.
 * - Each node (pm_slownode) keeps, per interval, its ranks' compute times
 *   (a median goes up) and, per step, when its last rank arrived there.
 *   A node's arrival at a step is complete when all its ranks reached it.
 *   At each interval it sends up one summary text (a few frames at most)
 *   with its own and its children's data merged: per step, the latest and
 *   second latest node and how many nodes that covers
 *   (pm_slow_arrival_merge is associative, so a parent merges what came
 *   in whatever order); per node, its compute median. The root thus gets
 *   O(fan-out) messages per interval.
 * - The root (pm_slowroot) completes each step once every node running
 *   ranks is in it, names the node that arrived last by more than the
 *   resolution, and at each interval feeds pm_slow one sample per node:
 *   COMPUTE where the node reported compute times, else PHASE. */
#ifndef PM_SLOWSUM_H
#define PM_SLOWSUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "slow.h"

/* "STEP" or "STEP COMPUTE_MS" (blanks around, a newline at the end);
 * compute < 0 when not given. 0, or -1 when it is not that. */
int pm_beat_parse(const char *text, uint64_t *step, double *compute_ms);
/* PM_MSG_RANK_STEP's text, its one codec: "STEP AT_MS COMPUTE_MS" (when
 * the supervisor saw the step, its wall clock; compute -1: not given).
 * Read by the slow-node detector and the root's goodput (goodput_link.c).
 * format: -1 if it does not fit; parse: 0, or -1 when it is not that. */
int pm_rank_step_format(char *buf, size_t len, uint64_t step, uint64_t at_ms, double compute_ms);
int pm_rank_step_parse(const char *text, uint64_t *step, uint64_t *at_ms, double *compute_ms);

/* Steps in flight on one node (its ranks apart by more are dropped),
 * compute samples and arrival records per interval. */
#define PM_SLOWSUM_PENDING 64
#define PM_SLOWSUM_SAMPLES 1024
#define PM_SLOWSUM_RECS 512

struct pm_slowsum_rec {
	struct pm_slow_arrival a;
	uint32_t nodes; /* nodes merged in a */
};

struct pm_slownode_step {
	uint64_t step;
	unsigned arrived; /* local ranks */
	uint64_t max_ms;
	bool used;
};

struct pm_slowsum_line {
	uint32_t node, steps;
	double compute_ms;
};

struct pm_slownode {
	uint32_t node;
	unsigned nlocal;
	uint64_t *rank_step; /* by local rank: last step + 1, 0: none */
	struct pm_slownode_step pend[PM_SLOWSUM_PENDING];
	double samples[PM_SLOWSUM_SAMPLES];
	unsigned nsamples;
	struct pm_slowsum_rec recs[PM_SLOWSUM_RECS];
	unsigned nrecs;
	struct pm_slowsum_line *lines; /* own and children's compute lines */
	unsigned nlines, lines_cap;
	unsigned dropped; /* records that did not fit this interval */
};

int pm_slownode_init(struct pm_slownode *n, uint32_t node, unsigned nlocal);
void pm_slownode_free(struct pm_slownode *n);
/* A new generation: steps start again. */
void pm_slownode_reset(struct pm_slownode *n);
/* Local rank lrank reached step at at_ms (wall clock), compute_ms < 0: not
 * reported. A step not after the rank's last is ignored. */
void pm_slownode_beat(struct pm_slownode *n, unsigned lrank, uint64_t step, uint64_t at_ms,
		      double compute_ms);
/* A child's summary text: merged into this interval's. */
int pm_slownode_merge(struct pm_slownode *n, const char *text, char *err, size_t errlen);
/* The interval's summary, in texts of at most maxlen - 1 characters, each
 * given to emit; then the interval starts over. Nothing to say: no call. */
void pm_slownode_flush(struct pm_slownode *n, size_t maxlen,
		       void (*emit)(void *arg, const char *text), void *arg);

/* The root. */
#define PM_SLOWROOT_PENDING 1024
#define PM_SLOW_RESOLUTION_MS 5 /* a margin smaller than this names nobody */

struct pm_slowroot_step {
	struct pm_slowsum_rec r;
	bool used;
};

struct pm_slowroot_node {
	double compute_ms; /* this interval's, 0: none */
	uint32_t compute_steps;
	uint32_t last;     /* steps it arrived last at, this interval */
	bool compute_seen; /* it reports compute times: never judged by phase */
	struct pm_slow_verdict v; /* its last change of verdict */
	bool judged;       /* v is set */
};

struct pm_slowroot {
	struct pm_slow det;
	uint32_t nodes;
	unsigned resolution_ms;
	struct pm_slowroot_step *pend; /* PM_SLOWROOT_PENDING, by step % size */
	struct pm_slowroot_node *n;
	uint32_t steps;                /* complete steps this interval */
	struct pm_slow_sample *samples;
	uint64_t intervals;            /* fed so far */
};

int pm_slowroot_init(struct pm_slowroot *r, const struct pm_slow_cfg *cfg, uint32_t nodes,
		     char *err, size_t errlen);
void pm_slowroot_free(struct pm_slowroot *r);
/* A new generation: steps in flight are forgotten (the histories stay). */
void pm_slowroot_reset(struct pm_slowroot *r);
/* One summary (a node's flush, relayed). expected: the nodes that run
 * ranks; a step is complete with that many. */
int pm_slowroot_add(struct pm_slowroot *r, const char *text, uint32_t expected,
		    char *err, size_t errlen);
/* The interval's end: the samples fed to the detector (active[i]: node i
 * runs ranks), its changes of verdict into out. */
size_t pm_slowroot_tick(struct pm_slowroot *r, const bool *active,
			struct pm_slow_verdict *out, size_t outcap);
/* A node evicted or replaced: its history starts over. */
void pm_slowroot_reset_node(struct pm_slowroot *r, uint32_t node);

/* Every node's interval on the same wall-clock grid: ms from now_ms
 * (CLOCK_REALTIME) to the next instant t, t % interval_ms == offset_ms
 * (offset_ms < interval_ms), from 1 to interval_ms. Each node's summaries
 * cover [k*I, (k+1)*I) and the root judges at k*I + I/2, when its
 * children's summaries of the interval have come up. With timers started
 * whenever each procmgrd did, a node's summary could cover the interval
 * before the others' (seen on the testbed: one node a whole interval
 * behind), and a job's compute time that changes with the machine's load
 * then looked like that node being slow or fast. */
unsigned pm_slow_phase_delay(uint64_t now_ms, unsigned interval_ms, unsigned offset_ms);

/* When a node found slow is evicted (--procmgr-evict-slow): at the next
 * step boundary, not at the interval's tick, which falls anywhere in a
 * step. A rank's heartbeat of a new step comes after its previous step's
 * work and its save of procmgr's copy (examples/ddp_train.py), so the ranks
 * stopped right after one lose no step; stopped mid-step they lose it and a
 * save may be cut short. The root sees its own ranks' heartbeats as they
 * come (the others' only at each interval), so the boundary is the first
 * new step of the root's ranks after the verdict. The slow node is the last
 * to reach each step: at that moment it is finishing the step the others
 * finished, nothing later. If the root's ranks show no new step for two
 * ticks (no step counter, a step longer than an interval) it is evicted at
 * the second: a slow node is not kept for a boundary that may not come.
 *
 *   state \ event   verdict(node)       step(s > armed)   tick
 *   IDLE            ARMED (step noted)  -                 -
 *   ARMED           - (one at a time)   fire, IDLE        1st: stay; 2nd: fire, IDLE */
struct pm_slowevict {
	bool armed;
	uint32_t node;
	uint64_t step; /* the root's ranks' step at the verdict (+1), 0: none seen */
	unsigned ticks;
};

/* A verdict to evict node; step: the root's ranks' last step + 1 (0: none
 * seen yet). 0, or -1 when one is pending already (it goes first). */
int pm_slowevict_arm(struct pm_slowevict *e, uint32_t node, uint64_t step);
/* The root's rank reached step (its last + 1 as above): the node to evict
 * now, or -1. */
long pm_slowevict_step(struct pm_slowevict *e, uint64_t step);
/* An interval's tick: the node to evict now, or -1. */
long pm_slowevict_tick(struct pm_slowevict *e);
/* A new generation or the job's end: nothing pending. */
void pm_slowevict_cancel(struct pm_slowevict *e);

#endif
