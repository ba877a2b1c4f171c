/* The generation state machine of one node's procmgrd: the heart of
 * procmgr. Pure: events in (a rank started, ended or was judged hung, a
 * child node reported, the parent decided, a timer fired, a check
 * finished, a peer was lost), actions out through struct pm_gen_ops (send
 * up, down, to one child, to a local rank; arm a timer; start checks; log).
 * It never touches a socket, a clock or a file, so every scenario is a unit
 * test (tests/unit/test_gen.c) and the same code can run in a simulation.
 *
 * Node 0 (the root) also takes the step's decisions: each failure or
 * success is judged once by the restart policy, and the decision (with its
 * delay) is kept until the next generation starts. */
#ifndef PM_GEN_H
#define PM_GEN_H

#include <stdbool.h>
#include <stdint.h>

#include "common/blame.h"
#include "common/policy.h"
#include "common/wire.h"

enum pm_rank_state {
	PM_RANK_ABSENT,  /* its supervisor has not connected yet */
	PM_RANK_IDLE,    /* connected, waiting for a generation */
	PM_RANK_RUNNING,
	PM_RANK_DONE,    /* exited 0 in this generation */
	PM_RANK_FAILED,  /* exited non-zero, was killed, or hung */
	PM_RANK_GONE,    /* its supervisor disconnected */
};

enum pm_phase {
	PM_PHASE_STARTING, /* until every node is ready: no rank runs yet */
	PM_PHASE_RUNNING,
	PM_PHASE_STOPPING,
	PM_PHASE_DELAY,    /* root: waiting to start the next generation */
	PM_PHASE_FINISHED,
	PM_PHASE_ABORTED,
};

/* The one stop timer's meaning, stage by stage: a stop first waits for this
 * node's own ranks, then for the children's reports; a node that took the
 * root's place waits for most of the step to come to it. */
enum pm_stop_stage {
	PM_STOP_NONE,     /* the timer is off */
	PM_STOP_OWN,      /* this node's ranks must have stopped */
	PM_STOP_CHILDREN, /* every child must have reported its subtree stopped */
	PM_STOP_ELECTION, /* most of the step must have come to the new root */
};

/* What the machine asks of the world. ctx is pm_gen_config.ctx. */
struct pm_gen_ops {
	void (*send_up)(void *ctx, const struct pm_msg *m);
	void (*send_down)(void *ctx, const struct pm_msg *m); /* every child */
	void (*send_child)(void *ctx, int node, const struct pm_msg *m);
	void (*send_rank)(void *ctx, int lrank, const struct pm_msg *m);
	/* The root's delay before the next generation. */
	void (*arm_timer)(void *ctx, unsigned ms);
	/* The stop deadline (0 disarms; may be NULL: no deadline). */
	void (*arm_stop)(void *ctx, unsigned ms);
	/* This node's checks between generations, off the caller's stack:
	 * 1 when there are none, 0 when started (pm_gen_checks_done follows),
	 * -1 when they cannot run (why is set). */
	int (*run_checks)(void *ctx, char *why, size_t len);
	/* The root's event log: fields are JSON members, may be empty. */
	void (*event)(void *ctx, const char *name, const char *fields);
	/* Spares: the nodes lost so far (a host list, "" for none), each time
	 * the root's list grows; and this node became the root (its event log
	 * starts here). May be NULL. */
	void (*avoid)(void *ctx, const char *nodes, const char *why);
	void (*became_root)(void *ctx);
	void (*log)(void *ctx, const char *text);
	uint64_t (*now_ms)(void *ctx);
	/* The root, deciding a hang: what the stacks say (common/blame.h's
	 * pm_blame_stacks, into v), the node of the rank they name and when
	 * the last stack came (the capture's end, 0: none); returns that
	 * rank, -1 if none. May be NULL. */
	int (*hang_outlier)(void *ctx, int *node, struct pm_stack_verdict *v, uint64_t *last_ms);
	/* The root declared node lost (its node_lost event). May be NULL. */
	void (*node_lost)(void *ctx, int node);
	/* The root ends the step (FINISH or give-up) after nlost nodes were
	 * lost, first the first: Slurm waits for their tasks until it marks
	 * them DOWN; called before the end goes down the tree, so that what
	 * it tells reaches srun's stderr. silent: some node was lost by
	 * silence (a timeout), which a partition makes too: its tasks may
	 * live on the other side. May be NULL. */
	void (*lost_at_end)(void *ctx, int first, unsigned nlost, bool silent);
	/* Sweeps (cf.sweep, the root): every node is ready, the sweep's
	 * queue takes the slots instead of a generation; and a failure the
	 * machine saw while it runs (a node or a supervisor lost, a check,
	 * Slurm's cancel), for the sweep to end on. May be NULL. */
	void (*sweep_launch)(void *ctx);
	void (*sweep_fail)(void *ctx, const struct pm_msg *m);
	/* A sweep without spares lost a node that is not the root (and is
	 * out of the step now): its trials go to the other nodes, the sweep
	 * goes on. 1, or 0 if that node was lost already. May be NULL (the
	 * step ends, as for any step). */
	int (*sweep_node_lost)(void *ctx, int node, const char *why);
	/* A sweep with spares whose root was lost: this node took its place
	 * (root_moved) and rebuilds the queue; the machine does not replace
	 * or restart anything. May be NULL. */
	void (*sweep_takeover)(void *ctx);
};

