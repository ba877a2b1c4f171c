/* pm-sim's command line, its run and its one JSON line of report; the
 * world it runs is sim.c's. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/tree.h"
#include "sim.h"

/* ---- the run and its report ---- */

/* a - b in ms; -1 when a never happened (0) or came first. */
static double ms(uint64_t a, uint64_t b)
{
	return a == 0 || a < b ? -1 : (double)(a - b) / 1e6;
}

static long rss_hwm_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;

	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			v = atol(line + 6);
	if (f)
		fclose(f);
	return v;
}

static void usage(FILE *to)
{
	fprintf(to,
		"usage: pm-sim [--nodes N] [--fanout K] [--ranks-per-node R] [--trials T]\n"
		"  [--hop-us US] [--jitter-us US] [--op-us US] [--rank-hop-us US] [--sup-us US]\n"
		"  [--exec-us US] [--cred-us US] [--spawn-us US] [--settle-ms MS] [--cores C]\n"
		"  [--munge-threads M] [--fleet] [--peer-timeout-ms MS] [--slow NODE:FACTOR]\n"
		"  [--fault none|crash|silent|partition|slow|root|replace] [--fault-node I]\n"
		"  [--spares S] [--seed S]\n"
		"N 2..16777216, K 2..1024 (procmgrd's range), R >= 1; --cores 0 and\n"
		"--munge-threads 0 (the defaults) give every process its own CPU and every\n"
		"node its own munged, as on a cluster; the harness's machine is --cores 2\n"
		"--munge-threads 2 --fleet. Faults happen after the trials' restarts, on\n"
		"--fault-node (default: the last node that runs ranks; partition: node 1's\n"
		"subtree; root: node 0). With --spares S the last S nodes are spares and a\n"
		"lost node is replaced (replace: crash with at least one spare).\n");
}

static int parse(struct sim_params *p, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "nodes", 1, 0, 'n' }, { "fanout", 1, 0, 'k' }, { "ranks-per-node", 1, 0, 'r' },
		{ "trials", 1, 0, 't' }, { "hop-us", 1, 0, 1 }, { "jitter-us", 1, 0, 2 },
		{ "op-us", 1, 0, 3 }, { "rank-hop-us", 1, 0, 4 }, { "sup-us", 1, 0, 5 },
		{ "exec-us", 1, 0, 6 }, { "cred-us", 1, 0, 7 }, { "spawn-us", 1, 0, 8 },
		{ "settle-ms", 1, 0, 9 }, { "cores", 1, 0, 10 }, { "munge-threads", 1, 0, 11 },
		{ "fleet", 0, 0, 12 }, { "peer-timeout-ms", 1, 0, 13 }, { "slow", 1, 0, 14 },
		{ "fault", 1, 0, 15 }, { "fault-node", 1, 0, 16 }, { "seed", 1, 0, 17 },
		{ "spares", 1, 0, 18 },
		{ "help", 0, 0, 'h' }, { 0, 0, 0, 0 }
	};
	static const char *const faults[] = { "none", "crash", "silent", "partition", "slow",
					      "root", "replace" };
	int c, i, ok;

	*p = (struct sim_params){ .nodes = 1000, .fanout = 32, .rpn = 1, .trials = 3,
				  .hop_us = 50, .jitter_us = 10, .op_us = 10, .rank_hop_us = 10,
				  .sup_us = 10, .cred_us = 100, .settle_ms = 300, .slow_node = -1,
				  .slow_factor = 1, .fault = "none", .fault_node = -1, .seed = 1 };
	while ((c = getopt_long(argc, argv, "n:k:r:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'n': p->nodes = atoi(optarg); break;
		case 'k': p->fanout = atoi(optarg); break;
		case 'r': p->rpn = atoi(optarg); break;
		case 't': p->trials = atoi(optarg); break;
		case 1: p->hop_us = atof(optarg); break;
		case 2: p->jitter_us = atof(optarg); break;
		case 3: p->op_us = atof(optarg); break;
		case 4: p->rank_hop_us = atof(optarg); break;
		case 5: p->sup_us = atof(optarg); break;
		case 6: p->exec_us = atof(optarg); break;
		case 7: p->cred_us = atof(optarg); break;
		case 8: p->spawn_us = atof(optarg); break;
		case 9: p->settle_ms = atof(optarg); break;
		case 10: p->cores = atoi(optarg); break;
		case 11: p->munge_threads = atoi(optarg); break;
		case 12: p->fleet = true; break;
		case 13: p->peer_timeout_ms = (unsigned)atoi(optarg); break;
		case 14:
			if (sscanf(optarg, "%d:%lf", &p->slow_node, &p->slow_factor) != 2 ||
			    p->slow_factor < 1) {
				fprintf(stderr, "pm-sim: --slow takes NODE:FACTOR, FACTOR >= 1 "
					"(e.g. 1:100), not '%s'\n", optarg);
				return -1;
			}
			break;
		case 15: p->fault = optarg; break;
		case 16: p->fault_node = atoi(optarg); break;
		case 17: p->seed = strtoull(optarg, NULL, 10); break;
		case 18: p->spares = atoi(optarg); break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -1;
		}
	}
	for (i = 0, ok = 0; i < (int)(sizeof(faults) / sizeof(faults[0])); i++)
		ok |= !strcmp(p->fault, faults[i]);
	{
		const char *bad = optind < argc ? "an argument that is not an option" :
			p->nodes < 2 || p->nodes > (1 << 24) ? "--nodes (2..16777216)" :
			p->fanout < 2 || p->fanout > 1024 ? "--fanout (2..1024)" :
			p->rpn < 1 ? "--ranks-per-node (>= 1)" :
			p->trials < 1 || p->trials > 64 ? "--trials (1..64)" :
			p->cores < 0 ? "--cores (>= 0)" :
			p->munge_threads < 0 ? "--munge-threads (>= 0)" :
			!ok ? "--fault (none crash silent partition slow root replace)" :
			p->hop_us < 0 || p->jitter_us < 0 || p->op_us < 0 || p->rank_hop_us < 0 ||
			p->sup_us < 0 || p->exec_us < 0 || p->cred_us < 0 || p->spawn_us < 0 ||
			p->settle_ms < 0 ? "a time (each >= 0)" : NULL;
		if (bad) {
			fprintf(stderr, "pm-sim: bad %s\n", bad);
			usage(stderr);
			return -1;
		}
	}
	if (p->spares < 0 || p->spares >= p->nodes) {
		fprintf(stderr, "pm-sim: --spares %d: 0..%d (at least one node runs ranks)\n",
			p->spares, p->nodes - 1);
		return -1;
	}
	if (!strcmp(p->fault, "replace")) {
		/* A crashed node, replaced by a spare. */
		if (!p->spares)
			p->spares = 1;
		p->fault = "crash";
	}
	if (p->fault_node < 0)
		p->fault_node = !strcmp(p->fault, "root") ? 0 :
				!strcmp(p->fault, "partition") ? 1 : p->nodes - p->spares - 1;
	if (!strcmp(p->fault, "slow") && p->slow_node < 0) {
		p->slow_node = 1;
		p->slow_factor = 100;
	}
	if (p->fault_node >= p->nodes) {
		fprintf(stderr, "pm-sim: --fault-node %d: the nodes are 0..%d\n", p->fault_node,
			p->nodes - 1);
		return -1;
	}
	return 0;
}

