/* The procmgr command's requests, served by procmgrd (query.c): a CLIENT
 * frame on the root's tree port carries a munge credential of the asking
 * user naming the request (common/request.h); only the job's user and root
 * get an answer. Status and stacks go down the tree as one QUERY; every
 * node answers for its own ranks (ANSWER frames, relayed up unchanged) and
 * ends its subtree with ANSWER_END counting the nodes that answered, so
 * that each node sends and receives O(fan-out) ends and the CLI holds one
 * connection. Events, restart and stop are the root's alone. */
#ifndef PM_QUERY_H
#define PM_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "common/request.h"

struct pm_step;
struct pm_conn;
struct pm_msg;

/* rundir: this node's run directory (heartbeats, stack files); events:
 * the root's event log, NULL elsewhere. Both must outlive the step. */
int pm_query_init(struct pm_step *s, const char *rundir, const char *events);
void pm_query_free(struct pm_step *s);

/* Hooks of the links (tree_link.c). Each returns true if it took the frame. */
bool pm_query_client(struct pm_step *s, struct pm_conn *c, const struct pm_msg *m);
bool pm_query_child_msg(struct pm_step *s, int node, const struct pm_msg *m);
bool pm_query_parent_msg(struct pm_step *s, const struct pm_msg *m);
void pm_query_child_lost(struct pm_step *s, int node);
/* A line was added to the event log (transport.c's listener, step_setup.c's
 * hooks): events --follow are sent it. */
void pm_query_event_written(struct pm_step *s, const char *name);
/* rank_link.c: a rank's supervisor says its command ended (it may have
 * left the stack it took at a hang: query_hang.c). */
void pm_query_rank_ended(struct pm_step *s, int lrank);

/* ---- inside query*.c ---- */

/* The answer of one query at this node, PM_WIRE_TEXT_MAX-sized frames of
 * whole lines for the node's part (rank -1) or a rank's stack. */
struct pm_stacks; /* query_stacks.c's */
struct pm_q {
	struct pm_q *next;
	uint32_t id;
	enum pm_query_kind kind;
	struct pm_conn *client; /* the root's: the asking CLI; NULL: the parent asked */
	bool *wait;             /* by kid index (gen.kids): its subtree's end is awaited */
	int nkids;              /* kids when the query came */
	int nwait, answered;
	bool local_done;
	char args[PM_REQ_ARGS_MAX];
	struct pm_stacks *stacks;
};
void pm_q_text(struct pm_step *s, struct pm_q *q, int rank, const char *text);
/* This node's own part is complete. */
void pm_q_local_done(struct pm_step *s, struct pm_q *q);
const char *pm_query_rundir(const struct pm_step *s);

/* query_status.c: this node's status lines, at once. */
void pm_query_status(struct pm_step *s, struct pm_q *q);
/* query_stacks.c: the stacks of this node's running ranks whose global
 * rank is in ranks ("-": all), taken now by a debugger (gdb, with Python
 * frames where python3-dbg is installed; else eu-stack), one per rank in
 * parallel, as the job's user; a tool still running after ms is killed.
 * each() is called per rank with its normalized stack (common/stacks.h)
 * or a line saying why there is none, then fin(). Returns 0 when started,
 * 1 when no rank runs here (nothing is called), -1 when no tool is
 * installed or none could start (why says so; nothing is called). */
struct pm_stacks;
typedef void (*pm_stack_fn)(struct pm_step *s, void *arg, int lrank, int grank,
			    const char *text);
typedef void (*pm_stacks_fin)(struct pm_step *s, void *arg);
int pm_stacks_take(struct pm_step *s, const char *ranks, unsigned ms, pm_stack_fn each,
		   pm_stacks_fin fin, void *arg, struct pm_stacks **out, char *why, size_t len);
void pm_stacks_cancel(struct pm_stacks *st);

/* query_hang.c: a hang's stack from below (ANSWER of query 0), the
 * root's summary at its "hang" event, and forgetting them. */
void pm_query_hang_answer(struct pm_step *s, const struct pm_msg *m);
void pm_query_hang_report(struct pm_step *s);
/* What the stacks in so far say (common/blame.h's pm_blame_stacks), the
 * node of the rank they name and when the last came (0: none); returns
 * that rank, -1 if none. */
struct pm_stack_verdict;
int pm_query_hang_outlier(struct pm_step *s, int *node, struct pm_stack_verdict *v,
			  uint64_t *last_ms);
void pm_query_hang_clear(struct pm_step *s);
/* The event log's listener (step_setup.c's hooks): at "hang", the hang's
 * stacks are said (pm_query_hang_report); at "start", forgotten. */
void pm_query_hang_event(struct pm_step *s, const char *name);

/* The stacks query: pm_q_local_done follows a 0. */
/* A debugger attaching to a Python rank costs about a CPU second: a
 * node's tools share its CPUs. */
#define PM_STACKS_MS 20000
int pm_query_stacks(struct pm_step *s, struct pm_q *q);

#endif
