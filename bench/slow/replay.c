/* The root's per-interval samples recorded on the testbed
 * (bench/slow-testbed's slow-testbed-intervals.txt: --procmgr-verbose's
 * "slow interval" lines, one run after another) replayed through the
 * detector (common/slow.c) with other thresholds, windows and evidence:
 * for each setting, the runs with nothing slowed that it would have
 * flagged, and for each slowed run whether and how many intervals after
 * the slowdown it flags the slowed node (or another).
 *
 *   replay [-i INTERVAL_S] [-t "20 30 40"] [-w "6/5 8/6"] [-s PREFIX] FILE
 *
 * -m: instead, the margins: each run's highest window median of a node
 * not slowed and the slowed node's (the first -w setting).
 * -s: only the slowed runs whose tag starts with PREFIX (detect-1.5-: one
 * factor's).
 *
 * A run's lines start with its tag: fp-K and evict-unslowed-K are runs with
 * nothing slowed, detect-F-K and evict-slowed-K/evict-evicted-K runs where
 * node index 1 is slowed from the interval its "TAG throttle N" line names
 * (the evicted runs' samples after the eviction are not replayed: the
 * spare's history starts there). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/slow.h"

#define MAX_NODES 16
#define MAX_IVL 4096
#define MAX_RUNS 512

struct run {
	char tag[64];
	unsigned n, nodes, throttle; /* throttle: 0 none, else interval (1-based) */
	struct pm_slow_sample (*s)[MAX_NODES];
};

static struct run runs[MAX_RUNS];
static unsigned nruns;

static struct run *run_of(const char *tag)
{
	for (unsigned i = 0; i < nruns; i++)
		if (!strcmp(runs[i].tag, tag))
			return &runs[i];
	if (nruns == MAX_RUNS)
		return NULL;
	struct run *r = &runs[nruns++];
	snprintf(r->tag, sizeof(r->tag), "%s", tag);
	r->s = calloc(MAX_IVL, sizeof(*r->s));
	return r->s ? r : NULL;
}

static int parse(FILE *f)
{
	char line[4096], tag[64];

	while (fgets(line, sizeof(line), f)) {
		char *p, *tok, *save = NULL;
		unsigned k = 0, at;
		struct run *r;

		if (sscanf(line, "%63s throttle %u", tag, &at) == 2) {
			if ((r = run_of(tag)))
				r->throttle = at;
			continue;
		}
		if (sscanf(line, "%63s", tag) != 1 || !(p = strchr(line, ':')) || !(r = run_of(tag)))
			continue;
		if (r->n == MAX_IVL)
			continue;
		for (tok = strtok_r(p + 1, " \n", &save); tok && k < MAX_NODES;
		     tok = strtok_r(NULL, " \n", &save), k++) {
			struct pm_slow_sample *x = &r->s[r->n][k];
			char *eq = strchr(tok, '='), kind;
			double v;
			unsigned steps;
			if (!eq || sscanf(eq + 1, "%c:%lf/%u", &kind, &v, &steps) != 3)
				return -1;
			if (kind == 'c')
				*x = (struct pm_slow_sample){ .kind = PM_SLOW_COMPUTE, .compute_ms = v,
							      .steps = steps };
			else if (kind == 'p')
				*x = (struct pm_slow_sample){ .kind = PM_SLOW_PHASE, .steps = steps,
							      .last = (unsigned)(v * steps + 0.5) };
		}
		if (k > r->nodes)
			r->nodes = k;
		r->n++;
	}
	return 0;
}

static const char *only = "";

static int slowed(const struct run *r)
{
	return !strncmp(r->tag, "detect-", 7) || !strncmp(r->tag, "evict-slowed-", 13) ||
	       !strncmp(r->tag, "evict-evicted-", 14);
}

/* The first interval (1-based) at which node `node` (or, node < 0, any) is
 * flagged, 0 none; *other: another node flagged first. */