struct pm_gen_config {
	int node, nnodes, fanout;
	int ntasks, ntasks_local;
	const char *const *names; /* node names, by node id */
	struct pm_policy policy;
	bool verbose;             /* the root's decisions on rank 0's stderr */
	/* A stop never waits for ever: this node's ranks (and checks) must
	 * have stopped within stop_bound_ms of the STOP, its children's
	 * subtrees within stop_margin_ms more per level below; else the node
	 * or the child is lost. 0: no deadline. */
	unsigned stop_bound_ms, stop_margin_ms;
	/* Hot spares: the last spares nodes run no rank until one takes the
	 * place (the slot) of a lost node. Every node then has ntasks_local
	 * ranks, and slot s runs global ranks s*ntasks_local + local rank. */
	int spares;
	/* A hang's stop takes every rank's stack first: this much more. */
	unsigned stack_ms;
	/* Ranks must heartbeat (a hang timeout): their first beat after a
	 * restart is the recovery's end. Without, a program that heartbeat in
	 * an earlier generation is waited for too (rec.beats_seen); one that
	 * never did has only procmgr's part known, and is told so. */
	bool beats;
	/* A sweep: the root starts no generation; procmgrd/sweep_run.c
	 * starts trials on the slots and ends the step (pm_gen_sweep_end). */
	bool sweep;
	const struct pm_gen_ops *ops;
	void *ctx;
};

struct pm_gen_rank {
	enum pm_rank_state st;
	int grank;
	bool stop_pending; /* STOP sent, its end not seen yet */
	bool run_seen, beat_seen; /* in this generation: its command runs, beat */
};

enum pm_checks_state { PM_CHECKS_NONE, PM_CHECKS_RUNNING, PM_CHECKS_DONE };

/* A node below: first the tree's own children, then (with spares) the
 * nodes that came to us when their parent was lost. What it last said of
 * its subtree in this phase counts, so that a child lost takes its
 * report with it and an adopted one is counted once. */
struct pm_gen_child {
	int node;
	bool up;                 /* joined, not lost */
	uint32_t ready, done, stopped;
	uint32_t running[2];     /* RUNNING: its ranks run, have heartbeaten */
	bool stopped_rep;
};

/* One replacement, as the root decided it and every node applies it:
 * node lost is out of the step, spare (or -1) takes its slot (or -1). */
#define PM_REPL_WHY 200
struct pm_repl {
	int lost, slot, spare;
	char why[PM_REPL_WHY];
};

#define PM_SAID_MAX 8192 /* bytes kept for a printer not connected yet */
#define PM_HANG_LIST 16 /* hung followers named in the restart line */

