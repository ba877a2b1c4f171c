/* procmgrd's view of the step: this node's ranks, its place in the control
 * tree, and (on the root) the restart decisions. */
#ifndef PM_STEP_H
#define PM_STEP_H

#include <stdbool.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>

#include "io/conn.h"
#include "io/events.h"
#include "guard.h"
#include "io/loop.h"
#include "common/options.h"
#include "common/policy.h"

enum pm_rank_state {
	PM_RANK_ABSENT,  /* its supervisor has not connected yet */
	PM_RANK_IDLE,    /* connected, waiting for a generation */
	PM_RANK_RUNNING,
	PM_RANK_DONE,    /* exited 0 in this generation */
	PM_RANK_FAILED,  /* exited non-zero, was killed, or hung */
	PM_RANK_GONE,    /* its supervisor disconnected */
};

struct pm_rank {
	struct pm_conn *c;
	enum pm_rank_state st;
	int grank;
	bool stop_pending; /* STOP sent, RANK_STOPPED not back yet */
};

enum pm_phase {
	PM_PHASE_STARTING, /* until every node is ready: no rank runs yet */
	PM_PHASE_RUNNING,
	PM_PHASE_STOPPING,
	PM_PHASE_DELAY,    /* root: waiting to start the next generation */
	PM_PHASE_FINISHED,
	PM_PHASE_ABORTED,
};

struct pm_step {
	struct pm_loop *loop;
	/* identity */
	unsigned job, stepid;
	int node, nnodes, fanout;
	char **names; /* node names, by node id */
	int ntasks_local, ntasks;
	uid_t uid;
	struct pm_opts opts;
	struct pm_policy policy;
	const char *munge_socket;
	/* ranks */
	struct pm_rank *ranks;
	/* tree */
	struct pm_conn *parent;
	bool parent_ok;
	struct pm_msg *upq; /* messages for the parent before it accepted us */
	int upq_len, upq_cap;
	int child_first, nchildren, subtree;
	struct pm_conn **children; /* by child index, NULL until authenticated */
	/* this generation */
	uint32_t gen;
	enum pm_phase phase;
	int done_children, stopped_children; /* nodes below that reported */
	bool done_sent, stopped_sent;
	struct pm_msg end_msg; /* FINISH or ABORT, for supervisors that come late */
	bool checked; /* this node's checks ran since the last STOP */
	bool local_ready, ready_sent;
	int ready_children;
	struct pm_guard *guard;
	/* root only */
	int restarts;
	uint64_t stop_t0, fail_t0;
	struct pm_events events;
	struct pm_watch delay_w;
	/* set when procmgrd should exit */
	bool over;
};

int pm_step_init(struct pm_step *s);
void pm_step_free(struct pm_step *s);

/* A rank supervisor connected on the unix socket. */
void pm_step_rank_conn(struct pm_step *s, int fd);
/* A peer connected on the tree port: it must say HELLO with a credential. */
void pm_step_tree_conn(struct pm_step *s, int fd);
/* Our connection to the parent is up: say HELLO. */
int pm_step_parent_up(struct pm_step *s, int fd);
/* The parent is unreachable, or slurmstepd went away: end the step here. */
void pm_step_abort_local(struct pm_step *s, const char *why);
/* This node passed its checks before launch: count it in. */
void pm_step_ready(struct pm_step *s);
/* A periodic health check failed here: like a rank failure. */
void pm_step_health_failed(void *step, const char *why);
/* Whether everything procmgrd serves has ended. */
bool pm_step_over(const struct pm_step *s);
/* Log line of procmgrd (its own log file), prefixed with the node. */
void pm_log(struct pm_step *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
