/* The simulation's side of the state machine's API (procmgrd/gen.h): its
 * ops carried out on the simulated world, and each input turned into the
 * call procmgrd's links would make (tree_link.c, rank_link.c,
 * transport.c). The one file to adapt when gen.h changes. Every node's
 * ops share one context, the world: s->cur is the node being handled. */
#include "sim.h"

#include "procmgrd/gen_int.h" /* pm_gen_leave, as attach.c calls it */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"

static void op_send_up(void *ctx, const struct pm_msg *m)
{
	struct sim *s = ctx;
	struct sim_node *n = &s->n[s->cur];
	uint8_t f[PM_WIRE_FRAME_MAX];
	int len;

	if (n->parent < 0)
		return; /* the root */
	if (n->parent_ok) {
		sim_send(s, EV_UP, n->parent, m);
		return;
	}
	/* As procmgrd: queued until the parent proved itself. */
	len = pm_msg_encode(m, f, sizeof(f));
	if (len > 0) {
		uint8_t *p = realloc(n->pend, n->pend_len + (size_t)len);
		if (!p)
			return;
		memcpy(p + n->pend_len, f, (size_t)len);
		n->pend = p;
		n->pend_len += (uint32_t)len;
	}
}

static void op_send_child(void *ctx, int node, const struct pm_msg *m)
{
	struct sim *s = ctx;

	if (node > 0 && node < s->p.nodes && s->n[node].joined && s->n[node].parent == s->cur)
		sim_send(s, EV_DOWN, node, m);
}

static void op_send_down(void *ctx, const struct pm_msg *m)
{
	struct sim *s = ctx;
	struct pm_gen *g = &s->n[s->cur].g;
	int i;

	for (i = 0; i < g->nkids; i++)
		if (g->kids[i].up)
			op_send_child(ctx, g->kids[i].node, m);
}

static void op_send_rank(void *ctx, int lrank, const struct pm_msg *m)
{
	sim_send(ctx, EV_TO_SUP, lrank, m);
}

static void op_arm_timer(void *ctx, unsigned ms)
{
	struct sim *s = ctx;

	/* timerfd: 0 disarms */
	sim_timer(s, EV_DELAY, ms, ++s->n[s->cur].delay_arm);
}

static void op_arm_stop(void *ctx, unsigned ms)
{
	struct sim *s = ctx;

	sim_timer(s, EV_STOP_TIMER, ms, ++s->n[s->cur].stop_arm);
}

static int op_run_checks(void *ctx, char *why, size_t len)
{
	(void)ctx;
	(void)why;
	(void)len;
	return 1; /* no checks between generations */
}

static void op_event(void *ctx, const char *name, const char *fields)
{
	sim_root_event(ctx, name, fields);
}

static void op_became_root(void *ctx)
{
	struct sim *s = ctx;

	s->n[s->cur].parent = -1;
	sim_root_event(s, "became_root", "");
}

static void op_log(void *ctx, const char *text)
{
	(void)ctx;
	(void)text;
}

static uint64_t op_now_ms(void *ctx)
{
	return ((struct sim *)ctx)->cursor / 1000000;
}

static const struct pm_gen_ops sim_ops = {
	.send_up = op_send_up,
	.send_down = op_send_down,
	.send_child = op_send_child,
	.send_rank = op_send_rank,
	.arm_timer = op_arm_timer,
	.arm_stop = op_arm_stop,
	.run_checks = op_run_checks,
	.event = op_event,
	.avoid = NULL,
	.became_root = op_became_root,
	.log = op_log,
	.now_ms = op_now_ms,
};

int sim_node_init(struct sim *s, int node)
{
	struct pm_gen_config cf = {
		.node = node, .nnodes = s->p.nodes, .fanout = s->p.fanout,
		.ntasks = s->p.nodes * s->p.rpn, .ntasks_local = s->p.rpn,
		.names = s->names,
		/* as pm_step_init with grace=1 and no checks */
		.stop_bound_ms = 1000 + 2000, .stop_margin_ms = 1000, .spares = s->p.spares,
		.ops = &sim_ops, .ctx = s,
	};
	struct pm_opts o;
	char spec[64], err[256];
	int i;

	pm_opts_init(&o);
	snprintf(spec, sizeof(spec), "restart=on-failure:%d grace=1", s->p.trials + 2);
	if (pm_opts_parse_str(&o, spec, "sim", err, sizeof(err)))
		return -1;
	pm_policy_from_opts(&cf.policy, &o);
	if (pm_gen_init(&s->n[node].g, &cf))
		return -1;
	s->n[node].parent = pm_tree_parent(node, s->p.fanout);
	/* Every supervisor connects as procmgrd starts (rank_link.c). */
	for (i = 0; i < s->p.rpn; i++)
		pm_gen_rank_hello(&s->n[node].g, i, node * s->p.rpn + i);
	return 0;
}

void sim_node_free(struct sim *s, int node)
{
	pm_gen_free(&s->n[node].g);
	free(s->n[node].cand);
	s->n[node].cand = NULL;
	free(s->n[node].pend);
	s->n[node].pend = NULL;
}