struct pm_gen {
	struct pm_gen_config cf;
	int child_first, nchildren, subtree; /* in the tree as it was made */
	struct pm_gen_rank *ranks; /* by local rank */
	uint32_t gen;
	enum pm_phase phase;
	bool root;                 /* node 0, or the node that took its place */
	/* nodes below, and whether this subtree reported */
	struct pm_gen_child *kids;
	int nkids, kids_cap;
	bool local_ready, ready_sent, done_sent, stopped_sent;
	/* every rank of the subtree runs (0) / has heartbeaten (1) */
	bool running_sent[2];
	uint64_t start_t0;           /* this generation's START */
	enum pm_checks_state checks; /* between this generation and the next */
	enum pm_stop_stage stop_stage; /* which deadline the stop timer is */
	/* Spares (cf.spares > 0). */
	int nactive;                 /* slots: nnodes - spares */
	int *slot_node, *node_slot;  /* node_slot -1: no slot (a spare, or lost) */
	bool *excluded;              /* lost: out of the step for good */
	int *xlist, nexcluded, xcap; /* the same, in the order lost */
	struct pm_repl *repl;        /* every replacement so far, in order */
	int nrepl, repl_cap;
	bool electing;               /* root-elect: waiting for a majority */
	char elect_why[PM_REPL_WHY]; /* why the root was lost */
	uint32_t stop_flags;         /* of the next STOP: PM_FLAG_HUNG, stacks first */
	struct pm_msg end_msg;       /* FINISH or ABORT, for late comers */
	/* Lines for rank 0's stderr said before its supervisor connected,
	 * each NUL-ended (gen.c's keep_said). */
	char *said;
	size_t said_len;
	unsigned said_lost;
	/* root only */
	int lost_first;              /* the first node declared lost (nlost > 0) */
	unsigned nlost;              /* nodes declared lost */
	bool lost_silent;            /* one of them by silence, not by its end */
	/* The node being declared lost for a failed health check (-1 none):
	 * its slurmstepd lives, its tasks end; not counted in nlost. */
	int lost_alive;
	int restarts;
	unsigned delay_ms;           /* of the restart decided */
	uint64_t stop_t0, fail_t0;
	/* The last restart, from its failure (recovery.c): to every rank
	 * running (procmgr's part), to every rank's first heartbeat. */
	struct pm_gen_recovery {
		uint32_t gen;            /* 0: no restart yet */
		bool beat;               /* recovery_ms known */
		/* every rank heartbeat in some generation: the program
		 * calls procmgr.heartbeat(), the recovery's end will come */
		bool beats_seen;
		uint64_t process_ms, recovery_ms;
	} rec;
	/* The ranks' state restored from procmgr's memory in generation gen
	 * (the root's, from state_restored events): how many restores, the
	 * oldest step restored and the most steps lost; for the recovery
	 * line. pm_gen_state_restored feeds it. */
	struct pm_gen_state_rec {
		uint32_t gen;
		unsigned n;
		uint64_t step_min, lost_max;
	} state_rec;
	/* A hang stops every rank first; the decision waits for STOPPED, by
	 * when every hung rank has said so and the oldest heartbeat is known. */
	struct pm_hang {
		bool pending;
		int rank, node, followers;
		uint64_t beat, next_beat; /* oldest, second oldest (epoch ms) */
		int follower[PM_HANG_LIST];
		/* the decision: rank (-1: nobody), its node, enum pm_blame_by */
		int blamed, blamed_node, blamed_by;
		/* the generation that hung; how long its stacks took, from the
		 * first rank judged hung to the last stack in: the recovery
		 * says it apart from procmgr's part (recovery.c) */
		uint32_t gen;
		uint64_t stacks_ms;
	} hang;
};

int pm_gen_init(struct pm_gen *g, const struct pm_gen_config *cf);
void pm_gen_free(struct pm_gen *g);

/* This node's pre-launch checks passed (or failed: why). */
void pm_gen_local_ready(struct pm_gen *g);
void pm_gen_health_failed(struct pm_gen *g, const char *why);
/* The checks started by ops->run_checks ended; why is NULL if they passed. */
void pm_gen_checks_done(struct pm_gen *g, const char *why);

