#include "topology.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PCI_VENDOR_NVIDIA 0x10de
#define PCI_VENDOR_AMD 0x1002
#define PCI_VENDOR_INTEL 0x8086

static int to_cpuset(hwloc_const_bitmap_t b, struct pm_cpuset *s)
{
	int i, bad = 0;

	pm_cpuset_zero(s);
	hwloc_bitmap_foreach_begin(i, b) {
		if (i >= PM_MAX_CPUS)
			bad = 1;
		else
			pm_cpuset_set(s, i);
	} hwloc_bitmap_foreach_end();
	return bad ? -1 : 0;
}

static int numa_of_os(const struct pm_topo *t, unsigned os)
{
	for (int i = 0; i < t->nnuma; i++)
		if ((unsigned)t->numa[i].os_index == os)
			return i;
	return -1;
}

/* The NUMA node an I/O device is local to: the first memory node of its
 * first non-I/O ancestor. */
static int io_numa(hwloc_topology_t topo, const struct pm_topo *t, hwloc_obj_t obj)
{
	hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, obj);
	int os;

	/* Attached to the whole machine of a multi-node box: no locality. */
	if (!a || !a->nodeset || hwloc_bitmap_iszero(a->nodeset) ||
	    (a->type == HWLOC_OBJ_MACHINE && t->nnuma > 1))
		return -1;
	os = hwloc_bitmap_first(a->nodeset);
	return os < 0 ? -1 : numa_of_os(t, (unsigned)os);
}

static void pci_path(hwloc_obj_t obj, struct pm_pci_path *p)
{
	int ids[64], n = 0;

	/* A bridge's secondary bus number is unique in its PCI domain and
	 * sorts the tree in bus id order. */
	for (hwloc_obj_t o = obj->parent; o && o->type == HWLOC_OBJ_BRIDGE && n < 64; o = o->parent)
		ids[n++] = (int)(o->attr->bridge.downstream.pci.domain << 8 |
				 o->attr->bridge.downstream.pci.secondary_bus);
	/* Keep the top of the tree: that is what decides "same switch". */
	p->depth = n < PM_PCI_DEPTH ? n : PM_PCI_DEPTH;
	for (int i = 0; i < p->depth; i++)
		p->id[i] = ids[n - 1 - i];
}

static void busid(hwloc_obj_t obj, char *buf, size_t len)
{
	struct hwloc_pcidev_attr_s *a = &obj->attr->pcidev;
	snprintf(buf, len, "%04x:%02x:%02x.%01x", a->domain, a->bus, a->dev, a->func);
}

static bool compute_osdev(hwloc_obj_t o)
{
	if (o->attr->osdev.type == HWLOC_OBJ_OSDEV_COPROC)
		return true;
	/* Exports from newer hwloc use osdev type numbers this one does not
	 * know; the vendor libraries' names still say what it is. */
	if (!strncmp(o->name, "nvml", 4) || !strncmp(o->name, "rsmi", 4) ||
	    !strncmp(o->name, "cuda", 4))
		return true;
	/* GPU OS devices include DRM "card0"/"renderD128" of any display
	 * adapter; only the vendors' management libraries mean compute. */
	return o->attr->osdev.type == HWLOC_OBJ_OSDEV_GPU &&
	       (!strncmp(o->name, "nvml", 4) || !strncmp(o->name, "rsmi", 4) ||
		(o->subtype && (!strcmp(o->subtype, "NVML") || !strcmp(o->subtype, "RSMI") ||
				!strcmp(o->subtype, "LevelZero"))));
}

/* Without a compute OS device (no CUDA/NVML/ROCm in hwloc, or an XML
 * export without them) the PCI class decides. Servers' on-board display
 * adapters are VGA-class (0x0300) AMD/ATI chips (ES1000) or Matrox: so an
 * AMD VGA device counts only with a compute OS device; NVIDIA VGA-class
 * devices are GeForce/RTX/Quadro cards, which compute. AMD Instinct cards
 * are display (0x0380) or processing-accelerator (0x1200) class. */
static bool is_gpu_class(unsigned vendor, unsigned cls)
{
	if (vendor == PCI_VENDOR_NVIDIA)
		return cls == 0x0300 || cls == 0x0302;
	if (vendor == PCI_VENDOR_AMD)
		return cls == 0x0302 || cls == 0x0380 || cls == 0x1200;
	return false;
}

