/* A sweep on every node: TRIAL_START and TRIAL_STOP go to the supervisor
 * of their slot (or on down the tree towards their node), and the
 * supervisor's end of a trial goes up to the root as TRIAL_EXIT. The root
 * tells only the nodes a trial runs on: O(its nodes) messages per start,
 * each routed along the tree's one path. */
#include "step.h"
#include "sweep_run.h"

#include "common/statescope.h"
#include "common/tree.h"

static bool is_sweep(const struct pm_step *s)
{
	return s->opts.sweep[0] != '\0';
}

static void drop_state(struct pm_step *s, int lrank, int owner)
{
	if (PM_HOOK(s, state_drop))
		PM_HOOK(s, state_drop)(s, lrank, owner); /* state_link.c */
}

/* Whose state local rank lrank's next command sees (statescope.h): the
 * slot's scope is the start's, its state kept for a restart of the same
 * run, dropped for any other. Before the supervisor hears of the start,
 * so that its command's first connection is judged by the new scope. */
static void scope_start(struct pm_step *s, int lrank, const struct pm_msg *m)
{
	struct pm_sweep_node *sn = s->sweep_node;
	uint32_t scope;
	char err[128];

	if (pm_scope_from_trial_text(m->text, &scope, err, sizeof(err)))
		pm_log(s, "sweep: local rank %d: %s: its state socket is refused", lrank, err);
	if (pm_scope_on_start(sn->scope[lrank], scope) == PM_SCOPE_DROP)
		drop_state(s, lrank, -1);
	sn->scope[lrank] = scope;
}

/* The root's word that a trial's run ended (TRIAL_STOP with
 * PM_FLAG_ENDED): its state here goes, or a lost node's replicas. */
static void scope_ended(struct pm_step *s, const struct pm_msg *m)
{
	struct pm_sweep_node *sn = s->sweep_node;
	int lrank = m->status;

	if (lrank == -1) {
		if (m->rank >= 0 && m->rank < s->nnodes && m->rank != s->node)
			drop_state(s, -1, m->rank);
		return;
	}
	if (lrank < 0 || lrank >= s->ntasks_local || !pm_scope_on_end(sn->scope[lrank], m->gen))
		return;
	drop_state(s, lrank, -1);
	sn->scope[lrank] = 0;
}

/* The end of an attempt that never ran on local rank lrank (gen 0: none
 * did), to the root. */
static void never_ran(struct pm_step *s, int lrank, uint32_t gen)
{
	struct pm_msg out;

	pm_msg_init(&out, PM_MSG_TRIAL_EXIT);
	out.gen = gen;
	out.node = s->node;
	out.rank = lrank;
	out.count = PM_FLAG_STOPPED;
	if (s->gen.root) {
		if (PM_HOOK(s, trial_exit))
			PM_HOOK(s, trial_exit)(s, &out);
	} else
		pm_step_ops.send_up(s, &out);
}

/* A root that took over (sweep_loss.h) stops, on every node, the trials
 * the old root started: TRIAL_STOP with node -1 and gen its attempt base,
 * down the whole tree. Each slot answers once per base with a TRIAL_EXIT:
 * its supervisor's end of the old attempt, or at once (gen 0) when none
 * ran; the new root then gives the node's slots to its queue. */
static void reclaim(struct pm_step *s, const struct pm_msg *m)
{
	struct pm_sweep_node *sn = s->sweep_node;
	struct pm_msg out;
	int lr;

	if (!sn || m->gen <= sn->base)
		return; /* said again (an adopted node, or by two parents) */
	sn->base = m->gen;
	pm_step_ops.send_down(s, m);
	for (lr = 0; lr < s->ntasks_local; lr++) {
		/* The new root starts every trial not recorded ended anew: no
		 * run of the old root's goes on. */
		if (sn->scope[lr])
			drop_state(s, lr, -1);
		sn->scope[lr] = 0;
		sn->has_pending[lr] = false;
		if (sn->cur[lr] && sn->cur[lr] < m->gen && s->ranks[lr]) {
			pm_msg_init(&out, PM_MSG_TRIAL_STOP);
			out.gen = sn->cur[lr];
			out.node = s->node;
			out.status = lr;
			sn->cur[lr] = 0;
			pm_step_send(s, s->ranks[lr], &out); /* its end answers */
			continue;
		}
		sn->cur[lr] = 0;
		never_ran(s, lr, 0);
	}
}

void pm_sweep_node_adopted(struct pm_step *s, int node)
{
	struct pm_msg m;

	if (!s->sweep_node || !s->sweep_node->base)
		return;
	pm_msg_init(&m, PM_MSG_TRIAL_STOP);
	m.gen = s->sweep_node->base;
	m.node = -1;
	pm_step_ops.send_child(s, node, &m);
}

