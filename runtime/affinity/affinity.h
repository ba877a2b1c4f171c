/* Affinity planner: node model + allocation -> one plan per local rank.
 * Pure logic: no hwloc, no system calls. topology.c fills the model from
 * hwloc, bind.c applies a plan, the tests build models by hand. The rules
 * are described in docs/affinity.md. */
#ifndef PM_AFFINITY_H
#define PM_AFFINITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PM_MAX_CPUS 4096 /* OS cpu numbers 0..PM_MAX_CPUS-1 */
#define PM_MAX_NUMA 64   /* NUMA nodes: a rank's memory nodes fit a uint64_t */
#define PM_MAX_GPUS 64
#define PM_MAX_NICS 64
#define PM_PCI_DEPTH 16  /* PCI bridges between a host bridge and a device */
#define PM_WHY_LEN 512

/* A set of OS cpu numbers. */
struct pm_cpuset {
	uint64_t w[PM_MAX_CPUS / 64];
};

void pm_cpuset_zero(struct pm_cpuset *s);
void pm_cpuset_set(struct pm_cpuset *s, int cpu);
bool pm_cpuset_isset(const struct pm_cpuset *s, int cpu);
int pm_cpuset_count(const struct pm_cpuset *s);
int pm_cpuset_first(const struct pm_cpuset *s); /* -1 when empty */
int pm_cpuset_next(const struct pm_cpuset *s, int prev); /* -1 at the end */
void pm_cpuset_and(struct pm_cpuset *d, const struct pm_cpuset *a);
void pm_cpuset_or(struct pm_cpuset *d, const struct pm_cpuset *a);
bool pm_cpuset_equal(const struct pm_cpuset *a, const struct pm_cpuset *b);
bool pm_cpuset_subset(const struct pm_cpuset *a, const struct pm_cpuset *b); /* a in b */
/* "0-7,16-23" <-> set. Parsing fails on anything else, on an empty list
 * and on cpu numbers >= PM_MAX_CPUS. */
int pm_cpuset_parse(struct pm_cpuset *s, const char *list);
int pm_cpuset_format(const struct pm_cpuset *s, char *buf, size_t len);
/* Same list syntax for NUMA node numbers (< PM_MAX_NUMA). */
int pm_nodemask_format(uint64_t mask, char *buf, size_t len);

enum pm_vendor { PM_VENDOR_OTHER = 0, PM_VENDOR_NVIDIA, PM_VENDOR_AMD, PM_VENDOR_INTEL };
enum pm_nic_kind { PM_NIC_ETH = 0, PM_NIC_IB };

/* Where a device sits in the PCI tree: the ids of the bridges above it,
 * path[0] being its host bridge. Two devices that share path[0..1] hang
 * below the same root port, i.e. behind the same PCIe switch. */
struct pm_pci_path {
	int depth;
	int id[PM_PCI_DEPTH];
};

struct pm_numa {
	int os_index;
	int package; /* logical package number; -1 unknown */
	struct pm_cpuset cpus;
};

struct pm_gpu {
	char busid[16]; /* "0000:34:00.0" */
	char name[32];  /* OS device ("cuda0", "nvml3"), or "" */
	enum pm_vendor vendor;
	int numa;       /* index into pm_topo.numa, -1 unknown */
	struct pm_pci_path pci;
};

struct pm_nic {
	char name[32];   /* "mlx5_0" for IB/RoCE HCAs, the interface otherwise */
	char netdev[32]; /* "ib0", "eth0", or "" */
	char busid[16];
	enum pm_nic_kind kind;
	int numa;
	struct pm_pci_path pci;
};

/* The node. cpu_core and cpu_numa map an OS cpu number to the logical
 * core and to the index in numa[] (-1: no such cpu). */
struct pm_topo {
	int npackages;
	int nnuma;
	struct pm_numa numa[PM_MAX_NUMA];
	int ngpus; /* sorted by PCI bus id */
	struct pm_gpu gpus[PM_MAX_GPUS];
	int nnics;
	struct pm_nic nics[PM_MAX_NICS];
	struct pm_cpuset cpus; /* every cpu of the node */
	int cpu_core[PM_MAX_CPUS];
	int cpu_numa[PM_MAX_CPUS];
};

void pm_topo_init(struct pm_topo *t);
/* Sorts GPUs by bus id. Call once the model is filled in. */
void pm_topo_finish(struct pm_topo *t);
/* A GPU's index in its vendor's numbering (CUDA_VISIBLE_DEVICES with
 * CUDA_DEVICE_ORDER=PCI_BUS_ID, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK). */
int pm_topo_gpu_index(const struct pm_topo *t, int gpu);

/* What the step may use. */
struct pm_alloc {
	int ntasks;              /* local ranks */
	struct pm_cpuset cpus;   /* allowed cpus */
	bool gpus_all;           /* true: every GPU of the node */
	bool gpu_ok[PM_MAX_GPUS]; /* else: which of topo->gpus */
};

/* Parse a CUDA_VISIBLE_DEVICES-style list into a->gpu_ok: entries are GPU
 * indices in the vendor's PCI-bus-id numbering, or PCI bus ids
 * ("0000:3b:00.0" or "3b:00.0"). "" or NULL means every GPU. */
int pm_alloc_parse_gpus(struct pm_alloc *a, const struct pm_topo *t,
			const char *list, char *err, size_t errlen);

struct pm_rank_plan {
	int ngpus;
	int gpus[PM_MAX_GPUS]; /* indices into topo->gpus */
	int nnics;
	int nics[PM_MAX_NICS]; /* indices into topo->nics */
	struct pm_cpuset cpus;
	int ncores;            /* cores (or lone cpus) in cpus */
	int numa;              /* OS index of the home NUMA node; -1 none */
	uint64_t mems;         /* OS indices of the memory nodes */
	bool shared_cpus;      /* more ranks than cpus: cpus shared */
	char why[PM_WHY_LEN];
};

struct pm_plan {
	int nranks;
	enum pm_vendor vendor; /* of the GPUs handed out; OTHER: none */
	struct pm_rank_plan *ranks;
	char notes[PM_WHY_LEN]; /* node-wide remarks (unused GPUs, ...) */
};

/* Compute the plan. Fails, with the reason in err, only when the request
 * cannot be met at all (no task, no allowed cpu on the node). */
int pm_plan_compute(const struct pm_topo *t, const struct pm_alloc *a,
		    struct pm_plan *p, char *err, size_t errlen);
void pm_plan_release(struct pm_plan *p);

#endif
