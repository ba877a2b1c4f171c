/* Slow-node detection: the rules are in slow.h. */
#include "slow.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pm_slow_entry {
	unsigned char judged, slow;
	double value;
};

struct pm_slow_node {
	struct pm_slow_entry ring[PM_SLOW_MAX_WINDOW];
	unsigned head; /* next slot */
	enum pm_slow_kind kind;
	int flagged;
};

void pm_slow_cfg_default(struct pm_slow_cfg *c)
{
	c->threshold = 0.2;
	/* With no culprit each of N nodes is last at 1/N of the steps: at
	 * most 1/2 (two nodes). 3/4 over a window is far from that. */
	c->phase_share = 0.75;
	c->window = 6;
	c->need = 5;
	/* Fewer steps than this in an interval make a share too coarse: with
	 * two nodes, 8 of 10 by chance is 5%, and five such intervals in a
	 * row 5e-7. */
	c->min_steps = 10;
	/* A median of 3 steps moves only if 2 of them are off (a pause hits 1
	 * step in 50), and 5 such intervals of 6 are needed: a slow job (a
	 * step every second) is still judged every few seconds. */
	c->min_compute_steps = 3;
}

int pm_slow_cfg_check(const struct pm_slow_cfg *c, char *err, size_t errlen)
{
	if (!(c->threshold > 0 && c->threshold <= 10)) {
		snprintf(err, errlen, "slow threshold %g: must be above 0 and at most 10 (0.2 = 20%% slower)",
			 c->threshold);
		return -1;
	}
	if (!(c->phase_share > 0.5 && c->phase_share <= 1)) {
		snprintf(err, errlen, "slow phase share %g: must be above 0.5 and at most 1",
			 c->phase_share);
		return -1;
	}
	if (c->window < 1 || c->window > PM_SLOW_MAX_WINDOW) {
		snprintf(err, errlen, "slow window %u: must be from 1 to %d intervals", c->window,
			 PM_SLOW_MAX_WINDOW);
		return -1;
	}
	if (c->need < 1 || c->need > c->window) {
		snprintf(err, errlen, "slow evidence %u: must be from 1 to the window (%u)", c->need,
			 c->window);
		return -1;
	}
	if (c->min_steps < 1 || c->min_compute_steps < 1) {
		snprintf(err, errlen, "slow min_steps 0: an interval needs at least 1 step");
		return -1;
	}
	return 0;
}

int pm_slow_init(struct pm_slow *d, const struct pm_slow_cfg *cfg, uint32_t nodes,
		 char *err, size_t errlen)
{
	memset(d, 0, sizeof(*d));
	if (pm_slow_cfg_check(cfg, err, errlen) < 0)
		return -1;
	d->cfg = *cfg;
	d->nodes = nodes;
	d->n = calloc(nodes ? nodes : 1, sizeof(*d->n));
	d->scratch = calloc(nodes > PM_SLOW_MAX_WINDOW ? nodes : PM_SLOW_MAX_WINDOW,
			    sizeof(*d->scratch));
	if (!d->n || !d->scratch) {
		pm_slow_free(d);
		snprintf(err, errlen, "slow-node detector: out of memory for %u nodes", nodes);
		return -1;
	}
	return 0;
}

void pm_slow_free(struct pm_slow *d)
{
	free(d->n);
	free(d->scratch);
	d->n = NULL;
	d->scratch = NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The lower median: with an even count the faster of the two middle
 * values, so that up to half the nodes can be slow and still the
 * reference is a healthy one. */
static double lower_median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(n - 1) / 2];
}

static int usable(const struct pm_slow *d, const struct pm_slow_sample *s,
		  enum pm_slow_kind kind)
{
	if (s->kind != kind ||
	    s->steps < (kind == PM_SLOW_COMPUTE ? d->cfg.min_compute_steps : d->cfg.min_steps))
		return 0;
	return kind != PM_SLOW_COMPUTE || s->compute_ms > 0;
}

static void push(struct pm_slow_node *n, unsigned window, int judged, int slow, double value)
{
	n->ring[n->head] = (struct pm_slow_entry){ (unsigned char)judged, (unsigned char)slow, value };
	n->head = (n->head + 1) % window;
}

void pm_slow_reset_node(struct pm_slow *d, uint32_t node)
{
	if (node < d->nodes)
		memset(&d->n[node], 0, sizeof(d->n[node]));
}

int pm_slow_is_flagged(const struct pm_slow *d, uint32_t node)
{
	return node < d->nodes && d->n[node].flagged;
}