static int add_pcidev(hwloc_topology_t topo, struct pm_topo *t, hwloc_obj_t pci,
		      char *err, size_t errlen)
{
	struct hwloc_pcidev_attr_s *a = &pci->attr->pcidev;
	hwloc_obj_t gpu_os = NULL, ib = NULL, net = NULL;
	bool gpu;

	for (hwloc_obj_t o = pci->io_first_child; o; o = o->next_sibling) {
		if (o->type != HWLOC_OBJ_OS_DEVICE || !o->name)
			continue;
		if (!gpu_os && compute_osdev(o))
			gpu_os = o;
		else if (!ib && o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
			ib = o;
		else if (!net && o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK)
			net = o;
	}
	gpu = gpu_os || is_gpu_class(a->vendor_id, a->class_id);
	if (gpu) {
		struct pm_gpu *g;
		if (t->ngpus == PM_MAX_GPUS) {
			snprintf(err, errlen, "more than %d GPUs on this node: procmgr plans for at most %d",
				 PM_MAX_GPUS, PM_MAX_GPUS);
			return -1;
		}
		g = &t->gpus[t->ngpus++];
		busid(pci, g->busid, sizeof(g->busid));
		snprintf(g->name, sizeof(g->name), "%s", gpu_os ? gpu_os->name : "");
		g->vendor = a->vendor_id == PCI_VENDOR_NVIDIA ? PM_VENDOR_NVIDIA :
			    a->vendor_id == PCI_VENDOR_AMD ? PM_VENDOR_AMD :
			    a->vendor_id == PCI_VENDOR_INTEL ? PM_VENDOR_INTEL : PM_VENDOR_OTHER;
		g->numa = io_numa(topo, t, pci);
		pci_path(pci, &g->pci);
	} else if (ib || net) {
		struct pm_nic *n;
		if (t->nnics == PM_MAX_NICS) {
			snprintf(err, errlen, "more than %d NICs on this node: procmgr plans for at most %d",
				 PM_MAX_NICS, PM_MAX_NICS);
			return -1;
		}
		n = &t->nics[t->nnics++];
		n->kind = ib ? PM_NIC_IB : PM_NIC_ETH;
		snprintf(n->name, sizeof(n->name), "%s", ib ? ib->name : net->name);
		snprintf(n->netdev, sizeof(n->netdev), "%s", net ? net->name : "");
		busid(pci, n->busid, sizeof(n->busid));
		n->numa = io_numa(topo, t, pci);
		pci_path(pci, &n->pci);
	}
	return 0;
}

static int fill(hwloc_topology_t topo, struct pm_topo *t, const char *what,
		char *err, size_t errlen)
{
	int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
	hwloc_obj_t o;

	t->npackages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
	if (nn > PM_MAX_NUMA) {
		snprintf(err, errlen, "%s: %d NUMA nodes, procmgr plans for at most %d",
			 what, nn, PM_MAX_NUMA);
		return -1;
	}
	for (int i = 0; i < nn; i++) {
		struct pm_numa *m = &t->numa[t->nnuma];
		hwloc_obj_t pu;
		o = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
		m->os_index = (int)o->os_index;
		if (m->os_index >= PM_MAX_NUMA) {
			snprintf(err, errlen, "%s: NUMA node number %d is too large (at most %d)",
				 what, m->os_index, PM_MAX_NUMA - 1);
			return -1;
		}
		if (to_cpuset(o->cpuset, &m->cpus)) {
			snprintf(err, errlen, "%s: cpu numbers of %d or more are not supported",
				 what, PM_MAX_CPUS);
			return -1;
		}
		pu = hwloc_get_obj_inside_cpuset_by_type(topo, o->cpuset, HWLOC_OBJ_PU, 0);
		o = pu ? hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, pu) : NULL;
		m->package = o ? (int)o->logical_index : -1;
		t->nnuma++;
	}
	for (o = NULL; (o = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PU, o));) {
		hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_CORE, o);
		int c = (int)o->os_index;
		if (c >= PM_MAX_CPUS) {
			snprintf(err, errlen, "%s: cpu number %d is too large (at most %d)",
				 what, c, PM_MAX_CPUS - 1);
			return -1;
		}
		pm_cpuset_set(&t->cpus, c);
		/* A PU without a core object is a core of its own: numbers
		 * above every logical core index keep them apart. */
		t->cpu_core[c] = core ? (int)core->logical_index : PM_MAX_CPUS + c;
		for (int i = 0; i < t->nnuma; i++)
			if (pm_cpuset_isset(&t->numa[i].cpus, c))
				t->cpu_numa[c] = i;
	}
	for (o = NULL; (o = hwloc_get_next_pcidev(topo, o));)
		if (add_pcidev(topo, t, o, err, errlen))
			return -1;
	pm_topo_finish(t);
	return 0;
}

