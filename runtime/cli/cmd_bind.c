/* procmgr bind --explain: the affinity plan of each local rank, and why,
 * without binding anything. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "affinity/affinity.h"
#include "affinity/bind.h"
#include "cmd.h"
#include "common/options.h"
#include "common/text.h"

#define USAGE \
	"usage: procmgr bind --explain [--topology FILE] [--tasks N] [--gpus LIST]\n" \
	"                    [--cpus LIST] [--bind LIST] [--json]\n" \
	"  --topology FILE  hwloc XML export of the node (default: discover this machine)\n" \
	"  --tasks N        local ranks (default: one per usable GPU, else one per NUMA node)\n" \
	"  --gpus LIST      GPUs the step may use, as in CUDA_VISIBLE_DEVICES (default: all)\n" \
	"  --cpus LIST      cpus the step may use, such as 0-7,16-23 (default: all)\n" \
	"  --bind LIST      none, closest, or a list of gpu,nic,cpu,mem,mem-strict (default: closest)\n" \
	"  --json           one JSON array, an object per rank\n"

static int usage_error(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "procmgr bind: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\n%s", USAGE);
	return 2;
}

struct env_list {
	char text[4096];
	size_t off;
	bool json;
};

static int collect_env(void *ctx, const char *name, const char *value)
{
	struct env_list *e = ctx;
	char esc[2048];
	int n;

	if (e->json) {
		/* Values come from the topology (device names): escaped all the same. */
		pm_json_escape(value, esc, sizeof(esc));
		n = snprintf(e->text + e->off, sizeof(e->text) - e->off, "%s\"%s\":\"%s\"",
			     e->off ? "," : "", name, esc);
	} else {
		n = snprintf(e->text + e->off, sizeof(e->text) - e->off, "%s%s=%s",
			     e->off ? " " : "", name, value);
	}
	if (n < 0 || (size_t)n >= sizeof(e->text) - e->off)
		return -1;
	e->off += (size_t)n;
	return 0;
}

/* Default task count: what a user would most often run on this node. */
static int default_tasks(const char *xml, const char *cpus, const char *gpus, char *err, size_t errlen)
{
	struct pm_bind_plan *bp;
	const struct pm_plan *p;
	const struct pm_topo *t;
	int n = 0;

	if (pm_bind_plan_node(xml, PM_BIND_ALL, 1, cpus, gpus, &bp, err, errlen))
		return -1;
	p = pm_bind_plan_get(bp);
	t = pm_bind_plan_topo(bp);
	if (p->vendor != PM_VENDOR_OTHER) {
		struct pm_alloc a;
		a.ntasks = 1;
		pm_alloc_parse_gpus(&a, t, gpus, err, errlen);
		for (int g = 0; g < t->ngpus; g++)
			n += (a.gpus_all || a.gpu_ok[g]) && t->gpus[g].vendor == p->vendor;
	} else {
		struct pm_cpuset all;
		if (!cpus || pm_cpuset_parse(&all, cpus))
			all = t->cpus;
		for (int d = 0; d < t->nnuma; d++) {
			struct pm_cpuset s = t->numa[d].cpus;
			pm_cpuset_and(&s, &all);
			n += pm_cpuset_first(&s) >= 0;
		}
	}
	pm_bind_plan_free(bp);
	return n > 0 ? n : 1;
}

static void print_text(const struct pm_bind_plan *bp, unsigned what, const char *xml,
		       const char *cpus, const char *gpus)
{
	const struct pm_plan *p = pm_bind_plan_get(bp);
	const struct pm_topo *t = pm_bind_plan_topo(bp);
	char list[1024], bind[64];
	int nib = 0;

	for (int n = 0; n < t->nnics; n++)
		nib += t->nics[n].kind == PM_NIC_IB;
	pm_cpuset_format(&t->cpus, list, sizeof(list));
	pm_format_bind(what, bind, sizeof(bind));
	printf("node: %s: %d package%s, %d NUMA node%s, %d GPU%s, %d NIC%s (%d InfiniBand/RoCE), cpus %s\n",
	       xml ? xml : "this machine", t->npackages, t->npackages == 1 ? "" : "s",
	       t->nnuma, t->nnuma == 1 ? "" : "s", t->ngpus, t->ngpus == 1 ? "" : "s",
	       t->nnics, t->nnics == 1 ? "" : "s", nib, list);
	printf("step: %d local task%s, cpus %s, GPUs %s, binding %s\n", p->nranks,
	       p->nranks == 1 ? "" : "s", cpus ? cpus : "all", gpus ? gpus : "all", bind);
	for (int r = 0; r < p->nranks; r++) {
		const struct pm_rank_plan *rp = &p->ranks[r];
		struct env_list e = { .off = 0, .json = false };
		char msg[256] = "", mems[128];

		printf("rank %d:", r);
		if (rp->ngpus) {
			printf(" GPU%s", rp->ngpus == 1 ? "" : "s");
			for (int i = 0; i < rp->ngpus; i++)
				printf("%s%d (%s)", i ? ", " : " ", pm_topo_gpu_index(t, rp->gpus[i]),
				       t->gpus[rp->gpus[i]].busid);
			printf(";");
		}
		if (rp->nnics) {
			printf(" NIC");
			for (int i = 0; i < rp->nnics; i++)
				printf("%s%s", i ? "," : " ", t->nics[rp->nics[i]].name);
			printf(";");
		}
		pm_cpuset_format(&rp->cpus, list, sizeof(list));
		pm_nodemask_format(rp->mems, mems, sizeof(mems));
		printf(" cpus %s (%d core%s); memory NUMA %s%s\n", list, rp->ncores,
		       rp->ncores == 1 ? "" : "s", mems,
		       (what & PM_BIND_MEM_STRICT) ? " (strict)" : (what & PM_BIND_MEM) ? " (preferred)" : "");
		pm_bind_rank_env(bp, r, NULL, collect_env, NULL, &e, msg, sizeof(msg));
		printf("  env: %s\n", e.off ? e.text : "(none)");
		printf("  why: %s\n", rp->why);
	}
	if (p->notes[0])
		printf("note: %s\n", p->notes);
	if (what != PM_BIND_ALL && what != (PM_BIND_ALL | PM_BIND_MEM_STRICT))
		printf("note: only %s is applied (--bind %s)\n", bind, bind);
}

