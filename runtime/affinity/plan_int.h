/* What the planner's files share (affinity.h is the module's API). */
#ifndef PM_PLAN_INT_H
#define PM_PLAN_INT_H

#include "affinity.h"

/* A slot per package for counting ranks; unknown packages share the last. */
#define PM_NPKGSLOT 257

/* A decimal number at *p, at most max; *p moves past it. */
int pm_parse_index(const char **p, long max, long *out);

int pm_numa_package(const struct pm_topo *t, int numa);
int pm_pkg_slot(const struct pm_topo *t, int numa);
int pm_numa_os(const struct pm_topo *t, int numa);
/* Length of the PCI path two devices share; their order in the PCI tree. */
int pm_path_common(const struct pm_pci_path *a, const struct pm_pci_path *b);
int pm_path_cmp(const struct pm_pci_path *a, const struct pm_pci_path *b);

/* nics.c */
enum pm_nic_kind pm_nic_kind_preferred(const struct pm_topo *t);
const char *pm_nic_closeness(int score);
void pm_gpu_nics(const struct pm_topo *t, enum pm_vendor v, uint64_t nicmask[], int score[]);

/* cpus.c */
void pm_whyf(struct pm_rank_plan *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void pm_notef(struct pm_plan *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool pm_has_allowed(const struct pm_topo *t, const struct pm_cpuset *allowed, int d);
int pm_fallback_domain(const struct pm_topo *t, const struct pm_cpuset *allowed, int want,
		       const int load[]);
void pm_split_by_domain(const struct pm_topo *t, const struct pm_cpuset *allowed,
			struct pm_plan *p, const int dom[]);

/* gpus.c: u[] the G usable GPUs of the step's vendor. */
void pm_plan_gpus(const struct pm_topo *t, const struct pm_cpuset *allowed, struct pm_plan *p,
		  int *u, int G);

#endif
