/* The GPU plan: which GPUs each rank gets, then its NICs and the NUMA node
 * its CPUs come from. Pure. */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Order GPUs so that neighbours in the list are neighbours in the machine:
 * package, NUMA node, PCI tree, bus id. */
static int cmp_gpu_place(const void *x, const void *y, void *topo)
{
	const struct pm_topo *t = topo;
	const struct pm_gpu *a = &t->gpus[*(const int *)x];
	const struct pm_gpu *b = &t->gpus[*(const int *)y];
	int pa = pm_numa_package(t, a->numa), pb = pm_numa_package(t, b->numa);
	int c;

	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (a->numa != b->numa)
		return (unsigned)a->numa < (unsigned)b->numa ? -1 : 1;
	c = pm_path_cmp(&a->pci, &b->pci);
	return c ? c : strcmp(a->busid, b->busid);
}

typedef char pm_reason[160];

/* The sorted GPUs in runs of one NUMA node each. */
struct gpu_domains {
	int n;
	int start[PM_MAX_GPUS], len[PM_MAX_GPUS];
};

static void group_by_numa(const struct pm_topo *t, const int *u, int G, struct gpu_domains *d)
{
	d->n = 0;
	for (int i = 0; i < G; i++) {
		if (!i || t->gpus[u[i]].numa != t->gpus[u[i - 1]].numa) {
			d->start[d->n] = i;
			d->len[d->n++] = 0;
		}
		d->len[d->n - 1]++;
	}
}

/* How many of the R ranks (k GPUs each) each domain hosts: always the
 * package with the fewest ranks, then the NUMA node with the fewest, then
 * the roomiest. */
static void place_ranks(const struct pm_topo *t, const int *u, const struct gpu_domains *d,
			int k, int R, int nrk[])
{
	int pkgrk[PM_NPKGSLOT] = { 0 };

	for (int r = 0; r < R; r++) {
		int best = -1;
		for (int i = 0; i < d->n; i++) {
			int pk, bpk;
			if (nrk[i] >= d->len[i] / k)
				continue;
			if (best < 0) {
				best = i;
				continue;
			}
			pk = pkgrk[pm_pkg_slot(t, t->gpus[u[d->start[i]]].numa)];
			bpk = pkgrk[pm_pkg_slot(t, t->gpus[u[d->start[best]]].numa)];
			if (pk < bpk || (pk == bpk && (nrk[i] < nrk[best] ||
			    (nrk[i] == nrk[best] && d->len[i] / k - nrk[i] >
			     d->len[best] / k - nrk[best]))))
				best = i;
		}
		nrk[best]++;
		pkgrk[pm_pkg_slot(t, t->gpus[u[d->start[best]]].numa)]++;
	}
}

/* At least one GPU per rank: floor(G/R) each, kept within NUMA nodes when
 * the GPUs split that way. */
static void assign_whole(const struct pm_topo *t, struct pm_plan *p, const int *u, int G,
			 pm_reason reason[])
{
	int R = p->nranks, k = G / R, cap = 0, nrk[PM_MAX_GPUS] = { 0 };
	struct gpu_domains d;

	group_by_numa(t, u, G, &d);
	for (int i = 0; i < d.n; i++)
		cap += d.len[i] / k;
	if (cap >= R) {
		place_ranks(t, u, &d, k, R, nrk);
		for (int i = 0, r = 0; i < d.n; i++)
			for (int j = 0; j < nrk[i]; j++, r++)
				for (int q = 0; q < k; q++)
					p->ranks[r].gpus[p->ranks[r].ngpus++] = u[d.start[i] + j * k + q];
	} else {
		for (int r = 0; r < R; r++)
			for (int q = 0; q < k; q++)
				p->ranks[r].gpus[p->ranks[r].ngpus++] = u[r * k + q];
		pm_notef(p, "the GPUs do not split into groups of %d within NUMA nodes: some ranks' GPUs span NUMA nodes. ", k);
	}
	for (int r = 0; r < R; r++)
		snprintf(reason[r], sizeof(reason[r]),
			 "%d GPU%s per rank (%d usable GPU%s, %d rank%s), ranks spread evenly over packages and NUMA nodes",
			 k, k == 1 ? "" : "s", G, G == 1 ? "" : "s", R, R == 1 ? "" : "s");
}

/* Fewer GPUs than ranks: consecutive ranks share a GPU, each GPU serving
 * floor(R/G) or ceil(R/G) ranks. */
