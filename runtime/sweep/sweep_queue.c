#include "sweep_queue.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define Q PM_TS_QUEUED
#define SG PM_TS_STARTING
#define RN PM_TS_RUNNING
#define RS PM_TS_RESTARTING
#define DN PM_TS_DONE
#define FL PM_TS_FAILED
#define RQ PM_TS_REQUEUED
#define NO (-1)

/* The next state by state (rows) and event (columns): GRANTED STARTED
 * END_DONE END_RESTART END_FAILED DUE NODE_LOST STOP NO_ROOM. A trial can
 * end while STARTING (its command could not start). */
static const signed char next_state[PM_TS_COUNT][PM_TEV_COUNT] = {
	[Q] = { SG, NO, NO, NO, NO, NO, NO, FL, FL },
	[SG] = { NO, RN, DN, RS, FL, NO, RQ, FL, NO },
	[RN] = { NO, NO, DN, RS, FL, NO, RQ, FL, NO },
	[RS] = { NO, NO, NO, NO, NO, SG, RQ, FL, NO },
	[DN] = { NO, NO, NO, NO, NO, NO, NO, NO, NO },
	[FL] = { NO, NO, NO, NO, NO, NO, NO, NO, NO },
	[RQ] = { SG, NO, NO, NO, NO, NO, NO, FL, FL },
};

int pm_sq_next_state(enum pm_ts s, enum pm_tev e)
{
	if ((unsigned)s >= PM_TS_COUNT || (unsigned)e >= PM_TEV_COUNT)
		return -1;
	return next_state[s][e];
}

const char *pm_ts_name(enum pm_ts s)
{
	static const char *const names[PM_TS_COUNT] = {
		"queued", "starting", "running", "restarting", "done", "failed", "requeued",
	};
	return (unsigned)s < PM_TS_COUNT ? names[s] : "?";
}

static bool holds_slots(enum pm_ts s)
{
	return s == SG || s == RN || s == RS;
}

/* The wait list (QUEUED, REQUEUED) and the restart list share the links: a
 * trial is on at most one. */
static void wait_unlink(struct pm_sq *q, int i)
{
	struct pm_sq_trial *t = &q->t[i];

	if (t->prev >= 0)
		q->t[t->prev].next = t->next;
	else
		q->wait_head = t->next;
	if (t->next >= 0)
		q->t[t->next].prev = t->prev;
	else
		q->wait_tail = t->prev;
	t->next = t->prev = -1;
}

static void wait_push_front(struct pm_sq *q, int i)
{
	struct pm_sq_trial *t = &q->t[i];

	t->prev = -1;
	t->next = q->wait_head;
	if (q->wait_head >= 0)
		q->t[q->wait_head].prev = i;
	else
		q->wait_tail = i;
	q->wait_head = i;
}

static void restart_unlink(struct pm_sq *q, int i)
{
	struct pm_sq_trial *t = &q->t[i];

	if (t->prev >= 0)
		q->t[t->prev].next = t->next;
	else
		q->restart_head = t->next;
	if (t->next >= 0)
		q->t[t->next].prev = t->prev;
	t->next = t->prev = -1;
}

static void restart_push(struct pm_sq *q, int i)
{
	struct pm_sq_trial *t = &q->t[i];

	t->prev = -1;
	t->next = q->restart_head;
	if (q->restart_head >= 0)
		q->t[q->restart_head].prev = i;
	q->restart_head = i;
}

static void port_free(struct pm_sq *q, int port)
{
	q->ports[(q->port_rd + q->port_nfree++) % q->cfg.port_count] = port;
}

/* Its slots back to the packer, but those q->busy names (off the lost
 * node) are held, with the port on rank 0's: their ranks still run. */
static void release(struct pm_sq *q, struct pm_sq_trial *t)
{
	bool port_kept = false;
	int r;

	for (r = 0; r < t->ranks; r++) {
		int s = t->slot_of_rank[r];

		if (q->busy && q->busy[s] && pm_pack_node_of(&q->pack, s) != q->lost_node) {
			q->owner[s] = PM_SQ_HELD;
			q->hold_port[s] = r == 0 ? t->port : 0;
			port_kept |= r == 0;
			continue;
		}
		q->owner[s] = -1;
		pm_pack_release(&q->pack, 1, &s);
	}
	if (!port_kept)
		port_free(q, t->port);
	t->port = 0;
}

