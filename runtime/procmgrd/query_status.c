/* This node's answer to a status query: its procmgrd and each local rank
 * (common/status.h), read from the state machine, the heartbeat files and
 * /proc. */
#include "step.h"
#include "query.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/contract.h"
#include "common/status.h"

static const char *rank_state(enum pm_rank_state st)
{
	static const char *const names[] = { "absent", "idle", "running", "done", "failed",
					     "gone" };
	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "unknown";
}

/* Age of the rank's heartbeat file (touched by the user's code through
 * the supervisor), -1 without one. */
static long long beat_age(struct pm_step *s, int lrank)
{
	char path[4096];
	struct stat st;
	struct timespec now;
	long long ms;

	if (pm_path_heartbeat(path, sizeof(path), pm_query_rundir(s), lrank) ||
	    stat(path, &st) || clock_gettime(CLOCK_REALTIME, &now))
		return -1;
	ms = (long long)(now.tv_sec - st.st_mtim.tv_sec) * 1000 +
	     (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
	return ms < 0 ? 0 : ms;
}

/* The command's CPU time and resident memory (its process, not its
 * children: what a glance needs), -1 when unknown. */
static void usage(pid_t pid, long long *cpu_ms, long long *rss_kb)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st, size, rss;
	long tck = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
	FILE *f;

	*cpu_ms = *rss_kb = -1;
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "re"))) {
		/* After the command's name, which may hold spaces and ')'. */
		if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
			   &st) == 2 && tck > 0)
			*cpu_ms = (long long)((ut + st) * 1000 / (unsigned long long)tck);
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if ((f = fopen(path, "re"))) {
		if (fscanf(f, "%llu %llu", &size, &rss) == 2 && page > 0)
			*rss_kb = (long long)(rss * (unsigned long long)page / 1024);
		fclose(f);
	}
}

/* A standby's resident memory: every process of its group (the standby
 * starts one of its own, and what it forks stays in it), from /proc; -1
 * when none is found. One pass over /proc for all of the node's standbys. */
static void standby_rss(const pid_t *pgid, int n, long long *kb)
{
	long page = sysconf(_SC_PAGESIZE);
	struct dirent *e;
	DIR *d;
	int i;

	for (i = 0; i < n; i++)
		kb[i] = -1;
	if (page <= 0 || !(d = opendir("/proc")))
		return;
	while ((e = readdir(d))) {
		char path[320], buf[1024], *p;
		unsigned long long size, rss;
		int grp = 0;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		/* After the command's name, which may hold spaces and ')'. */
		if (!fgets(buf, sizeof(buf), f) || !(p = strrchr(buf, ')')) ||
		    sscanf(p + 2, "%*c %*d %d", &grp) != 1)
			grp = 0;
		fclose(f);
		for (i = 0; i < n && (pgid[i] <= 0 || pgid[i] != grp); i++)
			;
		if (grp <= 0 || i == n)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/statm", e->d_name);
		if (!(f = fopen(path, "re")))
			continue;
		if (fscanf(f, "%llu %llu", &size, &rss) == 2)
			kb[i] = (kb[i] < 0 ? 0 : kb[i]) +
				(long long)(rss * (unsigned long long)page / 1024);
		fclose(f);
	}
	closedir(d);
}

/* A failed check leaves its report for the plugin's drain (guard.c). */
static const char *health(struct pm_step *s)
{
	struct stat st;

	if (!s->guard || !s->guard->n)
		return "none";
	return s->guard->report[0] && stat(s->guard->report, &st) == 0 && st.st_size > 0 ?
		       "failed" : "ok";
}