static void assign_shared(struct pm_plan *p, const int *u, int G, pm_reason reason[])
{
	int R = p->nranks;

	for (int r = 0; r < R; r++) {
		int g = (int)((long)r * G / R), lo = 0, hi = 0;
		p->ranks[r].gpus[p->ranks[r].ngpus++] = u[g];
		for (int q = 0; q < R; q++) {
			if ((int)((long)q * G / R) != g)
				continue;
			if (!hi++)
				lo = q;
		}
		snprintf(reason[r], sizeof(reason[r]),
			 "shared by ranks %d-%d (%d ranks, %d usable GPU%s: consecutive ranks share a GPU)",
			 lo, lo + hi - 1, R, G, G == 1 ? "" : "s");
	}
}

static void note_unused(const struct pm_topo *t, struct pm_plan *p, const int *u, int G)
{
	bool used[PM_MAX_GPUS] = { false };

	for (int r = 0; r < p->nranks; r++)
		for (int q = 0; q < p->ranks[r].ngpus; q++)
			used[p->ranks[r].gpus[q]] = true;
	for (int i = 0; i < G; i++)
		if (!used[u[i]])
			pm_notef(p, "GPU %d (%s) unused: %d GPUs do not split evenly over %d ranks. ",
				 pm_topo_gpu_index(t, u[i]), t->gpus[u[i]].busid, G, p->nranks);
}

/* A rank's NICs are those of its GPUs; said in its explanation. */
static void attach_nics(const struct pm_topo *t, struct pm_rank_plan *rp, const char *reason,
			const uint64_t nicmask[], const int score[])
{
	uint64_t nics = 0;
	int g0 = rp->gpus[0];

	pm_whyf(rp, "GPU%s", rp->ngpus == 1 ? "" : "s");
	for (int q = 0; q < rp->ngpus; q++) {
		const struct pm_gpu *g = &t->gpus[rp->gpus[q]];
		pm_whyf(rp, "%s%d (%s, NUMA node %d)", q ? ", " : " ",
			pm_topo_gpu_index(t, rp->gpus[q]), g->busid, pm_numa_os(t, g->numa));
		nics |= nicmask[rp->gpus[q]];
	}
	pm_whyf(rp, ": %s; ", reason);
	for (int n = 0; n < t->nnics; n++)
		if ((nics >> n) & 1)
			rp->nics[rp->nnics++] = n;
	if (rp->nnics) {
		pm_whyf(rp, "NIC");
		for (int n = 0; n < rp->nnics; n++)
			pm_whyf(rp, "%s %s", n ? "," : "", t->nics[rp->nics[n]].name);
		pm_whyf(rp, ": %s as GPU %d; ", pm_nic_closeness(score[g0]), pm_topo_gpu_index(t, g0));
	} else {
		pm_whyf(rp, "no NIC; ");
	}
}

/* The NUMA node a rank's CPUs come from: its first GPU's, unless that one
 * has no allowed CPU. */
static int cpu_domain(const struct pm_topo *t, const struct pm_cpuset *allowed,
		      struct pm_rank_plan *rp, const int load[])
{
	int home = t->gpus[rp->gpus[0]].numa, d;

	if (home >= 0 && pm_has_allowed(t, allowed, home))
		return home;
	d = pm_fallback_domain(t, allowed, home, load);
	if (home >= 0)
		pm_whyf(rp, "the GPU's NUMA node %d has no allowed cpu, using NUMA node %d; ",
			pm_numa_os(t, home), pm_numa_os(t, d));
	else
		pm_whyf(rp, "the GPU's NUMA node is unknown, using NUMA node %d; ", pm_numa_os(t, d));
	return d;
}

void pm_plan_gpus(const struct pm_topo *t, const struct pm_cpuset *allowed, struct pm_plan *p,
		  int *u, int G)
{
	int R = p->nranks, *dom = calloc((size_t)R, sizeof(int));
	pm_reason *reason = calloc((size_t)R, sizeof(*reason));
	int load[PM_MAX_NUMA] = { 0 }, score[PM_MAX_GPUS];
	uint64_t nicmask[PM_MAX_GPUS];

	if (!dom || !reason)
		goto out; /* no cpus planned: pm_plan_compute says so */
	qsort_r(u, (size_t)G, sizeof(*u), cmp_gpu_place, (void *)t);
	if (G >= R)
		assign_whole(t, p, u, G, reason);
	else
		assign_shared(p, u, G, reason);
	note_unused(t, p, u, G);
	pm_gpu_nics(t, p->vendor, nicmask, score);
	for (int r = 0; r < R; r++) {
		attach_nics(t, &p->ranks[r], reason[r], nicmask, score);
		dom[r] = cpu_domain(t, allowed, &p->ranks[r], load);
		if (dom[r] >= 0)
			load[dom[r]]++;
	}
	pm_split_by_domain(t, allowed, p, dom);
out:
	free(dom);
	free(reason);
}
