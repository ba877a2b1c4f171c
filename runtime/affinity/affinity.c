#include "affinity.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- cpu sets ---- */

void pm_cpuset_zero(struct pm_cpuset *s)
{
	memset(s, 0, sizeof(*s));
}

void pm_cpuset_set(struct pm_cpuset *s, int cpu)
{
	if (cpu >= 0 && cpu < PM_MAX_CPUS)
		s->w[cpu / 64] |= 1ull << (cpu % 64);
}

bool pm_cpuset_isset(const struct pm_cpuset *s, int cpu)
{
	return cpu >= 0 && cpu < PM_MAX_CPUS && (s->w[cpu / 64] >> (cpu % 64)) & 1;
}

int pm_cpuset_count(const struct pm_cpuset *s)
{
	int n = 0;
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		n += __builtin_popcountll(s->w[i]);
	return n;
}

int pm_cpuset_next(const struct pm_cpuset *s, int prev)
{
	for (int c = prev + 1; c < PM_MAX_CPUS; c++) {
		uint64_t w = s->w[c / 64] >> (c % 64);
		if (!w) {
			c = (c / 64) * 64 + 63;
			continue;
		}
		return c + __builtin_ctzll(w);
	}
	return -1;
}

int pm_cpuset_first(const struct pm_cpuset *s)
{
	return pm_cpuset_next(s, -1);
}

void pm_cpuset_and(struct pm_cpuset *d, const struct pm_cpuset *a)
{
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		d->w[i] &= a->w[i];
}

void pm_cpuset_or(struct pm_cpuset *d, const struct pm_cpuset *a)
{
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		d->w[i] |= a->w[i];
}

bool pm_cpuset_equal(const struct pm_cpuset *a, const struct pm_cpuset *b)
{
	return !memcmp(a->w, b->w, sizeof(a->w));
}

bool pm_cpuset_subset(const struct pm_cpuset *a, const struct pm_cpuset *b)
{
	for (size_t i = 0; i < PM_MAX_CPUS / 64; i++)
		if (a->w[i] & ~b->w[i])
			return false;
	return true;
}

static int parse_num(const char **p, long max, long *out)
{
	char *end;
	long v;

	if (!isdigit((unsigned char)**p))
		return -1;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v > max)
		return -1;
	*p = end;
	*out = v;
	return 0;
}

int pm_cpuset_parse(struct pm_cpuset *s, const char *list)
{
	const char *p = list;

	pm_cpuset_zero(s);
	if (!p || !*p)
		return -1;
	for (;;) {
		long lo, hi;
		if (parse_num(&p, PM_MAX_CPUS - 1, &lo))
			return -1;
		hi = lo;
		if (*p == '-') {
			p++;
			if (parse_num(&p, PM_MAX_CPUS - 1, &hi) || hi < lo)
				return -1;
		}
		for (long c = lo; c <= hi; c++)
			pm_cpuset_set(s, (int)c);
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -1;
	}
}

/* Append to buf; returns -1 once it does not fit. */
static int append(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return -1;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= len - *off) {
		*off = len;
		return -1;
	}
	*off += (size_t)n;
	return 0;
}

static int format_ranges(bool (*isset)(const void *, int), const void *set, int max,
			 char *buf, size_t len)
{
	size_t off = 0;
	int c = 0;

	if (len)
		buf[0] = '\0';
	while (c < max) {
		int lo;
		if (!isset(set, c)) {
			c++;
			continue;
		}
		lo = c;
		while (c + 1 < max && isset(set, c + 1))
			c++;
		if (append(buf, len, &off, "%s%d", off ? "," : "", lo) ||
		    (c > lo && append(buf, len, &off, "-%d", c)))
			return -1;
		c++;
	}
	return 0;
}

static bool cpuset_isset_v(const void *s, int c)
{
	return pm_cpuset_isset(s, c);
}

static bool mask_isset_v(const void *m, int c)
{
	return (*(const uint64_t *)m >> c) & 1;
}

