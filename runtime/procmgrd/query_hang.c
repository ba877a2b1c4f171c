/* The stacks of a hang. Each supervisor takes its command's stack before
 * stopping it (rank/rank_stack.h): the hung rank's when it judges it hung,
 * every other's on the root's STOP with PM_FLAG_HUNG. Its node's procmgrd
 * reads it, keeps it in state_dir and sends it up the tree (ANSWER of
 * query 0) ahead of the rank's end, so that by the root's STOPPED, when
 * it blames the oldest heartbeat, every stack is in: the root then says
 * the grouped summary with the hung rank's stack on srun's stderr and in
 * the event log. */
#include "step.h"
#include "query.h"
#include "gen_int.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/blame.h"
#include "common/contract.h"
#include "common/stacks.h"
#include "common/text.h"

#define PM_HANG_RAW_MAX (256 * 1024)
#define PM_NO_STACK "procmgr: no stack for "

struct pm_hang_stack {
	int rank, node;
	char *text;
};

/* The root's: the stacks of this generation's hang, as they come. */
struct pm_hang_stacks {
	struct pm_hang_stack *kept;
	int n, cap;
	uint64_t last_ms; /* when the last one came: the capture's end */
};

static void keep(struct pm_step *s, int rank, int node, const char *text)
{
	struct pm_hang_stacks *h = s->hang_stacks;

	if (!h && !(h = s->hang_stacks = calloc(1, sizeof(*h))))
		return;
	if (h->n == h->cap) {
		int n = h->cap ? h->cap * 2 : 16;
		struct pm_hang_stack *p = realloc(h->kept, (size_t)n * sizeof(*p));
		if (!p)
			return;
		h->kept = p;
		h->cap = n;
	}
	h->kept[h->n].text = strdup(text);
	if (!h->kept[h->n].text)
		return;
	h->kept[h->n].rank = rank;
	h->kept[h->n].node = node;
	h->n++;
	h->last_ms = pm_now_ms();
}

void pm_query_hang_clear(struct pm_step *s)
{
	struct pm_hang_stacks *h = s->hang_stacks;
	int i;

	if (!h)
		return;
	for (i = 0; i < h->n; i++)
		free(h->kept[i].text);
	free(h->kept);
	free(h);
	s->hang_stacks = NULL;
}

void pm_query_hang_event(struct pm_step *s, const char *name)
{
	if (!strcmp(name, "hang"))
		pm_query_hang_report(s); /* its own event comes back here first */
	else if (!strcmp(name, "start"))
		pm_query_hang_clear(s);
}

/* In state_dir beside the step's logs, for after the step: JOB/STEP.hang.RANK.stack. */
static void save(struct pm_step *s, int rank, const char *text)
{
	char dir[4096], path[4200];
	int fd;

	snprintf(dir, sizeof(dir), "%s", pm_query_rundir(s));
	snprintf(path, sizeof(path), "%s/%u.hang.%d.stack", dirname(dir), s->stepid, rank);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		pm_log(s, "cannot keep rank %d's stack in %s: %m", rank, path);
	if (fd >= 0)
		close(fd);
}

/* No stack in what the tool wrote: why, as the supervisor said it
 * (rank/rank_stack.h), else the tool's last words. */
static void missing_why(const char *raw, int grank, char *out, size_t len)
{
	const char *tag = "procmgr: no stack: ", *p = strstr(raw, tag), *e;
	size_t n;

	if (p) {
		p += strlen(tag);
		snprintf(out, len, PM_NO_STACK "rank %d: %.*s\n", grank, (int)strcspn(p, "\n"), p);
		return;
	}
	for (e = raw + strlen(raw); e > raw && (e[-1] == '\n' || e[-1] == ' '); e--)
		;
	for (p = e; p > raw && p[-1] != '\n'; p--)
		;
	n = (size_t)(e - p) < 300 ? (size_t)(e - p) : 300;
	if (n)
		snprintf(out, len, PM_NO_STACK "rank %d: the stack tool found no frames and said: "
			 "%.*s\n", grank, (int)n, p);
	else
		snprintf(out, len, PM_NO_STACK "rank %d: the stack tool wrote nothing\n", grank);
	for (n = 0; out[n]; n++)
		if ((unsigned char)out[n] < 0x20 && out[n] != '\n')
			out[n] = ' ';
}

/* Thread lines alone are no stack. */
static bool has_frames(const char *norm)
{
	struct pm_stack_where *w = malloc(sizeof(*w));
	bool r = false;

	if (w) {
		pm_stack_where(norm, w);
		r = w->taken;
	}
	free(w);
	return r;
}

