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
 * One JSON line per run on stdout. Times are the simulated clock's. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/tree.h"
#include "sim.h"

#define NS(us) ((uint64_t)((us) * 1000.0))
#define NEVER UINT64_MAX

enum { SC_FAIL, SC_FINISH, SC_FAULT };

/* What the run observed; times in ns. */
static struct obs {
	int ngen;
	uint64_t *t_fail, *ev_failed, *ev_stopped, *ev_start, *first_start, *last_start;
	uint64_t *last_stop;
	int *started;
	uint64_t ev_launch, ev_lost, ev_end, t_fault, last_end, last_spawn;
	uint64_t ev_replaced, ev_root_moved, t_recovered;
	int gen_recovered, world;
	int ended;
	const char *end_event;
	bool counting;
} o;

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
	struct sim_ev e;
	struct timespec w0, w1;
	double restart[64], bcast[64];
	char *names_buf;
	int i, g, first;

	if (parse(&s.p, argc, argv))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &w0);
	s.rng = s.p.seed * 0x9e3779b97f4a7c15ull + 1;
	o.ngen = s.p.trials + 3;
	o.world = (s.p.nodes - s.p.spares) * s.p.rpn;
	s.cut = -1;
	o.t_fail = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.ev_failed = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.ev_stopped = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.ev_start = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.first_start = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.last_start = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.last_stop = calloc((size_t)o.ngen, sizeof(uint64_t));
	o.started = calloc((size_t)o.ngen, sizeof(int));
	s.n = calloc((size_t)s.p.nodes, sizeof(*s.n));
	s.sup = calloc((size_t)s.p.nodes * (size_t)s.p.rpn, sizeof(*s.sup));
	s.names = calloc((size_t)s.p.nodes, sizeof(*s.names));
	names_buf = malloc((size_t)s.p.nodes * 16);
	s.core = calloc((size_t)(s.p.cores ? s.p.cores : 1), sizeof(uint64_t));
	s.munge = calloc((size_t)(s.p.munge_threads ? s.p.munge_threads : 1), sizeof(uint64_t));
	if (!o.t_fail || !o.ev_failed || !o.ev_stopped || !o.ev_start || !o.first_start ||
	    !o.last_start || !o.last_stop || !o.started || !s.n || !s.sup || !s.names ||
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
	for (i = 0; i < s.p.nodes; i++)
		push(&s, (uint64_t)((double)i * s.p.spawn_us * 1000.0), EV_NODE_START, i, 0, NULL, 0);
	while (sim_pop(&s.q, &e)) {
		s.events++;
		handle(&s, &e);
		sim_ev_done(&e);
	}
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
	       (double)o.ev_launch / 1e9, (double)o.last_start[0] / 1e9,
	       ms(o.last_start[0], o.last_spawn) / 1e3);
	printf(",\"trials\":[");
	for (g = 0; g < s.p.trials; g++) {
		restart[g] = ms(o.last_start[g + 1], o.t_fail[g]);
		bcast[g] = ms(o.ev_stopped[g], o.ev_failed[g]);
		printf("%s{\"gen\":%d,\"fail_to_root_ms\":%.3f,\"stop_bcast_ms\":%.3f,"
		       "\"stop_gather_ms\":%.3f,\"decision_ms\":%.3f,\"start_bcast_ms\":%.3f,"
		       "\"restart_ms\":%.3f}", g ? "," : "", g, ms(o.ev_failed[g], o.t_fail[g]),
		       ms(o.last_stop[g], o.ev_failed[g]), bcast[g], ms(o.ev_start[g + 1], o.t_fail[g]),
		       ms(o.last_start[g + 1], o.ev_start[g + 1]), restart[g]);
	}
	printf("],\"restart_ms_median\":%.3f,\"stop_gather_ms_median\":%.3f",
	       median(restart, s.p.trials), median(bcast, s.p.trials));
	printf(",\"end_event\":\"%s\"", o.end_event ? o.end_event : "none");
	if (strcmp(s.p.fault, "none") && strcmp(s.p.fault, "slow"))
		printf(",\"fault_node\":%d,\"fault_to_root_ms\":%.3f,\"fault_to_end_ms\":%.3f,"
		       "\"ranks_told_end\":%d,\"fault_to_replaced_ms\":%.3f,"
		       "\"fault_to_root_moved_ms\":%.3f,\"fault_to_all_running_ms\":%.3f",
		       s.p.fault_node, ms(o.ev_lost ? o.ev_lost : o.ev_end, o.t_fault),
		       ms(o.last_end, o.t_fault), o.ended,
		       ms(o.ev_replaced, o.t_fault), ms(o.ev_root_moved, o.t_fault),
		       ms(o.t_recovered, o.t_fault));
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
	free(o.t_fail);
	free(o.ev_failed);
	free(o.ev_stopped);
	free(o.ev_start);
	free(o.first_start);
	free(o.last_start);
	free(o.last_stop);
	free(o.started);
	return 0;
}
