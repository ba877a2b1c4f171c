/* A sweep's root, when something happens to trials from outside: a node
 * lost (its trials requeued on the other nodes, their ranks elsewhere
 * stopped while their slots are held: sweep_run.c frees them at their
 * ends), and procmgr stop/restart of one trial. See sweep_run.h. */
#include "step.h"
#include "sweep_run.h"
#include "sweep_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/text.h"
#include "io/sys.h"
#include "state_repl.h"

/* The lost node's state, replicated at its buddy: no trial's run will see
 * it again (its trials start over), so it goes. */
static void lost_replicas(struct pm_step *s, int node)
{
	long b = pm_state_repl_buddy_of(s, node);
	struct pm_msg m;

	if (b < 0 || b >= s->nnodes || s->sweep->gone[b])
		return;
	pm_msg_init(&m, PM_MSG_TRIAL_STOP);
	m.gen = 0;
	m.node = (int32_t)b;
	m.rank = node;
	m.status = -1;
	m.count = PM_FLAG_ENDED;
	pm_sweep_node_route(s, &m);
}

/* gen's op: node is out of the step (gen_sweep.c). */
int pm_sweep_node_lost(void *ctx, int node, const char *why)
{
	struct pm_step *s = ctx;
	struct pm_sweep_run *r = s->sweep;
	char names[600] = "";
	size_t off = 0;
	int *aff, n, k, sl, spare = -1;
	struct pm_msg m;

	if (!r || !r->gone || node < 0 || node >= s->nnodes || r->gone[node])
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
	/* With spares, one joins the pool in its place (sweep_loss.h). */
	if (pm_sweep_pool_gone(s, node))
		spare = pm_sweep_pool_fill(s);
	for (sl = node * r->L; sl < (node + 1) * r->L; sl++)
		r->reclaim_slot[sl] = 0; /* a new root waits for it no more */
	if (r->reclaim_left)
		r->reclaim_left[node] = 0;
	for (sl = node * r->L; sl < (node + 1) * r->L; sl++)
		r->slot_live[sl] = 0; /* gone with the node: no end will come */
	for (k = 0; k < n; k++) {
		int i = aff[k];

		pm_sweep_stop_ranks(s, i, node);
		/* Requeued, it starts over: what its run saved goes (its ranks
		 * still stopping cannot save any more: statescope.h). */
		pm_sweep_free_state(s, i, node);
		r->live[i] = 0;
		r->failing[i] = r->restart_req[i] = false;
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
	lost_replicas(s, node);
	pm_log(s, "sweep: lost node %s (%s): %d trial%s requeued", s->names[node], why, n,
	       n == 1 ? "" : "s");
	if (spare >= 0)
		pm_sweep_ev(s, "spare_joined", "\"node\":\"%s\",\"lost\":\"%s\",\"slots\":%d",
			    s->names[spare], s->names[node], r->L);
	pm_msg_init(&m, PM_MSG_PRINT);
	if (n)
		snprintf(m.text, sizeof(m.text), "procmgr: lost node %s (%.300s); its %d trial%s "
			 "go%s to the other nodes: %s", s->names[node], why, n, n == 1 ? "" : "s",
			 n == 1 ? "es" : "", names);
	else
		snprintf(m.text, sizeof(m.text), "procmgr: lost node %s (%.300s); no trial ran "
			 "there, the sweep goes on on the other nodes", s->names[node], why);
	if (spare >= 0) {
		size_t l = strlen(m.text);
		snprintf(m.text + l, sizeof(m.text) - l, "; spare %s's %d slots join the pool",
			 s->names[spare], r->L);
	}
	m.text_len = (uint16_t)strlen(m.text);
	pm_step_ops.send_rank(s, 0, &m);
	if (!r->launched && pm_sweep_pool_complete(s))
		pm_sweep_launch(s); /* a new root waited for that node's slots */
	pm_sweep_schedule(s);
	return 1;
}

static int find(const struct pm_sweep_run *r, const char *name)
{
	int i;

	for (i = 0; i < r->file.n; i++)
		if (!strcmp(r->file.trials[i].name, name))
			return i;
	return -1;
}

int pm_sweep_request(struct pm_step *s, bool restart, const char *name, const char *who,
		     char *msg, size_t len)
{
	struct pm_sweep_run *r = s->sweep;
	const char *verb = restart ? "restart" : "stop";
	struct pm_sq_trial *t;
	char esc[256];
	struct pm_msg m;
	int i;

	if (!r) {
		snprintf(msg, len, "procmgr: step %u.%u is not a sweep: --trial names a trial of a "
			 "--procmgr-sweep step", s->job, s->stepid);
		return -1;
	}
	i = find(r, name);
	if (i < 0) {
		snprintf(msg, len, "procmgr: step %u.%u has no trial '%.64s' (procmgr status %u.%u "
			 "lists its %d trials)", s->job, s->stepid, name, s->job, s->stepid, r->file.n);
		return -1;
	}
	t = &r->q.t[i];
	if (r->ended || t->state == PM_TS_DONE || t->state == PM_TS_FAILED) {
		snprintf(msg, len, "procmgr: cannot %s trial %s of step %u.%u: it has ended (%s)",
			 verb, name, s->job, s->stepid, pm_ts_name(t->state));
		return -1;
	}
	if (restart && (t->state != PM_TS_RUNNING || r->failing[i] || r->restart_req[i])) {
		snprintf(msg, len, "procmgr: cannot restart trial %s of step %u.%u now: it is %s; "
			 "only a running trial restarts", name, s->job, s->stepid,
			 r->failing[i] || r->restart_req[i] ? "being stopped" : pm_ts_name(t->state));
		return -1;
	}
	pm_json_escape(who, esc, sizeof(esc));
	pm_sweep_ev(s, restart ? "trial_restart_requested" : "trial_stop_requested",
		    "\"trial\":\"%s\",\"attempt\":%u,\"state\":\"%s\",\"by\":\"%s\"", name,
		    r->attempt[i], pm_ts_name(t->state), esc);
	pm_msg_init(&m, PM_MSG_PRINT);
	if (restart) {
		/* Its ranks stop; when the last has, it starts again (sweep_run.c). */
		r->restart_req[i] = true;
		pm_sweep_stop_ranks(s, i, -1);
		snprintf(m.text, sizeof(m.text), "procmgr: trial %s: %s asked for a restart; "
			 "restarting it alone (restart %d)", name, who, t->restarts + 1);
		snprintf(msg, len, "procmgr: step %u.%u: restarting trial %s (restart %d)", s->job,
			 s->stepid, name, t->restarts + 1);
	} else {
		bool ran = t->state != PM_TS_QUEUED && t->state != PM_TS_REQUEUED;
		/* Failed ("stopped") now; the slots still running are held
		 * until their ranks' ends come. */
		pm_sq_stop(&r->q, i, pm_now_ms(), r->slot_live);
		pm_sweep_journal_end(s, i);
		/* A trial that holds no slots (queued, requeued) has no ranks
		 * to stop: its slot_of_rank says nothing of slots. */
		if (ran) {
			pm_sweep_stop_ranks(s, i, -1);
			pm_sweep_free_state(s, i, -1);
		}
		r->live[i] = 0;
		r->failing[i] = r->restart_req[i] = false;
		free(r->fail_err[i]);
		r->fail_err[i] = NULL;
		snprintf(m.text, sizeof(m.text), "procmgr: %s asked to stop trial %s; %s", who, name,
			 ran ? "stopping its ranks" : "it will not run");
		snprintf(msg, len, "procmgr: step %u.%u: %s trial %s", s->job, s->stepid,
			 ran ? "stopping" : "not running", name);
	}
	m.text_len = (uint16_t)strlen(m.text);
	pm_step_ops.send_rank(s, 0, &m);
	if (!restart)
		pm_sweep_schedule(s);
	return 0;
}
