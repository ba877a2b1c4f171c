/* Affinity planner: hand-built models, the project's fixtures
 * (tests/data) and real machines (../shared/topologies, when present). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "cmocka_compat.h"

#include "affinity/affinity.h"
#include "affinity/bind.h"
#include "common/options.h"
#include "affinity/topology.h"

static char err[PM_ERRLEN];

/* ---- helpers ---- */

static struct pm_topo *load(const char *dir, const char *file)
{
	char path[4096];
	const char *top = getenv("top_srcdir");
	struct pm_topo *t = malloc(sizeof(*t));

	assert_non_null(t);
	snprintf(path, sizeof(path), "%s/%s/%s", top ? top : ".", dir, file);
	if (access(path, R_OK)) {
		free(t);
		return NULL;
	}
	if (pm_topo_load(t, path, err, sizeof(err)))
		fail_msg("%s", err);
	return t;
}

static struct pm_topo *fixture(const char *file)
{
	struct pm_topo *t = load("tests/data", file);
	if (!t)
		fail_msg("fixture tests/data/%s missing (top_srcdir=%s)", file, getenv("top_srcdir"));
	return t;
}

static struct pm_topo *shared(const char *file)
{
	struct pm_topo *t = load("../shared/topologies", file);
	if (!t) {
		printf("skipped: ../shared/topologies/%s not found next to the source tree\n", file);
		skip();
	}
	return t;
}

static void plan(const struct pm_topo *t, int ntasks, const char *cpus, const char *gpus,
		 struct pm_plan *p)
{
	struct pm_alloc a;
	memset(&a, 0, sizeof(a));
	a.ntasks = ntasks;
	if (cpus)
		assert_int_equal(pm_cpuset_parse(&a.cpus, cpus), 0);
	else
		a.cpus = t->cpus;
	assert_int_equal(pm_alloc_parse_gpus(&a, t, gpus, err, sizeof(err)), 0);
	if (pm_plan_compute(t, &a, p, err, sizeof(err)))
		fail_msg("%s", err);
}

static int numa_index(const struct pm_topo *t, int os)
{
	for (int i = 0; i < t->nnuma; i++)
		if (t->numa[i].os_index == os)
			return i;
	fail_msg("no NUMA node %d", os);
	return -1;
}

/* Properties every plan has: cpus within the allowed ones, never empty,
 * disjoint unless shared, on the rank's home node; each GPU used by one
 * rank when there are enough. */
static void check_invariants(const struct pm_topo *t, const struct pm_plan *p, const char *cpus)
{
	struct pm_cpuset allowed = t->cpus, seen;
	int gpu_users[PM_MAX_GPUS] = { 0 }, used = 0;

	if (cpus)
		pm_cpuset_parse(&allowed, cpus);
	pm_cpuset_zero(&seen);
	for (int r = 0; r < p->nranks; r++) {
		const struct pm_rank_plan *rp = &p->ranks[r];
		struct pm_cpuset both = rp->cpus;
		assert_true(pm_cpuset_count(&rp->cpus) > 0);
		assert_true(pm_cpuset_subset(&rp->cpus, &allowed));
		assert_true(rp->numa >= 0);
		assert_true((rp->mems >> rp->numa) & 1);
		pm_cpuset_and(&both, &seen);
		if (!rp->shared_cpus)
			assert_int_equal(pm_cpuset_count(&both), 0);
		pm_cpuset_or(&seen, &rp->cpus);
		assert_true(strlen(rp->why) > 0);
		for (int g = 0; g < rp->ngpus; g++)
			if (!gpu_users[rp->gpus[g]]++)
				used++;
	}
	for (int g = 0; g < t->ngpus; g++)
		if (p->nranks <= used)
			assert_true(gpu_users[g] <= 1);
}

/* Every cpu of a rank is on the rank's home NUMA node. */
static void assert_home(const struct pm_topo *t, const struct pm_rank_plan *rp)
{
	assert_true(pm_cpuset_subset(&rp->cpus, &t->numa[numa_index(t, rp->numa)].cpus));
}