void pm_query_rank_ended(struct pm_step *s, int lrank)
{
	char path[4096], *raw, *text;
	int fd, grank = s->gen.ranks[lrank].grank;
	ssize_t n;

	if (pm_path_hang_stack(path, sizeof(path), pm_query_rundir(s), lrank) ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return; /* no hang: no stack */
	raw = malloc(PM_HANG_RAW_MAX + 1);
	text = malloc(PM_WIRE_TEXT_MAX + 1);
	n = raw ? read(fd, raw, PM_HANG_RAW_MAX) : -1;
	close(fd);
	unlink(path);
	if (n >= 0 && text) {
		raw[n] = '\0';
		/* One frame: a stack's first PM_WIRE_TEXT_MAX bytes, whole lines. */
		if (!pm_stack_normalize(raw, text, PM_WIRE_TEXT_MAX + 1) || !has_frames(text))
			missing_why(raw, grank, text, PM_WIRE_TEXT_MAX + 1);
		save(s, grank, text);
		if (s->gen.root) {
			keep(s, grank, s->node, text);
		} else if (s->parent && s->parent_ok) {
			struct pm_msg m;
			pm_msg_init(&m, PM_MSG_ANSWER);
			m.rank = grank;
			m.node = s->node;
			pm_msg_set_text(&m, text);
			pm_step_send(s, s->parent, &m);
		}
	}
	free(raw);
	free(text);
}

void pm_query_hang_answer(struct pm_step *s, const struct pm_msg *m)
{
	/* The root's, wherever it is now: node 0's until a failover. */
	if (s->gen.root)
		keep(s, m->rank, m->node, m->text);
	else if (s->parent && s->parent_ok)
		pm_step_send(s, s->parent, m);
}

int pm_query_hang_outlier(struct pm_step *s, int *node, struct pm_stack_verdict *v,
			  uint64_t *last_ms)
{
	struct pm_hang_stacks *h = s->hang_stacks;
	int nkept = h ? h->n : 0, i;
	struct pm_hang_stack *kept = h ? h->kept : NULL;
	const char **texts = calloc((size_t)(nkept ? nkept : 1), sizeof(char *));
	int *ranks = calloc((size_t)(nkept ? nkept : 1), sizeof(int));

	*last_ms = h ? h->last_ms : 0;
	memset(v, 0, sizeof(*v));
	v->rank = -1;
	if (texts && ranks) {
		for (i = 0; i < nkept; i++) {
			texts[i] = kept[i].text;
			ranks[i] = kept[i].rank;
		}
		if (pm_blame_stacks(texts, ranks, nkept, NULL, v))
			v->rank = -1;
		for (i = 0; v->rank >= 0 && i < nkept; i++)
			if (kept[i].rank == v->rank)
				*node = kept[i].node;
	}
	free(texts), free(ranks);
	return v->rank;
}

static void say(struct pm_step *s, const char *text)
{
	struct pm_msg m;
	int i, best = -1;

	for (i = 0; i < s->ntasks_local; i++)
		if (s->ranks[i] && (best < 0 || s->gen.ranks[i].grank < s->gen.ranks[best].grank))
			best = i;
	if (best < 0)
		return;
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, text);
	pm_step_send(s, s->ranks[best], &m);
}

/* At the root's "hang" event: the summary, the stacks taken grouped by
 * where each rank's main thread is (as the verdict compared them), those
 * not taken and why, and the blamed rank's stack last; none for a verdict
 * that blames nobody. */