static double median(double *v, int n)
{
	int i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : -1;
}

static void print_count(const char *name, const struct sim_count *c)
{
	printf(",\"%s\":{\"in\":%llu,\"out\":%llu,\"bytes_in\":%llu,\"bytes_out\":%llu}", name,
	       (unsigned long long)c->in, (unsigned long long)c->out,
	       (unsigned long long)c->bytes_in, (unsigned long long)c->bytes_out);
}

int main(int argc, char **argv)
{
	static struct sim s;
	struct sim_obs *o = sim_obs();
	struct timespec w0, w1;
	double restart[64], bcast[64];
	char *names_buf;
	int i, g, first;

	if (parse(&s.p, argc, argv))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	s.rng = s.p.seed * 0x9e3779b97f4a7c15ull + 1;
	o->ngen = s.p.trials + 3;
	o->world = (s.p.nodes - s.p.spares) * s.p.rpn;
	s.cut = -1;
	o->t_fail = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->ev_failed = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->ev_stopped = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->ev_start = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->first_start = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->last_start = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->last_stop = calloc((size_t)o->ngen, sizeof(uint64_t));
	o->started = calloc((size_t)o->ngen, sizeof(int));
	s.n = calloc((size_t)s.p.nodes, sizeof(*s.n));
	s.sup = calloc((size_t)s.p.nodes * (size_t)s.p.rpn, sizeof(*s.sup));
	s.names = calloc((size_t)s.p.nodes, sizeof(*s.names));
	names_buf = malloc((size_t)s.p.nodes * 16);
	s.core = calloc((size_t)(s.p.cores ? s.p.cores : 1), sizeof(uint64_t));
	s.munge = calloc((size_t)(s.p.munge_threads ? s.p.munge_threads : 1), sizeof(uint64_t));
	if (!o->t_fail || !o->ev_failed || !o->ev_stopped || !o->ev_start || !o->first_start ||
	    !o->last_start || !o->last_stop || !o->started || !s.n || !s.sup || !s.names ||
	    !names_buf || !s.core || !s.munge) {
		fprintf(stderr, "pm-sim: out of memory for %d nodes\n", s.p.nodes);
		return 1;
	}
	/* One name table for every node (procmgrd has one each: see the report). */
	for (i = 0; i < s.p.nodes; i++) {
		s.names[i] = names_buf + (size_t)i * 16;
		snprintf(names_buf + (size_t)i * 16, 16, "n%d", i);
	}
	for (i = 0; i < s.p.nodes; i++)
		if (sim_node_init(&s, i)) {
			fprintf(stderr, "pm-sim: cannot set up node %d's state machine\n", i);
			return 1;
		}
	s.interior = pm_tree_children(1, s.p.fanout, s.p.nodes, &first) ? 1 : 0;
	sim_run(&s);
	clock_gettime(CLOCK_MONOTONIC, &w1);

	printf("{\"nodes\":%d,\"fanout\":%d,\"ranks_per_node\":%d,\"spares\":%d,"
	       "\"fault\":\"%s\","
	       "\"model\":{\"hop_us\":%g,\"jitter_us\":%g,\"op_us\":%g,\"rank_hop_us\":%g,"
	       "\"sup_us\":%g,\"exec_us\":%g,\"cred_us\":%g,\"spawn_us\":%g,\"cores\":%d,"
	       "\"munge_threads\":%d,\"fleet\":%s,\"peer_timeout_ms\":%u,\"slow\":\"%d:%g\","
	       "\"seed\":%llu}",
	       s.p.nodes, s.p.fanout, s.p.rpn, s.p.spares, s.p.fault, s.p.hop_us, s.p.jitter_us, s.p.op_us,
	       s.p.rank_hop_us, s.p.sup_us, s.p.exec_us, s.p.cred_us, s.p.spawn_us, s.p.cores,
	       s.p.munge_threads, s.p.fleet ? "true" : "false", s.p.peer_timeout_ms,
	       s.p.slow_node, s.p.slow_factor, (unsigned long long)s.p.seed);
	printf(",\"depth\":%d", pm_tree_depth(s.p.nodes - 1, s.p.fanout));
	printf(",\"ready_launch_s\":%.6f,\"ready_all_started_s\":%.6f,"
	       "\"ready_after_last_spawn_s\":%.6f",
	       (double)o->ev_launch / 1e9, (double)o->last_start[0] / 1e9,
	       ms(o->last_start[0], o->last_spawn) / 1e3);
	printf(",\"trials\":[");
	for (g = 0; g < s.p.trials; g++) {
		restart[g] = ms(o->last_start[g + 1], o->t_fail[g]);
		bcast[g] = ms(o->ev_stopped[g], o->ev_failed[g]);
		printf("%s{\"gen\":%d,\"fail_to_root_ms\":%.3f,\"stop_bcast_ms\":%.3f,"
		       "\"stop_gather_ms\":%.3f,\"decision_ms\":%.3f,\"start_bcast_ms\":%.3f,"
		       "\"restart_ms\":%.3f}", g ? "," : "", g, ms(o->ev_failed[g], o->t_fail[g]),
		       ms(o->last_stop[g], o->ev_failed[g]), bcast[g], ms(o->ev_start[g + 1], o->t_fail[g]),
		       ms(o->last_start[g + 1], o->ev_start[g + 1]), restart[g]);
	}
	printf("],\"restart_ms_median\":%.3f,\"stop_gather_ms_median\":%.3f",
	       median(restart, s.p.trials), median(bcast, s.p.trials));
	printf(",\"end_event\":\"%s\"", o->end_event ? o->end_event : "none");
	if (strcmp(s.p.fault, "none") && strcmp(s.p.fault, "slow"))
		printf(",\"fault_node\":%d,\"fault_to_root_ms\":%.3f,\"fault_to_end_ms\":%.3f,"
		       "\"ranks_told_end\":%d,\"fault_to_replaced_ms\":%.3f,"
		       "\"fault_to_root_moved_ms\":%.3f,\"fault_to_all_running_ms\":%.3f",
		       s.p.fault_node, ms(o->ev_lost ? o->ev_lost : o->ev_end, o->t_fault),
		       ms(o->last_end, o->t_fault), o->ended,
		       ms(o->ev_replaced, o->t_fault), ms(o->ev_root_moved, o->t_fault),
		       ms(o->t_recovered, o->t_fault));
	printf(",\"per_restart\":{\"interior_node\":%d", s.interior);
	print_count("root", &s.c_root);
	print_count("interior", &s.c_interior);
	printf("},\"gen_bytes\":{\"root\":%zu,\"interior\":%zu,\"leaf\":%zu}",
	       sim_gen_bytes(&s, 0), sim_gen_bytes(&s, s.interior),
	       sim_gen_bytes(&s, s.p.nodes - 1));
	printf(",\"events\":%llu,\"sim_wall_s\":%.3f,\"sim_rss_hwm_kib\":%ld}\n",
	       (unsigned long long)s.events,
	       (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9,
	       rss_hwm_kib());
	for (i = 0; i < s.p.nodes; i++)
		sim_node_free(&s, i);
	sim_queue_free(&s.q);
	free(s.n);
	free(s.sup);
	free(s.names);
	free(names_buf);
	free(s.core);
	free(s.munge);
	free(o->t_fail);
	free(o->ev_failed);
	free(o->ev_stopped);
	free(o->ev_start);
	free(o->first_start);
	free(o->last_start);
	free(o->last_stop);
	free(o->started);
	return 0;
}
