/* A sweep step in procmgrd (--procmgr-sweep=FILE): the step's task slots
 * are a pool, and the root runs the trial queue (runtime/sweep) on them.
 * The generation machine (gen.c) still joins the tree, judges readiness,
 * supervisors and nodes lost, and ends the step; at launch it hands the
 * slots to the sweep (ops->sweep_launch) instead of starting a generation.
 *
 * The root (sweep_run.c) starts a trial's ranks with TRIAL_START to the
 * nodes of its slots only (routed down the tree to that node), restarts a
 * failed trial in place (TRIAL_STOP to its other ranks, then TRIAL_START
 * again, a new attempt number), and at the end writes the results file
 * (FILE.results), says the summary on srun's stderr and ends the step with
 * exit code 1 if a trial failed. Every node (sweep_node.c) hands a
 * TRIAL_START or TRIAL_STOP to the supervisor of that slot (procmgr-rank
 * runs it as a generation of its own machine) and passes the supervisor's
 * end up as TRIAL_EXIT. */
#ifndef PM_SWEEP_RUN_H
#define PM_SWEEP_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

struct pm_step;
struct pm_sweep_run;

/* Reads and checks the trials file (the root; every node sets up its
 * slots' side). -1 with err: the step does not start. */
int pm_sweep_run_init(struct pm_step *s, char *err, size_t errlen);
void pm_sweep_run_free(struct pm_step *s);
/* gen's ops (ctx is the step). */
void pm_sweep_launch(void *ctx);
void pm_sweep_fail(void *ctx, const struct pm_msg *m);
/* sweep_takeover.c: this node took the root's place (with spares): the
 * queue rebuilt from the trials file and the journal. */
void pm_sweep_takeover(void *ctx);
/* sweep_ctl.c: node is out of the step; its trials are requeued. */
int pm_sweep_node_lost(void *ctx, int node, const char *why);
/* procmgr stop/restart JOB.STEP --trial NAME, at the root (sweep_ctl.c),
 * asked by who: 0 with what to tell the command in msg, or -1 with why
 * not (not a sweep, no such trial, it has ended, not running). */
int pm_sweep_request(struct pm_step *s, bool restart, const char *name, const char *who,
		     char *msg, size_t len);
/* The root: a TRIAL_EXIT from below (or from this node). */
void pm_sweep_trial_exit(struct pm_step *s, const struct pm_msg *m);
/* sweep_node.c: 1 if the message was the sweep's (taken), else 0. */
int pm_sweep_node_parent_msg(struct pm_step *s, const struct pm_msg *m);
int pm_sweep_node_child_msg(struct pm_step *s, const struct pm_msg *m);
int pm_sweep_node_rank_msg(struct pm_step *s, int lrank, const struct pm_msg *m);
void pm_sweep_node_hello(struct pm_step *s, int lrank);
/* A message for node (TRIAL_START, TRIAL_STOP), from the root or a parent:
 * to the local supervisor, or on towards node. */
void pm_sweep_node_route(struct pm_step *s, const struct pm_msg *m);
/* The root's answer to procmgr status, after its node's lines: a line
 * per trial, "trial NAME STATE SLOTS RESTARTS RUNTIME_MS EXIT RESULT ERROR"
 * (SLOTS "node:slot,slot/node:slot" or "-", EXIT "-" before any end,
 * RESULT NAME=VALUE (sweep/sweep_metric.h) or "-", ERROR the rest of the
 * line, "-" if none). */
struct pm_q;
void pm_sweep_status(struct pm_step *s, struct pm_q *q);

/* What a node keeps: the START waiting for a supervisor not connected yet. */
struct pm_sweep_node {
	struct pm_msg *pending; /* by local rank */
	bool *has_pending;
	/* A root that took over (sweep_loss.h): by local rank, the attempt of
	 * the last TRIAL_START handed to it (0: none), and the new root's
	 * attempt base once its reclaim reached this node (0: none). */
	uint32_t *cur;
	uint32_t base;
	/* By local rank: the state scope of the trial run on it (0: none),
	 * common/statescope.h; state_link.c judges connections by it. */
	uint32_t *scope;
};
/* sweep_node.c: a node adopted as our child after a root took over gets
 * the reclaim too (it may have missed it). */
void pm_sweep_node_adopted(struct pm_step *s, int node);

#endif