static int decode(const uint8_t *frame, size_t len, struct pm_msg *m)
{
	const char *err;

	return pm_msg_decode(frame, len, m, &err) > 0 ? 0 : -1;
}

void sim_gen_local_ready(struct sim *s)
{
	pm_gen_local_ready(&s->n[s->cur].g);
}

/* A HELLO from child: as tree_link.c, a node of the tree's making or,
 * with spares, one whose parent was lost. -1: refused. */
int sim_gen_child_hello(struct sim *s, int child)
{
	struct pm_gen *g = &s->n[s->cur].g;
	int idx = pm_gen_kid_index(g, child);

	if (idx < 0 && s->p.spares && child > s->cur)
		idx = pm_gen_adopt(g, child);
	return idx;
}

void sim_gen_child_joined(struct sim *s, int child)
{
	s->n[child].joined = true;
	pm_gen_child_joined(&s->n[s->cur].g, child);
}

/* attach.c: a node whose parent is lost asks its ancestors, then the
 * root's children; the candidates in s->n[cur].cand. */
void sim_gen_attach_start(struct sim *s, const char *why)
{
	struct sim_node *n = &s->n[s->cur];

	pm_gen_lost(&n->g, n->parent, why);
	if (!n->cand)
		n->cand = malloc(64 * sizeof(int));
	n->ncand = n->cand ? pm_gen_parent_candidates(&n->g, n->cand, 64) : 0;
	n->next = 0;
}

void sim_gen_parent_changed(struct sim *s)
{
	pm_gen_parent_changed(&s->n[s->cur].g);
}

void sim_gen_attach_none(struct sim *s, const char *why)
{
	if (pm_tree_depth(s->cur, s->p.fanout) == 1)
		pm_gen_take_root(&s->n[s->cur].g, why);
	else
		pm_gen_leave(&s->n[s->cur].g, why);
}


void sim_gen_parent_ok(struct sim *s)
{
	struct sim_node *n = &s->n[s->cur];
	struct pm_msg m;
	uint32_t off = 0;
	const char *err;
	int len;

	n->parent_ok = true;
	while (off < n->pend_len &&
	       (len = pm_msg_decode(n->pend + off, n->pend_len - off, &m, &err)) > 0) {
		sim_send(s, EV_UP, n->parent, &m);
		off += (uint32_t)len;
	}
	free(n->pend);
	n->pend = NULL;
	n->pend_len = 0;
}

/* One struct pm_msg for every input: the runtime's 4 KiB, not per node. */
static struct pm_msg in_msg;

int sim_gen_from_child(struct sim *s, int child, const uint8_t *frame, size_t len)
{
	if (decode(frame, len, &in_msg))
		return -1;
	return pm_gen_child_msg(&s->n[s->cur].g, child, &in_msg);
}

int sim_gen_from_parent(struct sim *s, const uint8_t *frame, size_t len)
{
	if (decode(frame, len, &in_msg))
		return -1;
	return pm_gen_parent_msg(&s->n[s->cur].g, &in_msg);
}

int sim_gen_from_rank(struct sim *s, int lrank, const uint8_t *frame, size_t len)
{
	if (decode(frame, len, &in_msg))
		return -1;
	return pm_gen_rank_msg(&s->n[s->cur].g, lrank, &in_msg);
}

void sim_gen_child_lost(struct sim *s, int child, const char *why)
{
	if (s->n[child].parent == s->cur)
		s->n[child].joined = false;
	pm_gen_child_lost(&s->n[s->cur].g, child, why);
}

void sim_gen_parent_lost(struct sim *s, const char *why)
{
	s->n[s->cur].parent_ok = false;
	if (!pm_gen_terminal(&s->n[s->cur].g))
		pm_gen_abort_local(&s->n[s->cur].g, why);
}

void sim_gen_delay(struct sim *s, uint32_t arm)
{
	if (arm == s->n[s->cur].delay_arm)
		pm_gen_timer(&s->n[s->cur].g);
}

void sim_gen_stop_timer(struct sim *s, uint32_t arm)
{
	if (arm == s->n[s->cur].stop_arm)
		pm_gen_stop_timer(&s->n[s->cur].g);
}

bool sim_gen_terminal(const struct sim *s, int node)
{
	return pm_gen_terminal(&s->n[node].g);
}

size_t sim_gen_bytes(const struct sim *s, int node)
{
	const struct pm_gen *g = &s->n[node].g;

	size_t n = (size_t)g->cf.nnodes, b;

	b = sizeof(*g) + (size_t)(g->cf.ntasks_local ? g->cf.ntasks_local : 1) *
	    sizeof(*g->ranks) + (size_t)g->kids_cap * sizeof(*g->kids);
	if (g->cf.spares) /* spares.c: 5 bytes a node, and the lists of the lost */
		b += (size_t)g->nactive * sizeof(int) + n * (sizeof(int) + sizeof(bool)) +
		     (size_t)g->xcap * sizeof(int) + (size_t)g->repl_cap * sizeof(*g->repl);
	return b;
}