/* The settings every load shares, live or from XML. */
static int configure(hwloc_topology_t topo, char *err, size_t errlen)
{
	/* On Linux the sysfs backend already finds every PCI device; the
	 * libpciaccess component only repeats the walk (and leaks ~1 KiB per
	 * load). It lives in Debian's libhwloc-plugins, a mere recommendation:
	 * where it is not installed hwloc does not know the name (EINVAL) and
	 * there is nothing to turn off. */
	if (hwloc_topology_set_components(topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci") &&
	    errno != EINVAL) {
		snprintf(err, errlen, "hwloc_topology_set_components: %s", strerror(errno));
		return -1;
	}
	/* GPUs, NICs and the bridges above them; no virtual devices. */
	hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	return 0;
}

int pm_topo_load(struct pm_topo *t, const char *xml, char *err, size_t errlen)
{
	hwloc_topology_t topo;
	const char *what = xml && *xml ? xml : "this machine's topology";
	int rc = -1;

	pm_topo_init(t);
	if (hwloc_topology_init(&topo)) {
		snprintf(err, errlen, "hwloc_topology_init: %s", strerror(errno));
		return -1;
	}
	if (xml && *xml && hwloc_topology_set_xml(topo, xml)) {
		snprintf(err, errlen, "cannot read topology file %s: %s", xml, strerror(errno));
		goto out;
	}
	if (configure(topo, err, errlen))
		goto out;
	if (hwloc_topology_load(topo)) {
		snprintf(err, errlen, "cannot load %s with hwloc: %s%s", what, strerror(errno),
			 xml && *xml ? " (is it an hwloc XML export?)" : "");
		goto out;
	}
	rc = fill(topo, t, what, err, errlen);
out:
	hwloc_topology_destroy(topo);
	return rc;
}

int pm_topo_export_xml(char **xml, size_t *len, char *err, size_t errlen)
{
	hwloc_topology_t topo;
	char *buf = NULL;
	int rc = -1, n = 0;

	*xml = NULL;
	*len = 0;
	if (hwloc_topology_init(&topo)) {
		snprintf(err, errlen, "hwloc_topology_init: %s", strerror(errno));
		return -1;
	}
	if (configure(topo, err, errlen))
		goto out;
	/* The first step's cgroup is not the next one's: keep what this
	 * process may not use, and mark it allowed in the file. */
	hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
	if (hwloc_topology_load(topo) ||
	    hwloc_topology_allow(topo, NULL, NULL, HWLOC_ALLOW_FLAG_ALL)) {
		snprintf(err, errlen, "cannot load this machine's topology with hwloc: %s",
			 strerror(errno));
		goto out;
	}
	/* In memory: the caller writes it where and as it safely can (root
	 * in state_dir), not hwloc by a name. */
	if (hwloc_topology_export_xmlbuffer(topo, &buf, &n, 0) || n <= 0) {
		snprintf(err, errlen, "cannot export this machine's topology as XML: %s",
			 strerror(errno));
		goto out;
	}
	*xml = malloc((size_t)n);
	if (!*xml) {
		snprintf(err, errlen, "cannot allocate %d bytes: %s", n, strerror(errno));
		goto out;
	}
	/* n counts the final NUL, which is no part of the file. */
	memcpy(*xml, buf, (size_t)n);
	*len = (size_t)n - 1;
	rc = 0;
out:
	if (buf)
		hwloc_free_xmlbuffer(topo, buf);
	hwloc_topology_destroy(topo);
	return rc;
}
