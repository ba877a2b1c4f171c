#include "bind.h"

#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "affinity.h"
#include "common/options.h"
#include "topology.h"

struct pm_bind_plan {
	unsigned what;
	struct pm_topo topo;
	struct pm_plan plan;
};

int pm_bind_plan_node(const char *topology_xml, unsigned what, int local_ntasks,
		      const char *allowed_cpus, const char *visible_gpus,
		      struct pm_bind_plan **out, char *err, size_t errlen)
{
	struct pm_bind_plan *p;
	struct pm_alloc *a;
	int rc = -1;

	*out = NULL;
	if (local_ntasks < 1) {
		snprintf(err, errlen, "number of local tasks %d: expected 1 or more", local_ntasks);
		return -1;
	}
	p = calloc(1, sizeof(*p));
	a = calloc(1, sizeof(*a));
	if (!p || !a) {
		snprintf(err, errlen, "cannot allocate the affinity plan: %s", strerror(errno));
		goto out;
	}
	p->what = what;
	if (pm_topo_load(&p->topo, topology_xml, err, errlen))
		goto out;
	a->ntasks = local_ntasks;
	if (!allowed_cpus || !*allowed_cpus) {
		a->cpus = p->topo.cpus;
	} else if (pm_cpuset_parse(&a->cpus, allowed_cpus)) {
		snprintf(err, errlen,
			 "allowed cpus '%s': expected a list of cpu numbers below %d such as 0-7,16-23",
			 allowed_cpus, PM_MAX_CPUS);
		goto out;
	}
	if (pm_alloc_parse_gpus(a, &p->topo, visible_gpus, err, errlen) ||
	    pm_plan_compute(&p->topo, a, &p->plan, err, errlen))
		goto out;
	*out = p;
	p = NULL;
	rc = 0;
out:
	free(a);
	free(p);
	return rc;
}

void pm_bind_plan_free(struct pm_bind_plan *p)
{
	if (!p)
		return;
	pm_plan_release(&p->plan);
	free(p);
}

const struct pm_plan *pm_bind_plan_get(const struct pm_bind_plan *p)
{
	return &p->plan;
}

const struct pm_topo *pm_bind_plan_topo(const struct pm_bind_plan *p)
{
	return &p->topo;
}

static void msgf(char *msg, size_t len, const char *fmt, ...)
{
	size_t off = strlen(msg);
	va_list ap;

	if (off + 1 >= len)
		return;
	if (off)
		msg[off++] = ' ', msg[off] = '\0';
	va_start(ap, fmt);
	vsnprintf(msg + off, len - off, fmt, ap);
	va_end(ap);
}

static int count_cores(const struct pm_topo *t, const struct pm_cpuset *s)
{
	struct pm_cpuset seen;
	int n = 0;

	/* cpu_core numbers can be up to 2 * PM_MAX_CPUS: fold them. */
	pm_cpuset_zero(&seen);
	for (int c = pm_cpuset_first(s); c >= 0; c = pm_cpuset_next(s, c)) {
		int k = t->cpu_core[c];
		k = k < 0 ? c : k % PM_MAX_CPUS;
		if (!pm_cpuset_isset(&seen, k))
			n++;
		pm_cpuset_set(&seen, k);
	}
	return n;
}

struct envbuf {
	char v[2048];
	size_t off;
};

static void add(struct envbuf *b, const char *pre, const char *item, const char *suf)
{
	int n = snprintf(b->v + b->off, sizeof(b->v) - b->off, "%s%s%s",
			 b->off ? "," : pre, item, suf);
	if (n > 0 && (size_t)n < sizeof(b->v) - b->off)
		b->off += (size_t)n;
}

static int setv(int (*set_env)(void *, const char *, const char *), void *ctx,
		const char *name, const char *value, char *msg, size_t msglen)
{
	if (set_env(ctx, name, value) == 0)
		return 0;
	msg[0] = '\0';
	msgf(msg, msglen, "cannot set %s=%s in the task's environment", name, value);
	return -1;
}

