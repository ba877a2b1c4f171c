/* procmgr status [JOBID[.STEP]] [--json]: every rank and node of a step,
 * gathered through its control tree with one request to the root. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cliargs.h"
#include "client.h"
#include "cmd.h"
#include "common/goodput.h"
#include "common/status.h"
#include "common/text.h"
#include "sweep_status.h"

#define USAGE \
	"usage: procmgr status [JOBID[.STEP]] [--json] [--sort result|-result]\n" \
	"  every rank (rank, local rank, node, pid, state, generation, age of its last\n" \
	"  heartbeat, CPU time, memory; with --procmgr-warm its standby: none, starting,\n" \
	"  ready, and its memory) and every node (procmgrd's phase, health) of the\n" \
	"  step, with a summary; a sweep: a line per trial (name, state, slots, restarts,\n  runtime, exit, result, error) instead of the ranks. Default: the running steps of the current job\n" \
	"  ($SLURM_JOB_ID), else of the user. --json: one object per step.\n" \
	"  --sort result: a sweep's trials by the result they reported, the lowest first\n" \
	"  (-result: the highest first), those without one last.\n"

struct answers {
	struct pm_st_node *n;
	struct pm_st_rank *r;
	int nn, nr, ncap, rcap, bad;
	struct pm_trials_st trials; /* a sweep's, from the root */
	struct pm_gp_result gp;     /* the root's goodput line, when has_gp */
	bool has_gp;
};

static int collect(void *arg, const struct pm_msg *m)
{
	struct answers *a = arg;
	char text[PM_WIRE_TEXT_MAX + 1], *line, *save = NULL;
	struct pm_st_node n;
	struct pm_st_rank r;

	memcpy(text, m->text, (size_t)m->text_len + 1);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int k = pm_trials_st_add(&a->trials, line);
		if (k) {
			a->bad += k < 0;
			continue;
		}
		k = pm_gp_status_parse(line, &a->gp);
		if (k) {
			a->has_gp = k > 0;
			a->bad += k < 0;
			continue;
		}
		k = pm_st_parse(line, &n, &r);
		if (k == 'N') {
			if (a->nn == a->ncap) {
				int c = a->ncap ? a->ncap * 2 : 16;
				void *p = realloc(a->n, (size_t)c * sizeof(*a->n));
				if (!p)
					return 1;
				a->n = p;
				a->ncap = c;
			}
			a->n[a->nn++] = n;
		} else if (k == 'R') {
			if (a->nr == a->rcap) {
				int c = a->rcap ? a->rcap * 2 : 16;
				void *p = realloc(a->r, (size_t)c * sizeof(*a->r));
				if (!p)
					return 1;
				a->r = p;
				a->rcap = c;
			}
			a->r[a->nr++] = r;
		} else {
			a->bad++;
		}
	}
	return 0;
}

static int by_node(const void *x, const void *y)
{
	const struct pm_st_node *a = x, *b = y;
	return (a->node > b->node) - (a->node < b->node);
}

static int by_rank(const void *x, const void *y)
{
	const struct pm_st_rank *a = x, *b = y;
	if (a->rank != b->rank)
		return (a->rank > b->rank) - (a->rank < b->rank);
	return (a->node > b->node) - (a->node < b->node);
}

static const char *node_name(const struct answers *a, int node)
{
	int i;

	for (i = 0; i < a->nn; i++)
		if (a->n[i].node == node)
			return a->n[i].name;
	return "?";
}

static void fmt_ms(long long ms, char *buf, size_t len)
{
	if (ms < 0)
		snprintf(buf, len, "-");
	else if (ms < 10000)
		snprintf(buf, len, "%.2fs", ms / 1000.0);
	else
		snprintf(buf, len, "%.0fs", ms / 1000.0);
}

static void fmt_kb(long long kb, char *buf, size_t len)
{
	if (kb < 0)
		snprintf(buf, len, "-");
	else if (kb < 10240)
		snprintf(buf, len, "%lldK", kb);
	else
		snprintf(buf, len, "%.1fM", kb / 1024.0);
}

