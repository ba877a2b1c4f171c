#include "status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int word_ok(const char *w)
{
	if (!*w)
		return 0;
	for (; *w; w++)
		if (*w <= ' ' || *w == '=' || *w == 0x7f)
			return 0;
	return 1;
}

static int done(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_st_node_format(const struct pm_st_node *n, char *buf, size_t len)
{
	char rec[128] = "", slow[48] = "", st[96] = "", sb[48] = "";

	if (!word_ok(n->name) || !word_ok(n->phase) || !word_ok(n->health) ||
	    (n->slow[0] && !word_ok(n->slow)))
		return -1;
	if (n->rec_gen)
		snprintf(rec, sizeof(rec), " rec_gen=%u process_ms=%lld recovery_ms=%lld",
			 n->rec_gen, n->process_ms, n->recovery_ms);
	if (n->slow[0])
		snprintf(slow, sizeof(slow), " slow=%s", n->slow);
	if (n->state_max > 0 && n->state_bytes >= 0)
		snprintf(st, sizeof(st), " state_bytes=%lld state_max=%lld", n->state_bytes,
			 n->state_max);
	if (n->standby_kb > 0)
		snprintf(sb, sizeof(sb), " standby_kb=%lld", n->standby_kb);
	return done(snprintf(buf, len, "node id=%d name=%s phase=%s gen=%u ranks=%d health=%s%s%s%s%s",
			     n->node, n->name, n->phase, n->gen, n->ranks, n->health, rec, slow, st,
			     sb),
		    len);
}

int pm_st_rank_format(const struct pm_st_rank *r, char *buf, size_t len)
{
	char sb[64] = "";

	if (!word_ok(r->state) || (r->standby[0] && !word_ok(r->standby)))
		return -1;
	if (r->standby[0])
		snprintf(sb, sizeof(sb), " standby=%s standby_kb=%lld", r->standby, r->standby_kb);
	return done(snprintf(buf, len, "rank id=%d local=%d node=%d pid=%d state=%s gen=%u "
			     "beat_ms=%lld cpu_ms=%lld rss_kb=%lld%s", r->rank, r->local, r->node,
			     r->pid, r->state, r->gen, r->beat_ms, r->cpu_ms, r->rss_kb, sb), len);
}

static int num(const char *v, long long lo, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(v, &end, 10);
	return errno || end == v || *end || *out < lo || *out > 0x7fffffffffffLL ? -1 : 0;
}

static int str(const char *v, char *out, size_t len)
{
	if (!word_ok(v) || strlen(v) >= len)
		return -1;
	strcpy(out, v);
	return 0;
}

/* Every key of the kind exactly once, in any order; a node's last three
 * (the root's recovery figures) all or none. */
static int node_kv(struct pm_st_node *n, const char *k, const char *v, unsigned *seen)
{
	long long x;
	static const char *const keys[] = { "id", "name", "phase", "gen", "ranks", "health",
					    "rec_gen", "process_ms", "recovery_ms", "slow",
					    "state_bytes", "state_max", "standby_kb" };
	unsigned i;

	for (i = 0; i < 13 && strcmp(k, keys[i]); i++)
		;
	if (i == 13 || (*seen & (1u << i)))
		return -1;
	*seen |= 1u << i;
	switch (i) {
	case 9: return str(v, n->slow, sizeof(n->slow));
	case 1: return str(v, n->name, sizeof(n->name));
	case 2: return str(v, n->phase, sizeof(n->phase));
	case 5: return str(v, n->health, sizeof(n->health));
	case 7: case 8:
		return num(v, i == 8 ? -1 : 0, i == 7 ? &n->process_ms : &n->recovery_ms);
	case 10: case 11:
		return num(v, 0, i == 10 ? &n->state_bytes : &n->state_max);
	case 12:
		return num(v, 0, &n->standby_kb);
	}
	if (num(v, 0, &x) || x > 0x7fffffff)
		return -1;
	if (i == 0)
		n->node = (int)x;
	else if (i == 3)
		n->gen = (unsigned)x;
	else if (i == 6)
		n->rec_gen = (unsigned)x;
	else
		n->ranks = (int)x;
	return 0;
}

static int rank_kv(struct pm_st_rank *r, const char *k, const char *v, unsigned *seen)
{
	static const char *const keys[] = { "id", "local", "node", "pid", "state", "gen",
					    "beat_ms", "cpu_ms", "rss_kb", "standby", "standby_kb" };
	long long x;
	unsigned i;

	for (i = 0; i < 11 && strcmp(k, keys[i]); i++)
		;
	if (i == 11 || (*seen & (1u << i)))
		return -1;
	*seen |= 1u << i;
	if (i == 4)
		return str(v, r->state, sizeof(r->state));
	if (i == 9)
		return str(v, r->standby, sizeof(r->standby));
	/* -1: unknown (a rank's id before its supervisor came; no heartbeat,
	 * no process to measure). */
	if (num(v, i >= 6 || i == 0 ? -1 : 0, &x) || (i < 6 && x > 0x7fffffff))
		return -1;
	switch (i) {
	case 0: r->rank = (int)x; break;
	case 1: r->local = (int)x; break;
	case 2: r->node = (int)x; break;
	case 3: r->pid = (int)x; break;
	case 5: r->gen = (unsigned)x; break;
	case 6: r->beat_ms = x; break;
	case 7: r->cpu_ms = x; break;
	case 10: r->standby_kb = x; break;
	default: r->rss_kb = x; break;
	}
	return 0;
}

int pm_st_parse(const char *line, struct pm_st_node *n, struct pm_st_rank *r)
{
	char buf[512], *save = NULL, *w;
	int kind;
	unsigned seen = 0;

	if (strlen(line) >= sizeof(buf))
		return -1;
	strcpy(buf, line);
	w = strtok_r(buf, " ", &save);
	if (!w)
		return -1;
	if (!strcmp(w, "node")) {
		kind = 'N';
		memset(n, 0, sizeof(*n));
		n->state_bytes = n->state_max = -1;
	} else if (!strcmp(w, "rank")) {
		kind = 'R';
		memset(r, 0, sizeof(*r));
		r->standby_kb = -1;
	} else {
		return -1;
	}
	while ((w = strtok_r(NULL, " ", &save))) {
		char *eq = strchr(w, '=');
		if (!eq)
			return -1;
		*eq = '\0';
		if (kind == 'N' ? node_kv(n, w, eq + 1, &seen) : rank_kv(r, w, eq + 1, &seen))
			return -1;
	}
	if (kind == 'N') {
		/* slow (bit 9) is optional; state_bytes and state_max (10, 11) both or none. */
		unsigned st = seen & 0xc00u;
		seen &= 0x1ffu;
		return (seen == 0x3fu || seen == 0x1ffu) && (st == 0 || st == 0xc00u) ? kind : -1;
	}
	/* standby and standby_kb (bits 9, 10): both or none. */
	return (seen & 0x1ffu) == 0x1ffu && ((seen & 0x600u) == 0 || (seen & 0x600u) == 0x600u) ?
		       kind : -1;
}

void pm_st_summarize(const struct pm_st_node *n, int nn, const struct pm_st_rank *r, int nr,
		     struct pm_st_summary *s)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->state_bytes = -1;
	s->nodes = nn;
	s->ranks = nr;
	for (i = 0; i < nn; i++) {
		if (strcmp(n[i].phase, "absent") && strcmp(n[i].phase, "lost"))
			s->nodes_up++;
		if (n[i].state_bytes >= 0)
			s->state_bytes = (s->state_bytes < 0 ? 0 : s->state_bytes) + n[i].state_bytes;
		if (n[i].standby_kb > 0)
			s->standby_kb += n[i].standby_kb;
		if (n[i].rec_gen > s->rec_gen) {
			s->rec_gen = n[i].rec_gen;
			s->process_ms = n[i].process_ms;
			s->recovery_ms = n[i].recovery_ms;
		}
	}
	for (i = 0; i < nr; i++) {
		/* A spare's standbys count too: they are held for its turn. */
		if (!strcmp(r[i].standby, "ready"))
			s->sb_ready++;
		else if (!strcmp(r[i].standby, "starting"))
			s->sb_starting++;
		else if (r[i].standby[0])
			s->sb_none++;
		if (!strcmp(r[i].state, "spare")) {
			s->spares++;
			s->ranks--;
			continue;
		}
		if (!strcmp(r[i].state, "running"))
			s->running++;
		else if (!strcmp(r[i].state, "done"))
			s->done++;
		else if (!strcmp(r[i].state, "failed"))
			s->failed++;
		else
			s->other++;
		if (s->running + s->done + s->failed + s->other == 1 || r[i].gen < s->gen_min)
			s->gen_min = r[i].gen;
		if (s->running + s->done + s->failed + s->other == 1 || r[i].gen > s->gen_max)
			s->gen_max = r[i].gen;
	}
}