static int gpu_numa_os(const struct pm_topo *t, int g)
{
	return t->numa[t->gpus[g].numa].os_index;
}

/* ---- cpu lists ---- */

static void test_cpuset_lists(void **state)
{
	struct pm_cpuset s;
	char buf[64];
	(void)state;
	assert_int_equal(pm_cpuset_parse(&s, "0-7,16-23"), 0);
	assert_int_equal(pm_cpuset_count(&s), 16);
	assert_true(pm_cpuset_isset(&s, 16) && !pm_cpuset_isset(&s, 8));
	assert_int_equal(pm_cpuset_format(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-7,16-23");
	assert_int_equal(pm_cpuset_parse(&s, "3,1,2"), 0);
	pm_cpuset_format(&s, buf, sizeof(buf));
	assert_string_equal(buf, "1-3");
	assert_int_equal(pm_cpuset_parse(&s, "4095"), 0);
	assert_int_equal(pm_cpuset_first(&s), 4095);
	for (const char *bad[] = { "", "a", "1-", "5-3", "1,,2", "1,", "-1", "4096", "0-99999", NULL },
	     **b = bad; *b; b++)
		assert_int_equal(pm_cpuset_parse(&s, *b), -1);
	assert_int_equal(pm_cpuset_parse(&s, "4095"), 0);
	assert_int_equal(pm_cpuset_format(&s, buf, 3), -1); /* "4095" does not fit */
	pm_nodemask_format(0x5, buf, sizeof(buf));
	assert_string_equal(buf, "0,2");
}

/* ---- hand-built model: 2 packages x 4 cores, 2 GPUs and 1 HCA each ---- */

static struct pm_topo *small(void)
{
	struct pm_topo *t = malloc(sizeof(*t));
	assert_non_null(t);
	pm_topo_init(t);
	t->npackages = 2;
	t->nnuma = 2;
	for (int d = 0; d < 2; d++) {
		t->numa[d].os_index = d;
		t->numa[d].package = d;
		for (int c = 4 * d; c < 4 * d + 4; c++) {
			pm_cpuset_set(&t->numa[d].cpus, c);
			pm_cpuset_set(&t->cpus, c);
			t->cpu_core[c] = c;
			t->cpu_numa[c] = d;
		}
		for (int i = 0; i < 2; i++) {
			struct pm_gpu *g = &t->gpus[t->ngpus++];
			snprintf(g->busid, sizeof(g->busid), "0000:%02x:00.0", 0x10 + 0x80 * d + i);
			g->vendor = PM_VENDOR_NVIDIA;
			g->numa = d;
			g->pci = (struct pm_pci_path){ 3, { d, 10 * d + i, 100 + 10 * d + i } };
		}
		struct pm_nic *n = &t->nics[t->nnics++];
		snprintf(n->name, sizeof(n->name), "mlx5_%d", d);
		n->kind = PM_NIC_IB;
		n->numa = d;
		/* behind the switch of the package's second GPU */
		n->pci = (struct pm_pci_path){ 3, { d, 10 * d + 1, 200 + d } };
	}
	pm_topo_finish(t);
	return t;
}

static void test_model_one_gpu_per_rank(void **state)
{
	struct pm_topo *t = small();
	struct pm_plan p;
	(void)state;
	plan(t, 4, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 4; r++) {
		assert_int_equal(p.ranks[r].ngpus, 1);
		/* the rank's memory and cpus are on its GPU's node */
		assert_int_equal(p.ranks[r].numa, gpu_numa_os(t, p.ranks[r].gpus[0]));
		assert_home(t, &p.ranks[r]);
		assert_int_equal(p.ranks[r].ncores, 2);
		/* one HCA per package: both GPUs of a package use it */
		assert_int_equal(p.ranks[r].nnics, 1);
		assert_int_equal(t->nics[p.ranks[r].nics[0]].numa, t->gpus[p.ranks[r].gpus[0]].numa);
	}
	assert_int_equal(p.vendor, PM_VENDOR_NVIDIA);
	pm_plan_release(&p);
	free(t);
}

static void test_model_two_ranks_spread(void **state)
{
	struct pm_topo *t = small();
	struct pm_plan p;
	(void)state;
	plan(t, 2, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	/* several GPUs per rank, all from one package, one rank per package */
	for (int r = 0; r < 2; r++) {
		assert_int_equal(p.ranks[r].ngpus, 2);
		assert_int_equal(t->gpus[p.ranks[r].gpus[0]].numa, t->gpus[p.ranks[r].gpus[1]].numa);
		assert_int_equal(pm_cpuset_count(&p.ranks[r].cpus), 4);
	}
	assert_int_not_equal(p.ranks[0].numa, p.ranks[1].numa);
	pm_plan_release(&p);
	free(t);
}

static void test_model_sharing_rule(void **state)
{
	struct pm_topo *t = small();
	struct pm_plan p;
	(void)state;
	plan(t, 6, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	/* 6 ranks, 4 GPUs: consecutive ranks share, no GPU has more than
	 * ceil(6/4) ranks, every GPU is used */
	int users[PM_MAX_GPUS] = { 0 };
	for (int r = 0; r < 6; r++) {
		assert_int_equal(p.ranks[r].ngpus, 1);
		users[p.ranks[r].gpus[0]]++;
		if (r)
			assert_true(p.ranks[r].gpus[0] == p.ranks[r - 1].gpus[0] ||
				    users[p.ranks[r - 1].gpus[0]] >= 1);
	}
	for (int g = 0; g < 4; g++)
		assert_int_in_range(users[g], 1, 2);
	/* 3 ranks per package: the 4 cores split 2/1/1 */
	assert_int_equal(pm_cpuset_count(&p.ranks[0].cpus) + pm_cpuset_count(&p.ranks[1].cpus) +
			 pm_cpuset_count(&p.ranks[2].cpus), 4);
	pm_plan_release(&p);
	free(t);
}

static void test_model_visible_gpus(void **state)
{
	struct pm_topo *t = small();
	struct pm_plan p;
	(void)state;
	/* Slurm gave the step the second package's GPUs only */
	plan(t, 2, NULL, "2,3", &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 2; r++) {
		assert_true(p.ranks[r].gpus[0] >= 2);
		assert_int_equal(p.ranks[r].numa, 1);
	}
	assert_int_not_equal(p.ranks[0].gpus[0], p.ranks[1].gpus[0]);
	pm_plan_release(&p);
	/* by bus id, with or without the PCI domain */
	plan(t, 1, NULL, "0000:90:00.0", &p);
	assert_string_equal(t->gpus[p.ranks[0].gpus[0]].busid, "0000:90:00.0");
	pm_plan_release(&p);

	struct pm_alloc a = { .ntasks = 1 };
	assert_int_equal(pm_alloc_parse_gpus(&a, t, "7", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'7'"));
	assert_int_equal(pm_alloc_parse_gpus(&a, t, "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "PCI bus id"));
	free(t);
}

static void test_model_partial_cpus(void **state)
{
	struct pm_topo *t = small();
	struct pm_plan p;
	(void)state;
	/* only package 1's cores: ranks of package 0's GPUs run there too,
	 * and nothing outside the allocation is handed out */
	plan(t, 4, "4-7", NULL, &p);
	check_invariants(t, &p, "4-7");
	for (int r = 0; r < 4; r++) {
		assert_int_equal(pm_cpuset_count(&p.ranks[r].cpus), 1);
		assert_int_equal(p.ranks[r].numa, 1);
	}
	pm_plan_release(&p);
	/* cpus that do not exist on the node */
	struct pm_alloc a = { .ntasks = 1 };
	pm_cpuset_parse(&a.cpus, "100-101");
	a.gpus_all = true;
	assert_int_equal(pm_plan_compute(t, &a, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "100-101"));
	a.ntasks = 0;
	assert_int_equal(pm_plan_compute(t, &a, &p, err, sizeof(err)), -1);
	free(t);
}

static void test_model_more_ranks_than_cpus(void **state)
{
	struct pm_topo *t = small();
	struct pm_plan p;
	(void)state;
	plan(t, 12, "0-1", NULL, &p);
	check_invariants(t, &p, "0-1");
	for (int r = 0; r < 12; r++) {
		assert_int_equal(pm_cpuset_count(&p.ranks[r].cpus), 1);
		assert_true(p.ranks[r].shared_cpus);
	}
	pm_plan_release(&p);
	free(t);
}

/* ---- fixtures ---- */

static void test_dgx_h100(void **state)
{
	struct pm_topo *t = fixture("dgx-h100.xml");
	struct pm_plan p;
	(void)state;
	assert_int_equal(t->ngpus, 8);
	assert_int_equal(t->nnics, 9);
	plan(t, 8, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 8; r++) {
		const struct pm_rank_plan *rp = &p.ranks[r];
		char want[32];
		assert_int_equal(rp->ngpus, 1);
		assert_int_equal(pm_topo_gpu_index(t, rp->gpus[0]), r);
		assert_int_equal(rp->numa, r / 4);
		assert_home(t, rp);
		assert_int_equal(rp->ncores, 14);
		assert_int_equal(pm_cpuset_count(&rp->cpus), 28); /* with hyperthreads */
		/* each GPU has its own HCA behind its PCIe switch */
		assert_int_equal(rp->nnics, 1);
		snprintf(want, sizeof(want), "mlx5_%d", r);
		assert_string_equal(t->nics[rp->nics[0]].name, want);
		assert_non_null(strstr(rp->why, "same PCIe switch"));
	}
	pm_plan_release(&p);

	/* 2 ranks: one per socket, 4 GPUs and 4 HCAs each */
	plan(t, 2, NULL, NULL, &p);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(p.ranks[r].ngpus, 4);
		assert_int_equal(p.ranks[r].nnics, 4);
		assert_int_equal(p.ranks[r].numa, r);
		assert_int_equal(p.ranks[r].ncores, 56);
	}
	pm_plan_release(&p);

	/* 3 ranks: 2 GPUs each, two unused, no rank's GPUs across sockets */
	plan(t, 3, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 3; r++)
		assert_int_equal(t->gpus[p.ranks[r].gpus[0]].numa, t->gpus[p.ranks[r].gpus[1]].numa);
	assert_non_null(strstr(p.notes, "unused"));
	pm_plan_release(&p);
	free(t);
}

static void test_dgx_h100_partial_step(void **state)
{
	struct pm_topo *t = fixture("dgx-h100.xml");
	struct pm_plan p;
	(void)state;
	/* A step of 4 tasks allocated 16 cores of socket 1 and their
	 * siblings, with socket 1's GPUs */
	plan(t, 4, "56-71,168-183", "4,5,6,7", &p);
	check_invariants(t, &p, "56-71,168-183");
	for (int r = 0; r < 4; r++) {
		assert_int_equal(p.ranks[r].numa, 1);
		assert_int_equal(p.ranks[r].ncores, 4);
		assert_int_equal(pm_topo_gpu_index(t, p.ranks[r].gpus[0]), 4 + r);
	}
	pm_plan_release(&p);
	/* socket 0's GPUs but only socket 1's cores: cpus stay allowed */
	plan(t, 2, "56-59", "0,1", &p);
	check_invariants(t, &p, "56-59");
	assert_non_null(strstr(p.ranks[0].why, "no allowed cpu"));
	pm_plan_release(&p);
	free(t);
}

static void test_4gpu_amd(void **state)
{
	struct pm_topo *t = fixture("4gpu-amd.xml");
	struct pm_plan p;
	(void)state;
	assert_int_equal(t->ngpus, 4);
	plan(t, 4, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	assert_int_equal(p.vendor, PM_VENDOR_AMD);
	for (int r = 0; r < 4; r++) {
		assert_int_equal(p.ranks[r].numa, gpu_numa_os(t, p.ranks[r].gpus[0]));
		/* the switch's one Ethernet port serves both its GPUs */
		assert_int_equal(p.ranks[r].nnics, 1);
		assert_int_equal(t->nics[p.ranks[r].nics[0]].kind, PM_NIC_ETH);
		assert_int_equal(t->nics[p.ranks[r].nics[0]].numa, t->gpus[p.ranks[r].gpus[0]].numa);
	}
	assert_int_equal(p.ranks[0].nics[0], p.ranks[1].nics[0]);
	assert_int_not_equal(p.ranks[1].nics[0], p.ranks[2].nics[0]);
	pm_plan_release(&p);
	free(t);
}

static void test_uneven(void **state)
{
	struct pm_topo *t = fixture("uneven.xml");
	struct pm_plan p;
	int on1 = 0;
	(void)state;
	/* 3 GPUs on socket 0, 1 on socket 1: 2 ranks go one per socket */
	plan(t, 2, NULL, "0,1,3", &p);
	check_invariants(t, &p, NULL);
	assert_int_not_equal(p.ranks[0].numa, p.ranks[1].numa);
	pm_plan_release(&p);
	plan(t, 3, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 3; r++) {
		on1 += p.ranks[r].numa == 1;
		assert_int_equal(p.ranks[r].numa, gpu_numa_os(t, p.ranks[r].gpus[0]));
	}
	assert_int_equal(on1, 1);
	pm_plan_release(&p);
	/* two GPUs and two HCAs behind one switch: one HCA each */
	plan(t, 4, NULL, NULL, &p);
	assert_int_equal(p.ranks[0].nnics, 1);
	assert_int_equal(p.ranks[1].nnics, 1);
	assert_int_not_equal(p.ranks[0].nics[0], p.ranks[1].nics[0]);
	/* socket 0 cores split over 3 ranks, socket 1's to its one rank */
	assert_int_equal(p.ranks[3].ncores, 16);
	assert_int_equal(p.ranks[0].ncores + p.ranks[1].ncores + p.ranks[2].ncores, 16);
	pm_plan_release(&p);
	free(t);
}

static void test_nogpu(void **state)
{
	struct pm_topo *t = fixture("nogpu.xml");
	struct pm_plan p;
	(void)state;
	assert_int_equal(t->ngpus, 0);
	assert_int_equal(t->nnuma, 4);
	plan(t, 4, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 4; r++) {
		assert_int_equal(p.ranks[r].numa, r);
		assert_int_equal(p.ranks[r].ngpus, 0);
		assert_true(pm_cpuset_equal(&p.ranks[r].cpus, &t->numa[r].cpus));
	}
	pm_plan_release(&p);
	/* 2 ranks: a socket each, memory on both its NUMA nodes */
	plan(t, 2, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	assert_int_equal(p.ranks[0].mems, 0x3);
	assert_int_equal(p.ranks[1].mems, 0xc);
	assert_int_equal(p.ranks[0].ncores, 16);
	pm_plan_release(&p);
	/* 8 ranks on half of socket 0: cpus of NUMA node 0 only */
	plan(t, 8, "0-7,32-39", NULL, &p);
	check_invariants(t, &p, "0-7,32-39");
	for (int r = 0; r < 8; r++) {
		assert_int_equal(p.ranks[r].numa, 0);
		assert_int_equal(p.ranks[r].ncores, 1);
	}
	pm_plan_release(&p);
	free(t);
}

/* ---- real machines ---- */

static void test_real_dgx2(void **state)
{
	struct pm_topo *t = shared("nvidia-dgx2.xml");
	struct pm_plan p;
	(void)state;
	assert_int_equal(t->ngpus, 16);
	plan(t, 16, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 16; r++) {
		char name[32];
		const struct pm_gpu *g = &t->gpus[p.ranks[r].gpus[0]];
		/* nvml numbering follows the bus order on this machine */
		snprintf(name, sizeof(name), "nvml%d", r);
		assert_string_equal(g->name, name);
		assert_int_equal(p.ranks[r].numa, r < 8 ? 0 : 1);
		assert_home(t, &p.ranks[r]);
	}
	assert_string_equal(t->gpus[p.ranks[0].gpus[0]].busid, "0000:34:00.0");
	assert_string_equal(t->gpus[p.ranks[8].gpus[0]].busid, "0000:b7:00.0");
	pm_plan_release(&p);
	/* 2 ranks: the 8 GPUs of each socket */
	plan(t, 2, NULL, NULL, &p);
	for (int r = 0; r < 2; r++) {
		assert_int_equal(p.ranks[r].ngpus, 8);
		for (int i = 0; i < 8; i++)
			assert_int_equal(gpu_numa_os(t, p.ranks[r].gpus[i]), r);
	}
	pm_plan_release(&p);
	free(t);
}

static void test_real_2socket_mlx5(void **state)
{
	struct pm_topo *t = shared("2socket-cuda-mlx5.xml");
	struct pm_plan p;
	int cuda = -1;
	(void)state;
	plan(t, 3, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	/* the AMD display adapter is not handed out next to the Teslas */
	assert_int_equal(p.vendor, PM_VENDOR_NVIDIA);
	assert_non_null(strstr(p.notes, "AMD"));
	for (int r = 0; r < 3; r++) {
		assert_int_equal(t->gpus[p.ranks[r].gpus[0]].vendor, PM_VENDOR_NVIDIA);
		if (!strcmp(t->gpus[p.ranks[r].gpus[0]].name, "cuda0"))
			cuda = r;
		/* mlx5_0 is preferred over the Ethernet ports */
		assert_int_equal(p.ranks[r].nnics, 1);
		assert_string_equal(t->nics[p.ranks[r].nics[0]].name, "mlx5_0");
	}
	assert_true(cuda >= 0);
	/* cuda0 and mlx5_0 are behind the same bridge on socket 1 */
	assert_string_equal(t->gpus[p.ranks[cuda].gpus[0]].busid, "0000:84:00.0");
	assert_non_null(strstr(p.ranks[cuda].why, "same PCIe switch"));
	assert_int_equal(p.ranks[cuda].numa, 1);
	assert_true(pm_cpuset_subset(&p.ranks[cuda].cpus, &t->numa[1].cpus));
	pm_plan_release(&p);
	free(t);
}

static void test_real_16socket(void **state)
{
	struct pm_topo *t = shared("16socket-pci.xml");
	struct pm_plan p;
	(void)state;
	assert_int_equal(t->ngpus, 0); /* its ES1000 VGA is no GPU */
	plan(t, 4, NULL, NULL, &p);
	check_invariants(t, &p, NULL);
	for (int r = 0; r < 4; r++) {
		assert_int_equal(p.ranks[r].ncores, 24);
		assert_int_equal(p.ranks[r].nnics, 2);
		assert_int_equal(t->nics[p.ranks[r].nics[0]].numa, numa_index(t, p.ranks[r].numa));
	}
	pm_plan_release(&p);
	free(t);
}

/* ---- bind API ---- */

struct env { char names[16][32], values[16][64]; int n; bool omp_set; };

static int set_env(void *ctx, const char *name, const char *value)
{
	struct env *e = ctx;
	if (e->n == 16)
		return -1;
	snprintf(e->names[e->n], 32, "%s", name);
	snprintf(e->values[e->n++], 64, "%s", value);
	return 0;
}

static int get_env(void *ctx, const char *name, char *buf, size_t len)
{
	struct env *e = ctx;
	if (!strcmp(name, "OMP_NUM_THREADS") && e->omp_set) {
		snprintf(buf, len, "3");
		return 0;
	}
	return -1;
}

static const char *env_get(const struct env *e, const char *name)
{
	for (int i = 0; i < e->n; i++)
		if (!strcmp(e->names[i], name))
			return e->values[i];
	return NULL;
}

static void test_bind_errors(void **state)
{
	struct pm_bind_plan *bp;
	char path[4096];
	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/dgx-h100.xml", getenv("top_srcdir") ? getenv("top_srcdir") : ".");
	assert_int_equal(pm_bind_plan_node(path, PM_BIND_ALL, 0, NULL, NULL, &bp, err, sizeof(err)), -1);
	assert_null(bp);
	assert_int_equal(pm_bind_plan_node(path, PM_BIND_ALL, 2, "0-x", NULL, &bp, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0-x"));
	assert_int_equal(pm_bind_plan_node(path, PM_BIND_ALL, 2, NULL, "9", &bp, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'9'"));
	assert_int_equal(pm_bind_plan_node("/nonexistent.xml", PM_BIND_ALL, 2, NULL, NULL, &bp, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/nonexistent.xml"));
}

static void test_bind_env(void **state)
{
	struct pm_bind_plan *bp;
	struct env e = { .n = 0 };
	char path[4096], msg[512];
	(void)state;
	snprintf(path, sizeof(path), "%s/tests/data/dgx-h100.xml", getenv("top_srcdir") ? getenv("top_srcdir") : ".");
	assert_int_equal(pm_bind_plan_node(path, PM_BIND_ALL, 8, NULL, NULL, &bp, err, sizeof(err)), 0);
	assert_int_equal(pm_bind_rank_env(bp, 5, NULL, set_env, get_env, &e, msg, sizeof(msg)), 0);
	assert_string_equal(env_get(&e, "CUDA_VISIBLE_DEVICES"), "5");
	assert_string_equal(env_get(&e, "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
	assert_string_equal(env_get(&e, "NCCL_IB_HCA"), "=mlx5_5");
	assert_string_equal(env_get(&e, "UCX_NET_DEVICES"), "mlx5_5:1");
	assert_string_equal(env_get(&e, "OMP_NUM_THREADS"), "14");
	assert_null(env_get(&e, "NCCL_SOCKET_IFNAME"));
	/* an IB HCA is no interface for gloo */
	assert_null(env_get(&e, "GLOO_SOCKET_IFNAME"));
	/* the user's OMP_NUM_THREADS wins */
	memset(&e, 0, sizeof(e));
	e.omp_set = true;
	msg[0] = '\0';
	assert_int_equal(pm_bind_rank_env(bp, 0, NULL, set_env, get_env, &e, msg, sizeof(msg)), 0);
	assert_null(env_get(&e, "OMP_NUM_THREADS"));
	assert_non_null(strstr(msg, "OMP_NUM_THREADS"));
	pm_bind_plan_free(bp);
	/* --bind gpu: no NIC variables */
	memset(&e, 0, sizeof(e));
	assert_int_equal(pm_bind_plan_node(path, PM_BIND_GPU, 8, NULL, NULL, &bp, err, sizeof(err)), 0);
	assert_int_equal(pm_bind_rank_env(bp, 0, NULL, set_env, get_env, &e, msg, sizeof(msg)), 0);
	assert_non_null(env_get(&e, "CUDA_VISIBLE_DEVICES"));
	assert_null(env_get(&e, "NCCL_IB_HCA"));
	assert_null(env_get(&e, "OMP_NUM_THREADS"));
	/* a rank outside the plan */
	assert_int_equal(pm_bind_apply_rank(bp, 8, set_env, get_env, &e, msg, sizeof(msg)), -1);
	assert_non_null(strstr(msg, "8"));
	pm_bind_plan_free(bp);
	pm_bind_plan_free(NULL);
	/* Ethernet: NCCL by exact name, gloo by the plain name, the same NIC */
	snprintf(path, sizeof(path), "%s/tests/data/4gpu-amd.xml", getenv("top_srcdir") ? getenv("top_srcdir") : ".");
	memset(&e, 0, sizeof(e));
	assert_int_equal(pm_bind_plan_node(path, PM_BIND_ALL, 4, NULL, NULL, &bp, err, sizeof(err)), 0);
	assert_int_equal(pm_bind_rank_env(bp, 3, NULL, set_env, get_env, &e, msg, sizeof(msg)), 0);
	assert_non_null(env_get(&e, "NCCL_SOCKET_IFNAME"));
	assert_non_null(env_get(&e, "GLOO_SOCKET_IFNAME"));
	assert_string_equal(env_get(&e, "NCCL_SOCKET_IFNAME") + 1, env_get(&e, "GLOO_SOCKET_IFNAME"));
	assert_true(!strcmp(env_get(&e, "GLOO_SOCKET_IFNAME"), "ens0f0") ||
		    !strcmp(env_get(&e, "GLOO_SOCKET_IFNAME"), "ens1f0"));
	assert_null(env_get(&e, "NCCL_IB_HCA"));
	pm_bind_plan_free(bp);
}

/* Apply a live plan in a child: its affinity only ever narrows. */
static void test_bind_apply_live(void **state)
{
	struct pm_bind_plan *bp;
	int status;
	pid_t pid;
	(void)state;
	if (pm_bind_plan_node(NULL, PM_BIND_CPU | PM_BIND_MEM, 1, NULL, NULL, &bp, err, sizeof(err))) {
		printf("skipped: no live topology here: %s\n", err);
		skip();
	}
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		cpu_set_t before, after;
		struct env e = { .n = 0 };
		char msg[512];
		sched_getaffinity(0, sizeof(before), &before);
		if (pm_bind_apply_rank(bp, 0, set_env, get_env, &e, msg, sizeof(msg))) {
			fprintf(stderr, "apply: %s\n", msg);
			_exit(1);
		}
		sched_getaffinity(0, sizeof(after), &after);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &after) && !CPU_ISSET(c, &before))
				_exit(2); /* widened */
		_exit(env_get(&e, "OMP_NUM_THREADS") && CPU_COUNT(&after) > 0 ? 0 : 3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	pm_bind_plan_free(bp);
}

/* The plugin's topology cache: this machine exported, then loaded from
 * the file, is the model live discovery gives. */
static void test_topo_export_round_trip(void **state)
{
	struct pm_topo *live = malloc(sizeof(*live)), *file = malloc(sizeof(*file));
	char path[] = "/tmp/pm-test-topo.XXXXXX";
	int fd = mkstemp(path);
	(void)state;

	assert_non_null(live);
	char *xml = NULL;
	size_t len = 0;

	assert_non_null(file);
	assert_true(fd >= 0);
	if (pm_topo_load(live, NULL, err, sizeof(err))) {
		close(fd);
		printf("skipped: no live topology here: %s\n", err);
		unlink(path);
		free(live);
		free(file);
		skip();
	}
	assert_int_equal(pm_topo_export_xml(&xml, &len, err, sizeof(err)), 0);
	assert_true(len > 0 && strlen(xml) == len);
	assert_int_equal(write(fd, xml, len), (ssize_t)len);
	close(fd);
	free(xml);
	assert_int_equal(pm_topo_load(file, path, err, sizeof(err)), 0);
	assert_int_equal(file->npackages, live->npackages);
	assert_int_equal(file->nnuma, live->nnuma);
	assert_int_equal(file->ngpus, live->ngpus);
	assert_int_equal(file->nnics, live->nnics);
	assert_int_equal(pm_cpuset_count(&file->cpus), pm_cpuset_count(&live->cpus));
	for (int i = 0; i < live->ngpus; i++)
		assert_string_equal(file->gpus[i].busid, live->gpus[i].busid);
	for (int i = 0; i < live->nnics; i++)
		assert_string_equal(file->nics[i].busid, live->nics[i].busid);
	unlink(path);
	free(live);
	free(file);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpuset_lists),
		cmocka_unit_test(test_model_one_gpu_per_rank),
		cmocka_unit_test(test_model_two_ranks_spread),
		cmocka_unit_test(test_model_sharing_rule),
		cmocka_unit_test(test_model_visible_gpus),
		cmocka_unit_test(test_model_partial_cpus),
		cmocka_unit_test(test_model_more_ranks_than_cpus),
		cmocka_unit_test(test_dgx_h100),
		cmocka_unit_test(test_dgx_h100_partial_step),
		cmocka_unit_test(test_4gpu_amd),
		cmocka_unit_test(test_uneven),
		cmocka_unit_test(test_nogpu),
		cmocka_unit_test(test_real_dgx2),
		cmocka_unit_test(test_real_2socket_mlx5),
		cmocka_unit_test(test_real_16socket),
		cmocka_unit_test(test_bind_errors),
		cmocka_unit_test(test_bind_env),
		cmocka_unit_test(test_bind_apply_live),
		cmocka_unit_test(test_topo_export_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