static void print_text(const struct pm_target *t, const struct answers *a, const char *sum,
		       const struct pm_st_summary *s)
{
	char beat[32], cpu[32], rss[32], rec[256];
	int i, warm = s->sb_ready + s->sb_starting + s->sb_none > 0;

	if (a->trials.n)
		printf("step %u.%u: a sweep on %d task slots of %d nodes\n", t->job, t->step,
		       s->ranks, s->nodes);
	else
		printf("step %u.%u: %s\n", t->job, t->step, sum);
	if (pm_st_recovery_line(s, rec, sizeof(rec)) == 0)
		printf("%s\n", rec);
	/* goodput so far: the end of srun's line at the step's end */
	if (a->has_gp && pm_gp_text(&a->gp, rec, sizeof(rec)) == 0)
		printf("%s\n", rec + strlen("procmgr: "));
	if (a->trials.n) {
		/* A sweep: its trials are the table; the slots' supervisors
		 * say little more. */
		pm_trials_st_print(stdout, &a->trials);
		goto nodes;
	}
	printf("%-6s %-5s %-16s %-8s %-8s %-4s %-8s %-8s %-*s%s\n", "RANK", "LOCAL", "NODE", "PID",
	       "STATE", "GEN", "BEAT", "CPU", warm ? 8 : 0, "RSS", warm ? " STANDBY" : "");
	for (i = 0; i < a->nr; i++) {
		const struct pm_st_rank *r = &a->r[i];
		char rank[16], pid[16];
		/* No rank (a spare in reserve, a supervisor not yet come): "-". */
		snprintf(rank, sizeof(rank), r->rank < 0 ? "-" : "%d", r->rank);
		snprintf(pid, sizeof(pid), r->pid ? "%d" : "-", r->pid);
		fmt_ms(r->beat_ms, beat, sizeof(beat));
		fmt_ms(r->cpu_ms, cpu, sizeof(cpu));
		fmt_kb(r->rss_kb, rss, sizeof(rss));
		/* --procmgr-warm: the next generation's standby and its memory */
		char sb[64] = "", sbkb[32];
		if (r->standby[0]) {
			fmt_kb(r->standby_kb, sbkb, sizeof(sbkb));
			snprintf(sb, sizeof(sb), " %s%s%s", r->standby, r->standby_kb >= 0 ? " " : "",
				 r->standby_kb >= 0 ? sbkb : "");
		}
		printf("%-6s %-5d %-16s %-8s %-8s %-4u %-8s %-8s %-*s%s\n", rank, r->local,
		       node_name(a, r->node), pid, r->state, r->gen, beat, cpu, warm ? 8 : 0, rss,
		       sb);
	}
nodes:
	printf("%-6s %-16s %-9s %-4s %-5s %-7s %-*s%s\n", "NODE", "NAME", "PHASE", "GEN", "RANKS",
	       "HEALTH", warm ? 12 : 0, "STATE", warm ? " STANDBYS" : "");
	for (i = 0; i < a->nn; i++) {
		const struct pm_st_node *n = &a->n[i];
		char slow[64] = "", st[64] = "-";
		/* Found slow: the evidence and its strength after the health. */
		if (n->slow[0]) {
			const char *colon = strchr(n->slow, ':');
			snprintf(slow, sizeof(slow), "  SLOW (%.*s %s%s)",
				 colon ? (int)(colon - n->slow) : (int)strlen(n->slow), n->slow,
				 colon ? colon + 1 : "", colon && !strncmp(n->slow, "compute", 7) ?
				 "x the median" : colon ? " of steps last" : "");
		}
		/* The ranks' state held in memory, of the node's limit. */
		if (n->state_bytes >= 0)
			snprintf(st, sizeof(st), "%.1fM/%.0fM", n->state_bytes / 1048576.0,
				 n->state_max / 1048576.0);
		char sbm[32] = "";
		if (warm) {
			sbm[0] = ' ';
			fmt_kb(n->standby_kb, sbm + 1, sizeof(sbm) - 1);
		}
		printf("%-6d %-16s %-9s %-4u %-5d %-7s %-*s%s%s\n", n->node, n->name, n->phase,
		       n->gen, n->ranks, n->health, warm ? 12 : 0, st, sbm, slow);
	}
}