void pm_query_status(struct pm_step *s, struct pm_q *q)
{
	struct pm_st_node n = { .node = s->node, .gen = s->gen.gen, .ranks = s->ntasks_local };
	char text[PM_WIRE_TEXT_MAX * 4], line[512];
	size_t off = 0;
	long long *sb_kb = NULL;
	int i;

	bool spare = s->opts.spares && s->gen.node_slot && s->gen.node_slot[s->node] < 0 &&
		     !pm_gen_terminal(&s->gen);

	snprintf(n.name, sizeof(n.name), "%s", s->names[s->node]);
	/* A hot spare in reserve says so, whatever the step's phase. */
	snprintf(n.phase, sizeof(n.phase), "%s", spare ? "spare" : pm_phase_name(s->gen.phase));
	/* A sweep's nodes start no generation: their slots run trials. */
	if (s->opts.sweep[0] && !pm_gen_terminal(&s->gen) && s->gen.ready_sent)
		snprintf(n.phase, sizeof(n.phase), "sweep");
	snprintf(n.health, sizeof(n.health), "%s", health(s));
	if (pm_slowlink_state(s))
		snprintf(n.slow, sizeof(n.slow), "%s", pm_slowlink_state(s));
	n.state_bytes = n.state_max = -1;
	if (s->state) {
		struct pm_state_usage u;
		pm_state_link_usage(s, &u);
		n.state_bytes = (long long)u.held;
		n.state_max = (long long)u.max_node;
	}
	/* The root measured the last restart (procmgrd/recovery.c). */
	if (s->gen.root && s->gen.rec.gen) {
		n.rec_gen = s->gen.rec.gen;
		n.process_ms = (long long)s->gen.rec.process_ms;
		n.recovery_ms = s->gen.rec.beat ? (long long)s->gen.rec.recovery_ms : -1;
	}
	/* --procmgr-warm: what the standbys hold (the node's sum, and each). */
	if (s->opts.warm[0] && strcmp(s->opts.warm, "off") && s->ntasks_local > 0 &&
	    (sb_kb = calloc((size_t)s->ntasks_local, sizeof(*sb_kb)))) {
		standby_rss(s->sb_pgid, s->ntasks_local, sb_kb);
		n.standby_kb = 0;
		for (i = 0; i < s->ntasks_local; i++)
			n.standby_kb += sb_kb[i] > 0 ? sb_kb[i] : 0;
	}
	text[0] = '\0';
	if (pm_st_node_format(&n, line, sizeof(line)) == 0)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s\n", line);
	/* The root's goodput so far (goodput_link.c), a line of its own. */
	if (s->gen.root && pm_step_goodput_status(s, line, sizeof(line)) == 0)
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s\n", line);
	for (i = 0; i < s->ntasks_local; i++) {
		const struct pm_gen_rank *g = &s->gen.ranks[i];
		struct pm_st_rank r = { .rank = g->st == PM_RANK_ABSENT ? -1 : g->grank,
					.local = i, .node = s->node, .gen = s->gen.gen };
		r.pid = g->st == PM_RANK_RUNNING ? (int)s->cmd_pgid[i] : 0;
		/* A spare's supervisor holds no rank yet: no rank number. */
		if (spare)
			r.rank = -1;
		snprintf(r.state, sizeof(r.state), "%s", spare ? "spare" : rank_state(g->st));
		r.beat_ms = g->st == PM_RANK_RUNNING ? beat_age(s, i) : -1;
		usage(r.pid, &r.cpu_ms, &r.rss_kb);
		r.standby_kb = -1;
		if (sb_kb) {
			static const char *const sbn[] = { "none", "starting", "ready" };
			snprintf(r.standby, sizeof(r.standby), "%s",
				 sbn[s->sb_state[i] <= 2 ? s->sb_state[i] : 0]);
			r.standby_kb = s->sb_pgid[i] > 0 ? sb_kb[i] : -1;
		}
		if (pm_st_rank_format(&r, line, sizeof(line)))
			continue;
		if (off + strlen(line) + 2 >= sizeof(text)) {
			pm_q_text(s, q, -1, text);
			off = 0;
		}
		off += (size_t)snprintf(text + off, sizeof(text) - off, "%s\n", line);
	}
	if (off)
		pm_q_text(s, q, -1, text);
	free(sb_kb);
	pm_sweep_status(s, q); /* a sweep's trials, on the root */
}