/* Rank supervisors. hello: -1 if lrank is out of range or already seen. */
int pm_gen_rank_hello(struct pm_gen *g, int lrank, int grank);
/* The root: a rank restored state saved at step, losing lost steps. */
void pm_gen_state_restored(struct pm_gen *g, uint64_t step, uint64_t lost);
/* RANK_EXIT, RANK_STOPPED, RANK_RUN: -1 for another type. */
int pm_gen_rank_msg(struct pm_gen *g, int lrank, const struct pm_msg *m);
void pm_gen_rank_gone(struct pm_gen *g, int lrank, const char *why);

/* The tree. A child is authenticated before it is joined. child_msg and
 * parent_msg: -1 for a message that has no place there. */
void pm_gen_child_joined(struct pm_gen *g, int node);
int pm_gen_child_msg(struct pm_gen *g, int node, const struct pm_msg *m);
void pm_gen_child_lost(struct pm_gen *g, int node, const char *why);
int pm_gen_parent_msg(struct pm_gen *g, const struct pm_msg *m);

/* Spares: the parent is lost and a new one accepted us (or none did and
 * this node takes the root's place: pm_gen_take_root). Our reports of
 * this phase go again, to it. */
void pm_gen_parent_changed(struct pm_gen *g);
/* A node not of the tree's making wants us as its parent: its index
 * among the kids, or -1 if it is lost or already one. */
int pm_gen_adopt(struct pm_gen *g, int node);
int pm_gen_kid_index(const struct pm_gen *g, int node);
/* No ancestor answered: this node is the root now, and acts once most of
 * the step is below it (pm_gen_adopt tells). */
void pm_gen_take_root(struct pm_gen *g, const char *why);
/* Which nodes a node whose parent is lost asks, in order; n filled. */
int pm_gen_parent_candidates(const struct pm_gen *g, int *out, int max);
bool pm_gen_excluded(const struct pm_gen *g, int node);
/* This node was replaced, or is cut off: its own ranks end (not as a
 * failure), nothing is said below (its children find another parent). */
void pm_gen_leave(struct pm_gen *g, const char *why);
/* A node is lost (the root decides, others pass it up). */
void pm_gen_lost(struct pm_gen *g, int node, const char *why);

/* The root's delay timer fired. */
void pm_gen_timer(struct pm_gen *g);
/* The stop deadline (ops->arm_stop) passed. */
void pm_gen_stop_timer(struct pm_gen *g);
/* The join deadline (after_ms since this node started) passed: the
 * children that never joined are lost. */
void pm_gen_join_timer(struct pm_gen *g, unsigned after_ms);
/* Slurm is ending the step here (SIGTERM): the root says "cancelled". */
void pm_gen_cancel(struct pm_gen *g, const char *why);
/* End the step from here: the parent is gone, slurmstepd is gone, ... */
void pm_gen_abort_local(struct pm_gen *g, const char *why);

/* Asked by the procmgr command on the root (who: "alice (uid 1000)"):
 * restart every rank now, counted as a restart; or end the step, every
 * supervisor ending its command with the grace period and exiting 0.
 * -1 (err says why) when the step cannot do it now. */
int pm_gen_request_restart(struct pm_gen *g, const char *who, char *err, size_t len);
int pm_gen_request_stop(struct pm_gen *g, const char *who, char *err, size_t len);

/* The root's sweep is over: FINISH (code 0) or ABORT with code, text
 * (may be "") on rank 0's stderr. */
void pm_gen_sweep_end(struct pm_gen *g, int code, const char *text);
/* The root of a running sweep lost node (gen_sweep.c): it and the nodes
 * below it in the tree (they cannot reach the root without spares) are
 * out, each handed to ops->sweep_node_lost. false: not a sweep's case. */
bool pm_gen_sweep_lost(struct pm_gen *g, int node, const char *why);

bool pm_gen_terminal(const struct pm_gen *g);
/* Terminal, and every supervisor has come and gone: procmgrd may exit. */
bool pm_gen_over(const struct pm_gen *g);
const char *pm_gen_node_name(const struct pm_gen *g, int node);
const char *pm_phase_name(enum pm_phase p);

#endif