int pm_bind_rank_env(const struct pm_bind_plan *p, int local_rank, const struct pm_cpuset *cpus,
		     int (*set_env)(void *ctx, const char *name, const char *value),
		     int (*get_env)(void *ctx, const char *name, char *buf, size_t len),
		     void *ctx, char *msg, size_t msglen)
{
	const struct pm_rank_plan *r = &p->plan.ranks[local_rank];
	const struct pm_topo *t = &p->topo;

	if ((p->what & PM_BIND_GPU) && r->ngpus && p->plan.vendor != PM_VENDOR_OTHER) {
		static const char *const var[] = {
			[PM_VENDOR_NVIDIA] = "CUDA_VISIBLE_DEVICES",
			[PM_VENDOR_AMD] = "ROCR_VISIBLE_DEVICES",
			[PM_VENDOR_INTEL] = "ZE_AFFINITY_MASK",
		};
		struct envbuf b = { .off = 0 };
		for (int i = 0; i < r->ngpus; i++) {
			char num[16];
			snprintf(num, sizeof(num), "%d", pm_topo_gpu_index(t, r->gpus[i]));
			add(&b, "", num, "");
		}
		if (setv(set_env, ctx, var[p->plan.vendor], b.v, msg, msglen))
			return -1;
		/* CUDA numbers devices fastest first unless told otherwise;
		 * the plan's indices are in PCI bus order. */
		if (p->plan.vendor == PM_VENDOR_NVIDIA &&
		    setv(set_env, ctx, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", msg, msglen))
			return -1;
	}
	if ((p->what & PM_BIND_NIC) && r->nnics) {
		struct envbuf hca = { .off = 0 }, ucx = { .off = 0 };
		bool ib = t->nics[r->nics[0]].kind == PM_NIC_IB;
		for (int i = 0; i < r->nnics; i++) {
			const struct pm_nic *n = &t->nics[r->nics[i]];
			/* "=" makes NCCL match names exactly: mlx5_1 must not
			 * also select mlx5_10. */
			add(&hca, "=", n->name, "");
			add(&ucx, "", n->name, ib ? ":1" : "");
		}
		if (setv(set_env, ctx, ib ? "NCCL_IB_HCA" : "NCCL_SOCKET_IFNAME", hca.v, msg, msglen) ||
		    setv(set_env, ctx, "UCX_NET_DEVICES", ucx.v, msg, msglen))
			return -1;
		/* torch's gloo backend takes the same interfaces, by their
		 * plain names (it has no "=" syntax); an IB HCA is no
		 * interface for it. */
		if (!ib && setv(set_env, ctx, "GLOO_SOCKET_IFNAME", ucx.v, msg, msglen))
			return -1;
	}
	if (p->what & PM_BIND_CPU) {
		char buf[32];
		if (get_env && get_env(ctx, "OMP_NUM_THREADS", buf, sizeof(buf)) == 0) {
			msgf(msg, msglen, "OMP_NUM_THREADS=%s kept (set by the user).", buf);
		} else {
			snprintf(buf, sizeof(buf), "%d", count_cores(t, cpus ? cpus : &r->cpus));
			if (setv(set_env, ctx, "OMP_NUM_THREADS", buf, msg, msglen))
				return -1;
		}
	}
	return 0;
}

static int apply_cpus(const struct pm_rank_plan *r, struct pm_cpuset *eff, char *msg, size_t msglen)
{
	size_t sz = CPU_ALLOC_SIZE(PM_MAX_CPUS);
	cpu_set_t *m = CPU_ALLOC(PM_MAX_CPUS);
	struct pm_cpuset cur;
	char a[256], b[256];
	int rc = -1;

	if (!m) {
		msgf(msg, msglen, "cannot allocate a cpu mask: %s", strerror(errno));
		return -1;
	}
	CPU_ZERO_S(sz, m);
	if (sched_getaffinity(0, sz, m)) {
		msgf(msg, msglen, "sched_getaffinity: %s", strerror(errno));
		goto out;
	}
	pm_cpuset_zero(&cur);
	for (int c = 0; c < PM_MAX_CPUS; c++)
		if (CPU_ISSET_S((size_t)c, sz, m))
			pm_cpuset_set(&cur, c);
	*eff = r->cpus;
	pm_cpuset_and(eff, &cur);
	pm_cpuset_format(&cur, a, sizeof(a));
	pm_cpuset_format(&r->cpus, b, sizeof(b));
	if (pm_cpuset_first(eff) < 0) {
		*eff = cur;
		msgf(msg, msglen, "cpus: kept %s, which Slurm set and which does not overlap the plan's %s.", a, b);
		rc = 0;
		goto out;
	}
	if (pm_cpuset_equal(eff, &cur)) {
		if (!pm_cpuset_equal(&cur, &r->cpus))
			msgf(msg, msglen, "cpus: kept %s, already tighter than the plan's %s.", a, b);
		rc = 0;
		goto out;
	}
	if (!pm_cpuset_equal(eff, &r->cpus)) {
		char e[256];
		pm_cpuset_format(eff, e, sizeof(e));
		msgf(msg, msglen, "cpus: %s, the plan's %s within the allowed %s.", e, b, a);
	}
	CPU_ZERO_S(sz, m);
	for (int c = pm_cpuset_first(eff); c >= 0; c = pm_cpuset_next(eff, c))
		CPU_SET_S((size_t)c, sz, m);
	if (sched_setaffinity(0, sz, m)) {
		pm_cpuset_format(eff, a, sizeof(a));
		msgf(msg, msglen, "sched_setaffinity(%s): %s", a, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	CPU_FREE(m);
	return rc;
}

#define NODEMASK_BITS 1024 /* at least the kernel's node count, or get_mempolicy fails */

static int apply_mem(const struct pm_rank_plan *r, bool strict, char *msg, size_t msglen)
{
	unsigned long allowed[NODEMASK_BITS / (8 * sizeof(long))] = { 0 };
	unsigned long want[NODEMASK_BITS / (8 * sizeof(long))] = { 0 };
	uint64_t eff = 0;
	char nodes[128];
	int mode;

	if (get_mempolicy(NULL, allowed, NODEMASK_BITS, NULL, MPOL_F_MEMS_ALLOWED)) {
		if (!strict) {
			msgf(msg, msglen, "memory: no NUMA policy (get_mempolicy: %s).", strerror(errno));
			return 0;
		}
		msgf(msg, msglen, "get_mempolicy(MPOL_F_MEMS_ALLOWED): %s", strerror(errno));
		return -1;
	}
	for (int n = 0; n < PM_MAX_NUMA; n++)
		if (((r->mems >> n) & 1) && ((allowed[n / (8 * sizeof(long))] >> (n % (8 * sizeof(long)))) & 1)) {
			eff |= 1ull << n;
			want[n / (8 * sizeof(long))] |= 1ul << (n % (8 * sizeof(long)));
		}
	pm_nodemask_format(r->mems, nodes, sizeof(nodes));
	if (!eff) {
		msgf(msg, msglen, "memory: NUMA node %s is not allowed to this task; policy left as it was.", nodes);
		return 0;
	}
	/* One node: prefer (or bind to) it. Several nodes, not strict: the
	 * kernel's local policy already follows the cpus the rank runs on. */
	mode = strict ? MPOL_BIND : __builtin_popcountll(eff) == 1 ? MPOL_PREFERRED : MPOL_LOCAL;
	if (set_mempolicy(mode, mode == MPOL_LOCAL ? NULL : want,
			  mode == MPOL_LOCAL ? 0 : NODEMASK_BITS)) {
		pm_nodemask_format(eff, nodes, sizeof(nodes));
		if (!strict) {
			msgf(msg, msglen, "memory: preferred NUMA node %s not set (set_mempolicy: %s).",
			     nodes, strerror(errno));
			return 0;
		}
		msgf(msg, msglen, "set_mempolicy(MPOL_BIND, NUMA node %s): %s", nodes, strerror(errno));
		return -1;
	}
	return 0;
}

int pm_bind_apply_rank(const struct pm_bind_plan *p, int local_rank,
		       int (*set_env)(void *ctx, const char *name, const char *value),
		       int (*get_env)(void *ctx, const char *name, char *buf, size_t len),
		       void *ctx, char *msg, size_t msglen)
{
	struct pm_cpuset eff;
	const struct pm_rank_plan *r;

	if (msglen)
		msg[0] = '\0';
	if (!p || local_rank < 0 || local_rank >= p->plan.nranks) {
		msgf(msg, msglen, "local rank %d has no affinity plan (the plan covers %d rank%s)",
		     local_rank, p ? p->plan.nranks : 0, p && p->plan.nranks == 1 ? "" : "s");
		return -1;
	}
	r = &p->plan.ranks[local_rank];
	eff = r->cpus;
	if ((p->what & PM_BIND_CPU) && apply_cpus(r, &eff, msg, msglen))
		return -1;
	if ((p->what & (PM_BIND_MEM | PM_BIND_MEM_STRICT)) &&
	    apply_mem(r, p->what & PM_BIND_MEM_STRICT, msg, msglen))
		return -1;
	return pm_bind_rank_env(p, local_rank, &eff, set_env, get_env, ctx, msg, msglen);
}
