/* The slow-node detector's inputs: the rules are in slowsum.h. */
#include "slowsum.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pm_rank_step_format(char *buf, size_t len, uint64_t step, uint64_t at_ms, double compute_ms)
{
	int n = snprintf(buf, len, "%llu %llu %.3f", (unsigned long long)step,
			 (unsigned long long)at_ms, compute_ms);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_rank_step_parse(const char *text, uint64_t *step, uint64_t *at_ms, double *compute_ms)
{
	unsigned long long s, a;
	double c;
	int end = 0;

	if (sscanf(text, "%llu %llu %lf%n", &s, &a, &c, &end) != 3 || text[end])
		return -1;
	*step = s;
	*at_ms = a;
	*compute_ms = c;
	return 0;
}

int pm_beat_parse(const char *text, uint64_t *step, double *compute_ms)
{
	char *end;
	unsigned long long v;
	double c = -1;

	while (*text == ' ' || *text == '\t')
		text++;
	if (!isdigit((unsigned char)*text))
		return -1;
	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno)
		return -1;
	while (*end == ' ' || *end == '\t')
		end++;
	if (isdigit((unsigned char)*end) || *end == '.') {
		const char *p = end;
		c = strtod(p, &end);
		if (end == p || !(c >= 0 && c < 1e9))
			return -1;
		while (*end == ' ' || *end == '\t')
			end++;
	}
	if (*end == '\n')
		end++;
	if (*end)
		return -1;
	*step = v;
	*compute_ms = c;
	return 0;
}

/* ---- a node ---- */

int pm_slownode_init(struct pm_slownode *n, uint32_t node, unsigned nlocal)
{
	memset(n, 0, sizeof(*n));
	n->node = node;
	n->nlocal = nlocal;
	n->rank_step = calloc(nlocal ? nlocal : 1, sizeof(*n->rank_step));
	return n->rank_step ? 0 : -1;
}

void pm_slownode_free(struct pm_slownode *n)
{
	free(n->rank_step);
	free(n->lines);
	n->rank_step = NULL;
	n->lines = NULL;
}

void pm_slownode_reset(struct pm_slownode *n)
{
	memset(n->rank_step, 0, (n->nlocal ? n->nlocal : 1) * sizeof(*n->rank_step));
	memset(n->pend, 0, sizeof(n->pend));
	n->nsamples = 0;
	n->nrecs = 0;
	n->nlines = 0;
}

/* Merge one record into the interval's, by step. */
static void put_rec(struct pm_slownode *n, const struct pm_slowsum_rec *x)
{
	for (unsigned i = 0; i < n->nrecs; i++) {
		if (n->recs[i].a.step == x->a.step) {
			pm_slow_arrival_merge(&n->recs[i].a, &x->a);
			n->recs[i].nodes += x->nodes;
			return;
		}
	}
	if (n->nrecs == PM_SLOWSUM_RECS) {
		n->dropped++;
		return;
	}
	n->recs[n->nrecs++] = *x;
}

void pm_slownode_beat(struct pm_slownode *n, unsigned lrank, uint64_t step, uint64_t at_ms,
		      double compute_ms)
{
	struct pm_slownode_step *p = NULL, *oldest = NULL;

	if (lrank >= n->nlocal || step + 1 <= n->rank_step[lrank])
		return;
	n->rank_step[lrank] = step + 1;
	if (compute_ms >= 0 && n->nsamples < PM_SLOWSUM_SAMPLES)
		n->samples[n->nsamples++] = compute_ms;
	for (unsigned i = 0; i < PM_SLOWSUM_PENDING; i++) {
		struct pm_slownode_step *q = &n->pend[i];
		if (q->used && q->step == step) {
			p = q;
			break;
		}
		if (!q->used) {
			if (!oldest || oldest->used)
				oldest = q;
		} else if (!oldest || (oldest->used && q->step < oldest->step)) {
			oldest = q;
		}
	}
	if (!p) {
		/* A rank that skips steps leaves its entries incomplete: the
		 * oldest gives way. */
		p = oldest;
		*p = (struct pm_slownode_step){ .step = step, .used = true };
	}
	p->arrived++;
	if (at_ms > p->max_ms)
		p->max_ms = at_ms;
	if (p->arrived >= n->nlocal) {
		struct pm_slowsum_rec r = { .nodes = 1 };
		pm_slow_arrival_init(&r.a, step, n->node, p->max_ms);
		put_rec(n, &r);
		p->used = false;
	}
}

static int put_line(struct pm_slownode *n, const struct pm_slowsum_line *l)
{
	if (n->nlines == n->lines_cap) {
		unsigned cap = n->lines_cap ? 2 * n->lines_cap : 8;
		struct pm_slowsum_line *x = realloc(n->lines, cap * sizeof(*x));
		if (!x)
			return -1;
		n->lines = x;
		n->lines_cap = cap;
	}
	n->lines[n->nlines++] = *l;
	return 0;
}

