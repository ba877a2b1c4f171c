/* The generation state machine: every node's side, its state and the
 * primitives every layer above uses: what a node says (the one printer on
 * srun's stderr) and does on the root's word (STOP, START, FINISH/ABORT).
 * Layers, each calling only those below it (see docs/design.md):
 * gen_kids.c (children counting) < spares.c (slots) < gen.c < decide.c
 * (the root's verdicts, pure), gen_sweep.c, recovery.c < gen_apply.c (the
 * root applies a verdict) < gen_report.c (reports up) < gen_input.c,
 * gen_request.c (inputs). */
#include "gen_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"

void pm_gen_log(struct pm_gen *g, const char *fmt, ...)
{
	char buf[PM_WIRE_TEXT_MAX + 256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	g->cf.ops->log(g->cf.ctx, buf);
}

const char *pm_gen_node_name(const struct pm_gen *g, int node)
{
	return node >= 0 && node < g->cf.nnodes && g->cf.names ? g->cf.names[node] : "?";
}

const char *pm_phase_name(enum pm_phase p)
{
	static const char *const names[] = { "starting", "running", "stopping", "delay",
					     "finished", "aborted" };
	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

/* "all 8 ranks"; "its one rank", not "all 1 ranks". Until the next call. */
const char *pm_gen_all_ranks(const struct pm_gen *g)
{
	static char buf[32];

	snprintf(buf, sizeof(buf), "all %d ranks", pm_gen_world(g));
	return pm_gen_world(g) == 1 ? "its one rank" : buf;
}

bool pm_gen_is_root(const struct pm_gen *g)
{
	return g->root;
}

bool pm_gen_terminal(const struct pm_gen *g)
{
	return g->phase == PM_PHASE_FINISHED || g->phase == PM_PHASE_ABORTED;
}

bool pm_gen_over(const struct pm_gen *g)
{
	int i;

	if (!pm_gen_terminal(g))
		return false;
	/* A supervisor that is late still needs to be told how the step ended. */
	for (i = 0; i < g->cf.ntasks_local; i++)
		if (g->ranks[i].st != PM_RANK_GONE)
			return false;
	return true;
}

bool pm_gen_rank_connected(const struct pm_gen_rank *r)
{
	return r->st != PM_RANK_ABSENT && r->st != PM_RANK_GONE;
}

static void send_ranks(struct pm_gen *g, const struct pm_msg *m)
{
	int i;

	for (i = 0; i < g->cf.ntasks_local; i++)
		if (pm_gen_rank_connected(&g->ranks[i]))
			g->cf.ops->send_rank(g->cf.ctx, i, m);
}

/* The local rank that speaks for this node: the lowest global rank alive
 * (not avoid), else any live supervisor (a spare's). -1: none. */
static int pm_gen_printer_lrank_avoid(const struct pm_gen *g, int avoid)
{
	int i, best = -1;

	for (i = 0; i < g->cf.ntasks_local; i++) {
		const struct pm_gen_rank *r = &g->ranks[i];
		if (!pm_gen_rank_connected(r) || (avoid >= 0 && r->grank == avoid))
			continue;
		if (best < 0 || (r->grank >= 0 && (g->ranks[best].grank < 0 ||
						   r->grank < g->ranks[best].grank)))
			best = i;
	}
	return best;
}

int pm_gen_printer(const struct pm_gen *g, int avoid)
{
	int i = pm_gen_printer_lrank_avoid(g, avoid);

	return i < 0 ? -1 : g->ranks[i].grank;
}

/* The local rank whose supervisor prints what this node says (say, tell):
 * rank 0's on node 0; with spares, whichever live rank the node has (rank
 * 0 may have moved, or the root is a spare). -1: none connected yet. */
static int speaker(const struct pm_gen *g)
{
	int i;

	if (pm_gen_spares(g))
		return pm_gen_printer_lrank_avoid(g, -1);
	for (i = 0; i < g->cf.ntasks_local; i++)
		if (pm_gen_rank_connected(&g->ranks[i]) && g->ranks[i].grank == 0)
			return i;
	return -1;
}

/* A rank can fail before the printer's supervisor has connected (the
 * ranks start as their supervisors come): what the root said meanwhile
 * waits for it, in order, up to PM_SAID_MAX bytes. */
static void keep_said(struct pm_gen *g, const char *text)
{
	size_t n = strlen(text) + 1;

	if (g->said_len + n > PM_SAID_MAX) {
		g->said_lost++;
		return;
	}
	if (!g->said && !(g->said = malloc(PM_SAID_MAX))) {
		g->said_lost++;
		return;
	}
	memcpy(g->said + g->said_len, text, n);
	g->said_len += n;
}

static void flush_said(struct pm_gen *g, int lrank)
{
	struct pm_msg m;
	size_t off;

	for (off = 0; off < g->said_len; off += strlen(g->said + off) + 1) {
		pm_msg_init(&m, PM_MSG_PRINT);
		pm_msg_set_text(&m, g->said + off);
		g->cf.ops->send_rank(g->cf.ctx, lrank, &m);
	}
	if (g->said_lost) {
		pm_gen_log(g, "%u lines for rank 0's stderr were not kept: its supervisor "
			   "came late", g->said_lost);
		g->said_lost = 0;
	}
	free(g->said);
	g->said = NULL;
	g->said_len = 0;
}

/* A supervisor said HELLO: if it speaks for the node now, what was said
 * before it came is its first output. */
void pm_gen_said_hello(struct pm_gen *g, int lrank)
{
	if (g->said_len && speaker(g) == lrank)
		flush_said(g, lrank);
}

static void say(struct pm_gen *g, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void say(struct pm_gen *g, const char *fmt, va_list ap)
{
	struct pm_msg m;
	char buf[3072]; /* a hang's verdict names places and stacks not taken */
	int i = speaker(g);

	vsnprintf(buf, sizeof(buf), fmt, ap);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, buf);
	if (i >= 0)
		g->cf.ops->send_rank(g->cf.ctx, i, &m);
	else
		keep_said(g, m.text);
}

void pm_gen_say(struct pm_gen *g, const char *fmt, ...)
{
	va_list ap;

	if (!g->cf.verbose)
		return;
	va_start(ap, fmt);
	say(g, fmt, ap);
	va_end(ap);
}

void pm_gen_event(struct pm_gen *g, const char *name, const char *fmt, ...)
{
	char f[PM_WIRE_TEXT_MAX * 3];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f, sizeof(f), fmt, ap);
	va_end(ap);
	g->cf.ops->event(g->cf.ctx, name, f);
}

void pm_gen_tell(struct pm_gen *g, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(g, fmt, ap);
	va_end(ap);
}

/* ---- what every node does on the root's word ---- */

static void arm_stop(struct pm_gen *g, enum pm_stop_stage stage, unsigned ms)
{
	g->stop_stage = ms ? stage : PM_STOP_NONE;
	if (g->cf.ops->arm_stop && (ms || stage == PM_STOP_NONE))
		g->cf.ops->arm_stop(g->cf.ctx, ms);
}

void pm_gen_arm_stop(struct pm_gen *g, enum pm_stop_stage stage, unsigned ms)
{
	arm_stop(g, stage, ms);
}

void pm_gen_stop(struct pm_gen *g, uint32_t gen)
{
	struct pm_msg m;
	int i;

	/* A node that joined late may not have seen generation gen start. */
	if (g->phase != PM_PHASE_RUNNING || gen < g->gen)
		return;
	g->gen = gen;
	g->phase = PM_PHASE_STOPPING;
	g->checks = PM_CHECKS_NONE;
	g->stop_t0 = g->cf.ops->now_ms(g->cf.ctx);
	g->stopped_sent = false;
	for (i = 0; i < g->nkids; i++) {
		g->kids[i].stopped = 0;
		g->kids[i].stopped_rep = false;
	}
	arm_stop(g, PM_STOP_OWN, g->cf.stop_bound_ms +
			       (g->stop_flags & PM_FLAG_HUNG ? g->cf.stack_ms : 0));
	pm_msg_init(&m, PM_MSG_STOP);
	m.gen = gen;
	m.count = g->stop_flags;
	g->stop_flags = 0;
	g->cf.ops->send_down(g->cf.ctx, &m);
	for (i = 0; i < g->cf.ntasks_local; i++) {
		struct pm_gen_rank *r = &g->ranks[i];
		if (r->st == PM_RANK_RUNNING) {
			r->stop_pending = true;
			g->cf.ops->send_rank(g->cf.ctx, i, &m);
		}
	}
}

/* START to one local rank. With spares it says who the rank is now (its
 * node's slot may be new); a node without a slot starts nothing. */
void pm_gen_start_rank(struct pm_gen *g, int i)
{
	struct pm_gen_rank *r = &g->ranks[i];
	struct pm_msg m;
	int slot = pm_gen_slot(g, g->cf.node);

	pm_msg_init(&m, PM_MSG_START);
	m.gen = g->gen;
	if (pm_gen_spares(g)) {
		if (slot < 0)
			return;
		r->grank = slot * g->cf.ntasks_local + i;
		m.rank = r->grank;
		m.node = slot;
		pm_msg_set_text(&m, pm_gen_node_name(g, g->slot_node[0]));
	}
	r->st = PM_RANK_RUNNING;
	r->stop_pending = false;
	g->cf.ops->send_rank(g->cf.ctx, i, &m);
}

void pm_gen_start(struct pm_gen *g, uint32_t gen)
{
	struct pm_msg m;
	int i;

	/* Said again to a node that came to a new parent: already running. */
	if (pm_gen_terminal(g) || (g->phase == PM_PHASE_RUNNING && gen == g->gen))
		return;
	g->gen = gen;
	g->phase = PM_PHASE_RUNNING;
	arm_stop(g, PM_STOP_NONE, 0);
	for (i = 0; i < g->nkids; i++)
		g->kids[i].done = 0;
	g->done_sent = false;
	for (i = 0; i < g->nkids; i++)
		g->kids[i].running[0] = g->kids[i].running[1] = 0;
	g->running_sent[0] = g->running_sent[1] = false;
	g->start_t0 = g->cf.ops->now_ms(g->cf.ctx);
	pm_msg_init(&m, PM_MSG_START);
	m.gen = gen;
	m.count = (uint32_t)g->restarts;
	g->cf.ops->send_down(g->cf.ctx, &m);
	for (i = 0; i < g->cf.ntasks_local; i++) {
		g->ranks[i].run_seen = g->ranks[i].beat_seen = false;
		if (pm_gen_rank_connected(&g->ranks[i]))
			pm_gen_start_rank(g, i);
	}
}

/* FINISH or ABORT: said once, down the tree and to every local rank, and
 * kept for those that come late. */
void pm_gen_end(struct pm_gen *g, const struct pm_msg *m)
{
	if (pm_gen_terminal(g))
		return;
	g->phase = m->type == PM_MSG_FINISH ? PM_PHASE_FINISHED : PM_PHASE_ABORTED;
	arm_stop(g, PM_STOP_NONE, 0);
	g->end_msg = *m;
	g->cf.ops->send_down(g->cf.ctx, m);
	send_ranks(g, m);
}

void pm_gen_leave(struct pm_gen *g, const char *why)
{
	struct pm_msg m;

	pm_gen_log(g, "%s", why);
	if (pm_gen_terminal(g))
		return;
	g->phase = PM_PHASE_ABORTED;
	arm_stop(g, PM_STOP_NONE, 0);
	/* Its ranks end without failing the job: the spare runs them now. */
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = 0;
	m.rank = -2; /* nobody prints: the root said it */
	g->end_msg = m;
	send_ranks(g, &m);
}

void pm_gen_abort_local(struct pm_gen *g, const char *why)
{
	struct pm_msg m;

	pm_gen_log(g, "%s", why);
	if (pm_gen_terminal(g))
		return;
	pm_msg_init(&m, PM_MSG_ABORT);
	m.gen = g->gen;
	m.status = 1;
	pm_msg_set_text(&m, why);
	/* Said by this node's printer, where the reason is known. */
	m.rank = pm_gen_printer(g, -1);
	if (pm_gen_is_root(g))
		g->cf.ops->event(g->cf.ctx, "give_up", "\"reason\":\"local\"");
	pm_gen_end(g, &m);
}
int pm_gen_init(struct pm_gen *g, const struct pm_gen_config *cf)
{
	memset(g, 0, sizeof(*g));
	g->cf = *cf;
	if (cf->ntasks_local < 0 || cf->nnodes < 1 || cf->node < 0 || cf->node >= cf->nnodes ||
	    cf->fanout < 2)
		return -1;
	g->ranks = calloc((size_t)(cf->ntasks_local ? cf->ntasks_local : 1), sizeof(*g->ranks));
	if (!g->ranks)
		return -1;
	g->nchildren = pm_tree_children(cf->node, cf->fanout, cf->nnodes, &g->child_first);
	g->subtree = pm_tree_subtree_size(cf->node, cf->fanout, cf->nnodes);
	g->root = cf->node == 0;
	if (pm_gen_kids_init(g) || pm_gen_spares_init(g)) {
		pm_gen_free(g);
		return -1;
	}
	g->phase = PM_PHASE_STARTING;
	pm_msg_init(&g->end_msg, PM_MSG_ABORT);
	return 0;
}

void pm_gen_free(struct pm_gen *g)
{
	free(g->ranks);
	g->ranks = NULL;
	free(g->said);
	g->said = NULL;
	g->said_len = 0;
	pm_gen_spares_free(g);
	pm_gen_kids_free(g);
}
