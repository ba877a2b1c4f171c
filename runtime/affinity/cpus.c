/* Each rank's CPUs and memory: the allowed cores of its NUMA node, split
 * among the ranks there, whole cores first; and the plan's explanations. */
#include "plan_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Deal the cores of set among m ranks, contiguous blocks, whole cores
 * first; cpus of one core stay together unless there are fewer cores than
 * ranks. */
static void split_cpus(const struct pm_topo *t, const struct pm_cpuset *set,
		       struct pm_rank_plan *r[], int m)
{
	static int cores[PM_MAX_CPUS], cpus[PM_MAX_CPUS];
	int nc = 0, np = 0;

	for (int c = pm_cpuset_first(set); c >= 0; c = pm_cpuset_next(set, c)) {
		int k = t->cpu_core[c] >= 0 ? t->cpu_core[c] : -1 - c, dup = 0;
		for (int i = 0; i < nc && !dup; i++)
			dup = cores[i] == k;
		if (!dup)
			cores[nc++] = k;
		cpus[np++] = c;
	}
	for (int j = 0; j < m; j++) {
		pm_cpuset_zero(&r[j]->cpus);
		r[j]->shared_cpus = false;
	}
	if (nc >= m) {
		for (int j = 0; j < m; j++) {
			int lo = (int)((long)j * nc / m), hi = (int)((long)(j + 1) * nc / m);
			for (int i = 0; i < np; i++) {
				int c = cpus[i], k = t->cpu_core[c] >= 0 ? t->cpu_core[c] : -1 - c;
				for (int q = lo; q < hi; q++)
					if (cores[q] == k)
						pm_cpuset_set(&r[j]->cpus, c);
			}
			r[j]->ncores = hi - lo;
		}
	} else if (np >= m) {
		for (int j = 0; j < m; j++) {
			int lo = (int)((long)j * np / m), hi = (int)((long)(j + 1) * np / m);
			for (int i = lo; i < hi; i++)
				pm_cpuset_set(&r[j]->cpus, cpus[i]);
			r[j]->ncores = 1;
		}
	} else {
		for (int j = 0; j < m; j++) {
			pm_cpuset_set(&r[j]->cpus, cpus[j % np]);
			r[j]->ncores = 1;
			r[j]->shared_cpus = true;
		}
	}
}

/* Explanations grow by appending; what does not fit is dropped. */
static void vappend(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t off = strlen(buf);

	if (off + 1 < len)
		vsnprintf(buf + off, len - off, fmt, ap);
}

void pm_whyf(struct pm_rank_plan *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(r->why, sizeof(r->why), fmt, ap);
	va_end(ap);
}

void pm_notef(struct pm_plan *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(p->notes, sizeof(p->notes), fmt, ap);
	va_end(ap);
}

/* Give every rank's cpu domain (a NUMA index in dom[]) its share of the
 * allowed cpus of that domain. */
void pm_split_by_domain(const struct pm_topo *t, const struct pm_cpuset *allowed,
			    struct pm_plan *p, const int dom[])
{
	struct pm_rank_plan **grp = calloc((size_t)p->nranks, sizeof(*grp));

	for (int d = 0; d < t->nnuma && grp; d++) {
		struct pm_cpuset set = t->numa[d].cpus;
		int m = 0;
		pm_cpuset_and(&set, allowed);
		for (int r = 0; r < p->nranks; r++)
			if (dom[r] == d)
				grp[m++] = &p->ranks[r];
		if (!m)
			continue;
		split_cpus(t, &set, grp, m);
		for (int j = 0; j < m; j++) {
			char list[128];
			pm_cpuset_format(&grp[j]->cpus, list, sizeof(list));
			grp[j]->numa = t->numa[d].os_index;
			grp[j]->mems = 1ull << t->numa[d].os_index;
			if (grp[j]->shared_cpus)
				pm_whyf(grp[j], "cpus %s: %d ranks share the %d allowed cpus of NUMA node %d; ",
				     list, m, pm_cpuset_count(&set), t->numa[d].os_index);
			else
				pm_whyf(grp[j], "cpus %s: %d of the %d allowed cpus of NUMA node %d, split among its %d rank%s; ",
				     list, pm_cpuset_count(&grp[j]->cpus), pm_cpuset_count(&set),
				     t->numa[d].os_index, m, m == 1 ? "" : "s");
			pm_whyf(grp[j], "memory on NUMA node %d", t->numa[d].os_index);
		}
	}
	free(grp);
}

bool pm_has_allowed(const struct pm_topo *t, const struct pm_cpuset *allowed, int d)
{
	struct pm_cpuset s = t->numa[d].cpus;
	pm_cpuset_and(&s, allowed);
	return pm_cpuset_first(&s) >= 0;
}

/* A NUMA node for the cpus of a rank whose GPU's node has no allowed cpu
 * (or no known node): the same package first, then the least loaded. */
int pm_fallback_domain(const struct pm_topo *t, const struct pm_cpuset *allowed,
			   int want, const int load[])
{
	int best = -1;
	for (int d = 0; d < t->nnuma; d++) {
		bool same, bsame;
		if (!pm_has_allowed(t, allowed, d))
			continue;
		if (best < 0) {
			best = d;
			continue;
		}
		same = want >= 0 && t->numa[d].package == t->numa[want].package;
		bsame = want >= 0 && t->numa[best].package == t->numa[want].package;
		if (same != bsame) {
			if (same)
				best = d;
			continue;
		}
		if (load[d] < load[best])
			best = d;
	}
	return best;
}
