/* The node model the planner works on: GPUs in bus order, and the GPUs
 * the step may use. Pure. */
#include "plan_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
			if (pm_parse_index(&p, PM_MAX_GPUS, &idx) || *p) {
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

/* ---- places in the machine, for the planner ---- */

int pm_numa_package(const struct pm_topo *t, int numa)
{
	return numa < 0 ? 1 << 20 : t->numa[numa].package;
}

int pm_pkg_slot(const struct pm_topo *t, int numa)
{
	int pk = pm_numa_package(t, numa);
	return pk >= 0 && pk < PM_NPKGSLOT - 1 ? pk : PM_NPKGSLOT - 1;
}

int pm_numa_os(const struct pm_topo *t, int numa)
{
	return numa < 0 ? -1 : t->numa[numa].os_index;
}

int pm_path_common(const struct pm_pci_path *a, const struct pm_pci_path *b)
{
	int n = 0;
	while (n < a->depth && n < b->depth && a->id[n] == b->id[n])
		n++;
	return n;
}

int pm_path_cmp(const struct pm_pci_path *a, const struct pm_pci_path *b)
{
	int n = pm_path_common(a, b);
	if (n < a->depth && n < b->depth)
		return a->id[n] < b->id[n] ? -1 : 1;
	return a->depth - b->depth;
}
