/* The trial queue of a sweep: each trial's state, the order trials start
 * in, their slots (through the packer), their ports and their restarts.
 * Pure: the caller reports what happened (started, ended, node lost, stop)
 * with the time, and asks pm_sq_schedule what to start now.
 *
 * A trial's life is the table in sweep_queue.c, states by events:
 *   QUEUED --granted--> STARTING --started--> RUNNING --exit, policy done--> DONE
 *   RUNNING --exit, policy restarts--> RESTARTING --due--> STARTING (same slots, port)
 *   RUNNING --exit, no restart left--> FAILED
 *   STARTING/RUNNING/RESTARTING --node lost--> REQUEUED --granted--> STARTING
 *   any state but DONE/FAILED --stop--> FAILED ("stopped")
 *   QUEUED/REQUEUED --no room (nodes lost, it can never fit)--> FAILED
 * The restart policy is the step's (runtime/common/policy.c), applied per
 * trial: its own restart count and backoff. A node loss is not the trial's
 * fault: it does not count as a restart.
 *
 * Order: requeued trials go to the front (they were admitted first), then
 * first in, first out. When the head does not fit, later trials that fit
 * start ahead of it (skip-ahead), looking at most PM_SQ_LOOKAHEAD trials
 * past it. Anti-starvation: each trial started ahead of a waiting head
 * counts against it; once a head has been passed over starve_limit times
 * nothing more starts ahead of it, so running trials drain until it fits.
 * Its wait is then bounded by the longest running trial. */
#ifndef PM_SWEEP_QUEUE_H
#define PM_SWEEP_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/policy.h"
#include "sweep_pack.h"

#define PM_SQ_LOOKAHEAD 1024
#define PM_SQ_ERR_MAX 200
/* owner[] of a slot let go by its trial (node lost, stop) whose rank of
 * that attempt still runs: out of use until pm_sq_unhold. */
#define PM_SQ_HELD (-2)

enum pm_ts {
	PM_TS_QUEUED = 0,
	PM_TS_STARTING,
	PM_TS_RUNNING,
	PM_TS_RESTARTING,
	PM_TS_DONE,
	PM_TS_FAILED,
	PM_TS_REQUEUED,
	PM_TS_COUNT
};

enum pm_tev {
	PM_TEV_GRANTED = 0, /* slots and a port were given to it */
	PM_TEV_STARTED,     /* its ranks run */
	PM_TEV_END_DONE,    /* it ended; the policy says finished */
	PM_TEV_END_RESTART, /* it ended; the policy restarts it (restarts left) */
	PM_TEV_END_FAILED,  /* it ended failed; no restart left */
	PM_TEV_DUE,         /* its restart delay passed */
	PM_TEV_NODE_LOST,   /* a node it ran on is gone */
	PM_TEV_STOP,        /* the user stopped it */
	PM_TEV_NO_ROOM,     /* it waits, and can never fit (nodes lost) */
	PM_TEV_COUNT
};

/* The table's entry: the next state, or -1 where the event cannot happen. */
int pm_sq_next_state(enum pm_ts s, enum pm_tev e);
const char *pm_ts_name(enum pm_ts s);

struct pm_sq_trial {
	enum pm_ts state;
	int ranks;
	int *slot_of_rank; /* ranks entries, valid while it holds slots */
	int port;          /* MASTER_PORT while it holds slots, else 0 */
	int restarts;      /* in place, counted by the policy */
	int requeues;      /* after a node loss */
	int passed;        /* times a later trial started ahead of it */
	int exit_code;     /* of its last end, -1 before any */
	uint64_t first_start_ms, end_ms, due_ms;
	char *error;       /* why it failed (allocated), or NULL */
	char *result;      /* what its last attempt reported, NAME=VALUE
			    * (sweep_metric.h; allocated), or NULL */
	int next, prev;    /* wait list (queued/requeued) or restart list */
};

struct pm_sq_cfg {
	int nodes, slots_per_node;
	struct pm_policy policy;
	int port_first, port_count; /* MASTER_PORTs: port_first.. */
	int starve_limit;           /* 0: the number of slots */
};