int pm_sq_unhold(struct pm_sq *q, int slot)
{
	long slots = (long)q->pack.nodes * q->pack.slots;

	if (slot < 0 || slot >= slots || q->owner[slot] != PM_SQ_HELD)
		return -1;
	q->owner[slot] = -1;
	pm_pack_release(&q->pack, 1, &slot);
	if (q->hold_port[slot])
		port_free(q, q->hold_port[slot]);
	q->hold_port[slot] = 0;
	return 0;
}

static void set_error(struct pm_sq_trial *t, const char *e)
{
	size_t n = e ? strlen(e) : 0;

	free(t->error);
	t->error = NULL;
	if (!e)
		return;
	if (n > PM_SQ_ERR_MAX)
		n = PM_SQ_ERR_MAX;
	/* Out of memory costs the error text, not the trial's state. */
	t->error = malloc(n + 1);
	if (t->error) {
		memcpy(t->error, e, n);
		t->error[n] = '\0';
	}
}

int pm_sq_set_result(struct pm_sq *q, int i, const char *result)
{
	if (i < 0 || i >= q->n)
		return -1;
	free(q->t[i].result);
	q->t[i].result = result && *result ? strdup(result) : NULL;
	return result && *result && !q->t[i].result ? -1 : 0;
}

/* Applies the table, and what entering or leaving a state means. */
static int transition(struct pm_sq *q, int i, enum pm_tev e, uint64_t now_ms)
{
	struct pm_sq_trial *t = &q->t[i];
	enum pm_ts from = t->state;
	int to = pm_sq_next_state(from, e);

	if (to < 0)
		return -1;
	if (from == Q || from == RQ)
		wait_unlink(q, i);
	else if (from == RS)
		restart_unlink(q, i);
	if (holds_slots(from) && !holds_slots(to))
		release(q, t);
	q->count[from]--;
	q->count[to]++;
	t->state = to;
	switch (to) {
	case RQ:
		t->requeues++;
		wait_push_front(q, i);
		break;
	case RS:
		restart_push(q, i);
		break;
	case SG:
		q->starts++;
		break;
	case DN:
	case FL:
		t->end_ms = now_ms;
		break;
	default:
		break;
	}
	return to;
}

void pm_sq_free(struct pm_sq *q)
{
	int i;

	for (i = 0; q->t && i < q->n; i++) {
		free(q->t[i].error);
		free(q->t[i].result);
	}
	free(q->t);
	free(q->slot_store);
	free(q->owner);
	free(q->hold_port);
	free(q->ports);
	pm_pack_free(&q->pack);
	memset(q, 0, sizeof(*q));
}

int pm_sq_init(struct pm_sq *q, const struct pm_sq_cfg *cfg, const int *ranks, int n,
	       char *err, unsigned errlen)
{
	size_t total = 0;
	long slots;
	int i;

	memset(q, 0, sizeof(*q));
	q->wait_head = q->wait_tail = q->restart_head = -1;
	if (cfg->port_first < 1 || cfg->port_count < 1 ||
	    cfg->port_first + (long)cfg->port_count - 1 > 65535) {
		snprintf(err, errlen, "a sweep needs a port range within 1..65535, not %d ports "
			 "from %d", cfg->port_count, cfg->port_first);
		return -1;
	}
	if (n < 0) {
		snprintf(err, errlen, "a sweep has 0 or more trials, not %d", n);
		return -1;
	}
	if (pm_pack_init(&q->pack, cfg->nodes, cfg->slots_per_node, err, errlen))
		return -1;
	q->cfg = *cfg;
	slots = (long)cfg->nodes * cfg->slots_per_node;
	if (q->cfg.starve_limit <= 0)
		q->cfg.starve_limit = (int)slots;
	for (i = 0; i < n; i++) {
		if (ranks[i] < 1 || ranks[i] > slots) {
			snprintf(err, errlen, "trial %d asks for %d ranks; the sweep has %ld slots, "
				 "so a trial has 1 to %ld", i, ranks[i], slots, slots);
			pm_sq_free(q);
			return -1;
		}
		total += ranks[i];
	}
	q->n = n;
	q->t = calloc(n ? n : 1, sizeof(*q->t));
	q->slot_store = malloc((total ? total : 1) * sizeof(int));
	q->owner = malloc(slots * sizeof(int));
	q->hold_port = calloc(slots, sizeof(int));
	q->ports = malloc(cfg->port_count * sizeof(int));
	q->lost_node = -1;
	if (!q->t || !q->slot_store || !q->owner || !q->hold_port || !q->ports) {
		snprintf(err, errlen, "out of memory for %d trials", n);
		pm_sq_free(q);
		return -1;
	}
	for (i = 0; i < slots; i++)
		q->owner[i] = -1;
	for (i = 0; i < cfg->port_count; i++)
		q->ports[i] = cfg->port_first + i;
	q->port_nfree = cfg->port_count;
	for (total = 0, i = 0; i < n; i++) {
		struct pm_sq_trial *t = &q->t[i];

		t->ranks = ranks[i];
		t->slot_of_rank = q->slot_store + total;
		total += ranks[i];
		t->exit_code = -1;
		t->state = Q;
		t->prev = i - 1;
		t->next = i + 1 < n ? i + 1 : -1;
	}
	q->wait_head = n ? 0 : -1;
	q->wait_tail = n - 1;
	q->count[Q] = n;
	return 0;
}

