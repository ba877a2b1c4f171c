/* Unit tests of buddy replication's rules (runtime/common/staterepl.c):
 * the buddy as nodes are lost, what each node does at a replacement (who
 * pushes, who waits, who has it already), each blob's state machine, state
 * by event and scenario by scenario, and the stream's lines. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/staterepl.h"

static void test_buddy_skips_lost(void **st)
{
	bool lost[6] = { false };
	(void)st;
	/* Half the ring away, as pm_state_buddy. */
	assert_int_equal(pm_repl_buddy(0, 6, NULL, NULL), 3);
	assert_int_equal(pm_repl_buddy(4, 6, lost, NULL), 1);
	/* Its buddy lost: the next node around the ring. */
	lost[3] = true;
	assert_int_equal(pm_repl_buddy(0, 6, lost, NULL), 4);
	/* Every other node lost: none. */
	for (int i = 1; i < 6; i++)
		lost[i] = true;
	assert_int_equal(pm_repl_buddy(0, 6, lost, NULL), -1);
	assert_int_equal(pm_repl_buddy(0, 1, NULL, NULL), -1);
	/* Never itself, whatever is lost. */
	for (int i = 0; i < 6; i++)
		lost[i] = i % 2;
	for (uint32_t i = 0; i < 6; i++)
		assert_int_not_equal(pm_repl_buddy(i, 6, lost, NULL), (long)i);
}

static void test_buddy_other_domain(void **st)
{
	const uint32_t rack[4] = { 0, 0, 1, 1 };
	bool lost[4] = { false, false, true, false };
	(void)st;
	/* Node 0's first choice (2) is lost: the next in the ring is 3. */
	assert_int_equal(pm_repl_buddy(0, 4, lost, rack), 3);
	{
		/* Switches interleaved (0 2 4 | 1 3 5): node 0's first choice
		 * (3) lost, the next in the ring (4) shares its switch: 5. */
		const uint32_t sw[6] = { 0, 1, 0, 1, 0, 1 };
		bool l6[6] = { false, false, false, true, false, false };
		assert_int_equal(pm_repl_buddy(0, 6, l6, sw), 5);
		/* The other switch all lost: the next node left, on its own. */
		l6[1] = l6[5] = true;
		assert_int_equal(pm_repl_buddy(0, 6, l6, sw), 4);
	}
}

/* Nodes 0-2 hold slots, 3 is a spare (n 4): 1's buddy is 3, 0's is 2,
 * 2's is 0. Node 1 is lost, spare 3 takes its slot. */
static void test_replace_holder_is_spare(void **st)
{
	bool lost[4] = { false };
	struct pm_repl_plan p;
	(void)st;
	pm_repl_on_replace(3, 4, lost, NULL, 1, 3, &p);
	assert_int_equal(p.holder, 3);
	assert_true(p.local);
	assert_int_equal(p.push_to, -1);
	assert_int_equal(p.await_from, -1);
	/* The spare replicated to the lost node itself (3's buddy is 1). */
	assert_true(p.rebuddy);
	assert_int_equal(p.new_buddy, 2);
	/* Node 0: neither holder nor spare; its buddy (2) stays. */
	pm_repl_on_replace(0, 4, lost, NULL, 1, 3, &p);
	assert_false(p.local);
	assert_int_equal(p.push_to, -1);
	assert_int_equal(p.await_from, -1);
	assert_false(p.rebuddy);
	assert_int_equal(p.new_buddy, 2);
}

/* Nodes 0-3 hold slots, 4 and 5 are spares (n 6): 0's buddy is 3. Node 0
 * is lost, spare 4 takes its slot: 3 pushes to 4, 4 waits for 3. */
static void test_replace_push_and_await(void **st)
{
	bool lost[6] = { false };
	struct pm_repl_plan p;
	(void)st;
	pm_repl_on_replace(3, 6, lost, NULL, 0, 4, &p);
	assert_int_equal(p.holder, 3);
	assert_int_equal(p.push_to, 4);
	assert_int_equal(p.await_from, -1);
	assert_true(p.rebuddy); /* 3's buddy was 0 */
	assert_int_equal(p.new_buddy, 1);
	pm_repl_on_replace(4, 6, lost, NULL, 0, 4, &p);
	assert_int_equal(p.await_from, 3);
	assert_int_equal(p.push_to, -1);
	assert_false(p.local);
	/* The lost node itself does nothing. */
	pm_repl_on_replace(0, 6, lost, NULL, 0, 4, &p);
	assert_int_equal(p.push_to, -1);
	assert_int_equal(p.await_from, -1);
	assert_false(p.rebuddy);
}