/* One summary text: "c NODE STEPS COMPUTE_MS" and "s STEP LAST_MS
 * SECOND_MS LAST_NODE NODES" lines. Calls the given functions per line. */
static int parse_text(const char *text, void *arg,
		      int (*line)(void *arg, const struct pm_slowsum_line *l),
		      void (*rec)(void *arg, const struct pm_slowsum_rec *r), char *err,
		      size_t errlen)
{
	const char *p = text;
	unsigned no = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char buf[160], extra;
		no++;
		if (len >= sizeof(buf))
			goto bad;
		memcpy(buf, p, len);
		buf[len] = '\0';
		if (buf[0] == 'c') {
			struct pm_slowsum_line l;
			if (sscanf(buf, "c %" SCNu32 " %" SCNu32 " %lf %c", &l.node, &l.steps,
				   &l.compute_ms, &extra) != 3 || !(l.compute_ms >= 0))
				goto bad;
			if (line(arg, &l) < 0) {
				snprintf(err, errlen, "slow summary: out of memory");
				return -1;
			}
		} else if (buf[0] == 's') {
			struct pm_slowsum_rec r;
			if (sscanf(buf, "s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu32 " %" SCNu32 " %c",
				   &r.a.step, &r.a.last_ms, &r.a.second_ms, &r.a.last_node, &r.nodes,
				   &extra) != 5 || !r.nodes)
				goto bad;
			rec(arg, &r);
		} else if (len) {
			goto bad;
		}
		p += len + (nl != NULL);
	}
	return 0;
bad:
	snprintf(err, errlen, "slow summary: line %u is not 'c NODE STEPS MS' or "
		 "'s STEP LAST SECOND NODE COUNT'", no);
	return -1;
}

static int node_line(void *arg, const struct pm_slowsum_line *l)
{
	return put_line(arg, l);
}

static void node_rec(void *arg, const struct pm_slowsum_rec *r)
{
	put_rec(arg, r);
}

