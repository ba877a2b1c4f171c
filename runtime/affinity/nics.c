/* Which NICs serve which GPU: the longest shared PCI path, then the same
 * NUMA node, InfiniBand/RoCE before Ethernet, ties dealt out. Pure. */
#include "plan_int.h"

/* How close a NIC is to a device: a deeper shared PCI path first, then
 * the same NUMA node. */
static int nic_score(const struct pm_topo *t, const struct pm_pci_path *path, int numa,
		     const struct pm_nic *n)
{
	(void)t;
	return pm_path_common(path, &n->pci) * 2 + (numa >= 0 && n->numa == numa);
}

const char *pm_nic_closeness(int score)
{
	if (score >= 4)
		return "same PCIe switch";
	if (score >= 2)
		return "same PCI host bridge";
	if (score == 1)
		return "same NUMA node";
	return "no NIC nearer: other NUMA node";
}

enum pm_nic_kind pm_nic_kind_preferred(const struct pm_topo *t)
{
	for (int i = 0; i < t->nnics; i++)
		if (t->nics[i].kind == PM_NIC_IB)
			return PM_NIC_IB;
	return PM_NIC_ETH;
}

/* The NICs nearest to each GPU of vendor v. When several GPUs tie for the
 * same set of NICs (two GPUs and two HCAs behind one switch), the set is
 * dealt out among them so that each NIC carries the traffic of as few GPUs
 * as possible. Computed over all the node's GPUs, not only the step's, so
 * that a GPU always gets the same NIC. */
void pm_gpu_nics(const struct pm_topo *t, enum pm_vendor v, uint64_t nicmask[],
		     int score[])
{
	enum pm_nic_kind kind = pm_nic_kind_preferred(t);
	uint64_t best[PM_MAX_GPUS] = { 0 };

	for (int g = 0; g < t->ngpus; g++) {
		int bs = -1;
		score[g] = -1;
		nicmask[g] = 0;
		if (t->gpus[g].vendor != v)
			continue;
		for (int n = 0; n < t->nnics; n++) {
			int s;
			if (t->nics[n].kind != kind)
				continue;
			s = nic_score(t, &t->gpus[g].pci, t->gpus[g].numa, &t->nics[n]);
			if (s > bs) {
				bs = s;
				best[g] = 0;
			}
			if (s == bs)
				best[g] |= 1ull << n;
		}
		score[g] = bs;
	}
	for (int g = 0; g < t->ngpus; g++) {
		int m = 0, j = 0, s = __builtin_popcountll(best[g]), i = 0;
		if (!best[g])
			continue;
		for (int h = 0; h < t->ngpus; h++) {
			if (t->gpus[h].vendor != v || best[h] != best[g])
				continue;
			if (h < g)
				j++;
			m++;
		}
		for (int n = 0; n < t->nnics; n++) {
			if (!((best[g] >> n) & 1))
				continue;
			if ((s >= m && i * m / s == j) || (s < m && j * s / m == i))
				nicmask[g] |= 1ull << n;
			i++;
		}
	}
}
