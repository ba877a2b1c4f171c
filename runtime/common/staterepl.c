/* Buddy replication's rules: see staterepl.h. */
#include "staterepl.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long pm_repl_buddy(uint32_t i, uint32_t n, const bool *lost, const uint32_t *dom)
{
	long first = pm_state_buddy(i, n, dom);

	if (first < 0)
		return -1;
	/* On from the first choice: another domain if a node of one is left,
	 * else any node. */
	for (int pass = dom ? 0 : 1; pass < 2; pass++)
		for (uint32_t j = 0; j < n; j++) {
			uint32_t k = (uint32_t)(first + j) % n;
			if (k != i && !(lost && lost[k]) && (pass || dom[k] != dom[i]))
				return k;
		}
	return -1;
}

void pm_repl_on_replace(uint32_t self, uint32_t n, const bool *lost_before, const uint32_t *dom,
			int lost, int spare, struct pm_repl_plan *p)
{
	bool *after = calloc(n ? n : 1, sizeof(*after));

	memset(p, 0, sizeof(*p));
	p->push_to = p->await_from = p->new_buddy = -1;
	if (lost < 0 || (uint32_t)lost >= n) {
		free(after);
		p->holder = -1;
		p->new_buddy = pm_repl_buddy(self, n, lost_before, dom);
		return;
	}
	p->holder = pm_repl_buddy((uint32_t)lost, n, lost_before, dom);
	if (after) {
		for (uint32_t k = 0; k < n; k++)
			after[k] = lost_before && lost_before[k];
		after[lost] = true;
	}
	p->new_buddy = pm_repl_buddy(self, n, after, dom);
	p->rebuddy = (uint32_t)lost != self && pm_repl_buddy(self, n, lost_before, dom) == lost;
	free(after);
	if (p->holder < 0 || spare < 0 || (uint32_t)lost == self)
		return;
	if ((uint32_t)p->holder == self) {
		if (spare == (int)self)
			p->local = true;
		else
			p->push_to = spare;
	} else if (spare == (int)self) {
		p->await_from = p->holder;
	}
}

/* Rows: states; columns: SAVED, SEND, ACKED, LOST, REBUDDY, FAILED. A SEND
 * of a blob that is not dirty, or an ACK of nothing in flight, changes
 * nothing. A version that failed stays out (a new buddy or link reads the
 * same file) until the rank saves another, which may be copyable; a STALE
 * one that failed has that newer version waiting already. */
static const uint8_t table[PM_RS_N][PM_RE_N] = {
	[PM_RS_CLEAN] = { PM_RS_DIRTY, PM_RS_CLEAN, PM_RS_CLEAN, PM_RS_CLEAN, PM_RS_DIRTY,
			  PM_RS_CLEAN },
	[PM_RS_DIRTY] = { PM_RS_DIRTY, PM_RS_SENDING, PM_RS_DIRTY, PM_RS_DIRTY, PM_RS_DIRTY,
			  PM_RS_DIRTY },
	[PM_RS_SENDING] = { PM_RS_STALE, PM_RS_SENDING, PM_RS_CLEAN, PM_RS_DIRTY, PM_RS_DIRTY,
			    PM_RS_FAILED },
	[PM_RS_STALE] = { PM_RS_STALE, PM_RS_STALE, PM_RS_DIRTY, PM_RS_DIRTY, PM_RS_DIRTY,
			  PM_RS_DIRTY },
	[PM_RS_FAILED] = { PM_RS_DIRTY, PM_RS_FAILED, PM_RS_FAILED, PM_RS_FAILED, PM_RS_FAILED,
			   PM_RS_FAILED },
};

enum pm_repl_st pm_repl_next(enum pm_repl_st st, enum pm_repl_ev ev)
{
	if ((unsigned)st >= PM_RS_N || (unsigned)ev >= PM_RE_N)
		return st;
	return (enum pm_repl_st)table[st][ev];
}

const char *pm_repl_st_name(enum pm_repl_st st)
{
	static const char *const names[] = { "clean", "dirty", "sending", "stale", "failed" };
	return (unsigned)st < PM_RS_N ? names[st] : "?";
}

void pm_repl_track_free(struct pm_repl_track *t)
{
	free(t->it);
	memset(t, 0, sizeof(*t));
}

static struct pm_repl_item *item(struct pm_repl_track *t, int32_t grank, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->it[i].grank == grank && !strcmp(t->it[i].name, name))
			return &t->it[i];
	return NULL;
}

int pm_repl_saved(struct pm_repl_track *t, int32_t grank, const char *name, uint64_t version)
{
	struct pm_repl_item *x = item(t, grank, name);

	if (!x) {
		if (t->n == t->cap) {
			size_t cap = t->cap ? 2 * t->cap : 8;
			struct pm_repl_item *it = realloc(t->it, cap * sizeof(*it));
			if (!it)
				return -1;
			t->it = it;
			t->cap = cap;
		}
		x = &t->it[t->n++];
		memset(x, 0, sizeof(*x));
		x->grank = grank;
		snprintf(x->name, sizeof(x->name), "%s", name);
	}
	if (version > x->latest) {
		x->latest = version;
		x->st = pm_repl_next(x->st, PM_RE_SAVED);
	}
	return 0;
}

