/* Goodput's accounting (goodput.h has the definitions). Pure. */
#include "goodput.h"
#include "text.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pm_gp_phase_name(enum pm_gp_phase p)
{
	static const char *const n[PM_GP_NPHASES] = { "detect", "stop", "start", "reinit",
						      "recompute", "slowdown" };
	return (unsigned)p < PM_GP_NPHASES ? n[p] : "?";
}

/* ---- the timeline, from the events' JSON members ---- */

static bool num(const char *fields, const char *key, double *v)
{
	bool q;
	const char *p = pm_event_field(fields, key, &q);
	char *end;

	if (!p || q)
		return false;
	*v = strtod(p, &end);
	return end != p;
}

static bool is(const char *fields, const char *key, const char *prefix)
{
	bool q;
	const char *p = pm_event_field(fields, key, &q);
	return p && q && !strncmp(p, prefix, strlen(prefix));
}

static int add(struct pm_gp_tl *tl, const struct pm_gp_ev *e)
{
	if (tl->n == tl->cap) {
		size_t c = tl->cap ? tl->cap * 2 : 64;
		void *p = realloc(tl->ev, c * sizeof(*tl->ev));
		if (!p)
			return -1;
		tl->ev = p;
		tl->cap = c;
	}
	tl->ev[tl->n++] = *e;
	return 0;
}

