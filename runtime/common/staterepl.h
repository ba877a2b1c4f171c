/* Buddy replication of the ranks' state (issue 23, item 2): the rules,
 * pure. Who is whose buddy as nodes are lost, what each node does when a
 * spare takes a lost node's slot, each blob's replication state (a table
 * of states by events), and the lines of the replication stream. The I/O
 * (an authenticated TCP link to the buddy, the bytes from the sealed
 * memfd) is procmgrd/state_repl.c's. */
#ifndef PM_STATEREPL_H
#define PM_STATEREPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statestore.h"

/* The buddy of node i among nodes 0..n-1 of the step (spares included:
 * a spare has memory to spare), lost[k] the nodes out of the step (NULL:
 * none), dom[k] each node's failure domain (NULL: one): pm_state_buddy's
 * choice, else the next node around the ring that is neither lost nor i,
 * in another domain than i's while one is left. Every node computes the same answer from the same
 * lost set. -1 if there is none. */
long pm_repl_buddy(uint32_t i, uint32_t n, const bool *lost, const uint32_t *dom);

/* What node self does when the root's replacement "node lost is out,
 * spare (or -1) takes its slot" is applied; lost_before is the lost set
 * before this replacement (lost itself not in it). */
struct pm_repl_plan {
	long holder;     /* who holds lost's replicas (its buddy), -1: nobody */
	long push_to;    /* self holds them: send them to this spare, -1: no */
	long await_from; /* self is the spare: its loads wait for this holder, -1: no */
	bool local;      /* self is both the holder and the spare: already here */
	bool rebuddy;    /* self replicated to lost: a new buddy, everything again */
	long new_buddy;  /* self's buddy once lost is out (-1: none) */
};
void pm_repl_on_replace(uint32_t self, uint32_t n, const bool *lost_before, const uint32_t *dom,
			int lost, int spare, struct pm_repl_plan *p);

/* One blob's replication to the buddy. */
enum pm_repl_st {
	PM_RS_CLEAN,    /* the buddy holds the latest version (or there is none) */
	PM_RS_DIRTY,    /* a version the buddy does not have waits to be sent */
	PM_RS_SENDING,  /* the latest version is on its way */
	PM_RS_STALE,    /* a version is on its way, a newer one was saved meanwhile */
	PM_RS_FAILED,   /* its latest version could not be read to be copied (a file
			 * of its own kind, a read error): left out until a new
			 * version is saved, so that it never blocks the others */
	PM_RS_N
};
enum pm_repl_ev {
	PM_RE_SAVED,   /* the rank committed a new version */
	PM_RE_SEND,    /* the link takes it (the version in hand) */
	PM_RE_ACKED,   /* the buddy acknowledged the version in flight */
	PM_RE_LOST,    /* the link broke: whatever was in flight is unknown */
	PM_RE_REBUDDY, /* another buddy: it holds nothing of ours */
	PM_RE_FAILED,  /* the version in flight could not be read from its file */
	PM_RE_N
};
/* The table: the state after ev in st. */
enum pm_repl_st pm_repl_next(enum pm_repl_st st, enum pm_repl_ev ev);
const char *pm_repl_st_name(enum pm_repl_st st);

struct pm_repl_item {
	int32_t grank;
	char name[PM_STATE_NAME_MAX + 1];
	uint64_t latest;  /* the newest version saved */
	uint64_t sending; /* the version in flight (SENDING, STALE) */
	uint64_t safe;    /* the newest version the buddy acknowledged, 0: none */
	enum pm_repl_st st;
};
struct pm_repl_track {
	struct pm_repl_item *it;
	size_t n, cap;
};
void pm_repl_track_free(struct pm_repl_track *t);
/* A new version of (grank, name). -1: out of memory. */
int pm_repl_saved(struct pm_repl_track *t, int32_t grank, const char *name, uint64_t version);
/* The next blob to send (the oldest dirty one), now in flight; NULL if
 * nothing is dirty or something is in flight already (one at a time per
 * link keeps the bandwidth bound simple and the acks in order). */
struct pm_repl_item *pm_repl_take(struct pm_repl_track *t);
/* The buddy acknowledged (grank, name) at version: the item if that made
 * a version safe (the caller marks it so in the store), else NULL. */
struct pm_repl_item *pm_repl_acked(struct pm_repl_track *t, int32_t grank, const char *name,
				   uint64_t version);
/* Every item by the event (PM_RE_LOST, PM_RE_REBUDDY, PM_RE_FAILED: only
 * the one in flight changes). */
void pm_repl_all(struct pm_repl_track *t, enum pm_repl_ev ev);
bool pm_repl_busy(const struct pm_repl_track *t);
/* A rank's state went (pm_state_drop_rank): its items go too, a version in
 * flight included (its late ack finds no item). How many went. */
size_t pm_repl_forget(struct pm_repl_track *t, int32_t grank);

/* The stream after the handshake, one line per record ('\n'-terminated,
 * at most PM_REPL_LINE_MAX bytes); a blob's line is followed by its bytes.
 *   blob OWNER GRANK NAME VERSION SIZE STEP AGE_MS   sender -> receiver
 *   ack GRANK NAME VERSION                           receiver -> sender
 *   end OWNER COUNT                                  a holder to a spare: all sent
 *   drop OWNER GRANK                                 sender -> receiver: OWNER's
 *                                                    replicas of GRANK go (a
 *                                                    sweep's trial run ended) */
#define PM_REPL_LINE_MAX 200
enum pm_rl_kind { PM_RL_BLOB, PM_RL_ACK, PM_RL_END, PM_RL_DROP };
struct pm_repl_line {
	enum pm_rl_kind kind;
	uint32_t owner;
	int32_t grank;
	char name[PM_STATE_NAME_MAX + 1];
	uint64_t version, size, step, age_ms, count;
};
/* The line, newline included: its length, -1 if it does not fit. */
int pm_repl_line_format(const struct pm_repl_line *l, char *buf, size_t len);
/* One line without its newline; 0, or -1 with err. Strict: what format
 * writes, nothing else. */
int pm_repl_line_parse(const char *s, struct pm_repl_line *l, char *err, size_t errlen);

#endif