bool pm_repl_busy(const struct pm_repl_track *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->it[i].st == PM_RS_SENDING || t->it[i].st == PM_RS_STALE)
			return true;
	return false;
}

size_t pm_repl_forget(struct pm_repl_track *t, int32_t grank)
{
	size_t gone = 0;

	for (size_t i = 0; i < t->n;)
		if (t->it[i].grank == grank) {
			t->it[i] = t->it[--t->n];
			gone++;
		} else {
			i++;
		}
	return gone;
}

struct pm_repl_item *pm_repl_take(struct pm_repl_track *t)
{
	if (pm_repl_busy(t))
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (t->it[i].st == PM_RS_DIRTY) {
			t->it[i].st = pm_repl_next(t->it[i].st, PM_RE_SEND);
			t->it[i].sending = t->it[i].latest;
			return &t->it[i];
		}
	return NULL;
}

struct pm_repl_item *pm_repl_acked(struct pm_repl_track *t, int32_t grank, const char *name,
				   uint64_t version)
{
	struct pm_repl_item *x = item(t, grank, name);

	if (!x || (x->st != PM_RS_SENDING && x->st != PM_RS_STALE) || version != x->sending)
		return NULL;
	x->st = pm_repl_next(x->st, PM_RE_ACKED);
	x->safe = version;
	x->sending = 0;
	return x;
}

void pm_repl_all(struct pm_repl_track *t, enum pm_repl_ev ev)
{
	for (size_t i = 0; i < t->n; i++) {
		t->it[i].st = pm_repl_next(t->it[i].st, ev);
		if (t->it[i].st == PM_RS_DIRTY || t->it[i].st == PM_RS_CLEAN ||
		    t->it[i].st == PM_RS_FAILED)
			t->it[i].sending = 0;
		if (ev == PM_RE_REBUDDY)
			t->it[i].safe = 0;
	}
}

int pm_repl_line_format(const struct pm_repl_line *l, char *buf, size_t len)
{
	int n = -1;

	switch (l->kind) {
	case PM_RL_BLOB:
		n = snprintf(buf, len, "blob %" PRIu32 " %" PRId32 " %s %" PRIu64 " %" PRIu64
			     " %" PRIu64 " %" PRIu64 "\n", l->owner, l->grank, l->name, l->version,
			     l->size, l->step, l->age_ms);
		break;
	case PM_RL_ACK:
		n = snprintf(buf, len, "ack %" PRId32 " %s %" PRIu64 "\n", l->grank, l->name,
			     l->version);
		break;
	case PM_RL_END:
		n = snprintf(buf, len, "end %" PRIu32 " %" PRIu64 "\n", l->owner, l->count);
		break;
	case PM_RL_DROP:
		n = snprintf(buf, len, "drop %" PRIu32 " %" PRId32 "\n", l->owner, l->grank);
		break;
	}
	return n < 0 || (size_t)n >= len || n > PM_REPL_LINE_MAX ? -1 : n;
}

int pm_repl_line_parse(const char *s, struct pm_repl_line *l, char *err, size_t errlen)
{
	char kind[8], again[PM_REPL_LINE_MAX + 2];
	int end = -1, got;

	memset(l, 0, sizeof(*l));
	if (strlen(s) > PM_REPL_LINE_MAX || sscanf(s, "%7s", kind) != 1)
		goto bad;
	if (!strcmp(kind, "blob")) {
		l->kind = PM_RL_BLOB;
		got = sscanf(s, "blob %" SCNu32 " %" SCNd32 " %64s %" SCNu64 " %" SCNu64 " %" SCNu64
			     " %" SCNu64 "%n", &l->owner, &l->grank, l->name, &l->version, &l->size,
			     &l->step, &l->age_ms, &end);
		if (got != 7 || l->grank < 0 || !l->version ||
		    pm_state_name_check(l->name, err, errlen))
			goto bad;
	} else if (!strcmp(kind, "ack")) {
		l->kind = PM_RL_ACK;
		got = sscanf(s, "ack %" SCNd32 " %64s %" SCNu64 "%n", &l->grank, l->name, &l->version,
			     &end);
		if (got != 3 || l->grank < 0 || pm_state_name_check(l->name, err, errlen))
			goto bad;
	} else if (!strcmp(kind, "end")) {
		l->kind = PM_RL_END;
		got = sscanf(s, "end %" SCNu32 " %" SCNu64 "%n", &l->owner, &l->count, &end);
		if (got != 2)
			goto bad;
	} else if (!strcmp(kind, "drop")) {
		l->kind = PM_RL_DROP;
		got = sscanf(s, "drop %" SCNu32 " %" SCNd32 "%n", &l->owner, &l->grank, &end);
		if (got != 2 || l->grank < 0)
			goto bad;
	} else {
		goto bad;
	}
	/* What sscanf lets through (signs, blanks, leading zeros, a tail)
	 * is refused by asking for the same text back. */
	if (end < 0 || pm_repl_line_format(l, again, sizeof(again)) < 0 ||
	    strncmp(again, s, strlen(s)) || again[strlen(s)] != '\n')
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "replication line '%.80s': expected 'blob OWNER GRANK NAME VERSION "
		 "SIZE STEP AGE_MS', 'ack GRANK NAME VERSION', 'end OWNER COUNT' or 'drop OWNER GRANK'", s);
	return -1;
}