/* A node and its buddy both lost: nobody holds the first one's state,
 * and the spare does not wait for it. */
static void test_replace_holder_lost(void **st)
{
	bool lost[6] = { false, false, false, true, false, false };
	struct pm_repl_plan p;
	(void)st;
	/* 0's buddy 3 was lost before: 0 replicated to 4 since. */
	pm_repl_on_replace(5, 6, lost, NULL, 0, 5, &p);
	assert_int_equal(p.holder, 4);
	assert_int_equal(p.await_from, 4);
	/* Without a spare (-1): nothing moves. */
	pm_repl_on_replace(4, 6, lost, NULL, 0, -1, &p);
	assert_int_equal(p.push_to, -1);
	/* Every other node lost: no holder. */
	bool all[2] = { false, false };
	pm_repl_on_replace(1, 2, all, NULL, 0, 1, &p);
	assert_int_equal(p.holder, 1);
	assert_true(p.local);
	pm_repl_on_replace(0, 2, all, NULL, 5, 1, &p); /* lost out of range */
	assert_int_equal(p.holder, -1);
}

/* The table, every state by every event. */
static void test_table(void **st)
{
	static const enum pm_repl_st want[PM_RS_N][PM_RE_N] = {
		[PM_RS_CLEAN] = { PM_RS_DIRTY, PM_RS_CLEAN, PM_RS_CLEAN, PM_RS_CLEAN, PM_RS_DIRTY,
				  PM_RS_CLEAN },
		[PM_RS_DIRTY] = { PM_RS_DIRTY, PM_RS_SENDING, PM_RS_DIRTY, PM_RS_DIRTY, PM_RS_DIRTY,
				  PM_RS_DIRTY },
		[PM_RS_SENDING] = { PM_RS_STALE, PM_RS_SENDING, PM_RS_CLEAN, PM_RS_DIRTY,
				    PM_RS_DIRTY, PM_RS_FAILED },
		[PM_RS_STALE] = { PM_RS_STALE, PM_RS_STALE, PM_RS_DIRTY, PM_RS_DIRTY, PM_RS_DIRTY,
				  PM_RS_DIRTY },
		[PM_RS_FAILED] = { PM_RS_DIRTY, PM_RS_FAILED, PM_RS_FAILED, PM_RS_FAILED,
				   PM_RS_FAILED, PM_RS_FAILED },
	};
	(void)st;
	for (int s = 0; s < PM_RS_N; s++)
		for (int e = 0; e < PM_RE_N; e++)
			assert_int_equal(pm_repl_next((enum pm_repl_st)s, (enum pm_repl_ev)e),
					 want[s][e]);
	assert_int_equal(pm_repl_next(PM_RS_N, PM_RE_SAVED), PM_RS_N);
	assert_string_equal(pm_repl_st_name(PM_RS_STALE), "stale");
	assert_string_equal(pm_repl_st_name(PM_RS_N), "?");
}

