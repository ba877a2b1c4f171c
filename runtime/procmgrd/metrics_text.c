/* The step's counters, from its events, and their text. Pure. */
#include "metrics.h"

#include "common/goodput.h"
#include "common/text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *pm_mreason_name(enum pm_mreason r)
{
	static const char *const names[PM_MR_N] = { "exit", "signal", "hang", "health", "lost" };
	return (unsigned)r < PM_MR_N ? names[r] : "?";
}

void pm_metrics_init(struct pm_metrics *m, uint32_t job, uint32_t step)
{
	memset(m, 0, sizeof(*m));
	m->job = job;
	m->step = step;
	m->last_reason = PM_MR_EXIT;
	m->state_lost_steps = -1;
	m->goodput = m->gp_useful_s = m->gp_wall_s = -1;
	for (int j = 0; j < PM_GP_NPHASES; j++)
		m->gp_lost_s[j] = -1;
}

static double field_ms(const char *fields, const char *key, bool *have)
{
	bool q;
	const char *v = pm_event_field(fields, key, &q);

	*have = v && !q;
	return *have ? strtod(v, NULL) / 1000.0 : 0;
}

static long field_int(const char *fields, const char *key, long dflt)
{
	bool q;
	const char *v = pm_event_field(fields, key, &q);
	return v && !q ? strtol(v, NULL, 10) : dflt;
}

static bool field_is(const char *fields, const char *key, const char *prefix)
{
	bool q;
	const char *v = pm_event_field(fields, key, &q);
	return v && !strncmp(v, prefix, strlen(prefix));
}

/* "gpu: GPU 3 lost" -> "gpu": the check's name, as a label value. */
static void health_check(struct pm_metrics *m, const char *fields)
{
	char name[32];
	bool q;
	const char *v = pm_event_field(fields, "check", &q);
	size_t n = 0;
	int i;

	if (v && q)
		while (v[n] && n < sizeof(name) - 1 && (v[n] == '_' || v[n] == '-' || v[n] == '.' ||
		       (v[n] >= 'a' && v[n] <= 'z') || (v[n] >= 'A' && v[n] <= 'Z') ||
		       (v[n] >= '0' && v[n] <= '9') || v[n] == '/')) {
			name[n] = v[n];
			n++;
		}
	name[n] = '\0';
	if (!n)
		snprintf(name, sizeof(name), "unknown");
	for (i = 0; i < m->nhealth; i++)
		if (!strcmp(m->health[i].check, name))
			break;
	if (i == m->nhealth) {
		if (m->nhealth == PM_METRICS_CHECKS)
			i = PM_METRICS_CHECKS; /* the "other" slot */
		else
			m->nhealth++;
		snprintf(m->health[i].check, sizeof(m->health[i].check), "%s",
			 i == PM_METRICS_CHECKS ? "other" : name);
	}
	m->health[i].n++;
}

static void failed(struct pm_metrics *m, enum pm_mreason r)
{
	m->failures[r]++;
	m->last_reason = (int)r;
}