void pm_query_hang_report(struct pm_step *s)
{
	const char **texts = NULL;
	int *ranks = NULL, *place = NULL, *members = NULL;
	char out[PM_WIRE_TEXT_MAX], top[128], list[512], ex[2048], esc[PM_WIRE_TEXT_MAX];
	char groups[2048], etop[256];
	struct pm_stack_verdict v;
	int blamed = s->gen.hang.blamed, i, g, hi = -1;
	const char *why = s->gen.hang.blamed_by == PM_BLAME_STACK ? "its stack stands apart"
			  : "hung first";
	size_t off = 0, goff = 0;
	struct pm_hang_stacks *h;
	struct pm_hang_stack *kept;
	uint64_t last = s->hang_stacks ? s->hang_stacks->last_ms : 0;
	int nkept;

	/* Every rank of the step has a line: one whose stack never came (its
	 * node or supervisor lost, its command gone before any capture) says
	 * so instead of being left out of the count. */
	for (g = 0; g < pm_gen_world(&s->gen); g++) {
		h = s->hang_stacks;
		for (i = 0; h && i < h->n && h->kept[i].rank != g; i++)
			;
		if (!h || i == h->n) {
			snprintf(ex, sizeof(ex), PM_NO_STACK "rank %d: none came before the stop (its "
				 "node or supervisor was lost, or its command ended first)\n", g);
			keep(s, g, -1, ex);
		}
	}
	if (!(h = s->hang_stacks))
		return;
	h->last_ms = last; /* the capture's end is the last real one's */
	kept = h->kept;
	nkept = h->n;
	texts = calloc((size_t)(nkept ? nkept : 1), sizeof(char *));
	ranks = calloc((size_t)(nkept ? nkept : 1), sizeof(int));
	place = calloc((size_t)(nkept ? nkept : 1), sizeof(int));
	members = calloc((size_t)(nkept ? nkept : 1), sizeof(int));
	if (!texts || !ranks || !place || !members || !nkept)
		goto out;
	for (i = 0; i < nkept; i++) {
		texts[i] = kept[i].text;
		ranks[i] = kept[i].rank;
		if (kept[i].rank == blamed)
			hi = i;
	}
	if (pm_blame_stacks(texts, ranks, nkept, place, &v))
		goto out;
	off += (size_t)snprintf(out + off, sizeof(out) - off,
				"procmgr: stacks at the hang of generation %u: %d rank%s, ", s->gen.gen,
				nkept, nkept == 1 ? "" : "s");
	if (v.taken)
		off += (size_t)snprintf(out + off, sizeof(out) - off, "%d stack%s taken in %d "
					"place%s%s", v.taken, v.taken == 1 ? "" : "s", v.places,
					v.places == 1 ? "" : "s", v.py ? " (by the Python frames)"
					: " (by the main thread)");
	else
		off += (size_t)snprintf(out + off, sizeof(out) - off, "no stack taken");
	if (v.missing && v.taken)
		off += (size_t)snprintf(out + off, sizeof(out) - off, ", %d not taken", v.missing);
	off += (size_t)snprintf(out + off, sizeof(out) - off, " (kept in state_dir/%u/%u.hang."
				"RANK.stack on each node)", s->job, s->stepid);
	groups[0] = '\0';
	for (g = 0; g < v.places; g++) {
		int k = 0, j = 0;
		for (i = 0; i < nkept; i++)
			if (place[i] == g) {
				members[k++] = ranks[i];
				j = i;
			}
		if (pm_ranks_format(members, k, list, sizeof(list)))
			snprintf(list, sizeof(list), "%d ranks", k);
		pm_stack_top(texts[j], top, sizeof(top));
		pm_json_escape(top, etop, sizeof(etop));
		if (off < sizeof(out))
			off += (size_t)snprintf(out + off, sizeof(out) - off, "\nprocmgr:   rank%s %s "
						"in %s", k == 1 ? "" : "s", list, top);
		if (goff < sizeof(groups))
			goff += (size_t)snprintf(groups + goff, sizeof(groups) - goff,
						 "%s{\"ranks\":\"%s\",\"top\":\"%s\"}", g ? "," : "", list,
						 etop);
	}
	/* The stacks not taken, each with why, as the supervisor said it. */
	for (i = 0; i < nkept; i++) {
		struct pm_stack_where *w;
		if (place[i] >= 0 || off >= sizeof(out) || !(w = malloc(sizeof(*w))))
			continue;
		pm_stack_where(texts[i], w);
		off += (size_t)snprintf(out + off, sizeof(out) - off, "\nprocmgr:   no stack for "
					"rank %d: %s", ranks[i], w->why);
		free(w);
	}
	etop[0] = top[0] = esc[0] = '\0';
	if (hi >= 0 && place[hi] >= 0) {
		pm_stack_top(texts[hi], top, sizeof(top));
		pm_stack_brief(texts[hi], ex, sizeof(ex));
		if (off < sizeof(out))
			snprintf(out + off, sizeof(out) - off, "\nprocmgr: rank %d (%s) was in "
				 "%s:\n%s", blamed, why, top, ex);
		pm_json_escape(texts[hi], esc, sizeof(esc));
		pm_json_escape(top, etop, sizeof(etop));
	} else if (hi >= 0 && off < sizeof(out)) {
		snprintf(out + off, sizeof(out) - off, "\nprocmgr: rank %d (%s): its stack was not "
			 "taken", blamed, why);
	}
	say(s, out);
	if (goff >= sizeof(groups))
		groups[0] = '\0'; /* cut: the file on each node has them all */
	{
		char f[PM_WIRE_TEXT_MAX * 2];
		/* How long the stacks took, from the first rank judged hung: the
		 * stop waits for them, and the recovery says them apart from
		 * procmgr's part (recovery.c). */
		unsigned long long cap = last > s->gen.fail_t0 ?
					 (unsigned long long)(last - s->gen.fail_t0) : 0;
		snprintf(f, sizeof(f), "\"gen\":%u,\"rank\":%d,\"top\":\"%s\",\"ranks\":%d,"
			 "\"taken\":%d,\"groups\":[%s],\"stack\":\"%s\",\"capture_ms\":%llu",
			 s->gen.gen, hi >= 0 ? blamed : -1, etop, nkept, v.taken, groups, esc, cap);
		pm_step_ops.event(s, "hang_stacks", f);
	}
out:
	free(texts), free(ranks), free(place), free(members);
	pm_query_hang_clear(s);
}