/* Save, send, ack: safe; one at a time; a save while sending sends again. */
static void test_track_scenario(void **st)
{
	struct pm_repl_track t = { 0 };
	struct pm_repl_item *x;
	(void)st;
	assert_null(pm_repl_take(&t));
	assert_int_equal(pm_repl_saved(&t, 0, "model", 1), 0);
	assert_int_equal(pm_repl_saved(&t, 1, "model", 1), 0);
	x = pm_repl_take(&t);
	assert_non_null(x);
	assert_int_equal(x->grank, 0);
	assert_int_equal(x->sending, 1);
	/* One in flight per link. */
	assert_null(pm_repl_take(&t));
	assert_true(pm_repl_busy(&t));
	/* A newer version while it is on its way. */
	assert_int_equal(pm_repl_saved(&t, 0, "model", 2), 0);
	assert_int_equal(t.it[0].st, PM_RS_STALE);
	/* An ack of another version changes nothing. */
	assert_null(pm_repl_acked(&t, 0, "model", 2));
	assert_null(pm_repl_acked(&t, 0, "other", 1));
	x = pm_repl_acked(&t, 0, "model", 1);
	assert_non_null(x);
	assert_int_equal(x->safe, 1);
	assert_int_equal(x->st, PM_RS_DIRTY); /* version 2 still to go */
	/* The oldest dirty first: rank 0's version 2 (its item came first). */
	x = pm_repl_take(&t);
	assert_int_equal(x->grank, 0);
	assert_int_equal(x->sending, 2);
	assert_non_null(pm_repl_acked(&t, 0, "model", 2));
	assert_int_equal(t.it[0].st, PM_RS_CLEAN);
	/* A late ack of what is no longer in flight. */
	assert_null(pm_repl_acked(&t, 0, "model", 2));
	x = pm_repl_take(&t);
	assert_int_equal(x->grank, 1);
	/* The link breaks: sent again on the next one. */
	pm_repl_all(&t, PM_RE_LOST);
	assert_false(pm_repl_busy(&t));
	assert_int_equal(t.it[1].st, PM_RS_DIRTY);
	assert_int_equal(t.it[0].st, PM_RS_CLEAN);
	assert_int_equal(t.it[0].safe, 2);
	/* A new buddy holds nothing: everything again, nothing safe. */
	pm_repl_all(&t, PM_RE_REBUDDY);
	assert_int_equal(t.it[0].st, PM_RS_DIRTY);
	assert_int_equal(t.it[0].safe, 0);
	/* An older version said again changes nothing. */
	assert_int_equal(pm_repl_saved(&t, 0, "model", 1), 0);
	assert_int_equal(t.it[0].latest, 2);
	pm_repl_track_free(&t);
}

/* Issue 32 item 5: a blob whose copy fails (its file cannot be read the
 * way the link reads it) is left out, and every other blob, of its rank
 * and of the others, still goes and becomes safe; a new version of it is
 * tried again. Before, a failed copy put it back to dirty, first in line,
 * and nothing after it was ever sent. */
static void test_failed_copy_does_not_block(void **st)
{
	struct pm_repl_track t = { 0 };
	struct pm_repl_item *x;
	(void)st;
	assert_int_equal(pm_repl_saved(&t, 0, "huge", 1), 0);
	assert_int_equal(pm_repl_saved(&t, 0, "model", 1), 0);
	assert_int_equal(pm_repl_saved(&t, 1, "model", 1), 0);
	x = pm_repl_take(&t);
	assert_string_equal(x->name, "huge");
	pm_repl_all(&t, PM_RE_FAILED);
	pm_repl_all(&t, PM_RE_LOST); /* the link that carried it ends too */
	assert_int_equal(t.it[0].st, PM_RS_FAILED);
	assert_string_equal(pm_repl_st_name(PM_RS_FAILED), "failed");
	assert_false(pm_repl_busy(&t));
	for (int i = 1; i <= 2; i++) {
		x = pm_repl_take(&t);
		assert_non_null(x);
		assert_string_equal(x->name, "model");
		assert_int_equal(x->grank, i - 1);
		assert_non_null(pm_repl_acked(&t, x->grank, "model", 1));
	}
	assert_null(pm_repl_take(&t));
	/* A new buddy: still out, nothing of it would copy better there. */
	pm_repl_all(&t, PM_RE_REBUDDY);
	assert_int_equal(t.it[0].st, PM_RS_FAILED);
	for (int i = 1; i <= 2; i++) {
		x = pm_repl_take(&t);
		assert_string_equal(x->name, "model");
		assert_non_null(pm_repl_acked(&t, x->grank, "model", 1));
	}
	assert_null(pm_repl_take(&t));
	/* Its next version is tried. */
	assert_int_equal(pm_repl_saved(&t, 0, "huge", 2), 0);
	x = pm_repl_take(&t);
	assert_string_equal(x->name, "huge");
	assert_int_equal(x->sending, 2);
	/* A newer one saved while the failed one was in flight goes next. */
	assert_int_equal(pm_repl_saved(&t, 0, "huge", 3), 0);
	pm_repl_all(&t, PM_RE_FAILED);
	assert_int_equal(t.it[0].st, PM_RS_DIRTY);
	assert_int_equal(pm_repl_take(&t)->sending, 3);
	pm_repl_track_free(&t);
}

/* A rank's state dropped (a trial's run ended): its items go, the one in
 * flight too, whose late ack then makes nothing safe; the others go on. */