struct pm_sq {
	struct pm_sq_cfg cfg;
	struct pm_pack pack;
	int n;
	struct pm_sq_trial *t;
	int *slot_store;                /* every trial's slot_of_rank */
	int *owner;                     /* trial holding each slot, -1, or PM_SQ_HELD */
	int *hold_port;                 /* by held slot: the port it keeps, or 0 */
	const unsigned char *busy;      /* during node_lost/stop only: slots to hold */
	int lost_node;                  /* during node_lost only */
	int wait_head, wait_tail;       /* queued and requeued trials, in order */
	int restart_head;               /* trials in RESTARTING (unordered) */
	int *ports, port_rd, port_nfree; /* free ports, a ring: least recently freed first */
	int count[PM_TS_COUNT];
	long starts;                    /* STARTING entered, restarts included */
};

/* ranks[i] is trial i's rank count. 0, or -1 with err: a trial that can
 * never fit, no port, bad sizes, out of memory. */
int pm_sq_init(struct pm_sq *q, const struct pm_sq_cfg *cfg, const int *ranks, int n,
	       char *err, unsigned errlen);
void pm_sq_free(struct pm_sq *q);

/* What to start now: fills start[] with at most max trial indices, each in
 * STARTING with its slots and port (first starts and restarts that are due
 * by now_ms). A queued trial that can never fit any more (nodes lost) is
 * failed here. Returns how many. */
int pm_sq_schedule(struct pm_sq *q, uint64_t now_ms, int *start, int max);
/* The caller launched trial i: STARTING -> RUNNING. 0, or -1 if not allowed. */
int pm_sq_started(struct pm_sq *q, int i, uint64_t now_ms);
/* Trial i ended: failed (a rank failed or hung) or not, with the exit code
 * and the error line (may be NULL) of the failing rank. The policy decides
 * DONE, RESTARTING (due after its backoff, *delay_ms) or FAILED. Slots and
 * port are released unless it restarts. Returns the new state, or -1. */
int pm_sq_ended(struct pm_sq *q, int i, bool failed, int exit_code, const char *error,
		uint64_t now_ms, unsigned *delay_ms);
/* A node is gone: its slots are never used again, and every trial holding
 * one of them is requeued (its other slots released). affected[] receives
 * their indices (at most max): the caller stops their ranks on other nodes.
 * busy (by slot, may be NULL): slots whose rank still runs; those of the
 * requeued trials on other nodes are HELD (the rank's own attempt is being
 * stopped: another trial there would find the slot busy), and the trial's
 * port with its rank 0's slot (its store may still listen). Slots held on
 * the lost node are let go. Returns how many were requeued. */
int pm_sq_node_lost(struct pm_sq *q, int node, uint64_t now_ms, int *affected, int max,
		    const unsigned char *busy);
/* The user stopped trial i: FAILED with error "stopped", slots released
 * (the caller kills its ranks), those busy (may be NULL) HELD as above.
 * 0, or -1 if it had already ended. */
int pm_sq_stop(struct pm_sq *q, int i, uint64_t now_ms, const unsigned char *busy);
/* The user asked for trial i's restart and its ranks ended: RESTARTING on
 * the same slots and port, due now, counted as a restart whatever the
 * policy's budget (the user asked). The new state, or -1 unless it was
 * STARTING or RUNNING. */
int pm_sq_restart(struct pm_sq *q, int i, uint64_t now_ms);
/* Trial i's result (NAME=VALUE, sweep_metric.h), or NULL for none: what
 * its latest attempt reported; kept when it ends. 0, or -1 (no such trial,
 * out of memory: it then has none). */
int pm_sq_set_result(struct pm_sq *q, int i, const char *result);
/* A held slot's rank ended: the slot (and the port it kept) is free again.
 * 0, or -1 if the slot was not held. */
int pm_sq_unhold(struct pm_sq *q, int slot);
/* The earliest time a restart is due, or UINT64_MAX if none. */
uint64_t pm_sq_next_due(const struct pm_sq *q);
/* Every trial is DONE or FAILED. */
bool pm_sq_finished(const struct pm_sq *q);
/* A root that took over (sweep_loss.h): QUEUED trial i gets the end the
 * journal says (state PM_TS_DONE or PM_TS_FAILED, its runtime up to
 * now_ms). 0, or -1 if it was not QUEUED or state is no end. */
int pm_sq_recovered(struct pm_sq *q, int i, enum pm_ts state, int exit_code, int restarts,
		    int requeues, uint64_t runtime_ms, const char *error, uint64_t now_ms);

#endif
