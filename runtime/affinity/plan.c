/* The binding planner's entry: one kind of GPU per step, then the GPU plan
 * (gpus.c) or, with no GPU, ranks spread over NUMA nodes. Pure: no hwloc,
 * no system call (see docs/affinity.md for the rules). */
#include "plan_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *vendor_name(enum pm_vendor v)
{
	switch (v) {
	case PM_VENDOR_NVIDIA: return "NVIDIA";
	case PM_VENDOR_AMD: return "AMD";
	case PM_VENDOR_INTEL: return "Intel";
	default: return "other";
	}
}

/* NUMA nodes in package order. */
static int cmp_numa_place(const void *x, const void *y, void *topo)
{
	const struct pm_topo *t = topo;
	int a = *(const int *)x, b = *(const int *)y;
	int pa = t->numa[a].package, pb = t->numa[b].package;
	if (pa != pb)
		return pa < pb ? -1 : 1;
	return a - b;
}

/* No GPU: ranks go to NUMA nodes in blocks, in package order. With fewer
 * ranks than NUMA nodes each rank gets a block of whole NUMA nodes. */
static void plan_numa(const struct pm_topo *t, const struct pm_cpuset *allowed,
		      struct pm_plan *p)
{
	int R = p->nranks, N = 0, D[PM_MAX_NUMA], *dom;
	enum pm_nic_kind kind = pm_nic_kind_preferred(t);

	for (int d = 0; d < t->nnuma; d++)
		if (pm_has_allowed(t, allowed, d))
			D[N++] = d;
	qsort_r(D, (size_t)N, sizeof(*D), cmp_numa_place, (void *)t);
	if (R >= N) {
		dom = calloc((size_t)R, sizeof(int));
		if (!dom)
			return;
		for (int r = 0; r < R; r++) {
			dom[r] = D[(long)r * N / R];
			pm_whyf(&p->ranks[r], "no GPU: %d rank%s over %d NUMA node%s with allowed cpus; ",
			     R, R == 1 ? "" : "s", N, N == 1 ? "" : "s");
		}
		pm_split_by_domain(t, allowed, p, dom);
		free(dom);
	} else {
		for (int r = 0; r < R; r++) {
			struct pm_rank_plan *rp = &p->ranks[r];
			int lo = (int)((long)r * N / R), hi = (int)((long)(r + 1) * N / R);
			char list[128], mems[64];
			pm_cpuset_zero(&rp->cpus);
			rp->mems = 0;
			rp->numa = t->numa[D[lo]].os_index;
			for (int i = lo; i < hi; i++) {
				struct pm_cpuset s = t->numa[D[i]].cpus;
				pm_cpuset_and(&s, allowed);
				pm_cpuset_or(&rp->cpus, &s);
				rp->mems |= 1ull << t->numa[D[i]].os_index;
			}
			/* count whole cores */
			rp->ncores = 0;
			for (int c = pm_cpuset_first(&rp->cpus); c >= 0; c = pm_cpuset_next(&rp->cpus, c)) {
				int first = 1;
				for (int e = pm_cpuset_first(&rp->cpus); e >= 0 && e < c; e = pm_cpuset_next(&rp->cpus, e))
					if (t->cpu_core[e] >= 0 && t->cpu_core[e] == t->cpu_core[c])
						first = 0;
				rp->ncores += first;
			}
			pm_cpuset_format(&rp->cpus, list, sizeof(list));
			pm_nodemask_format(rp->mems, mems, sizeof(mems));
			pm_whyf(rp, "no GPU: %d rank%s over %d NUMA nodes, so this rank gets whole NUMA node%s %s; cpus %s; memory on NUMA node%s %s",
			     R, R == 1 ? "" : "s", N, hi - lo == 1 ? "" : "s", mems, list,
			     hi - lo == 1 ? "" : "s", mems);
		}
	}
	/* NICs: those on the rank's NUMA nodes. */
	for (int r = 0; r < R; r++) {
		struct pm_rank_plan *rp = &p->ranks[r];
		for (int n = 0; n < t->nnics; n++) {
			const struct pm_nic *nic = &t->nics[n];
			if (nic->kind == kind && nic->numa >= 0 &&
			    ((rp->mems >> t->numa[nic->numa].os_index) & 1))
				rp->nics[rp->nnics++] = n;
		}
	}
}

