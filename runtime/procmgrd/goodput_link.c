/* The root's goodput (issue 35; the accounting is common/goodput.c, pure):
 * its node's local rank 0's steps (RANK_STEP) written into the event log
 * as `progress` events, sampled, and every event of the log fed to the
 * same timeline `procmgr goodput` reads back after the job; the figures
 * for the metrics, procmgr status and one line on srun's stderr at the
 * step's end. One rank's steps stand for the step's: in synchronous
 * training every rank is at the same step within one step's time. */
#include "step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/goodput.h"
#include "common/slowsum.h"
#include "gen_int.h"
#include "io/sys.h"

struct pm_gp_live {
	struct pm_gp_tl tl;
	bool failed;           /* out of memory once: goodput given up, said in the log */
	/* the beats: the generation they are of, its first one's time, the
	 * last written, and the newest not written yet */
	uint32_t gen;
	bool have_gen, pending;
	uint64_t first_ms, written_ms, p_step, p_at;
	uint64_t last_step;
};

static struct pm_gp_live *live(struct pm_step *s)
{
	if (!s->gp && !(s->gp = calloc(1, sizeof(*s->gp))))
		return NULL;
	return s->gp->failed ? NULL : s->gp;
}

static void write_beat(struct pm_step *s, uint64_t step, uint64_t at_ms)
{
	char f[160];

	s->gp->pending = false;
	s->gp->written_ms = at_ms;
	snprintf(f, sizeof(f), "\"gen\":%u,\"rank\":%d,\"train_step\":%llu,\"beat_ms\":%llu",
		 s->gp->gen, s->gen.ranks[0].grank, (unsigned long long)step,
		 (unsigned long long)at_ms);
	pm_step_ops.event(s, "progress", f);
}

void pm_step_goodput_beat(struct pm_step *s, int lrank, const struct pm_msg *m)
{
	struct pm_gp_live *g;
	uint64_t step, at;
	double compute;

	if (lrank != 0 || !s->gen.root || s->opts.sweep[0] || m->gen != s->gen.gen ||
	    s->gen.phase != PM_PHASE_RUNNING || pm_rank_step_parse(m->text, &step, &at, &compute) ||
	    !(g = live(s)))
		return;
	/* A generation's first beat is always written: its re-initialisation
	 * ends there. */
	if (!g->have_gen || g->gen != m->gen) {
		g->have_gen = true;
		g->gen = m->gen;
		g->first_ms = at;
		write_beat(s, step, at);
		return;
	}
	if (pm_gp_sample_due(at - g->first_ms, at - g->written_ms)) {
		write_beat(s, step, at);
		return;
	}
	g->pending = true;
	g->p_step = step;
	g->p_at = at;
}

/* The figures now; 0, or -1 when goodput is off (out of memory). */
static int figures(struct pm_step *s, struct pm_gp_result *r)
{
	struct pm_gp_live *g = s->gp;
	size_t n;
	int rc;

	if (!g || g->failed)
		return -1;
	/* The newest beat, not written yet, counts now (the log has it
	 * before the next event, or the next sample). */
	n = g->tl.n;
	if (g->pending) {
		char f[128];
		snprintf(f, sizeof(f), "\"gen\":%u,\"train_step\":%llu,\"beat_ms\":%llu", g->gen,
			 (unsigned long long)g->p_step, (unsigned long long)g->p_at);
		(void)pm_gp_note(&g->tl, 0, "progress", f);
	}
	rc = pm_gp_compute(&g->tl, pm_wall_s(), r);
	g->tl.n = n;
	return rc;
}

static void to_metrics(struct pm_step *s, const struct pm_gp_result *r)
{
	struct pm_metrics *m = &s->metrics;
	int j;

	m->goodput = r->known ? r->goodput : -1;
	m->gp_useful_s = r->known ? r->useful : -1;
	m->gp_wall_s = r->wall;
	for (j = 0; j < PM_GP_NPHASES; j++)
		m->gp_lost_s[j] = r->total[j];
}

void pm_step_goodput_event(struct pm_step *s, const char *name, const char *fields)
{
	struct pm_gp_live *g;
	struct pm_gp_result r;
	bool end = !strcmp(name, "finish") || !strcmp(name, "give_up") ||
		   !strcmp(name, "stop_requested");

	if (!s->gen.root || !(g = live(s)))
		return;
	/* The last beat before anything else that happens: a failure's lost
	 * work is counted from it. */
	if (g->pending && strcmp(name, "progress"))
		write_beat(s, g->p_step, g->p_at);
	if (pm_gp_note(&g->tl, pm_wall_s(), name, fields)) {
		g->failed = true;
		pm_gp_tl_free(&g->tl);
		pm_log(s, "goodput: out of memory: no goodput for this step");
		return;
	}
	/* Figures are needed by the metrics at each event, else at the end. */
	if (!end && !(s->metrics_dir && s->node == 0))
		return;
	if (figures(s, &r))
		return;
	to_metrics(s, &r);
	/* srun's line at the end: when there is something to say (a step
	 * that never heartbeat with a step and never failed has none). */
	if (end && !r.sweep && (r.known || r.nincidents)) {
		char text[1024];
		if (pm_gp_text(&r, text, sizeof(text)) == 0)
			pm_gen_tell(&s->gen, "%s", text);
	}
	pm_gp_result_free(&r);
}

int pm_step_goodput_status(struct pm_step *s, char *line, size_t len)
{
	struct pm_gp_result r;
	int rc;

	if (!s->gen.root || s->opts.sweep[0] || figures(s, &r))
		return -1;
	rc = pm_gp_status_format(&r, line, len);
	pm_gp_result_free(&r);
	return rc;
}

void pm_step_goodput_free(struct pm_step *s)
{
	if (!s->gp)
		return;
	pm_gp_tl_free(&s->gp->tl);
	free(s->gp);
	s->gp = NULL;
}
