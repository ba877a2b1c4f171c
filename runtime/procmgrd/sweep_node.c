/* A sweep on every node: TRIAL_START and TRIAL_STOP go to the supervisor
 * of their slot (or on down the tree towards their node), and the
 * supervisor's end of a trial goes up to the root as TRIAL_EXIT. The root
 * tells only the nodes a trial runs on: O(its nodes) messages per start,
 * each routed along the tree's one path. */
#include "step.h"
#include "sweep_run.h"

#include "common/tree.h"

static bool is_sweep(const struct pm_step *s)
{
	return s->opts.sweep[0] != '\0';
}

void pm_sweep_node_route(struct pm_step *s, const struct pm_msg *m)
{
	int n = m->node, p;

	if (n == s->node) {
		int lrank = m->status;
		if (lrank < 0 || lrank >= s->ntasks_local || !s->sweep_node)
			return;
		if (s->ranks[lrank]) {
			pm_step_send(s, s->ranks[lrank], m);
		} else if (m->type == PM_MSG_TRIAL_START) {
			/* Its supervisor comes later: it gets it at its HELLO. */
			s->sweep_node->pending[lrank] = *m;
			s->sweep_node->has_pending[lrank] = true;
		} else {
			s->sweep_node->has_pending[lrank] = false;
		}
		return;
	}
	/* The child of ours whose subtree holds node n. */
	while (n > 0 && (p = pm_tree_parent(n, s->fanout)) != s->node)
		n = p;
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
	if (s->node == 0) {
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
	if (s->node == 0) {
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