int pm_gp_note(struct pm_gp_tl *tl, double t, const char *name, const char *fields)
{
	struct pm_gp_ev e = { .t = t, .at = t };
	double v, w;
	bool q;

	if (num(fields, "gen", &v) && v >= 0 && v < 4294967296.0)
		tl->gen = (uint32_t)v;
	e.gen = tl->gen;
	if (!strcmp(name, "launch")) {
		e.kind = PM_GP_LAUNCH;
	} else if (!strcmp(name, "rank_failed")) {
		if (pm_event_field(fields, "ignored", &q))
			return 0; /* its generation was already stopping */
		e.kind = PM_GP_FAIL;
		if (pm_event_field(fields, "hung", &q)) {
			snprintf(e.cause, sizeof(e.cause), "hang");
			if (num(fields, "last_heartbeat_ms", &v))
				e.at = v / 1000.0;
			/* Judged before its stack was taken: that is the
			 * detection's end, the stop's beginning. */
			if (num(fields, "judged_ms_ago", &w))
				e.t = t - w / 1000.0;
		} else {
			snprintf(e.cause, sizeof(e.cause), "%s",
				 is(fields, "status", "lost") ? "supervisor" : "crash");
		}
	} else if (!strcmp(name, "node_lost")) {
		e.kind = PM_GP_FAIL;
		e.at = -1;
		snprintf(e.cause, sizeof(e.cause), "node_lost");
	} else if (!strcmp(name, "health_failed")) {
		if (is(fields, "when", "before launch"))
			return 0; /* nothing ran */
		e.kind = PM_GP_FAIL;
		snprintf(e.cause, sizeof(e.cause), "health");
	} else if (!strcmp(name, "restart_requested")) {
		e.kind = PM_GP_FAIL;
		snprintf(e.cause, sizeof(e.cause), "request");
	} else if (!strcmp(name, "cancelled")) {
		e.kind = PM_GP_FAIL;
		snprintf(e.cause, sizeof(e.cause), "cancelled");
	} else if (!strcmp(name, "hang")) {
		e.kind = PM_GP_HANG;
	} else if (!strcmp(name, "stopped")) {
		e.kind = PM_GP_STOPPED;
	} else if (!strcmp(name, "start")) {
		e.kind = PM_GP_START;
	} else if (!strcmp(name, "running")) {
		e.kind = PM_GP_RUNNING;
	} else if (!strcmp(name, "progress")) {
		if (!num(fields, "train_step", &v) || v < 0 || !num(fields, "beat_ms", &w))
			return 0;
		e.kind = PM_GP_BEAT;
		e.step = (uint64_t)v;
		e.t = w / 1000.0;
	} else if (!strcmp(name, "generation_succeeded")) {
		e.kind = PM_GP_SUCCEEDED;
	} else if (!strcmp(name, "finish") || !strcmp(name, "give_up") ||
		   !strcmp(name, "stop_requested")) {
		/* procmgr stop ends the step with no finish of its own */
		e.kind = PM_GP_END;
	} else if (!strcmp(name, "sweep")) {
		e.kind = PM_GP_SWEEP;
	} else {
		return 0;
	}
	if (add(tl, &e)) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int pm_gp_line(struct pm_gp_tl *tl, const char *line)
{
	const char *p = strstr(line, "\"time\":"), *ev = strstr(line, "\"event\":\""), *end;
	char name[48];
	double t;
	char *e;

	if (!p || !ev)
		return 1;
	t = strtod(p + 7, &e);
	if (e == p + 7)
		return 1;
	ev += 9;
	end = strchr(ev, '"');
	if (!end || (size_t)(end - ev) >= sizeof(name))
		return 1;
	memcpy(name, ev, (size_t)(end - ev));
	name[end - ev] = '\0';
	/* The members after the name: "step" before it is the step's id, not
	 * a training step. */
	return pm_gp_note(tl, t, name, end + 1) ? -1 : 0;
}

void pm_gp_tl_free(struct pm_gp_tl *tl)
{
	free(tl->ev);
	*tl = (struct pm_gp_tl){ 0 };
}

/* ---- the figures ---- */

struct gen {
	double begin, running, stopped;
	bool failed, succeeded;
	double at, detected;     /* the incident's */
	char cause[16];
	size_t b0, nb;           /* its beats, in order, in the beats array */
	double first_t, last_t;
	uint64_t first_s, last_s;
};

struct rate {
	double per_step, w;
};

static int by_rate(const void *x, const void *y)
{
	const struct rate *a = x, *b = y;
	return (a->per_step > b->per_step) - (a->per_step < b->per_step);
}

/* Steps [a, b) done so far, disjoint and sorted. */
struct ranges {
	uint64_t (*r)[2];
	size_t n, cap;
};

static uint64_t overlap(const struct ranges *u, uint64_t a, uint64_t b)
{
	uint64_t o = 0;
	size_t i;

	for (i = 0; i < u->n; i++) {
		uint64_t lo = u->r[i][0] > a ? u->r[i][0] : a, hi = u->r[i][1] < b ? u->r[i][1] : b;
		if (hi > lo)
			o += hi - lo;
	}
	return o;
}

static int insert(struct ranges *u, uint64_t a, uint64_t b)
{
	size_t i, j;

	if (b <= a)
		return 0;
	if (u->n == u->cap) {
		size_t c = u->cap ? u->cap * 2 : 8;
		void *p = realloc(u->r, c * sizeof(*u->r));
		if (!p)
			return -1;
		u->r = p;
		u->cap = c;
	}
	for (i = 0; i < u->n && u->r[i][0] < a; i++)
		;
	memmove(u->r + i + 1, u->r + i, (u->n - i) * sizeof(*u->r));
	u->r[i][0] = a;
	u->r[i][1] = b;
	u->n++;
	/* merge touching or overlapping neighbours */
	for (i = 0, j = 1; j < u->n; j++) {
		if (u->r[j][0] <= u->r[i][1]) {
			if (u->r[j][1] > u->r[i][1])
				u->r[i][1] = u->r[j][1];
		} else {
			u->r[++i][0] = u->r[j][0];
			u->r[i][1] = u->r[j][1];
		}
	}
	u->n = i + 1;
	return 0;
}

static uint64_t covered(const struct ranges *u)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < u->n; i++)
		n += u->r[i][1] - u->r[i][0];
	return n;
}

static double pos(double x)
{
	return x > 0 ? x : 0;
}

