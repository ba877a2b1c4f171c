/* A sweep's root, when something happens to trials from outside: a node
 * lost (its trials requeued on the other nodes, their ranks elsewhere
 * stopped while their slots are held), and the ranks' ends on held slots.
 * See sweep_run.h. */
#include "step.h"
#include "sweep_run.h"
#include "sweep_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/sys.h"

void pm_sweep_stop_ranks(struct pm_step *s, int i, int skip_node)
{
	struct pm_sweep_run *r = s->sweep;
	const struct pm_sq_trial *t = &r->q.t[i];
	int k;

	for (k = 0; k < t->ranks; k++) {
		int sl = t->slot_of_rank[k];
		struct pm_msg stop;

		if (!r->slot_live[sl] || r->slot_attempt[sl] != r->attempt[i] ||
		    sl / r->L == skip_node)
			continue;
		pm_msg_init(&stop, PM_MSG_TRIAL_STOP);
		stop.gen = r->attempt[i];
		stop.node = sl / r->L;
		stop.status = sl % r->L;
		pm_sweep_node_route(s, &stop);
	}
}

int pm_sweep_held_exit(struct pm_step *s, int slot, uint32_t attempt)
{
	struct pm_sweep_run *r = s->sweep;

	if (r->q.owner[slot] != PM_SQ_HELD || r->slot_attempt[slot] != attempt ||
	    !r->slot_live[slot])
		return 0;
	r->slot_live[slot] = 0;
	(void)pm_sq_unhold(&r->q, slot);
	pm_sweep_schedule(s);
	return 1;
}

/* gen's op: node is out of the step (gen_sweep.c). */
int pm_sweep_node_lost(void *ctx, int node, const char *why)
{
	struct pm_step *s = ctx;
	struct pm_sweep_run *r = s->sweep;
	char names[600] = "";
	size_t off = 0;
	int *aff, n, k, sl;
	struct pm_msg m;

	if (!r || node < 0 || node >= s->nnodes || r->q.pack.lost[node])
		return 0;
	if (r->ended)
		return 1;
	aff = malloc((size_t)r->file.n * sizeof(int));
	if (!aff) {
		pm_sweep_finish(s, 1, "procmgr: sweep: out of memory at a node's loss");
		return 1;
	}
	/* The ranks of its trials still running elsewhere keep their slots
	 * (held) until each one's stop is answered. */
	n = pm_sq_node_lost(&r->q, node, pm_now_ms(), aff, r->file.n, r->slot_live);
	for (sl = node * r->L; sl < (node + 1) * r->L; sl++)
		r->slot_live[sl] = 0; /* gone with the node: no end will come */
	for (k = 0; k < n; k++) {
		int i = aff[k];

		pm_sweep_stop_ranks(s, i, node);
		r->live[i] = 0;
		r->failing[i] = false;
		free(r->fail_err[i]);
		r->fail_err[i] = NULL;
		pm_sweep_ev(s, "trial_requeued", "\"trial\":\"%s\",\"attempt\":%u,\"node\":\"%s\","
			    "\"requeues\":%d", r->file.trials[i].name, r->attempt[i], s->names[node],
			    r->q.t[i].requeues);
		if (off + 80 < sizeof(names))
			off += (size_t)snprintf(names + off, sizeof(names) - off, "%s%s",
						k ? ", " : "", r->file.trials[i].name);
		else if (off + 5 < sizeof(names) && !strstr(names, "..."))
			off += (size_t)snprintf(names + off, sizeof(names) - off, ", ...");
	}
	free(aff);
	pm_log(s, "sweep: lost node %s (%s): %d trial%s requeued", s->names[node], why, n,
	       n == 1 ? "" : "s");
	pm_msg_init(&m, PM_MSG_PRINT);
	if (n)
		snprintf(m.text, sizeof(m.text), "procmgr: lost node %s (%.300s); its %d trial%s "
			 "go%s to the other nodes: %s", s->names[node], why, n, n == 1 ? "" : "s",
			 n == 1 ? "es" : "", names);
	else
		snprintf(m.text, sizeof(m.text), "procmgr: lost node %s (%.300s); no trial ran "
			 "there, the sweep goes on on the other nodes", s->names[node], why);
	m.text_len = (uint16_t)strlen(m.text);
	pm_step_ops.send_rank(s, 0, &m);
	pm_sweep_schedule(s);
	return 1;
}