/* Judge one node's window; returns 1 with *v filled on a change. */
static int judge(struct pm_slow *d, uint32_t i, struct pm_slow_verdict *v)
{
	struct pm_slow_node *n = &d->n[i];
	const struct pm_slow_cfg *c = &d->cfg;
	unsigned of = 0, slow = 0;
	double med, flag_at, clear_at;

	for (unsigned k = 0; k < c->window; k++) {
		if (!n->ring[k].judged)
			continue;
		d->scratch[of++] = n->ring[k].value;
		slow += n->ring[k].slow;
	}
	if (of < c->need)
		return 0; /* too little evidence either way: keep the verdict */
	med = lower_median(d->scratch, of);
	if (n->kind == PM_SLOW_COMPUTE) {
		flag_at = 1 + c->threshold;
		clear_at = 1 + c->threshold / 2;
	} else {
		flag_at = c->phase_share;
		clear_at = c->phase_share / 2;
	}
	if (!n->flagged && slow >= c->need && med >= flag_at)
		n->flagged = 1;
	else if (n->flagged && med < clear_at && slow <= c->window - c->need)
		n->flagged = 0;
	else
		return 0;
	*v = (struct pm_slow_verdict){ .node = i,
				       .change = n->flagged ? PM_SLOW_FLAGGED : PM_SLOW_CLEARED,
				       .kind = n->kind,
				       .ratio = med,
				       .slow = slow,
				       .of = of };
	return 1;
}

size_t pm_slow_feed(struct pm_slow *d, const struct pm_slow_sample *s,
		    struct pm_slow_verdict *out, size_t outcap)
{
	size_t ncomp = 0, nphase = 0, nout = 0;
	double median = 0;

	for (uint32_t i = 0; i < d->nodes; i++) {
		if (usable(d, &s[i], PM_SLOW_COMPUTE))
			d->scratch[ncomp++] = s[i].compute_ms;
		nphase += usable(d, &s[i], PM_SLOW_PHASE);
	}
	/* Two values are no majority: their lower median is the faster, and
	 * the slower would be judged slow against its only peer. A job of 3
	 * nodes has two whenever one's summary misses the interval (timers on
	 * different nodes drift; a rank still importing): on the testbed
	 * those intervals alone made a window's median reach 1.5x. */
	if (ncomp >= 3)
		median = lower_median(d->scratch, ncomp);

	for (uint32_t i = 0; i < d->nodes; i++) {
		struct pm_slow_node *n = &d->n[i];
		const struct pm_slow_sample *x = &s[i];
		struct pm_slow_verdict v;
		int judged = 0, slow = 0;
		double value = 0;

		if (median > 0 && usable(d, x, PM_SLOW_COMPUTE)) {
			judged = 1;
			value = x->compute_ms / median;
			slow = value >= 1 + d->cfg.threshold;
		} else if (nphase >= 2 && usable(d, x, PM_SLOW_PHASE)) {
			judged = 1;
			value = (double)x->last / x->steps;
			slow = value >= d->cfg.phase_share;
		}
		if (judged && n->kind != x->kind) {
			/* Evidence of another kind is not comparable with the
			 * window's: start over, keeping the verdict. */
			int flagged = n->flagged;
			memset(n, 0, sizeof(*n));
			n->flagged = flagged;
			n->kind = x->kind;
		}
		push(n, d->cfg.window, judged, slow, value);
		if (judge(d, i, &v) && nout < outcap)
			out[nout++] = v;
	}
	return nout;
}

void pm_slow_describe(const struct pm_slow_verdict *v, char *buf, size_t len)
{
	const char *what = v->change == PM_SLOW_FLAGGED ? "is slow" : "is no longer slow";

	if (v->kind == PM_SLOW_COMPUTE)
		snprintf(buf, len,
			 "node %u %s: its compute time per step %.2fx the job's median "
			 "(median over the window; slow in %u of %u intervals; evidence: compute time)",
			 v->node, what, v->ratio, v->slow, v->of);
	else
		snprintf(buf, len,
			 "node %u %s: last to reach %.0f%% of the steps "
			 "(median over the window; in %u of %u intervals; evidence: heartbeat phase, weaker than compute time)",
			 v->node, what, v->ratio * 100, v->slow, v->of);
}

void pm_slow_arrival_init(struct pm_slow_arrival *a, uint64_t step, uint32_t node,
			  uint64_t at_ms)
{
	*a = (struct pm_slow_arrival){ .step = step, .last_ms = at_ms, .last_node = node };
}

void pm_slow_arrival_merge(struct pm_slow_arrival *a, const struct pm_slow_arrival *b)
{
	if (!b->last_ms)
		return;
	if (b->last_ms > a->last_ms) {
		uint64_t second = a->last_ms > b->second_ms ? a->last_ms : b->second_ms;
		a->last_ms = b->last_ms;
		a->last_node = b->last_node;
		a->second_ms = second;
	} else if (b->last_ms > a->second_ms) {
		a->second_ms = b->last_ms;
	}
}

long pm_slow_arrival_culprit(const struct pm_slow_arrival *a, unsigned resolution_ms)
{
	if (!a->last_ms || !a->second_ms || a->last_ms - a->second_ms <= resolution_ms)
		return -1;
	return a->last_node;
}