void pm_metrics_note(struct pm_metrics *m, const char *name, const char *fields)
{
	bool have;
	double v;

	if (!strcmp(name, "launch")) {
		m->running = true;
		m->nodes = (int)field_int(fields, "nodes", 0);
		m->ranks = (int)field_int(fields, "ranks", 0);
	} else if (!strcmp(name, "rank_failed")) {
		bool q;
		if (pm_event_field(fields, "ignored", &q))
			return; /* a generation already being stopped */
		if (pm_event_field(fields, "hung", &q))
			m->last_reason = PM_MR_HANG; /* counted once, at the hang's decision */
		else if (field_is(fields, "status", "lost"))
			failed(m, PM_MR_LOST);
		else if (field_is(fields, "status", "was killed"))
			failed(m, PM_MR_SIGNAL);
		else
			failed(m, PM_MR_EXIT);
	} else if (!strcmp(name, "hang")) {
		m->hangs++;
		failed(m, PM_MR_HANG);
	} else if (!strcmp(name, "health_failed")) {
		health_check(m, fields);
		failed(m, PM_MR_HEALTH);
	} else if (!strcmp(name, "node_lost")) {
		m->nodes_lost++;
		failed(m, PM_MR_LOST);
	} else if (!strcmp(name, "slow")) {
		bool q;
		m->slow_total++;
		if (pm_event_field(fields, "evicted", &q)) {
			/* Treated as lost: its replacement's restart says so. */
			m->slow_evicted++;
			m->last_reason = PM_MR_LOST;
		} else {
			m->slow_nodes++;
		}
	} else if (!strcmp(name, "slow_cleared")) {
		if (m->slow_nodes > 0)
			m->slow_nodes--;
	} else if (!strcmp(name, "node_replaced")) {
		m->nodes_replaced++;
	} else if (!strcmp(name, "start")) {
		m->gen = (uint32_t)field_int(fields, "gen", (long)m->gen + 1);
		m->restarts[m->last_reason]++;
		v = field_ms(fields, "since_failure_ms", &have);
		if (have) {
			m->last_restart_s = v;
			m->have_restart = true;
		}
	} else if (!strcmp(name, "running")) {
		v = field_ms(fields, "process_ms", &have);
		if (have) {
			m->last_process_s = v;
			m->have_process = true;
		}
	} else if (!strcmp(name, "heartbeating")) {
		v = field_ms(fields, "recovery_ms", &have);
		if (have) {
			m->last_recovery_s = v;
			m->have_recovery = true;
		}
	} else if (!strcmp(name, "finish") || !strcmp(name, "give_up")) {
		m->running = false;
	} else if (!strcmp(name, "state_saved")) {
		m->state_savers++;
	} else if (!strcmp(name, "state_restored")) {
		m->state_restores++;
		m->state_lost_steps = field_int(fields, "lost_steps", 0);
	}
}


static void head(struct pm_textbuf *o, const char *name, const char *type, const char *help)
{
	pm_textbuf_put(o, "# HELP procmgr_%s %s\n# TYPE procmgr_%s %s\n", name, help, name, type);
}