static void print_json(const struct pm_target *t, const struct answers *a,
		       const struct pm_st_summary *s, const char *sum)
{
	int i;

	printf("{\"job\":%u,\"step\":%u,\"summary\":{\"text\":", t->job, t->step);
	pm_json_print(stdout, sum);
	printf(",\"nodes\":%d,\"nodes_answering\":%d,\"ranks\":%d,\"running\":%d,\"done\":%d,"
	       "\"failed\":%d,\"other\":%d,\"gen_min\":%u,\"gen_max\":%u", s->nodes,
	       s->nodes_up, s->ranks, s->running, s->done, s->failed, s->other, s->gen_min,
	       s->gen_max);
	/* null: no heartbeat says when training resumed (none yet, or no hang
	 * timeout); the process part alone is known. */
	if (s->rec_gen && s->recovery_ms >= 0)
		printf(",\"last_restart\":{\"gen\":%u,\"process_ms\":%lld,\"recovery_ms\":%lld}",
		       s->rec_gen, s->process_ms, s->recovery_ms);
	else if (s->rec_gen)
		printf(",\"last_restart\":{\"gen\":%u,\"process_ms\":%lld,\"recovery_ms\":null}",
		       s->rec_gen, s->process_ms);
	if (s->state_bytes >= 0)
		printf(",\"state_bytes\":%lld", s->state_bytes);
	/* the same members as procmgr goodput --json's, without its incidents */
	if (a->has_gp) {
		char gp[2048];
		if (pm_gp_json(&a->gp, gp, sizeof(gp)) == 0) {
			char *inc = strstr(gp, ",\"incidents\":");
			if (inc)
				snprintf(inc, sizeof(gp) - (size_t)(inc - gp), ",\"incidents\":%u}",
					 a->gp.nincidents);
			printf(",\"goodput\":%s", gp);
		}
	}
	if (s->sb_ready + s->sb_starting + s->sb_none)
		printf(",\"standbys\":{\"ready\":%d,\"starting\":%d,\"none\":%d,\"rss_kb\":%lld}",
		       s->sb_ready, s->sb_starting, s->sb_none, s->standby_kb);
	printf("}");
	if (a->trials.n)
		pm_trials_st_json(stdout, &a->trials);
	printf(",\"ranks\":[");
	for (i = 0; i < a->nr; i++) {
		const struct pm_st_rank *r = &a->r[i];
		printf("%s{\"rank\":%d,\"local_rank\":%d,\"node\":", i ? "," : "", r->rank, r->local);
		pm_json_print(stdout, node_name(a, r->node));
		printf(",\"node_id\":%d,\"pid\":%d,\"state\":\"%s\",\"gen\":%u,\"restarts\":%u,"
		       "\"heartbeat_age_ms\":%lld,\"cpu_ms\":%lld,\"rss_kb\":%lld", r->node, r->pid,
		       r->state, r->gen, r->gen, r->beat_ms, r->cpu_ms, r->rss_kb);
		if (r->standby[0])
			printf(",\"standby\":\"%s\",\"standby_rss_kb\":%lld", r->standby,
			       r->standby_kb);
		printf("}");
	}
	printf("],\"nodes\":[");
	for (i = 0; i < a->nn; i++) {
		const struct pm_st_node *n = &a->n[i];
		printf("%s{\"node_id\":%d,\"name\":", i ? "," : "", n->node);
		pm_json_print(stdout, n->name);
		printf(",\"phase\":\"%s\",\"gen\":%u,\"ranks\":%d,\"health\":\"%s\"", n->phase,
		       n->gen, n->ranks, n->health);
		if (n->slow[0])
			printf(",\"slow\":\"%s\"", n->slow);
		if (n->state_bytes >= 0)
			printf(",\"state_bytes\":%lld,\"state_max\":%lld", n->state_bytes,
			       n->state_max);
		if (s->sb_ready + s->sb_starting + s->sb_none)
			printf(",\"standby_rss_kb\":%lld", n->standby_kb);
		printf("}");
	}
	printf("]}\n");
}

static int one(const char *id, int json, const char *sort)
{
	struct answers a = { 0 };
	struct pm_st_summary s;
	struct pm_target t;
	struct pm_msg end;
	char why[1024], sum[256];
	int rc = 1;

	rc = pm_client_resolve("status", id, &t);
	if (rc)
		return rc;
	rc = 1;
	if (pm_client_ask(&t, PM_Q_STATUS, "-", 10000, collect, &a, &end, why, sizeof(why))) {
		fprintf(stderr, "procmgr status: %s\n", why);
		goto out;
	}
	qsort(a.n, (size_t)a.nn, sizeof(*a.n), by_node);
	qsort(a.r, (size_t)a.nr, sizeof(*a.r), by_rank);
	if (sort)
		(void)pm_trials_st_sort(&a.trials, sort); /* checked as it was read */
	pm_st_summarize(a.n, a.nn, a.r, a.nr, &s);
	pm_st_summary_line(&s, sum, sizeof(sum));
	if (json)
		print_json(&t, &a, &s, sum);
	else
		print_text(&t, &a, sum, &s);
	if (a.bad)
		fprintf(stderr, "procmgr status: %d line%s of the answer could not be read\n", a.bad,
			a.bad == 1 ? "" : "s");
	rc = 0;
out:
	free(a.n);
	free(a.r);
	pm_trials_st_free(&a.trials);
	return rc;
}

int pm_cmd_status(int argc, char **argv)
{
	const char *id = NULL;
	char steps[8192], why[512], *w, *save = NULL;
	const char *sort = NULL;
	int json = 0, rc;

	const struct pm_cli_opt opts[] = { { "--json", NULL, &json, NULL, NULL },
					   { "--sort", NULL, NULL, &sort, pm_trials_st_sort_check },
					   { NULL } };

	rc = pm_cli_args("status", argc, argv, opts, &id, false, USAGE);
	if (rc)
		return rc == 1 ? 0 : rc;
	if (id)
		return one(id, json, sort);
	if (pm_client_steps(steps, sizeof(steps), why, sizeof(why)) < 0) {
		fprintf(stderr, "procmgr status: %s\n", why);
		return 1;
	}
	if (!steps[0]) {
		fprintf(stderr, "procmgr status: no running step of %s; name one: "
			"procmgr status JOBID[.STEP]\n", getenv("SLURM_JOB_ID") ? "this job" : "yours");
		return 1;
	}
	for (w = strtok_r(steps, " ", &save); w; w = strtok_r(NULL, " ", &save))
		rc |= one(w, json, sort);
	return rc;
}