static void unknown(struct pm_gp_result *r, const char *why)
{
	r->known = false;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

int pm_gp_compute(const struct pm_gp_tl *tl, double now, struct pm_gp_result *r)
{
	struct gen *g = NULL;
	struct pm_gp_ev *beats = NULL;
	struct rate *rates = NULL;
	struct ranges done = { 0 };
	size_t i, nb = 0, nr = 0;
	uint32_t ngen = 0, k, *charge = NULL;
	double launch = -1, end_t = -1, tau = -1, tend;
	bool anybeat;
	int rc = -1;

	memset(r, 0, sizeof(*r));
	r->wall = r->useful = r->goodput = r->steady = r->startup = r->end = r->other = -1;
	r->lost = -1;
	for (i = 0; i < PM_GP_NPHASES; i++)
		r->total[i] = -1;
	for (i = 0; i < tl->n; i++) {
		if (tl->ev[i].gen + 1 > ngen && tl->ev[i].gen < 1000000)
			ngen = tl->ev[i].gen + 1;
		if (tl->ev[i].kind == PM_GP_LAUNCH && launch < 0)
			launch = tl->ev[i].t;
		if (tl->ev[i].kind == PM_GP_END && end_t < 0)
			end_t = tl->ev[i].t;
		if (tl->ev[i].kind == PM_GP_SWEEP)
			r->sweep = true;
	}
	r->ended = end_t >= 0;
	tend = r->ended ? end_t : now;
	if (launch < 0) {
		unknown(r, "the step never launched (no `launch` in its event log)");
		return 0;
	}
	r->wall = pos(tend - launch);
	if (r->sweep) {
		unknown(r, "a sweep: its trials' heartbeats do not reach the root, and a goodput "
			   "would be per trial (each trial's restarts are in its trial_end events)");
		return 0;
	}
	g = calloc(ngen, sizeof(*g));
	beats = calloc(tl->n + 1, sizeof(*beats));
	charge = calloc(ngen, sizeof(*charge));
	if (!g || !beats || !charge)
		goto out;
	for (k = 0; k < ngen; k++)
		g[k] = (struct gen){ .begin = -1, .running = -1, .stopped = -1, .at = -1,
				     .detected = -1, .first_t = -1, .last_t = -1 };
	g[0].begin = launch;
	/* Pass 1: each generation's moments, its first failure. */
	for (i = 0; i < tl->n; i++) {
		const struct pm_gp_ev *e = &tl->ev[i];
		struct gen *x = e->gen < ngen ? &g[e->gen] : NULL;
		if (!x)
			continue;
		switch (e->kind) {
		case PM_GP_FAIL:
			if (x->failed || x->succeeded)
				break;
			x->failed = true;
			x->detected = e->t;
			x->at = e->at;
			snprintf(x->cause, sizeof(x->cause), "%s", e->cause);
			break;
		case PM_GP_HANG:
			if (x->failed)
				snprintf(x->cause, sizeof(x->cause), "hang");
			break;
		case PM_GP_STOPPED:
			if (x->stopped < 0)
				x->stopped = e->t;
			break;
		case PM_GP_START:
			if (x->begin < 0)
				x->begin = e->t;
			break;
		case PM_GP_RUNNING:
			if (x->running < 0)
				x->running = e->t;
			break;
		case PM_GP_SUCCEEDED:
			if (!x->failed)
				x->succeeded = true;
			break;
		default:
			break;
		}
	}
	/* Pass 2: each generation's beats, increasing steps, none after its
	 * failure (a lost node's failure is its last beat before it). */
	for (k = 0; k < ngen; k++) {
		struct gen *x = &g[k];
		x->b0 = nb;
		for (i = 0; i < tl->n; i++) {
			const struct pm_gp_ev *e = &tl->ev[i];
			if (e->kind != PM_GP_BEAT || e->gen != k)
				continue;
			if (x->failed && x->at < 0 && e->t > x->detected)
				continue;
			if (x->failed && x->at >= 0 && e->t > x->at)
				continue;
			if (nb > x->b0 && e->step <= beats[nb - 1].step)
				continue;
			beats[nb++] = *e;
		}
		x->nb = nb - x->b0;
		if (x->failed && x->at < 0)
			x->at = x->nb ? beats[nb - 1].t : x->detected;
		if (x->failed && x->at > x->detected)
			x->at = x->detected;
		if (x->nb) {
			x->first_t = beats[x->b0].t;
			x->first_s = beats[x->b0].step;
			x->last_t = beats[nb - 1].t;
			x->last_s = beats[nb - 1].step;
		}
	}
	for (k = 0; k < ngen; k++)
		r->nincidents += g[k].failed;
	if (r->nincidents && !(r->inc = calloc(r->nincidents, sizeof(*r->inc))))
		goto out;
	anybeat = nb > 0;
	/* tau: the steps' weighted median time. */
	rates = calloc(nb + 1, sizeof(*rates));
	if (!rates)
		goto out;
	for (k = 0; k < ngen; k++)
		for (i = g[k].b0 + 1; i < g[k].b0 + g[k].nb; i++) {
			double ds = (double)(beats[i].step - beats[i - 1].step);
			rates[nr++] = (struct rate){ (beats[i].t - beats[i - 1].t) / ds, ds };
		}
	if (nr) {
		double tw = 0, acc = 0;
		qsort(rates, nr, sizeof(*rates), by_rate);
		for (i = 0; i < nr; i++)
			tw += rates[i].w;
		for (i = 0; i < nr; i++) {
			acc += rates[i].w;
			if (acc * 2 >= tw)
				break;
		}
		tau = pos(rates[i < nr ? i : nr - 1].per_step);
	}
	if (!anybeat)
		unknown(r, "no heartbeat with a step reached procmgr: useful time, goodput, the "
			   "re-initialisation, the recompute and the slowdown cannot be known (call "
			   "procmgr.heartbeat(step) at the start of every step)");
	else if (tau < 0)
		unknown(r, "fewer than two steps were seen in one generation: no step time, so "
			   "useful time, goodput, the recompute and the slowdown cannot be known yet");
	else
		r->known = true;
	r->steady = tau;
	/* Recomputed steps are charged to the failure of the last generation
	 * before that trained: the one whose work they redo. */
	{
		uint32_t last_trained = UINT32_MAX;
		for (k = 0; k < ngen; k++) {
			charge[k] = last_trained;
			if (g[k].nb)
				last_trained = k;
		}
	}
	/* Steps done, and each generation's recompute. */
	{
		double *re = calloc(ngen, sizeof(*re));
		unsigned n = 0;
		if (!re)
			goto out;
		for (k = 0; k < ngen; k++) {
			struct gen *x = &g[k];
			uint64_t a, b, o;
			if (!x->nb)
				continue;
			a = x->first_s;
			b = x->last_s + (x->succeeded ? 1 : 0);
			o = overlap(&done, a, b);
			if (charge[k] != UINT32_MAX)
				re[charge[k]] += (double)o;
			if (insert(&done, a, b)) {
				free(re);
				goto out;
			}
		}
		r->steps = covered(&done);
		if (r->known) {
			r->useful = (double)r->steps * tau;
			r->goodput = r->wall > 0 ? r->useful / r->wall : 0;
			if (r->goodput > 1)
				r->goodput = 1;
		}
		/* The incidents. */
		for (k = 0; k < ngen; k++) {
			struct gen *x = &g[k], *y = k + 1 < ngen ? &g[k + 1] : NULL;
			struct pm_gp_incident *in;
			double *p, next_end;
			int j;
			if (!x->failed)
				continue;
			in = &r->inc[n++];
			in->gen = k;
			snprintf(in->cause, sizeof(in->cause), "%s", x->cause);
			in->at = x->at;
			p = in->phase;
			p[PM_GP_DETECT] = pos(x->detected - x->at);
			/* A give-up has no stopped event: its end is the step's. */
			p[PM_GP_STOP] = pos((x->stopped >= 0 ? x->stopped : tend) - x->detected);
			p[PM_GP_STARTP] = p[PM_GP_REINIT] = p[PM_GP_RECOMPUTE] = p[PM_GP_SLOWDOWN] = 0;
			if (y && x->stopped >= 0) {
				/* Where the next generation's start ends: every rank
				 * running, or its own failure before, or now. */
				next_end = y->running >= 0 ? y->running : y->failed ? y->at : tend;
				p[PM_GP_STARTP] = pos(next_end - x->stopped);
				if (y->running >= 0)
					p[PM_GP_REINIT] = pos((y->nb ? y->first_t : y->failed ? y->at :
							       tend) - y->running);
				if (y->nb && r->known) {
					/* the resume's slowdown */
					double lim = tau * (1 + PM_GP_SLOW_TOL), ex = 0;
					for (i = y->b0 + 1; i < y->b0 + y->nb; i++) {
						double dt = beats[i].t - beats[i - 1].t;
						double ds = (double)(beats[i].step - beats[i - 1].step);
						if (dt / ds <= lim)
							break;
						ex += dt - ds * tau;
					}
					p[PM_GP_SLOWDOWN] = ex;
				}
			} else if (!y && !r->ended && x->stopped >= 0) {
				p[PM_GP_STARTP] = pos(tend - x->stopped);
			}
			if (r->known)
				p[PM_GP_RECOMPUTE] = (x->nb ? pos(x->at - x->last_t) : 0) + re[k] * tau;
			if (!anybeat)
				p[PM_GP_REINIT] = p[PM_GP_RECOMPUTE] = p[PM_GP_SLOWDOWN] = -1;
			else if (!r->known)
				p[PM_GP_RECOMPUTE] = p[PM_GP_SLOWDOWN] = -1;
			in->lost = 0;
			for (j = 0; j < PM_GP_NPHASES; j++)
				in->lost = p[j] < 0 || in->lost < 0 ? -1 : in->lost + p[j];
		}
		free(re);
	}
	{
		int j;
		r->lost = 0;
		for (j = 0; j < PM_GP_NPHASES; j++) {
			r->total[j] = 0;
			for (i = 0; i < r->nincidents; i++)
				r->total[j] = r->inc[i].phase[j] < 0 || r->total[j] < 0 ? -1 :
					      r->total[j] + r->inc[i].phase[j];
			r->lost = r->total[j] < 0 || r->lost < 0 ? -1 : r->lost + r->total[j];
		}
	}
	/* The start-up, the end, and the rest. */
	{
		struct gen *x = &g[0], *l = NULL;
		for (k = ngen; k-- > 0;)
			if (g[k].nb || g[k].failed || g[k].running >= 0 || k == 0) {
				l = &g[k];
				break;
			}
		if (x->nb)
			r->startup = pos(x->first_t - launch);
		else if (x->failed)
			r->startup = pos(x->at - launch); /* it never trained */
		else if (anybeat)
			r->startup = pos(tend - launch);
		r->end = 0;
		if (l && l->nb && !l->failed)
			r->end = pos(tend - l->last_t - (l->succeeded && tau >= 0 ? tau : 0));
		if (!anybeat)
			r->end = -1;
		if (r->known && r->lost >= 0)
			r->other = r->wall - r->useful - r->startup - r->end - r->lost;
	}
	rc = 0;
out:
	if (rc) {
		pm_gp_result_free(r);
		errno = ENOMEM;
	}
	free(g);
	free(beats);
	free(rates);
	free(charge);
	free(done.r);
	return rc;
}

void pm_gp_result_free(struct pm_gp_result *r)
{
	free(r->inc);
	r->inc = NULL;
	r->nincidents = 0;
}

/* ---- text ---- */


/* A number of seconds, or null. */
static void jnum(struct pm_textbuf *o, const char *key, double v, const char *fmt)
{
	pm_textbuf_put(o, ",\"%s\":", key);
	if (v < 0)
		pm_textbuf_put(o, "null");
	else
		pm_textbuf_put(o, fmt, v);
}

int pm_gp_json(const struct pm_gp_result *r, char *buf, size_t len)
{
	struct pm_textbuf o = { .buf = buf, .len = len };
	unsigned i;
	int j;

	if (!len)
		return -1;
	pm_textbuf_put(&o, "{\"known\":%s,\"why_unknown\":", r->known ? "true" : "false");
	if (r->known)
		pm_textbuf_put(&o, "null");
	else
		pm_textbuf_put(&o, "\"%s\"", r->why); /* our own words: nothing to escape */
	pm_textbuf_put(&o, ",\"ended\":%s,\"wall_s\":%.3f", r->ended ? "true" : "false", r->wall);
	jnum(&o, "useful_s", r->useful, "%.3f");
	jnum(&o, "goodput", r->goodput, "%.4f");
	jnum(&o, "steady_step_s", r->steady, "%.6f");
	pm_textbuf_put(&o, ",\"steps\":%llu", (unsigned long long)r->steps);
	jnum(&o, "startup_s", r->startup, "%.3f");
	jnum(&o, "end_s", r->end, "%.3f");
	/* the rest may be below 0: steps faster than the median */
	if (!r->known || r->lost < 0)
		pm_textbuf_put(&o, ",\"other_s\":null");
	else
		pm_textbuf_put(&o, ",\"other_s\":%.3f", r->other);
	jnum(&o, "lost_s", r->lost, "%.3f");
	pm_textbuf_put(&o, ",\"lost_by_phase\":{");
	for (j = 0; j < PM_GP_NPHASES; j++) {
		pm_textbuf_put(&o, "%s\"%s_s\":", j ? "," : "", pm_gp_phase_name((enum pm_gp_phase)j));
		if (r->total[j] < 0)
			pm_textbuf_put(&o, "null");
		else
			pm_textbuf_put(&o, "%.3f", r->total[j]);
	}
	pm_textbuf_put(&o, "},\"incidents\":[");
	for (i = 0; r->inc && i < r->nincidents; i++) {
		const struct pm_gp_incident *in = &r->inc[i];
		pm_textbuf_put(&o, "%s{\"gen\":%u,\"cause\":\"%s\",\"at\":%.3f", i ? "," : "", in->gen,
		    in->cause, in->at);
		jnum(&o, "lost_s", in->lost, "%.3f");
		for (j = 0; j < PM_GP_NPHASES; j++) {
			char k[24];
			snprintf(k, sizeof(k), "%s_s", pm_gp_phase_name((enum pm_gp_phase)j));
			jnum(&o, k, in->phase[j], "%.3f");
		}
		pm_textbuf_put(&o, "}");
	}
	pm_textbuf_put(&o, "]}");
	return o.full ? -1 : 0;
}

static const char *const words[PM_GP_NPHASES] = { "detection", "stop", "start",
						  "re-initialisation", "recompute", "slowdown" };

int pm_gp_text(const struct pm_gp_result *r, char *buf, size_t len)
{
	struct pm_textbuf o = { .buf = buf, .len = len };
	int j, said = 0;

	if (!len)
		return -1;
	if (r->known)
		pm_textbuf_put(&o, "procmgr: goodput %.1f%% (useful %.1f s of %.1f s wall: %llu steps at "
		    "%.3f s", r->goodput * 100, r->useful, r->wall, (unsigned long long)r->steps,
		    r->steady);
	else
		pm_textbuf_put(&o, "procmgr: goodput unknown (%.1f s wall", r->wall);
	if (r->nincidents) {
		pm_textbuf_put(&o, "; %u incident%s", r->nincidents, r->nincidents == 1 ? "" : "s");
		if (r->lost >= 0)
			pm_textbuf_put(&o, " lost %.2f s", r->lost);
		pm_textbuf_put(&o, ":");
		for (j = 0; j < PM_GP_NPHASES; j++)
			if (r->total[j] >= 0)
				pm_textbuf_put(&o, "%s %s %.2f", said++ ? "," : "", words[j], r->total[j]);
		pm_textbuf_put(&o, " s");
	}
	if (r->known && r->startup >= 0)
		pm_textbuf_put(&o, "; start-up %.1f s", r->startup);
	pm_textbuf_put(&o, ")");
	if (!r->known)
		pm_textbuf_put(&o, ": %s", r->why);
	return o.full ? -1 : 0;
}

/* ---- the status line's codec ---- */

int pm_gp_status_format(const struct pm_gp_result *r, char *buf, size_t len)
{
	struct pm_textbuf o = { .buf = buf, .len = len };
	int j;

	if (!len)
		return -1;
	pm_textbuf_put(&o, "goodput known=%d ended=%d wall=%.3f useful=%.3f ratio=%.4f steady=%.6f "
	    "steps=%llu startup=%.3f lost=%.3f incidents=%u end=%.3f other=%.3f", r->known,
	    r->ended, r->wall, r->useful, r->goodput, r->steady, (unsigned long long)r->steps,
	    r->startup, r->lost, r->nincidents, r->end, r->other);
	for (j = 0; j < PM_GP_NPHASES; j++)
		pm_textbuf_put(&o, " %s=%.3f", pm_gp_phase_name((enum pm_gp_phase)j), r->total[j]);
	return o.full ? -1 : 0;
}

int pm_gp_status_parse(const char *line, struct pm_gp_result *r)
{
	static const char *const keys[] = { "known", "ended", "wall", "useful", "ratio", "steady",
					     "steps", "startup", "lost", "incidents", "end", "other" };
	const char *p;
	int seen = 0, j;

	if (strncmp(line, "goodput ", 8))
		return 0;
	memset(r, 0, sizeof(*r));
	for (p = line + 8; *p;) {
		const char *eq = strchr(p, '='), *sp;
		char *end;
		double v;
		size_t kl;
		int i;
		if (!eq)
			return -1;
		kl = (size_t)(eq - p);
		v = strtod(eq + 1, &end);
		if (end == eq + 1 || (*end && *end != ' '))
			return -1;
		for (i = 0; i < 12; i++)
			if (strlen(keys[i]) == kl && !strncmp(p, keys[i], kl))
				break;
		switch (i) {
		case 0: r->known = v != 0; break;
		case 1: r->ended = v != 0; break;
		case 2: r->wall = v; break;
		case 3: r->useful = v; break;
		case 4: r->goodput = v; break;
		case 5: r->steady = v; break;
		case 6: r->steps = v > 0 ? (uint64_t)v : 0; break;
		case 7: r->startup = v; break;
		case 8: r->lost = v; break;
		case 9: r->nincidents = v > 0 ? (unsigned)v : 0; break;
		case 10: r->end = v; break;
		case 11: r->other = v; break;
		default:
			for (j = 0; j < PM_GP_NPHASES; j++)
				if (strlen(pm_gp_phase_name((enum pm_gp_phase)j)) == kl &&
				    !strncmp(p, pm_gp_phase_name((enum pm_gp_phase)j), kl))
					r->total[j] = v;
			i = -1; /* later words: ignored by an older reader */
		}
		if (i >= 0)
			seen |= 1 << i;
		sp = end;
		p = *sp ? sp + 1 : sp;
	}
	if (seen != (1 << 12) - 1)
		return -1;
	if (!r->known)
		snprintf(r->why, sizeof(r->why), "no heartbeat with a step (procmgr.heartbeat(step)) "
			 "reached procmgr, or too few: useful time and goodput cannot be known");
	return 1;
}

bool pm_gp_sample_due(uint64_t since_first_ms, uint64_t since_written_ms)
{
	return since_written_ms >= (since_first_ms < 60000 ? 1000u : 10000u);
}