void pm_sweep_node_route(struct pm_step *s, const struct pm_msg *m)
{
	int n = m->node, p, idx;

	if (n == -1 && m->type == PM_MSG_TRIAL_STOP) {
		reclaim(s, m);
		return;
	}
	if (n == s->node) {
		int lrank = m->status;
		if (!s->sweep_node)
			return;
		if (m->type == PM_MSG_TRIAL_STOP && (m->count & PM_FLAG_ENDED)) {
			scope_ended(s, m);
			return;
		}
		if (lrank < 0 || lrank >= s->ntasks_local)
			return;
		if (m->type == PM_MSG_TRIAL_START) {
			s->sweep_node->cur[lrank] = m->gen;
			scope_start(s, lrank, m);
		}
		if (s->ranks[lrank]) {
			pm_step_send(s, s->ranks[lrank], m);
		} else if (m->type == PM_MSG_TRIAL_START) {
			/* Its supervisor comes later: it gets it at its HELLO. */
			s->sweep_node->pending[lrank] = *m;
			s->sweep_node->has_pending[lrank] = true;
		} else if (s->sweep_node->has_pending[lrank] &&
			   s->sweep_node->pending[lrank].gen == m->gen) {
			/* Stopped before its supervisor came: it never ran, and
			 * the root waits for every rank's end of the attempt (a
			 * multi-rank trial whose first rank failed at once hung
			 * here for ever). */
			s->sweep_node->has_pending[lrank] = false;
			s->sweep_node->cur[lrank] = 0;
			never_ran(s, lrank, m->gen);
		}
		return;
	}
	/* The child of ours whose subtree holds node n. */
	while (n > 0 && (p = pm_tree_parent(n, s->fanout)) != s->node)
		n = p;
	idx = n > 0 ? pm_gen_kid_index(&s->gen, n) : -1;
	if (idx < 0 || idx >= s->children_cap || !s->children[idx]) {
		/* Spares heal the tree: a node whose parent was lost went to
		 * an ancestor of it, or to the root that took over. The
		 * nearest ancestor of node that is our child now. */
		for (n = m->node; n > 0 && n != s->node; n = pm_tree_parent(n, s->fanout)) {
			idx = pm_gen_kid_index(&s->gen, n);
			if (idx >= 0 && idx < s->children_cap && s->children[idx])
				break;
		}
		if (n == s->node)
			n = 0; /* not below us */
	}
	if (n > 0)
		pm_step_ops.send_child(s, n, m);
	else
		pm_log(s, "sweep: %s for node %d, not below node %d", pm_msg_name(m->type),
		       m->node, s->node);
}

int pm_sweep_node_parent_msg(struct pm_step *s, const struct pm_msg *m)
{
	if (m->type != PM_MSG_TRIAL_START && m->type != PM_MSG_TRIAL_STOP)
		return 0;
	if (is_sweep(s) && !pm_gen_terminal(&s->gen))
		pm_sweep_node_route(s, m);
	return 1;
}

int pm_sweep_node_child_msg(struct pm_step *s, const struct pm_msg *m)
{
	if (m->type != PM_MSG_TRIAL_EXIT)
		return 0;
	if (!is_sweep(s))
		return 1;
	if (s->gen.root) {
		if (PM_HOOK(s, trial_exit)) /* sweep_run.c */
			PM_HOOK(s, trial_exit)(s, m);
	} else
		pm_step_ops.send_up(s, m);
	return 1;
}

/* A supervisor's end of its trial (not Slurm's cancel: the machine's). */
int pm_sweep_node_rank_msg(struct pm_step *s, int lrank, const struct pm_msg *m)
{
	struct pm_msg out;

	if (!is_sweep(s) || (m->type != PM_MSG_RANK_EXIT && m->type != PM_MSG_RANK_STOPPED) ||
	    (m->count & PM_FLAG_CANCEL) || m->gen == 0)
		return 0;
	pm_msg_init(&out, PM_MSG_TRIAL_EXIT);
	out.gen = m->gen;
	out.node = s->node;
	out.rank = lrank;
	out.status = m->status;
	out.count = m->count | (m->type == PM_MSG_RANK_STOPPED ? PM_FLAG_STOPPED : 0);
	if (m->type == PM_MSG_RANK_EXIT)
		pm_msg_set_text(&out, m->text);
	if (s->gen.root) {
		if (PM_HOOK(s, trial_exit))
			PM_HOOK(s, trial_exit)(s, &out);
	} else
		pm_step_ops.send_up(s, &out);
	return 1;
}

void pm_sweep_node_hello(struct pm_step *s, int lrank)
{
	if (!s->sweep_node || !s->sweep_node->has_pending[lrank])
		return;
	s->sweep_node->has_pending[lrank] = false;
	if (!pm_gen_terminal(&s->gen))
		pm_step_send(s, s->ranks[lrank], &s->sweep_node->pending[lrank]);
}