static void print_json(const struct pm_bind_plan *bp)
{
	const struct pm_plan *p = pm_bind_plan_get(bp);
	const struct pm_topo *t = pm_bind_plan_topo(bp);

	printf("[");
	for (int r = 0; r < p->nranks; r++) {
		const struct pm_rank_plan *rp = &p->ranks[r];
		struct env_list e = { .off = 0, .json = true };
		char list[1024], msg[256] = "";

		printf("%s\n  {\"rank\": %d, \"gpus\": [", r ? "," : "", r);
		for (int i = 0; i < rp->ngpus; i++)
			printf("%s%d", i ? ", " : "", pm_topo_gpu_index(t, rp->gpus[i]));
		printf("], \"gpu_pci\": [");
		for (int i = 0; i < rp->ngpus; i++)
			printf("%s\"%s\"", i ? ", " : "", t->gpus[rp->gpus[i]].busid);
		printf("], \"nics\": [");
		for (int i = 0; i < rp->nnics; i++) {
			printf("%s", i ? ", " : "");
			pm_json_print(stdout, t->nics[rp->nics[i]].name);
		}
		pm_cpuset_format(&rp->cpus, list, sizeof(list));
		printf("], \"cpus\": \"%s\", \"cores\": %d, \"numa\": %d, ", list, rp->ncores, rp->numa);
		pm_nodemask_format(rp->mems, list, sizeof(list));
		printf("\"mems\": \"%s\", ", list);
		pm_bind_rank_env(bp, r, NULL, collect_env, NULL, &e, msg, sizeof(msg));
		printf("\"env\": {%s}, \"why\": ", e.text);
		pm_json_print(stdout, rp->why);
		printf("}");
	}
	printf("\n]\n");
}

int pm_cmd_bind(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "explain", no_argument, NULL, 'e' },
		{ "topology", required_argument, NULL, 't' },
		{ "tasks", required_argument, NULL, 'n' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "cpus", required_argument, NULL, 'c' },
		{ "bind", required_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *xml = NULL, *gpus = NULL, *cpus = NULL;
	unsigned what = PM_BIND_ALL, ntasks = 0;
	bool explain = false, json = false;
	struct pm_bind_plan *bp;
	struct pm_cpuset check;
	char err[PM_ERRLEN];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'e': explain = true; break;
		case 'j': json = true; break;
		case 't': xml = optarg; break;
		case 'g': gpus = optarg; break;
		case 'c':
			if (pm_cpuset_parse(&check, optarg))
				return usage_error("invalid value '%s' for --cpus: expected a cpu list such as 0-7,16-23 (cpu numbers below %s)",
						   optarg, "4096");
			cpus = optarg;
			break;
		case 'n':
			if (pm_parse_uint(optarg, 1, PM_MAX_CPUS, &ntasks))
				return usage_error("invalid value '%s' for --tasks: expected a whole number from 1 to %s",
						   optarg, "4096");
			break;
		case 'b':
			if (pm_parse_bind(optarg, &what))
				return usage_error("invalid value '%s' for --bind: expected none, closest, or a comma-separated list of gpu,nic,cpu,mem,mem-strict%s",
						   optarg, "");
			break;
		case 'h':
			printf("%s", USAGE);
			return 0;
		case ':':
			return usage_error("%s needs a value%s", argv[optind - 1], "");
		default:
			return usage_error("unknown argument '%s'%s", argv[optind - 1], "");
		}
	}
	if (optind < argc)
		return usage_error("unexpected argument '%s'%s", argv[optind], "");
	if (!explain)
		return usage_error("nothing to do: bind only explains (--explain)%s%s", "", "");
	if (!ntasks) {
		int n = default_tasks(xml, cpus, gpus, err, sizeof(err));
		if (n < 0) {
			fprintf(stderr, "procmgr bind: %s%s\n", strncmp(err, "GPU '", 5) ? "" : "invalid value for --gpus: ", err);
			return strncmp(err, "GPU '", 5) ? 1 : 2;
		}
		ntasks = (unsigned)n;
	}
	if (pm_bind_plan_node(xml, what, (int)ntasks, cpus, gpus, &bp, err, sizeof(err))) {
		/* A GPU list that names no GPU of the node is a usage error. */
		if (!strncmp(err, "GPU '", 5)) {
			fprintf(stderr, "procmgr bind: invalid value '%s' for --gpus: %s\n", gpus, err);
			return 2;
		}
		fprintf(stderr, "procmgr bind: %s\n", err);
		return 1;
	}
	if (json)
		print_json(bp);
	else
		print_text(bp, what, xml, cpus, gpus);
	pm_bind_plan_free(bp);
	return 0;
}