int pm_metrics_format(const struct pm_metrics *m, char *buf, size_t len)
{
	struct pm_textbuf o = { .buf = buf, .len = len };
	char id[64];
	int r, i;

	if (!len)
		return -1;
	buf[0] = '\0';
	snprintf(id, sizeof(id), "job=\"%u\",step=\"%u\"", m->job, m->step);
	head(&o, "step_running", "gauge", "1 while the step runs under procmgr, 0 once it ended.");
	pm_textbuf_put(&o, "procmgr_step_running{%s} %d\n", id, m->running ? 1 : 0);
	head(&o, "step_generation", "gauge", "The step's current generation (0: never restarted).");
	pm_textbuf_put(&o, "procmgr_step_generation{%s} %u\n", id, m->gen);
	head(&o, "step_nodes", "gauge", "Nodes of the step.");
	pm_textbuf_put(&o, "procmgr_step_nodes{%s} %d\n", id, m->nodes);
	head(&o, "step_ranks", "gauge", "Ranks of the step.");
	pm_textbuf_put(&o, "procmgr_step_ranks{%s} %d\n", id, m->ranks);
	head(&o, "restarts_total", "counter", "Restarts of every rank, by what caused them.");
	for (r = 0; r < PM_MR_N; r++)
		pm_textbuf_put(&o, "procmgr_restarts_total{%s,reason=\"%s\"} %lu\n", id,
		    pm_mreason_name((enum pm_mreason)r), m->restarts[r]);
	head(&o, "failures_total", "counter", "Rank and node failures judged, by kind.");
	for (r = 0; r < PM_MR_N; r++)
		pm_textbuf_put(&o, "procmgr_failures_total{%s,reason=\"%s\"} %lu\n", id,
		    pm_mreason_name((enum pm_mreason)r), m->failures[r]);
	head(&o, "hangs_total", "counter", "Hangs judged (no heartbeat within the hang timeout).");
	pm_textbuf_put(&o, "procmgr_hangs_total{%s} %lu\n", id, m->hangs);
	head(&o, "health_failures_total", "counter", "Health check failures, by check.");
	for (i = 0; i < m->nhealth; i++)
		pm_textbuf_put(&o, "procmgr_health_failures_total{%s,check=\"%s\"} %lu\n", id,
		    m->health[i].check, m->health[i].n);
	if (m->health[PM_METRICS_CHECKS].n)
		pm_textbuf_put(&o, "procmgr_health_failures_total{%s,check=\"other\"} %lu\n", id,
		    m->health[PM_METRICS_CHECKS].n);
	head(&o, "nodes_lost_total", "counter", "Nodes lost (procmgrd gone or silent).");
	pm_textbuf_put(&o, "procmgr_nodes_lost_total{%s} %lu\n", id, m->nodes_lost);
	head(&o, "nodes_replaced_total", "counter", "Lost nodes replaced by a spare.");
	pm_textbuf_put(&o, "procmgr_nodes_replaced_total{%s} %lu\n", id, m->nodes_replaced);
	head(&o, "slow_nodes", "gauge",
	     "Nodes found slow now (slower than the job's median; see --procmgr-slow).");
	pm_textbuf_put(&o, "procmgr_slow_nodes{%s} %ld\n", id, m->slow_nodes);
	head(&o, "slow_flagged_total", "counter", "Times a node was found slow.");
	pm_textbuf_put(&o, "procmgr_slow_flagged_total{%s} %lu\n", id, m->slow_total);
	head(&o, "slow_evicted_total", "counter",
	     "Slow nodes replaced by a spare (--procmgr-evict-slow).");
	pm_textbuf_put(&o, "procmgr_slow_evicted_total{%s} %lu\n", id, m->slow_evicted);
	head(&o, "state_restores_total", "counter",
	     "Loads of a rank's state kept in procmgr's memory (procmgr.load).");
	pm_textbuf_put(&o, "procmgr_state_restores_total{%s} %lu\n", id, m->state_restores);
	head(&o, "state_savers_total", "counter",
	     "Rank processes that saved state in procmgr's memory (procmgr.save).");
	pm_textbuf_put(&o, "procmgr_state_savers_total{%s} %lu\n", id, m->state_savers);
	if (m->state_lost_steps >= 0) {
		head(&o, "state_last_lost_steps", "gauge",
		     "Steps of work the last restore of a rank's state gave up.");
		pm_textbuf_put(&o, "procmgr_state_last_lost_steps{%s} %ld\n", id, m->state_lost_steps);
	}
	if (m->have_restart) {
		head(&o, "last_restart_seconds", "gauge",
		     "The last restart: from the failure to the next generation's start.");
		pm_textbuf_put(&o, "procmgr_last_restart_seconds{%s} %.3f\n", id, m->last_restart_s);
	}
	if (m->have_process) {
		head(&o, "last_restart_process_seconds", "gauge",
		     "The last restart, procmgr's part: from the failure to every rank running "
		     "again.");
		pm_textbuf_put(&o, "procmgr_last_restart_process_seconds{%s} %.3f\n", id, m->last_process_s);
	}
	/* Only a heartbeat says that a rank trains again: without one (no
	 * hang timeout) the process part is all that is known. */
	if (m->have_recovery) {
		head(&o, "last_recovery_seconds", "gauge",
		     "The last restart as felt: from the failure to every rank's first "
		     "heartbeat (training again).");
		pm_textbuf_put(&o, "procmgr_last_recovery_seconds{%s} %.3f\n", id, m->last_recovery_s);
	}
	/* Goodput: only what is known (without heartbeats with a step, the
	 * ratio and the program's phases are not, and are left out). */
	if (m->gp_wall_s >= 0) {
		head(&o, "wall_seconds", "gauge",
		     "The step's wall time so far, from generation 0's launch.");
		pm_textbuf_put(&o, "procmgr_wall_seconds{%s} %.3f\n", id, m->gp_wall_s);
	}
	if (m->goodput >= 0) {
		head(&o, "goodput_ratio", "gauge",
		     "Useful training time over wall time (distinct steps x the median step time).");
		pm_textbuf_put(&o, "procmgr_goodput_ratio{%s} %.4f\n", id, m->goodput);
		head(&o, "useful_seconds", "gauge",
		     "Useful training time: distinct steps done x the median step time.");
		pm_textbuf_put(&o, "procmgr_useful_seconds{%s} %.3f\n", id, m->gp_useful_s);
	}
	for (i = 0, r = 0; i < PM_GP_NPHASES; i++) {
		if (m->gp_lost_s[i] < 0)
			continue;
		if (!r++)
			head(&o, "lost_seconds_total", "counter",
			     "Seconds the step's incidents lost, by phase (detect, stop, start, "
			     "reinit, recompute, slowdown).");
		pm_textbuf_put(&o, "procmgr_lost_seconds_total{%s,phase=\"%s\"} %.3f\n", id,
		    pm_gp_phase_name((enum pm_gp_phase)i), m->gp_lost_s[i]);
	}
	return o.full ? -1 : 0;
}