int pm_cpuset_format(const struct pm_cpuset *s, char *buf, size_t len)
{
	return format_ranges(cpuset_isset_v, s, PM_MAX_CPUS, buf, len);
}

int pm_nodemask_format(uint64_t mask, char *buf, size_t len)
{
	return format_ranges(mask_isset_v, &mask, PM_MAX_NUMA, buf, len);
}

/* ---- the node model ---- */

void pm_topo_init(struct pm_topo *t)
{
	memset(t, 0, sizeof(*t));
	for (int c = 0; c < PM_MAX_CPUS; c++)
		t->cpu_core[c] = t->cpu_numa[c] = -1;
}

static int cmp_gpu_bus(const void *a, const void *b)
{
	return strcmp(((const struct pm_gpu *)a)->busid, ((const struct pm_gpu *)b)->busid);
}

void pm_topo_finish(struct pm_topo *t)
{
	qsort(t->gpus, (size_t)t->ngpus, sizeof(t->gpus[0]), cmp_gpu_bus);
}

int pm_topo_gpu_index(const struct pm_topo *t, int gpu)
{
	int n = 0;
	for (int i = 0; i < gpu; i++)
		n += t->gpus[i].vendor == t->gpus[gpu].vendor;
	return n;
}

/* A bus id matches with or without its PCI domain ("3b:00.0"). */
static bool busid_match(const char *full, const char *s)
{
	size_t fl = strlen(full), sl = strlen(s);
	if (!strcasecmp(full, s))
		return true;
	return sl < fl && full[fl - sl - 1] == ':' && !strcasecmp(full + fl - sl, s);
}

int pm_alloc_parse_gpus(struct pm_alloc *a, const struct pm_topo *t,
			const char *list, char *err, size_t errlen)
{
	char buf[1024], *save = NULL, *tok;

	memset(a->gpu_ok, 0, sizeof(a->gpu_ok));
	a->gpus_all = !list || !*list;
	if (a->gpus_all)
		return 0;
	if (strlen(list) >= sizeof(buf)) {
		snprintf(err, errlen, "GPU list '%.40s...' is too long", list);
		return -1;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int found = -1;
		if (strchr(tok, ':')) {
			for (int g = 0; g < t->ngpus && found < 0; g++)
				if (busid_match(t->gpus[g].busid, tok))
					found = g;
		} else {
			long idx;
			const char *p = tok;
			if (parse_num(&p, PM_MAX_GPUS, &idx) || *p) {
				snprintf(err, errlen,
					 "GPU '%s' in '%s': expected a GPU index or a PCI bus id such as 0000:3b:00.0",
					 tok, list);
				return -1;
			}
			/* Indices count GPUs of one vendor, as CUDA does; a
			 * mixed node is rare enough to resolve to the first
			 * vendor that has that many GPUs. */
			for (int g = 0; g < t->ngpus && found < 0; g++)
				if (pm_topo_gpu_index(t, g) == idx)
					found = g;
		}
		if (found < 0) {
			snprintf(err, errlen, "GPU '%s' in '%s' is not on this node (it has %d GPU%s)",
				 tok, list, t->ngpus, t->ngpus == 1 ? "" : "s");
			return -1;
		}
		a->gpu_ok[found] = true;
	}
	return 0;
}

/* ---- planning ---- */

static int numa_package(const struct pm_topo *t, int numa)
{
	return numa < 0 ? 1 << 20 : t->numa[numa].package;
}

/* A slot per package for counting ranks; unknown packages share the last. */
#define NPKGSLOT 257
static int pkg_slot(const struct pm_topo *t, int numa)
{
	int pk = numa_package(t, numa);
	return pk >= 0 && pk < NPKGSLOT - 1 ? pk : NPKGSLOT - 1;
}

static int path_common(const struct pm_pci_path *a, const struct pm_pci_path *b)
{
	int n = 0;
	while (n < a->depth && n < b->depth && a->id[n] == b->id[n])
		n++;
	return n;
}