static void grant(struct pm_sq *q, int i, uint64_t now_ms)
{
	struct pm_sq_trial *t = &q->t[i];
	int r;

	(void)pm_pack_take(&q->pack, t->ranks, t->slot_of_rank);
	for (r = 0; r < t->ranks; r++)
		q->owner[t->slot_of_rank[r]] = i;
	t->port = q->ports[q->port_rd];
	q->port_rd = (q->port_rd + 1) % q->cfg.port_count;
	q->port_nfree--;
	(void)transition(q, i, PM_TEV_GRANTED, now_ms);
}

static void no_room(struct pm_sq *q, int i, uint64_t now_ms)
{
	char e[PM_SQ_ERR_MAX];

	snprintf(e, sizeof(e), "needs %d ranks; the nodes still up have %ld slots",
		 q->t[i].ranks, (long)q->pack.usable_nodes * q->pack.slots);
	set_error(&q->t[i], e);
	(void)transition(q, i, PM_TEV_NO_ROOM, now_ms);
}

int pm_sq_schedule(struct pm_sq *q, uint64_t now_ms, int *start, int max)
{
	/* The smallest rank counts that did not fit in this pass, one node and
	 * several: whether a trial fits only grows as its rank count shrinks
	 * (within each kind), so larger ones are not tried again. */
	int wait_one = INT_MAX, wait_many = INT_MAX, blocked = -1, looked = 0;
	int n = 0, i, nx;

	for (i = q->restart_head; i >= 0 && n < max; i = nx) {
		nx = q->t[i].next;
		if (q->t[i].due_ms <= now_ms) {
			(void)transition(q, i, PM_TEV_DUE, now_ms);
			start[n++] = i;
		}
	}
	for (i = q->wait_head; i >= 0 && n < max && q->port_nfree > 0; i = nx) {
		struct pm_sq_trial *t = &q->t[i];
		bool one = t->ranks <= q->pack.slots;

		nx = t->next;
		if (one ? t->ranks >= wait_one : t->ranks >= wait_many) {
			if (++looked > PM_SQ_LOOKAHEAD)
				break;
			continue;
		}
		switch (pm_pack_fits(&q->pack, t->ranks)) {
		case PM_PACK_NEVER:
			no_room(q, i, now_ms);
			continue;
		case PM_PACK_WAIT:
			if (one)
				wait_one = t->ranks;
			else
				wait_many = t->ranks;
			if (blocked < 0) {
				blocked = i;
				if (t->passed >= q->cfg.starve_limit)
					return n;
			}
			if (++looked > PM_SQ_LOOKAHEAD || q->pack.free_total == 0)
				return n;
			continue;
		case PM_PACK_OK:
			break;
		}
		grant(q, i, now_ms);
		start[n++] = i;
		if (blocked >= 0) {
			looked++;
			if (++q->t[blocked].passed >= q->cfg.starve_limit)
				return n;
		}
	}
	return n;
}

int pm_sq_started(struct pm_sq *q, int i, uint64_t now_ms)
{
	struct pm_sq_trial *t;

	if (i < 0 || i >= q->n)
		return -1;
	t = &q->t[i];
	if (transition(q, i, PM_TEV_STARTED, now_ms) < 0)
		return -1;
	if (!t->first_start_ms)
		t->first_start_ms = now_ms ? now_ms : 1;
	return 0;
}