static void test_track_forget(void **st)
{
	struct pm_repl_track t = { 0 };
	struct pm_repl_item *x;
	(void)st;
	assert_int_equal(pm_repl_saved(&t, 4, "model", 1), 0);
	assert_int_equal(pm_repl_saved(&t, 4, "opt", 1), 0);
	assert_int_equal(pm_repl_saved(&t, 5, "model", 3), 0);
	x = pm_repl_take(&t);
	assert_int_equal(x->grank, 4);
	assert_int_equal(pm_repl_forget(&t, 4), 2);
	assert_int_equal(t.n, 1);
	assert_null(pm_repl_acked(&t, 4, "model", 1));
	assert_false(pm_repl_busy(&t));
	x = pm_repl_take(&t);
	assert_non_null(x);
	assert_int_equal(x->grank, 5);
	assert_int_equal(pm_repl_forget(&t, 4), 0);
	/* Saved again after the drop: a new item from version 1. */
	assert_int_equal(pm_repl_saved(&t, 4, "model", 1), 0);
	assert_int_equal(t.n, 2);
	assert_non_null(pm_repl_acked(&t, 5, "model", 3));
	x = pm_repl_take(&t);
	assert_int_equal(x->grank, 4);
	assert_int_equal(x->sending, 1);
	pm_repl_track_free(&t);
}

static void test_lines(void **st)
{
	struct pm_repl_line l = { .kind = PM_RL_BLOB, .owner = 3, .grank = 7, .version = 12,
				  .size = 1u << 30, .step = 25, .age_ms = 40 };
	struct pm_repl_line r;
	char buf[PM_REPL_LINE_MAX + 1], err[256];
	int n;
	(void)st;
	strcpy(l.name, "model");
	n = pm_repl_line_format(&l, buf, sizeof(buf));
	assert_true(n > 0);
	assert_string_equal(buf, "blob 3 7 model 12 1073741824 25 40\n");
	buf[n - 1] = '\0';
	assert_int_equal(pm_repl_line_parse(buf, &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, PM_RL_BLOB);
	assert_int_equal(r.size, 1u << 30);
	assert_string_equal(r.name, "model");
	assert_int_equal(pm_repl_line_parse("ack 7 model 12", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, PM_RL_ACK);
	assert_int_equal(r.version, 12);
	assert_int_equal(pm_repl_line_parse("end 3 2", &r, err, sizeof(err)), 0);
	assert_int_equal(r.count, 2);
	/* A trial's run ended: the owner's replicas of a rank go. */
	l = (struct pm_repl_line){ .kind = PM_RL_DROP, .owner = 3, .grank = 7 };
	assert_int_equal(pm_repl_line_format(&l, buf, sizeof(buf)), 9);
	assert_string_equal(buf, "drop 3 7\n");
	assert_int_equal(pm_repl_line_parse("drop 3 7", &r, err, sizeof(err)), 0);
	assert_int_equal(r.kind, PM_RL_DROP);
	assert_int_equal(r.owner, 3);
	assert_int_equal(r.grank, 7);
	/* Refused: unknown kinds, signs, zeros, tails, bad names, version 0. */
	static const char *bad[] = { "", "hello", "blob 3 7 model 12 10 25", "blob 3 -7 model 1 1 1 1",
				     "blob 3 7 model 0 1 1 1", "blob 3 7 .x 1 1 1 1",
				     "blob 3 7 mo/del 1 1 1 1", "ack 7 model 012", "ack 7 model 1 x",
				     "end +3 2", "end 3  2", " end 3 2", "ack -1 model 1",
				     "drop 3", "drop 3 -7", "drop 3 7 1", "drop 3 07", "drop x 7",
				     "drop 3 7 " };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(pm_repl_line_parse(bad[i], &r, err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
	}
	/* A name too long to format does not fit. */
	l.kind = PM_RL_BLOB;
	memset(l.name, 'a', PM_STATE_NAME_MAX);
	l.name[PM_STATE_NAME_MAX] = '\0';
	assert_true(pm_repl_line_format(&l, buf, 16) < 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_buddy_skips_lost),
		cmocka_unit_test(test_buddy_other_domain),
		cmocka_unit_test(test_replace_holder_is_spare),
		cmocka_unit_test(test_replace_push_and_await),
		cmocka_unit_test(test_replace_holder_lost),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_track_scenario),
		cmocka_unit_test(test_failed_copy_does_not_block),
		cmocka_unit_test(test_track_forget),
		cmocka_unit_test(test_lines),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
