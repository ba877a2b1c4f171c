/* The root's decisions, pure: each reads the machine's state and what
 * happened, and returns a verdict; it calls no action (nothing is sent,
 * stopped or said). gen_apply.c alone carries a verdict out, always in
 * the same order: the event of what was seen, the node_lost op, the
 * slot table's change, the nodes to avoid, then the decision (restart,
 * replace, finish, give up, wait for a hang's stacks).
 *
 * Who prints on srun's stderr, one rule: a rank's failure is said by that
 * rank (it is blamed: its exit code is the step's); anything else the
 * root says (a node lost, a check, a cancel, a request) by
 * pm_gen_printer(), the root's lowest live rank; lines told while the
 * step goes on (tell) through the same printer (gen.c's pm_gen_tell). */
#ifndef PM_DECIDE_H
#define PM_DECIDE_H

#include "gen.h"

enum pm_verdict_kind {
	PM_VERDICT_NONE,    /* nothing more: said already, too late, or the step is over */
	PM_VERDICT_WAIT,    /* a hang: stop every rank, stacks first; decide at STOPPED */
	PM_VERDICT_RESTART, /* stop every rank, the next generation after delay_ms */
	PM_VERDICT_REPLACE, /* a spare takes the lost node's slot (repl.slot -1:
			     * a spare in reserve lost, nothing to restart) */
	PM_VERDICT_FINISH,  /* the step succeeded */
	PM_VERDICT_GIVE_UP, /* the step ends: ABORT with code, said by rank */
};

#define PM_VERDICT_FIELDS (PM_WIRE_TEXT_MAX * 3)

struct pm_verdict {
	enum pm_verdict_kind kind;
	/* What was seen, an event of the step's log (NULL: none) and its
	 * JSON fields without braces. */
	const char *event;
	char fields[PM_VERDICT_FIELDS];
	int lost;                  /* a node declared lost (the node_lost op); -1 */
	/* The line on srun's stderr: RESTART and REPLACE always, FINISH with
	 * --procmgr-verbose. "" for none. */
	char tell[2560];
	unsigned delay_ms;         /* RESTART, REPLACE: before the next generation */
	/* GIVE_UP: the step's exit code; the rank that prints text (blame:
	 * it failed, the others end 0); the node concerned (-1). */
	int code, rank, node;
	bool blame;
	char text[PM_WIRE_TEXT_MAX];
	/* A lost node with spares (REPLACE, GIVE_UP): the slot table's change. */
	bool repl_set;
	struct pm_repl repl;
	/* Every node lost so far, for the job script's next --exclude (the
	 * avoid op), and why. */
	bool avoid_set;
	char avoid[1024];
	char avoid_why[PM_WIRE_TEXT_MAX + 1];
	char replaced[512];        /* REPLACE with a slot: node_replaced's fields */
	char leave[128];           /* REPLACE: this node is the one out, with these words */
	/* A hang (pm_decide_hang): whom it blames, for struct pm_hang. */
	int blamed, blamed_node, blamed_by;
};

/* A failure at the root (a FAIL: a rank's, a node's check, Slurm's
 * cancel); now: the root's clock. A sweep's failures are the sweep's. */
void pm_decide_fail(const struct pm_gen *g, const struct pm_msg *m, uint64_t now,
		    struct pm_verdict *v);
/* When a hung rank's supervisor judged it hung, on the root's clock. */
uint64_t pm_decide_hung_at(const struct pm_msg *m, uint64_t now);
/* At STOPPED after a hang: whether the stacks decide (more than one rank
 * hung: common/blame.h), then blame and decide with what the stacks say (sv: the hang_outlier op's answer, NULL if not asked;
 * sv->rank's node onode). */
bool pm_decide_hang_ask(const struct pm_gen *g);
void pm_decide_hang(const struct pm_gen *g, const struct pm_stack_verdict *sv, int onode,
		    struct pm_verdict *v);
/* A node lost, without spares: the end. */
void pm_decide_lost(const struct pm_gen *g, int node, const char *why, struct pm_verdict *v);
/* A node lost with spares: a spare takes its slot, or the end. */
void pm_decide_replace(const struct pm_gen *g, int node, const char *why,
		       struct pm_verdict *v);
/* Every rank of the generation succeeded: finish, or restart (always:N). */
void pm_decide_done(const struct pm_gen *g, struct pm_verdict *v);

const char *pm_verdict_name(enum pm_verdict_kind k);

#endif