int pm_slownode_merge(struct pm_slownode *n, const char *text, char *err, size_t errlen)
{
	return parse_text(text, n, node_line, node_rec, err, errlen);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void pm_slownode_flush(struct pm_slownode *n, size_t maxlen,
		       void (*emit)(void *arg, const char *text), void *arg)
{
	char buf[8192];
	size_t off = 0;

	if (maxlen > sizeof(buf))
		maxlen = sizeof(buf);
	if (n->nsamples) {
		struct pm_slowsum_line own = { .node = n->node };
		qsort(n->samples, n->nsamples, sizeof(double), cmp_double);
		own.compute_ms = n->samples[(n->nsamples - 1) / 2];
		own.steps = n->nlocal ? n->nsamples / n->nlocal : n->nsamples;
		put_line(n, &own); /* out of memory: this interval without it */
	}
	for (unsigned i = 0; i < n->nlines + n->nrecs; i++) {
		char line[160];
		int len;
		if (i < n->nlines) {
			const struct pm_slowsum_line *l = &n->lines[i];
			len = snprintf(line, sizeof(line), "c %" PRIu32 " %" PRIu32 " %.3f\n", l->node,
				       l->steps, l->compute_ms);
		} else {
			const struct pm_slowsum_rec *r = &n->recs[i - n->nlines];
			len = snprintf(line, sizeof(line),
				       "s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu32 " %" PRIu32 "\n",
				       r->a.step, r->a.last_ms, r->a.second_ms, r->a.last_node,
				       r->nodes);
		}
		if (off + (size_t)len >= maxlen && off) {
			emit(arg, buf);
			off = 0;
		}
		memcpy(buf + off, line, (size_t)len + 1);
		off += (size_t)len;
	}
	if (off)
		emit(arg, buf);
	n->nsamples = 0;
	n->nrecs = 0;
	n->nlines = 0;
}

/* ---- the root ---- */

int pm_slowroot_init(struct pm_slowroot *r, const struct pm_slow_cfg *cfg, uint32_t nodes,
		     char *err, size_t errlen)
{
	memset(r, 0, sizeof(*r));
	if (pm_slow_init(&r->det, cfg, nodes, err, errlen) < 0)
		return -1;
	r->nodes = nodes;
	r->resolution_ms = PM_SLOW_RESOLUTION_MS;
	r->pend = calloc(PM_SLOWROOT_PENDING, sizeof(*r->pend));
	r->n = calloc(nodes ? nodes : 1, sizeof(*r->n));
	r->samples = calloc(nodes ? nodes : 1, sizeof(*r->samples));
	if (!r->pend || !r->n || !r->samples) {
		pm_slowroot_free(r);
		snprintf(err, errlen, "slow-node detector: out of memory for %u nodes", nodes);
		return -1;
	}
	return 0;
}

void pm_slowroot_free(struct pm_slowroot *r)
{
	pm_slow_free(&r->det);
	free(r->pend);
	free(r->n);
	free(r->samples);
	r->pend = NULL;
	r->n = NULL;
	r->samples = NULL;
}

void pm_slowroot_reset(struct pm_slowroot *r)
{
	memset(r->pend, 0, PM_SLOWROOT_PENDING * sizeof(*r->pend));
}

struct root_add {
	struct pm_slowroot *r;
	uint32_t expected;
};

static int root_line(void *arg, const struct pm_slowsum_line *l)
{
	struct pm_slowroot *r = ((struct root_add *)arg)->r;

	if (l->node < r->nodes && l->compute_ms > 0) {
		r->n[l->node].compute_ms = l->compute_ms;
		r->n[l->node].compute_steps = l->steps;
		r->n[l->node].compute_seen = true;
	}
	return 0;
}

static void root_rec(void *arg, const struct pm_slowsum_rec *x)
{
	struct root_add *ra = arg;
	struct pm_slowroot *r = ra->r;
	struct pm_slowroot_step *p = &r->pend[x->a.step % PM_SLOWROOT_PENDING];
	long culprit;

	if (!p->used || p->r.a.step != x->a.step) {
		/* A step this far behind the newest is not coming whole. */
		*p = (struct pm_slowroot_step){ .r = *x, .used = true };
	} else {
		pm_slow_arrival_merge(&p->r.a, &x->a);
		p->r.nodes += x->nodes;
	}
	if (p->r.nodes < ra->expected)
		return;
	p->used = false;
	r->steps++;
	culprit = pm_slow_arrival_culprit(&p->r.a, r->resolution_ms);
	if (culprit >= 0 && (uint32_t)culprit < r->nodes)
		r->n[culprit].last++;
}

int pm_slowroot_add(struct pm_slowroot *r, const char *text, uint32_t expected,
		    char *err, size_t errlen)
{
	struct root_add ra = { r, expected ? expected : 1 };
	return parse_text(text, &ra, root_line, root_rec, err, errlen);
}

size_t pm_slowroot_tick(struct pm_slowroot *r, const bool *active,
			struct pm_slow_verdict *out, size_t outcap)
{
	size_t nv;

	for (uint32_t i = 0; i < r->nodes; i++) {
		struct pm_slowroot_node *x = &r->n[i];
		struct pm_slow_sample *s = &r->samples[i];
		*s = (struct pm_slow_sample){ .kind = PM_SLOW_NONE };
		if (!active[i])
			;
		else if (x->compute_ms > 0)
			*s = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE,
						      .compute_ms = x->compute_ms,
						      .steps = x->compute_steps };
		else if (x->compute_seen)
			; /* its summary did not come this interval: no data, not
			   * evidence of another kind (which would start its window over) */
		else if (r->steps)
			*s = (struct pm_slow_sample){ .kind = PM_SLOW_PHASE,
						      .steps = r->steps,
						      .last = x->last };
		x->compute_ms = 0;
		x->compute_steps = 0;
		x->last = 0;
	}
	r->steps = 0;
	r->intervals++;
	nv = pm_slow_feed(&r->det, r->samples, out, outcap);
	for (size_t k = 0; k < nv; k++) {
		if (out[k].node < r->nodes) {
			r->n[out[k].node].v = out[k];
			r->n[out[k].node].judged = true;
		}
	}
	return nv;
}

void pm_slowroot_reset_node(struct pm_slowroot *r, uint32_t node)
{
	if (node >= r->nodes)
		return;
	pm_slow_reset_node(&r->det, node);
	memset(&r->n[node], 0, sizeof(r->n[node]));
}

int pm_slowevict_arm(struct pm_slowevict *e, uint32_t node, uint64_t step)
{
	if (e->armed)
		return -1;
	*e = (struct pm_slowevict){ .armed = true, .node = node, .step = step };
	return 0;
}

static long fire(struct pm_slowevict *e)
{
	long node = e->node;

	pm_slowevict_cancel(e);
	return node;
}

long pm_slowevict_step(struct pm_slowevict *e, uint64_t step)
{
	return e->armed && step > e->step ? fire(e) : -1;
}

long pm_slowevict_tick(struct pm_slowevict *e)
{
	if (!e->armed)
		return -1;
	return ++e->ticks >= 2 ? fire(e) : -1;
}

void pm_slowevict_cancel(struct pm_slowevict *e)
{
	*e = (struct pm_slowevict){ 0 };
}

unsigned pm_slow_phase_delay(uint64_t now_ms, unsigned interval_ms, unsigned offset_ms)
{
	uint64_t at;

	if (!interval_ms)
		return 0;
	offset_ms %= interval_ms;
	at = now_ms % interval_ms;
	return (unsigned)(at < offset_ms ? offset_ms - at : interval_ms - (at - offset_ms));
}