static int path_cmp(const struct pm_pci_path *a, const struct pm_pci_path *b)
{
	int n = path_common(a, b);
	if (n < a->depth && n < b->depth)
		return a->id[n] < b->id[n] ? -1 : 1;
	return a->depth - b->depth;
}

static const struct pm_topo *sort_topo; /* qsort has no context argument */

/* Order GPUs so that neighbours in the list are neighbours in the machine:
 * package, NUMA node, PCI tree, bus id. */
static int cmp_gpu_place(const void *x, const void *y)
{
	const struct pm_gpu *a = &sort_topo->gpus[*(const int *)x];
	const struct pm_gpu *b = &sort_topo->gpus[*(const int *)y];
	int pa = numa_package(sort_topo, a->numa), pb = numa_package(sort_topo, b->numa);
	int c;

	if (pa != pb)
		return pa < pb ? -1 : 1;
	if (a->numa != b->numa)
		return (unsigned)a->numa < (unsigned)b->numa ? -1 : 1;
	c = path_cmp(&a->pci, &b->pci);
	return c ? c : strcmp(a->busid, b->busid);
}

static const char *vendor_name(enum pm_vendor v)
{
	switch (v) {
	case PM_VENDOR_NVIDIA: return "NVIDIA";
	case PM_VENDOR_AMD: return "AMD";
	case PM_VENDOR_INTEL: return "Intel";
	default: return "other";
	}
}

static int numa_os(const struct pm_topo *t, int numa)
{
	return numa < 0 ? -1 : t->numa[numa].os_index;
}

/* How close a NIC is to a device: a deeper shared PCI path first, then
 * the same NUMA node. */
static int nic_score(const struct pm_topo *t, const struct pm_pci_path *path, int numa,
		     const struct pm_nic *n)
{
	(void)t;
	return path_common(path, &n->pci) * 2 + (numa >= 0 && n->numa == numa);
}

static const char *closeness(int score)
{
	if (score >= 4)
		return "same PCIe switch";
	if (score >= 2)
		return "same PCI host bridge";
	if (score == 1)
		return "same NUMA node";
	return "no NIC nearer: other NUMA node";
}

