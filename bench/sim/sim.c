/* pm-sim: procmgr's protocol at up to millions of nodes in one process.
 * Every node runs the real state machine (gen.c, decide.c, through ops.c)
 * on a simulated clock; the world around it is modelled here: a CPU per
 * process (or a few cores shared by all, as on the harness's machine), a
 * one-way latency and jitter per tree hop and per rank link, munge's cost
 * per credential, the supervisors (answer STOP at once; START costs a
 * fork/exec or nothing), the harness's spawn rate, and injected faults.
 *
 *   pm-sim [--nodes N] [--fanout K] [options]   (pm-sim --help)
 *
 * One JSON line per run on stdout (sim_main.c: the command line and the
 * report). Times are the simulated clock's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"
#include "sim.h"

#define NS(us) ((uint64_t)((us) * 1000.0))
#define NEVER UINT64_MAX

enum { SC_FAIL, SC_FINISH, SC_FAULT };

/* What the run observed (sim.h), reported by sim_main.c. */
static struct sim_obs o;

/* ---- randomness and time ---- */

uint64_t sim_rand(struct sim *s)
{
	/* xorshift64*: reproducible for a seed */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ull;
}

static double unif(struct sim *s)
{
	return (double)(sim_rand(s) >> 11) / 9007199254740992.0;
}

