/* The root's figure of a restart as the user feels it. procmgr's part
 * ends when every rank runs its command again, but a researcher waits
 * until every rank trains again: its first heartbeat of the generation,
 * after the interpreter, the imports, the rendezvous and the checkpoint.
 * Both are measured from the failure; the second is the recovery. Part of
 * the state machine: pure. */
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>

void pm_gen_state_restored(struct pm_gen *g, uint64_t step, uint64_t lost)
{
	struct pm_gen_state_rec *s = &g->state_rec;

	if (s->gen != g->gen || !s->n)
		*s = (struct pm_gen_state_rec){ .gen = g->gen, .step_min = step };
	s->n++;
	if (step < s->step_min)
		s->step_min = step;
	if (lost > s->lost_max)
		s->lost_max = lost;
}

void pm_gen_root_running(struct pm_gen *g, bool beat)
{
	uint64_t t = g->cf.ops->now_ms(g->cf.ctx);
	unsigned long long since = t - g->start_t0, rec = t - g->fail_t0, stacks = 0;
	struct pm_gen_recovery *r = &g->rec;
	char hs[64] = "", hev[32] = "";
	bool beats;

	if (beat)
		r->beats_seen = true;
	/* A heartbeat will end this restart: one is required, or the program
	 * has sent them before (procmgr-rank reports a generation's first
	 * beat with or without a hang timeout). */
	beats = g->cf.beats || r->beats_seen;
	if (g->gen == 0) {
		pm_gen_event(g, beat ? "heartbeating" : "running", "\"gen\":%u,\"ranks\":%d,"
		      "\"since_start_ms\":%llu", g->gen, pm_gen_world(g), since);
		return;
	}
	/* After a hang, taking every rank's stack came first (up to the
	 * stack timeout): said apart, not counted as procmgr's part. */
	if (g->hang.gen + 1 == g->gen && g->hang.stacks_ms) {
		stacks = g->hang.stacks_ms < rec ? g->hang.stacks_ms : rec;
		snprintf(hs, sizeof(hs), "the hang's stacks %.2f s, ", (double)stacks / 1000);
		snprintf(hev, sizeof(hev), ",\"stacks_ms\":%llu", stacks);
	}
	if (!beat || r->gen != g->gen) {
		/* A heartbeat seen with the run (both in one report) still
		 * has a process part: the same instant. */
		*r = (struct pm_gen_recovery){ .gen = g->gen, .process_ms = rec - stacks,
					       .beats_seen = r->beats_seen };
	}
	if (!beat) {
		pm_gen_event(g, "running", "\"gen\":%u,\"ranks\":%d,\"since_start_ms\":%llu,"
		      "\"since_failure_ms\":%llu,\"process_ms\":%llu%s,\"heartbeats\":%s", g->gen,
		      pm_gen_world(g), since, rec, rec - stacks, hev, beats ? "true" : "false");
		if (!beats)
			pm_gen_tell(g, "procmgr: generation %u: every rank running again %.2f s "
				    "after the failure (%sprocmgr's part only, not the time to "
				    "training again: the program sent no heartbeat; call "
				    "procmgr.heartbeat(step) once per step to have it)", g->gen,
				    (double)rec / 1000, hs);
		return;
	}
	r->beat = true;
	r->recovery_ms = rec;
	{
		/* Restores come before a rank's first heartbeat, on the same
		 * links: they are in by now. */
		const struct pm_gen_state_rec *s = &g->state_rec;
		char st[160] = "", ev[96] = "";
		if (s->gen == g->gen && s->n) {
			snprintf(st, sizeof(st), "; state restored from procmgr's memory (%u "
				 "restore%s, step %llu, %llu step%s of work lost)", s->n,
				 s->n == 1 ? "" : "s", (unsigned long long)s->step_min,
				 (unsigned long long)s->lost_max, s->lost_max == 1 ? "" : "s");
			snprintf(ev, sizeof(ev), ",\"state_restores\":%u,\"state_step\":%llu,"
				 "\"lost_steps\":%llu", s->n, (unsigned long long)s->step_min,
				 (unsigned long long)s->lost_max);
		}
		pm_gen_event(g, "heartbeating", "\"gen\":%u,\"ranks\":%d,\"since_start_ms\":%llu,"
		      "\"since_failure_ms\":%llu,\"recovery_ms\":%llu,\"process_ms\":%llu%s%s",
		      g->gen, pm_gen_world(g), since, rec, rec, (unsigned long long)r->process_ms,
		      hev, ev);
		pm_gen_tell(g, "procmgr: generation %u: every rank training again %.2f s after "
			    "the failure (%sprocmgr's part %.2f s, the program's start %.2f s)%s",
			    g->gen, (double)rec / 1000, hs, (double)r->process_ms / 1000,
			    (double)(rec - stacks - r->process_ms) / 1000, st);
	}
}