static enum pm_nic_kind preferred_kind(const struct pm_topo *t)
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
static void gpu_nics(const struct pm_topo *t, enum pm_vendor v, uint64_t nicmask[],
		     int score[])
{
	enum pm_nic_kind kind = preferred_kind(t);
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

static void whyf(struct pm_rank_plan *r, const char *fmt, ...)
{
	size_t off = strlen(r->why);
	va_list ap;

	if (off + 1 >= sizeof(r->why))
		return;
	va_start(ap, fmt);
	vsnprintf(r->why + off, sizeof(r->why) - off, fmt, ap);
	va_end(ap);
}

static void notef(struct pm_plan *p, const char *fmt, ...)
{
	size_t off = strlen(p->notes);
	va_list ap;

	if (off + 1 >= sizeof(p->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(p->notes + off, sizeof(p->notes) - off, fmt, ap);
	va_end(ap);
}

/* Give every rank's cpu domain (a NUMA index in dom[]) its share of the
 * allowed cpus of that domain. */
static void split_by_domain(const struct pm_topo *t, const struct pm_cpuset *allowed,
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
				whyf(grp[j], "cpus %s: %d ranks share the %d allowed cpus of NUMA node %d; ",
				     list, m, pm_cpuset_count(&set), t->numa[d].os_index);
			else
				whyf(grp[j], "cpus %s: %d of the %d allowed cpus of NUMA node %d, split among its %d rank%s; ",
				     list, pm_cpuset_count(&grp[j]->cpus), pm_cpuset_count(&set),
				     t->numa[d].os_index, m, m == 1 ? "" : "s");
			whyf(grp[j], "memory on NUMA node %d", t->numa[d].os_index);
		}
	}
	free(grp);
}

static bool has_allowed(const struct pm_topo *t, const struct pm_cpuset *allowed, int d)
{
	struct pm_cpuset s = t->numa[d].cpus;
	pm_cpuset_and(&s, allowed);
	return pm_cpuset_first(&s) >= 0;
}

/* A NUMA node for the cpus of a rank whose GPU's node has no allowed cpu
 * (or no known node): the same package first, then the least loaded. */
static int fallback_domain(const struct pm_topo *t, const struct pm_cpuset *allowed,
			   int want, const int load[])
{
	int best = -1;
	for (int d = 0; d < t->nnuma; d++) {
		bool same, bsame;
		if (!has_allowed(t, allowed, d))
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

static void plan_gpus(const struct pm_topo *t, const struct pm_cpuset *allowed,
		      struct pm_plan *p, int *u, int G)
{
	int R = p->nranks, *dom = calloc((size_t)R, sizeof(int));
	char (*reason)[160] = calloc((size_t)R, sizeof(*reason));
	int load[PM_MAX_NUMA] = { 0 }, score[PM_MAX_GPUS];
	uint64_t nicmask[PM_MAX_GPUS];
	bool used[PM_MAX_GPUS] = { false };

	if (!dom || !reason) {
		free(dom);
		free(reason);
		return;
	}
	sort_topo = t;
	qsort(u, (size_t)G, sizeof(*u), cmp_gpu_place);

	if (G >= R) {
		int k = G / R, ndom = 0, cap = 0, domstart[PM_MAX_GPUS], domlen[PM_MAX_GPUS];
		int nrk[PM_MAX_GPUS] = { 0 }, pkgrk[NPKGSLOT] = { 0 };

		/* GPUs come grouped by NUMA node: each group is a domain
		 * that can host floor(n/k) ranks. */
		for (int i = 0; i < G; i++) {
			if (!i || t->gpus[u[i]].numa != t->gpus[u[i - 1]].numa) {
				domstart[ndom] = i;
				domlen[ndom++] = 0;
			}
			domlen[ndom - 1]++;
		}
		for (int d = 0; d < ndom; d++)
			cap += domlen[d] / k;
		if (cap >= R) {
			/* Fill the package with the fewest ranks, then the
			 * NUMA node with the fewest, then the roomiest. */
			for (int r = 0; r < R; r++) {
				int best = -1;
				for (int d = 0; d < ndom; d++) {
					int pk, bpk;
					if (nrk[d] >= domlen[d] / k)
						continue;
					if (best < 0) {
						best = d;
						continue;
					}
					pk = pkgrk[pkg_slot(t, t->gpus[u[domstart[d]]].numa)];
					bpk = pkgrk[pkg_slot(t, t->gpus[u[domstart[best]]].numa)];
					if (pk < bpk || (pk == bpk && (nrk[d] < nrk[best] ||
					    (nrk[d] == nrk[best] && domlen[d] / k - nrk[d] >
					     domlen[best] / k - nrk[best]))))
						best = d;
				}
				nrk[best]++;
				pkgrk[pkg_slot(t, t->gpus[u[domstart[best]]].numa)]++;
			}
			for (int d = 0, r = 0; d < ndom; d++)
				for (int j = 0; j < nrk[d]; j++, r++)
					for (int q = 0; q < k; q++)
						p->ranks[r].gpus[p->ranks[r].ngpus++] = u[domstart[d] + j * k + q];
		} else {
			for (int r = 0; r < R; r++)
				for (int q = 0; q < k; q++)
					p->ranks[r].gpus[p->ranks[r].ngpus++] = u[r * k + q];
			notef(p, "the GPUs do not split into groups of %d within NUMA nodes: some ranks' GPUs span NUMA nodes. ", k);
		}
		for (int r = 0; r < R; r++)
			snprintf(reason[r], sizeof(reason[r]),
				 "%d GPU%s per rank (%d usable GPU%s, %d rank%s), ranks spread evenly over packages and NUMA nodes",
				 k, k == 1 ? "" : "s", G, G == 1 ? "" : "s", R, R == 1 ? "" : "s");
	} else {
		/* Sharing rule: consecutive ranks share a GPU, each GPU
		 * serving floor(R/G) or ceil(R/G) ranks. */
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

	for (int r = 0; r < R; r++)
		for (int q = 0; q < p->ranks[r].ngpus; q++)
			used[p->ranks[r].gpus[q]] = true;
	for (int i = 0; i < G; i++)
		if (!used[u[i]])
			notef(p, "GPU %d (%s) unused: %d GPUs do not split evenly over %d ranks. ",
			      pm_topo_gpu_index(t, u[i]), t->gpus[u[i]].busid, G, R);

	gpu_nics(t, p->vendor, nicmask, score);
	for (int r = 0; r < R; r++) {
		struct pm_rank_plan *rp = &p->ranks[r];
		uint64_t nics = 0;
		int g0 = rp->gpus[0], home = t->gpus[g0].numa;

		whyf(rp, "GPU%s", rp->ngpus == 1 ? "" : "s");
		for (int q = 0; q < rp->ngpus; q++) {
			const struct pm_gpu *g = &t->gpus[rp->gpus[q]];
			whyf(rp, "%s%d (%s, NUMA node %d)", q ? ", " : " ",
			     pm_topo_gpu_index(t, rp->gpus[q]), g->busid, numa_os(t, g->numa));
			nics |= nicmask[rp->gpus[q]];
		}
		whyf(rp, ": %s; ", reason[r]);
		for (int n = 0; n < t->nnics; n++)
			if ((nics >> n) & 1)
				rp->nics[rp->nnics++] = n;
		if (rp->nnics) {
			whyf(rp, "NIC");
			for (int n = 0; n < rp->nnics; n++)
				whyf(rp, "%s %s", n ? "," : "", t->nics[rp->nics[n]].name);
			whyf(rp, ": %s as GPU %d; ", closeness(score[g0]), pm_topo_gpu_index(t, g0));
		} else {
			whyf(rp, "no NIC; ");
		}
		if (home >= 0 && has_allowed(t, allowed, home)) {
			dom[r] = home;
		} else {
			dom[r] = fallback_domain(t, allowed, home, load);
			if (home >= 0)
				whyf(rp, "the GPU's NUMA node %d has no allowed cpu, using NUMA node %d; ",
				     numa_os(t, home), numa_os(t, dom[r]));
			else
				whyf(rp, "the GPU's NUMA node is unknown, using NUMA node %d; ",
				     numa_os(t, dom[r]));
		}
		if (dom[r] >= 0)
			load[dom[r]]++;
	}
	split_by_domain(t, allowed, p, dom);
	free(dom);
	free(reason);
}

static int cmp_numa_place(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	int pa = sort_topo->numa[a].package, pb = sort_topo->numa[b].package;
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
	enum pm_nic_kind kind = preferred_kind(t);

	for (int d = 0; d < t->nnuma; d++)
		if (has_allowed(t, allowed, d))
			D[N++] = d;
	sort_topo = t;
	qsort(D, (size_t)N, sizeof(*D), cmp_numa_place);
	if (R >= N) {
		dom = calloc((size_t)R, sizeof(int));
		if (!dom)
			return;
		for (int r = 0; r < R; r++) {
			dom[r] = D[(long)r * N / R];
			whyf(&p->ranks[r], "no GPU: %d rank%s over %d NUMA node%s with allowed cpus; ",
			     R, R == 1 ? "" : "s", N, N == 1 ? "" : "s");
		}
		split_by_domain(t, allowed, p, dom);
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
			whyf(rp, "no GPU: %d rank%s over %d NUMA nodes, so this rank gets whole NUMA node%s %s; cpus %s; memory on NUMA node%s %s",
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
			notef(p, "%d %s GPU%s ignored: %s. ", count[i],
			      vendor_name((enum pm_vendor)i), count[i] == 1 ? "" : "s",
			      v == PM_VENDOR_OTHER ? "no supported GPU runtime" : "the step uses the node's GPUs of the most common vendor");

	if (G) {
		p->vendor = v;
		plan_gpus(t, &allowed, p, u, G);
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