void pm_st_summary_line(const struct pm_st_summary *s, char *buf, size_t len)
{
	size_t off;

#define ADD(...) (off += (size_t)snprintf(buf + off, off < len ? len - off : 0, __VA_ARGS__))
	off = 0;
	ADD("%d rank%s on %d node%s", s->ranks, s->ranks == 1 ? "" : "s", s->nodes,
	    s->nodes == 1 ? "" : "s");
	if (s->nodes_up < s->nodes)
		ADD(" (%d not answering)", s->nodes - s->nodes_up);
	ADD(":");
	if (s->running)
		ADD(" %d running", s->running);
	if (s->done)
		ADD("%s %d done", s->running ? "," : "", s->done);
	if (s->failed)
		ADD("%s %d failed", s->running || s->done ? "," : "", s->failed);
	if (s->other)
		ADD("%s %d other", s->running || s->done || s->failed ? "," : "", s->other);
	if (!s->ranks)
		ADD(" none");
	else if (s->gen_min == s->gen_max)
		ADD("; generation %u", s->gen_max);
	else
		ADD("; generations %u to %u", s->gen_min, s->gen_max);
	if (s->spares)
		ADD("; %d spare%s in reserve", s->spares, s->spares == 1 ? "" : "s");
	if (s->state_bytes > 0)
		ADD("; state in memory %.1f MiB", (double)s->state_bytes / (1 << 20));
	if (s->sb_ready + s->sb_starting + s->sb_none) {
		ADD("; standbys: %d ready", s->sb_ready);
		if (s->sb_starting)
			ADD(", %d starting", s->sb_starting);
		if (s->sb_none)
			ADD(", %d none", s->sb_none);
		ADD(", holding %.1f MiB", (double)s->standby_kb / 1024);
	}
#undef ADD
}

int pm_st_recovery_line(const struct pm_st_summary *s, char *buf, size_t len)
{
	int n;

	if (len)
		buf[0] = '\0';
	if (!s->rec_gen)
		return -1;
	if (s->recovery_ms >= 0)
		n = snprintf(buf, len, "last restart: generation %u, every rank training again "
			     "%.2f s after the failure (procmgr's part %.2f s)", s->rec_gen,
			     (double)s->recovery_ms / 1000, (double)s->process_ms / 1000);
	else
		n = snprintf(buf, len, "last restart: generation %u, every rank running again "
			     "%.2f s after the failure (procmgr's part only: no heartbeat yet, "
			     "or the program sends none)", s->rec_gen, (double)s->process_ms / 1000);
	return done(n, len);
}