static uint64_t jitter(struct sim *s, double mean_us)
{
	return mean_us > 0 ? NS(-mean_us * log(1.0 - unif(s))) : 0;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void push(struct sim *s, uint64_t t, int kind, int node, int arg, const uint8_t *f,
		 size_t len)
{
	if (sim_push(&s->q, t, kind, node, arg, f, len)) {
		fprintf(stderr, "pm-sim: out of memory for the event queue\n");
		exit(1);
	}
}

/* ---- CPU: a process free from *busy runs at or after t on a core ---- */

static int core_take(struct sim *s, uint64_t *start)
{
	int i, best = 0;

	if (!s->p.cores)
		return -1;
	for (i = 1; i < s->p.cores; i++)
		if (s->core[i] < s->core[best])
			best = i;
	*start = max64(*start, s->core[best]);
	return best;
}

static int core;

static void begin(struct sim *s, int node, uint64_t t)
{
	uint64_t start = max64(t, s->n[node].busy);
	double f = node == s->p.slow_node ? s->p.slow_factor : 1.0;

	core = core_take(s, &start);
	s->cur = node;
	s->cursor = start + NS(s->p.op_us * f); /* the frame in */
}

static void end(struct sim *s)
{
	s->n[s->cur].busy = s->cursor;
	if (core >= 0)
		s->core[core] = s->cursor;
}

/* A munge encode or decode, which procmgrd waits for. */
static uint64_t munge_op(struct sim *s, uint64_t t)
{
	int i, best = 0;

	if (!s->p.munge_threads)
		return t + NS(s->p.cred_us);
	for (i = 1; i < s->p.munge_threads; i++)
		if (s->munge[i] < s->munge[best])
			best = i;
	t = max64(t, s->munge[best]);
	if (s->p.cores) {
		int c = core_take(s, &t);
		s->core[c] = t + NS(s->p.cred_us);
	}
	s->munge[best] = t + NS(s->p.cred_us);
	return s->munge[best];
}

/* Whether node is in the subtree cut off by a partition. */
static bool inside(const struct sim *s, int node)
{
	while (node > s->cut)
		node = pm_tree_parent(node, s->p.fanout);
	return node == s->cut;
}

static bool severed(const struct sim *s, int a, int b)
{
	return s->cut >= 0 && inside(s, a) != inside(s, b);
}

/* ---- what ops.c asks of the world ---- */

static void count(struct sim_count *c, bool out, size_t bytes)
{
	if (!o.counting)
		return;
	if (out) {
		c->out++;
		c->bytes_out += bytes;
	} else {
		c->in++;
		c->bytes_in += bytes;
	}
}

void sim_send(struct sim *s, int kind, int to, const struct pm_msg *m)
{
	uint8_t f[PM_WIRE_FRAME_MAX];
	double fac = s->cur == s->p.slow_node ? s->p.slow_factor : 1.0;
	int len = pm_msg_encode(m, f, sizeof(f));
	uint64_t t;

	if (len <= 0)
		return;
	s->cursor += NS(s->p.op_us * fac);
	if (kind == EV_TO_SUP) {
		struct sim_sup *u = &s->sup[s->cur * s->p.rpn + to];
		t = max64(s->cursor + NS(s->p.rank_hop_us), u->last_to);
		u->last_to = t;
		push(s, t, EV_TO_SUP, s->cur, to, f, (size_t)len);
		return;
	}
	if (s->cur == 0)
		count(&s->c_root, true, (size_t)len);
	if (s->cur == s->interior)
		count(&s->c_interior, true, (size_t)len);
	t = s->cursor + NS(s->p.hop_us) + jitter(s, s->p.jitter_us);
	if (severed(s, s->cur, to))
		return;
	if (kind == EV_UP) {
		struct sim_node *n = &s->n[s->cur];
		t = n->last_up = max64(t, n->last_up);
		push(s, t, EV_UP, to, s->cur, f, (size_t)len);
	} else {
		struct sim_node *n = &s->n[to];
		t = n->last_down = max64(t, n->last_down);
		push(s, t, EV_DOWN, to, s->cur, f, (size_t)len);
	}
}

void sim_timer(struct sim *s, int kind, unsigned ms, uint32_t arm)
{
	if (ms)
		push(s, s->cursor + (uint64_t)ms * 1000000, kind, s->cur, (int)arm, NULL, 0);
}

static int gen_of(const char *fields)
{
	const char *g = strstr(fields, "\"gen\":");

	return g ? atoi(g + 6) : -1;
}

void sim_root_event(struct sim *s, const char *name, const char *fields)
{
	int g = gen_of(fields);
	uint64_t t = s->cursor;

	if (!strcmp(name, "launch"))
		o.ev_launch = t;
	else if (!strcmp(name, "rank_failed") && g >= 0 && g < o.ngen)
		o.ev_failed[g] = t;
	else if (!strcmp(name, "stopped") && g >= 0 && g < o.ngen)
		o.ev_stopped[g] = t;
	else if (!strcmp(name, "start") && g >= 0 && g < o.ngen)
		o.ev_start[g] = t;
	else if (!strcmp(name, "node_lost") && !o.ev_lost)
		o.ev_lost = t;
	else if (!strcmp(name, "node_replaced") && !o.ev_replaced)
		o.ev_replaced = t;
	else if (!strcmp(name, "root_moved") && !o.ev_root_moved)
		o.ev_root_moved = t;
	if (!strcmp(name, "finish") || !strcmp(name, "give_up")) {
		o.ev_end = t;
		o.end_event = !strcmp(name, "finish") ? "finish" : "give_up";
	}
}

/* ---- supervisors ---- */

static void sup_send(struct sim *s, int node, int lrank, uint64_t t, int type, uint32_t gen,
		     int status)
{
	struct sim_sup *u = &s->sup[node * s->p.rpn + lrank];
	struct pm_msg m;
	uint8_t f[64];
	int len;

	pm_msg_init(&m, (enum pm_msg_type)type);
	m.gen = gen;
	m.status = status;
	len = pm_msg_encode(&m, f, sizeof(f));
	t = u->last_from = max64(t + NS(s->p.rank_hop_us), u->last_from);
	push(s, t, EV_FROM_SUP, node, lrank, f, (size_t)len);
}

static void all_started(struct sim *s, int g, uint64_t t);

static void sup_msg(struct sim *s, int node, int lrank, const struct pm_msg *m, uint64_t t)
{
	int idx = node * s->p.rpn + lrank;
	struct sim_sup *u = &s->sup[idx];
	uint64_t *busy = s->p.fleet ? &s->sup[0].busy : &u->busy;
	uint64_t start = max64(t, *busy);
	int c = core_take(s, &start);
	uint64_t cur = start + NS(s->p.sup_us);

	switch (m->type) {
	case PM_MSG_START:
		u->running = true;
		cur += NS(s->p.exec_us);
		if ((int)m->gen < o.ngen) {
			int g = (int)m->gen;
			if (!o.started[g]++)
				o.first_start[g] = cur;
			/* A generation started again (a root that took over) is not
			 * the first one's end. */
			if (o.started[g] <= o.world)
				o.last_start[g] = max64(o.last_start[g], cur);
			if (o.started[g] == o.world)
				all_started(s, g, o.last_start[g]);
		}
		break;
	case PM_MSG_STOP:
		u->running = false;
		if ((int)m->gen < o.ngen)
			o.last_stop[m->gen] = max64(o.last_stop[m->gen], cur);
		cur += NS(s->p.sup_us);
		sup_send(s, node, lrank, cur, PM_MSG_RANK_STOPPED, m->gen, 0);
		break;
	case PM_MSG_FINISH:
	case PM_MSG_ABORT:
		if (!u->ended) {
			u->ended = true;
			o.ended++;
			o.last_end = max64(o.last_end, cur);
		}
		break;
	default:
		break;
	}
	*busy = cur;
	if (c >= 0)
		s->core[c] = cur;
}

/* ---- scenarios ---- */

static uint64_t settle(struct sim *s, uint64_t t)
{
	return t + (uint64_t)(s->p.settle_ms * 1e6);
}

static void all_started(struct sim *s, int g, uint64_t t)
{
	if (g == 1)
		o.counting = false;
	if (g < s->p.trials) {
		push(s, settle(s, t), EV_SCENARIO, 0, SC_FAIL, NULL, 0);
	} else if (!strcmp(s->p.fault, "none") || !strcmp(s->p.fault, "slow") || o.t_fault) {
		if (o.t_fault && !o.t_recovered) {
			o.t_recovered = t; /* with spares: every rank runs again */
			o.gen_recovered = g;
		}
		push(s, settle(s, t), EV_SCENARIO, 0, SC_FINISH, NULL, 0);
	}
	else
		push(s, settle(s, t), EV_SCENARIO, 0, SC_FAULT, NULL, 0);
}

/* When a link silent since t is judged lost: its last ping came up to a
 * period before, and it is checked on a tick of a timer of any phase. */
static uint64_t detect(struct sim *s, uint64_t t)
{
	uint64_t to = (uint64_t)s->p.peer_timeout_ms * 1000000, per = to / 3;
	uint64_t last = t - (uint64_t)(unif(s) * (double)per);
	uint64_t phase = (uint64_t)(unif(s) * (double)per);
	uint64_t k = (last + to - phase + per - 1) / per;

	return phase + k * per;
}

static void lose_links(struct sim *s, int x, uint64_t t, bool silent, bool children,
		       bool parent)
{
	int i, first, nc = pm_tree_children(x, s->p.fanout, s->p.nodes, &first);

	if (silent && !s->p.peer_timeout_ms)
		return; /* nobody ever notices: what liveness off means */
	if (parent && x > 0)
		push(s, silent ? detect(s, t) : t + NS(s->p.hop_us), EV_CHILD_LOST,
		     s->n[x].parent, x, NULL, 0);
	for (i = 0; children && i < nc; i++)
		push(s, silent ? detect(s, t) : t + NS(s->p.hop_us), EV_PARENT_LOST, first + i, 0,
		     NULL, 0);
	/* Those that came to it after a loss (spares) */
	for (i = 0; children && i < s->p.nodes; i++)
		if (s->n[i].parent == x && pm_tree_parent(i, s->p.fanout) != x)
			push(s, silent ? detect(s, t) : t + NS(s->p.hop_us), EV_PARENT_LOST, i, 0,
			     NULL, 0);
}

static void fault(struct sim *s, uint64_t t)
{
	int x = s->p.fault_node;
	const char *f = s->p.fault;

	o.t_fault = t;
	if (!strcmp(f, "crash") || !strcmp(f, "root")) {
		s->n[x].dead = true;
		lose_links(s, x, t, false, true, true);
	} else if (!strcmp(f, "silent")) {
		s->n[x].dead = s->n[x].silent = true;
		lose_links(s, x, t, true, true, true);
	} else if (!strcmp(f, "partition")) {
		s->cut = x;
		if (s->p.peer_timeout_ms) {
			push(s, detect(s, t), EV_CHILD_LOST, s->n[x].parent, x, NULL, 0);
			push(s, detect(s, t), EV_PARENT_LOST, x, 0, NULL, 0);
		}
	}
}

static void scenario(struct sim *s, int what, uint64_t t)
{
	int i, last = s->p.nodes - s->p.spares - 1; /* the last that runs ranks */

	switch (what) {
	case SC_FAIL: {
		int g;
		for (g = o.ngen - 1; g >= 0 && !o.started[g]; g--)
			;
		o.t_fail[g] = t;
		if (g == 0)
			o.counting = true;
		s->sup[last * s->p.rpn + s->p.rpn - 1].running = false;
		sup_send(s, last, s->p.rpn - 1, t, PM_MSG_RANK_EXIT, (uint32_t)g, 1 << 8);
		break;
	}
	case SC_FINISH:
		for (i = 0; i < s->p.nodes * s->p.rpn; i++)
			if (s->sup[i].running) {
				s->sup[i].running = false;
				sup_send(s, i / s->p.rpn, i % s->p.rpn, t, PM_MSG_RANK_EXIT,
					 (uint32_t)(o.t_fault ? o.gen_recovered : s->p.trials), 0);
			}
		break;
	case SC_FAULT:
		fault(s, t);
		break;
	}
}

/* ---- the tree's links ---- */

static void handle(struct sim *s, struct sim_ev *e)
{
	struct sim_node *n = &s->n[e->node];
	const uint8_t *f = sim_ev_frame(e);
	struct pm_msg m;
	const char *err;

	if (e->kind == EV_SCENARIO) {
		scenario(s, e->arg, e->t);
		return;
	}
	if (e->kind == EV_TO_SUP) {
		if (!n->dead && pm_msg_decode(f, e->len, &m, &err) > 0)
			sup_msg(s, e->node, e->arg, &m, e->t);
		return;
	}
	if (n->dead)
		return;
	switch (e->kind) {
	case EV_NODE_START:
		begin(s, e->node, e->t);
		n->started = true;
		if (e->node > 0)
			push(s, s->cursor, EV_CONNECT, e->node, 0, NULL, 0);
		sim_gen_local_ready(s);
		end(s);
		o.last_spawn = max64(o.last_spawn, e->t);
		break;
	case EV_CONNECT: {
		int p = pm_tree_parent(e->node, s->p.fanout);
		if (!s->n[p].started) {
			/* main.c: 10 ms, doubling, at most 500 ms */
			n->retry_ms = n->retry_ms ? (n->retry_ms * 2 > 500 ? 500 : n->retry_ms * 2) : 10;
			push(s, e->t + NS(2 * s->p.hop_us) + (uint64_t)n->retry_ms * 1000000,
			     EV_CONNECT, e->node, 0, NULL, 0);
			break;
		}
		/* Connected after a round trip; HELLO's credential, then HELLO. */
		begin(s, e->node, e->t + NS(2 * s->p.hop_us));
		s->cursor = munge_op(s, s->cursor) + NS(s->p.op_us);
		end(s);
		push(s, s->cursor + NS(s->p.hop_us), EV_HELLO, p, e->node, NULL, 0);
		break;
	}
	case EV_HELLO:
		begin(s, e->node, e->t);
		s->cursor = munge_op(s, s->cursor);      /* the child's proof */
		s->cursor = munge_op(s, s->cursor);      /* ours */
		s->cursor += NS(s->p.op_us);
		s->n[e->arg].last_down = max64(s->cursor + NS(s->p.hop_us), s->n[e->arg].last_down);
		push(s, s->n[e->arg].last_down, EV_WELCOME, e->arg, 0, NULL, 0);
		sim_gen_child_joined(s, e->arg);
		end(s);
		break;
	case EV_WELCOME:
		begin(s, e->node, e->t);
		s->cursor = munge_op(s, s->cursor);
		sim_gen_parent_ok(s);
		end(s);
		break;
	case EV_UP:
		begin(s, e->node, e->t);
		if (e->node == 0)
			count(&s->c_root, false, e->len);
		if (e->node == s->interior)
			count(&s->c_interior, false, e->len);
		sim_gen_from_child(s, e->arg, f, e->len);
		end(s);
		break;
	case EV_DOWN:
		begin(s, e->node, e->t);
		if (e->node == s->interior)
			count(&s->c_interior, false, e->len);
		sim_gen_from_parent(s, f, e->len);
		end(s);
		break;
	case EV_FROM_SUP:
		begin(s, e->node, e->t);
		sim_gen_from_rank(s, e->arg, f, e->len);
		end(s);
		break;
	case EV_DELAY:
		begin(s, e->node, e->t);
		sim_gen_delay(s, (uint32_t)e->arg);
		end(s);
		break;
	case EV_STOP_TIMER:
		begin(s, e->node, e->t);
		sim_gen_stop_timer(s, (uint32_t)e->arg);
		end(s);
		break;
	case EV_CHILD_LOST:
		begin(s, e->node, e->t);
		sim_gen_child_lost(s, e->arg, s->p.peer_timeout_ms ? "no heartbeat" : "closed");
		end(s);
		break;
	case EV_PARENT_LOST:
		begin(s, e->node, e->t);
		if (s->p.spares && n->parent_ok && !sim_gen_terminal(s, e->node)) {
			n->parent_ok = false;
			sim_gen_attach_start(s, "lost its parent");
			push(s, s->cursor, EV_ATTACH, e->node, 0, NULL, 0);
		} else {
			sim_gen_parent_lost(s, "procmgr: lost the connection to the parent; "
					    "ending the step");
		}
		end(s);
		break;
	case EV_ATTACH: {
		int c;
		if (sim_gen_terminal(s, e->node))
			break;
		if (n->next >= n->ncand) {
			begin(s, e->node, e->t);
			sim_gen_attach_none(s, "no other node above answered");
			end(s);
			break;
		}
		c = n->cand[n->next++];
		n->parent = c;
		n->parent_ok = n->joined = false;
		if (s->n[c].dead && !s->n[c].silent) {
			/* its address answers, nobody listens: refused at once */
			push(s, e->t + NS(2 * s->p.hop_us), EV_ATTACH, e->node, 0, NULL, 0);
			break;
		}
		/* attach.c: peer timeout / 3, at least 1 s, for an answer */
		push(s, e->t + (uint64_t)(s->p.peer_timeout_ms / 3 < 1000 ? 1000 :
					  s->p.peer_timeout_ms / 3) * 1000000,
		     EV_ATTACH_TIMEOUT, e->node, (int)++n->attach_arm, NULL, 0);
		if (s->n[c].dead || severed(s, e->node, c))
			break;
		begin(s, e->node, e->t + NS(2 * s->p.hop_us));
		s->cursor = munge_op(s, s->cursor) + NS(s->p.op_us);
		end(s);
		push(s, s->cursor + NS(s->p.hop_us), EV_ATTACH_HELLO, c, e->node, NULL, 0);
		break;
	}
	case EV_ATTACH_HELLO: {
		int child = e->arg;
		begin(s, e->node, e->t);
		s->cursor = munge_op(s, s->cursor);
		s->cursor = munge_op(s, s->cursor);
		s->cursor += NS(s->p.op_us);
		if (s->n[child].parent != e->node || sim_gen_child_hello(s, child) < 0) {
			push(s, s->cursor + NS(s->p.hop_us), EV_ATTACH_ANSWER, child, 0, NULL, 0);
		} else {
			s->n[child].last_down = max64(s->cursor + NS(s->p.hop_us),
						      s->n[child].last_down);
			push(s, s->n[child].last_down, EV_ATTACH_ANSWER, child, 1, NULL, 0);
			sim_gen_child_joined(s, child);
		}
		end(s);
		break;
	}
	case EV_ATTACH_ANSWER:
		n->attach_arm++;
		if (!e->arg) {
			push(s, e->t, EV_ATTACH, e->node, 0, NULL, 0);
			break;
		}
		begin(s, e->node, e->t);
		s->cursor = munge_op(s, s->cursor);
		sim_gen_parent_ok(s);
		sim_gen_parent_changed(s);
		end(s);
		break;
	case EV_ATTACH_TIMEOUT:
		if ((uint32_t)e->arg == n->attach_arm)
			push(s, e->t, EV_ATTACH, e->node, 0, NULL, 0);
		break;
	}
}

/* ---- the run ---- */

struct sim_obs *sim_obs(void)
{
	return &o;
}

/* Every node starts at the harness's spawn rate; then events until none. */
void sim_run(struct sim *s)
{
	struct sim_ev e;
	int i;

	for (i = 0; i < s->p.nodes; i++)
		push(s, (uint64_t)((double)i * s->p.spawn_us * 1000.0), EV_NODE_START, i, 0, NULL, 0);
	while (sim_pop(&s->q, &e)) {
		s->events++;
		handle(s, &e);
		sim_ev_done(&e);
	}
}