int pm_plan_compute(const struct pm_topo *t, const struct pm_alloc *a,
		    struct pm_plan *p, char *err, size_t errlen)
{
	struct pm_cpuset allowed = a->cpus;
	int count[4] = { 0 }, u[PM_MAX_GPUS], G = 0;
	enum pm_vendor v = PM_VENDOR_OTHER;

	memset(p, 0, sizeof(*p));
	if (a->ntasks < 1 || a->ntasks > PM_MAX_CPUS) {
		snprintf(err, errlen, "number of local tasks %d is out of range (1 to %d)",
			 a->ntasks, PM_MAX_CPUS);
		return -1;
	}
	pm_cpuset_and(&allowed, &t->cpus);
	if (pm_cpuset_first(&allowed) < 0) {
		char al[128], all[128];
		pm_cpuset_format(&a->cpus, al, sizeof(al));
		pm_cpuset_format(&t->cpus, all, sizeof(all));
		snprintf(err, errlen, "none of the allowed cpus '%s' is a cpu of this node (%s)",
			 al, all);
		return -1;
	}
	p->ranks = calloc((size_t)a->ntasks, sizeof(*p->ranks));
	if (!p->ranks) {
		snprintf(err, errlen, "cannot allocate a plan for %d tasks: %s",
			 a->ntasks, strerror(errno));
		return -1;
	}
	p->nranks = a->ntasks;
	for (int r = 0; r < p->nranks; r++)
		p->ranks[r].numa = -1;

	/* One kind of accelerator per step: the vendor with the most usable
	 * GPUs, so that a display card never becomes a rank's GPU. GPUs of
	 * unknown vendors have no runtime variable to hand them over with. */
	for (int g = 0; g < t->ngpus; g++)
		if (a->gpus_all || a->gpu_ok[g])
			count[t->gpus[g].vendor]++;
	for (int i = PM_VENDOR_NVIDIA, most = 0; i <= PM_VENDOR_INTEL; i++)
		if (count[i] > most) {
			most = count[i];
			v = (enum pm_vendor)i;
		}
	if (v != PM_VENDOR_OTHER)
		for (int g = 0; g < t->ngpus; g++)
			if ((a->gpus_all || a->gpu_ok[g]) && t->gpus[g].vendor == v)
				u[G++] = g;
	for (int i = PM_VENDOR_OTHER; i <= PM_VENDOR_INTEL; i++)
		if (count[i] && (enum pm_vendor)i != v)
			pm_notef(p, "%d %s GPU%s ignored: %s. ", count[i],
			      vendor_name((enum pm_vendor)i), count[i] == 1 ? "" : "s",
			      v == PM_VENDOR_OTHER ? "no supported GPU runtime" : "the step uses the node's GPUs of the most common vendor");

	if (G) {
		p->vendor = v;
		pm_plan_gpus(t, &allowed, p, u, G);
	} else {
		p->vendor = PM_VENDOR_OTHER;
		plan_numa(t, &allowed, p);
	}
	for (int r = 0; r < p->nranks; r++) {
		if (pm_cpuset_first(&p->ranks[r].cpus) < 0) {
			snprintf(err, errlen, "no cpu could be planned for local rank %d (out of memory?)", r);
			pm_plan_release(p);
			return -1;
		}
	}
	return 0;
}

void pm_plan_release(struct pm_plan *p)
{
	free(p->ranks);
	p->ranks = NULL;
	p->nranks = 0;
}