static unsigned replay(const struct run *r, const struct pm_slow_cfg *cfg, int node, int *other)
{
	struct pm_slow d;
	struct pm_slow_verdict v[MAX_NODES];
	char err[160];
	unsigned hit = 0;

	*other = 0;
	if (pm_slow_init(&d, cfg, r->nodes, err, sizeof(err)))
		return 0;
	for (unsigned i = 0; i < r->n && !hit; i++) {
		size_t nv = pm_slow_feed(&d, r->s[i], v, MAX_NODES);
		for (size_t k = 0; k < nv; k++) {
			if (v[k].change != PM_SLOW_FLAGGED)
				continue;
			if (node < 0 || (int)v[k].node == node)
				hit = i + 1;
			else
				*other = 1;
		}
	}
	pm_slow_free(&d);
	return hit;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The lower median of the n values in v (sorted in place). */
static double lmed(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return v[(n - 1) / 2];
}

/* The window's median of each node's ratio to the interval's median (what
 * pm_slow compares with 1 + threshold), per run: the highest an unslowed
 * node reached, and for a slowed run node 2's highest within 60 s of the
 * slowdown and its median ratio per interval after it. The margin a
 * threshold has. */
static void margins(unsigned win, unsigned need, double ivl_s)
{
	double worst = 0;
	unsigned windows = 0;

	printf("window medians (%u of %u intervals): the highest of a node not slowed; node 2's\n", need, win);
	for (unsigned i = 0; i < nruns; i++) {
		const struct run *r = &runs[i];
		static double ratio[MAX_IVL][MAX_NODES];
		static unsigned char has[MAX_IVL][MAX_NODES];
		double hi_other = 0, hi2 = 0, after[MAX_IVL];
		unsigned nafter = 0;

		for (unsigned t = 0; t < r->n; t++) {
			double v[MAX_NODES], med;
			unsigned n = 0;
			for (unsigned k = 0; k < r->nodes; k++)
				if (r->s[t][k].kind == PM_SLOW_COMPUTE && r->s[t][k].steps >= 3)
					v[n++] = r->s[t][k].compute_ms;
			med = n >= 3 ? lmed(v, n) : 0; /* as pm_slow_feed */
			for (unsigned k = 0; k < r->nodes; k++) {
				has[t][k] = med > 0 && r->s[t][k].kind == PM_SLOW_COMPUTE && r->s[t][k].steps >= 3;
				ratio[t][k] = has[t][k] ? r->s[t][k].compute_ms / med : 0;
			}
			if (slowed(r) && r->throttle && t >= r->throttle && has[t][1])
				after[nafter++] = ratio[t][1];
		}
		for (unsigned t = 0; t < r->n; t++) {
			for (unsigned k = 0; k < r->nodes; k++) {
				double v[PM_SLOW_MAX_WINDOW], m;
				unsigned n = 0;
				for (unsigned j = t + 1 >= win ? t + 1 - win : 0; j <= t; j++)
					if (has[j][k])
						v[n++] = ratio[j][k];
				if (n < need)
					continue;
				m = lmed(v, n);
				if (slowed(r) && k == 1 && r->throttle) {
					if (t >= r->throttle && (t - r->throttle + 1) * ivl_s <= 60 && m > hi2)
						hi2 = m;
					if (t >= r->throttle)
						continue;
				}
				windows++;
				if (m > hi_other)
					hi_other = m;
			}
		}
		if (hi_other > worst)
			worst = hi_other;
		if (slowed(r) && r->throttle)
			printf("  %-20s not slowed %.2f; node 2 within 60 s %.2f, per interval after: median %.2f\n",
			       r->tag, hi_other, hi2, nafter ? lmed(after, nafter) : 0);
		else
			printf("  %-20s not slowed %.2f\n", r->tag, hi_other);
	}
	printf("highest of a node not slowed, over %u windows of %u runs: %.2f\n", windows, nruns, worst);
}

static int cmp_u(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *thr = "20 30 40 50", *wins = "6/5 6/4 8/6 10/8";
	double ivl_s = 5;
	int opt;
	FILE *f;

	int show_margins = 0;

	while ((opt = getopt(argc, argv, "i:t:w:s:m")) != -1) {
		if (opt == 'i')
			ivl_s = atof(optarg);
		else if (opt == 't')
			thr = optarg;
		else if (opt == 'w')
			wins = optarg;
		else if (opt == 's')
			only = optarg;
		else if (opt == 'm')
			show_margins = 1;
		else
			return 2;
	}
	if (optind != argc - 1 || !(f = fopen(argv[optind], "r"))) {
		fprintf(stderr, "usage: replay [-m] [-i INTERVAL_S] [-t \"20 30\"] [-w \"6/5 8/6\"] [-s PREFIX] FILE\n");
		return 2;
	}
	if (parse(f)) {
		fprintf(stderr, "replay: %s: a sample is not NAME=K:VALUE/STEPS\n", argv[optind]);
		return 1;
	}
	fclose(f);
	if (show_margins) {
		unsigned win = 6, need = 5;
		sscanf(wins, " %u/%u", &win, &need);
		margins(win, need, ivl_s);
		return 0;
	}
	printf("%-9s %-7s %-12s %s\n", "threshold", "window", "unslowed", "slowed: runs flagged (node 2), "
	       "intervals after the slowdown (median, max; x interval = s), wrong node");
	for (const char *t = thr; *t;) {
		char *e;
		double pct = strtod(t, &e);
		if (e == t)
			break;
		t = e;
		for (const char *w = wins; *w;) {
			unsigned win, need;
			int used;
			struct pm_slow_cfg cfg;
			unsigned fp = 0, nfp = 0, times[MAX_RUNS], nt = 0, nslow = 0, wrong = 0;
			char spec[32];

			if (sscanf(w, " %u/%u%n", &win, &need, &used) != 2)
				break;
			w += used;
			pm_slow_cfg_default(&cfg);
			cfg.threshold = pct / 100;
			cfg.window = win;
			cfg.need = need;
			for (unsigned i = 0; i < nruns; i++) {
				const struct run *r = &runs[i];
				int other;
				if (!slowed(r)) {
					nfp++;
					fp += replay(r, &cfg, -1, &other) > 0;
					continue;
				}
				if (!r->throttle || strncmp(r->tag, only, strlen(only)))
					continue;
				nslow++;
				unsigned at = replay(r, &cfg, 1, &other);
				wrong += other;
				if (at > r->throttle)
					times[nt++] = at - r->throttle;
				else if (at)
					wrong++; /* flagged before it was slowed */
			}
			qsort(times, nt, sizeof(times[0]), cmp_u);
			snprintf(spec, sizeof(spec), "%u/%u", need, win);
			printf("%8.0f%% %-7s %3u of %-5u %3u of %-3u median %.0f s max %.0f s, wrong %u\n", pct, spec,
			       fp, nfp, nt, nslow, nt ? times[nt / 2] * ivl_s : -1,
			       nt ? times[nt - 1] * ivl_s : -1, wrong);
		}
	}
	return 0;
}