int pm_sq_ended(struct pm_sq *q, int i, bool failed, int exit_code, const char *error,
		uint64_t now_ms, unsigned *delay_ms)
{
	struct pm_sq_trial *t;
	enum pm_tev e;
	unsigned delay = 0;

	if (i < 0 || i >= q->n)
		return -1;
	t = &q->t[i];
	if (t->state != SG && t->state != RN)
		return -1;
	switch (pm_policy_decide(&q->cfg.policy, t->restarts, failed, &delay)) {
	case PM_DECIDE_RESTART:
		e = PM_TEV_END_RESTART;
		break;
	case PM_DECIDE_FINISH:
		e = PM_TEV_END_DONE;
		break;
	default:
		e = PM_TEV_END_FAILED;
		break;
	}
	t->exit_code = exit_code;
	if (e == PM_TEV_END_DONE) {
		set_error(t, NULL);
	} else if (failed) {
		char dflt[32];

		snprintf(dflt, sizeof(dflt), "exit code %d", exit_code);
		set_error(t, error && *error ? error : dflt);
	}
	if (e == PM_TEV_END_RESTART) {
		t->restarts++;
		t->due_ms = now_ms + delay;
		if (delay_ms)
			*delay_ms = delay;
	}
	return transition(q, i, e, now_ms);
}

int pm_sq_node_lost(struct pm_sq *q, int node, uint64_t now_ms, int *affected, int max,
		    const unsigned char *busy)
{
	int s, n = 0;

	if (node < 0 || node >= q->pack.nodes)
		return 0;
	pm_pack_node_lost(&q->pack, node);
	q->busy = busy;
	q->lost_node = node;
	for (s = node * q->pack.slots; s < (node + 1) * q->pack.slots; s++) {
		int i = q->owner[s];

		if (i == PM_SQ_HELD) { /* its rank went with the node */
			(void)pm_sq_unhold(q, s);
			continue;
		}
		if (i < 0)
			continue;
		/* Releases every slot of the trial, so it is met once. */
		(void)transition(q, i, PM_TEV_NODE_LOST, now_ms);
		if (n < max)
			affected[n] = i;
		n++;
	}
	q->busy = NULL;
	q->lost_node = -1;
	return n;
}

int pm_sq_stop(struct pm_sq *q, int i, uint64_t now_ms, const unsigned char *busy)
{
	int rc;

	if (i < 0 || i >= q->n)
		return -1;
	q->busy = busy;
	rc = transition(q, i, PM_TEV_STOP, now_ms);
	q->busy = NULL;
	if (rc < 0)
		return -1;
	set_error(&q->t[i], "stopped");
	return 0;
}

int pm_sq_restart(struct pm_sq *q, int i, uint64_t now_ms)
{
	if (i < 0 || i >= q->n || (q->t[i].state != SG && q->t[i].state != RN))
		return -1;
	q->t[i].restarts++;
	q->t[i].due_ms = now_ms;
	return transition(q, i, PM_TEV_END_RESTART, now_ms);
}

uint64_t pm_sq_next_due(const struct pm_sq *q)
{
	uint64_t due = UINT64_MAX;
	int i;

	for (i = q->restart_head; i >= 0; i = q->t[i].next)
		if (q->t[i].due_ms < due)
			due = q->t[i].due_ms;
	return due;
}

bool pm_sq_finished(const struct pm_sq *q)
{
	return q->count[DN] + q->count[FL] == q->n;
}

/* sweep_loss.h: a root that took over gives a trial the end its journal
 * says, before anything starts. Outside the table: no event of a trial's
 * life leads from QUEUED to DONE, only the record of one. */
int pm_sq_recovered(struct pm_sq *q, int i, enum pm_ts state, int exit_code, int restarts,
		    int requeues, uint64_t runtime_ms, const char *error, uint64_t now_ms)
{
	struct pm_sq_trial *t;

	if (i < 0 || i >= q->n || q->t[i].state != Q || (state != DN && state != FL))
		return -1;
	t = &q->t[i];
	wait_unlink(q, i);
	q->count[Q]--;
	q->count[state]++;
	t->state = state;
	t->exit_code = exit_code;
	t->restarts = restarts;
	t->requeues = requeues;
	t->end_ms = now_ms;
	t->first_start_ms = now_ms >= runtime_ms ? now_ms - runtime_ms : 0;
	set_error(t, error && *error ? error : NULL);
	return 0;
}
