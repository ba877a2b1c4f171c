/* Unit tests of whose state a sweep's trial sees (runtime/common/
 * statescope.c): the root's scope of each start through a trial's life
 * (first start, restarts in place, a requeue, another requeue and
 * restarts), a node's slot judged start by start and end by end over
 * scenarios (a new trial, the same trial's restart, a late end), the
 * connections of the state socket, and the scope's field in
 * TRIAL_START's text, every malformed form. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/statescope.h"

static void test_root_scope_through_a_life(void **st)
{
	struct pm_scope_run run = { 0 };
	(void)st;
	/* First start: a new run, named by its attempt. */
	assert_int_equal(pm_scope_of_start(&run, 0, 5), 5);
	/* Restarts in place (attempts 9, 12): the same run. */
	assert_int_equal(pm_scope_of_start(&run, 0, 9), 5);
	assert_int_equal(pm_scope_of_start(&run, 0, 12), 5);
	/* Requeued after a node loss: a new run ... */
	assert_int_equal(pm_scope_of_start(&run, 1, 20), 20);
	/* ... whose restarts keep it. */
	assert_int_equal(pm_scope_of_start(&run, 1, 21), 20);
	assert_int_equal(pm_scope_of_start(&run, 2, 30), 30);
	assert_int_equal(pm_scope_of_start(&run, 2, 31), 30);
}

static void test_root_scopes_differ_between_trials(void **st)
{
	/* Every first start is a new attempt: no two trials share a scope,
	 * so a trial's run never sees another's on the same slot. */
	struct pm_scope_run runs[50] = { { 0 } };
	uint32_t seen[50], attempt = 1;
	(void)st;
	for (int i = 0; i < 50; i++) {
		seen[i] = pm_scope_of_start(&runs[i], 0, attempt++);
		(void)pm_scope_of_start(&runs[i], 0, attempt++); /* a restart */
		for (int j = 0; j < i; j++)
			assert_int_not_equal(seen[i], seen[j]);
	}
}

static void test_node_start(void **st)
{
	(void)st;
	/* An empty slot: nothing to keep. */
	assert_int_equal(pm_scope_on_start(0, 5), PM_SCOPE_DROP);
	/* The same run: its saves stay. */
	assert_int_equal(pm_scope_on_start(5, 5), PM_SCOPE_KEEP);
	/* Another run (another trial, or a requeue): they go. */
	assert_int_equal(pm_scope_on_start(5, 6), PM_SCOPE_DROP);
	assert_int_equal(pm_scope_on_start(6, 5), PM_SCOPE_DROP);
	/* A start without a scope (malformed) keeps nothing. */
	assert_int_equal(pm_scope_on_start(5, 0), PM_SCOPE_DROP);
	assert_int_equal(pm_scope_on_start(0, 0), PM_SCOPE_DROP);
}

/* A slot's life as a node sees it: what a load on it would find after
 * each message. */
struct slot {
	uint32_t scope;
	const char *state; /* whose saves are there, NULL: none */
};

static void start(struct slot *s, uint32_t scope)
{
	if (pm_scope_on_start(s->scope, scope) == PM_SCOPE_DROP)
		s->state = NULL;
	s->scope = scope;
}

static void ended(struct slot *s, uint32_t scope)
{
	if (pm_scope_on_end(s->scope, scope)) {
		s->state = NULL;
		s->scope = 0;
	}
}

static void test_node_scenarios(void **st)
{
	struct slot s = { 0 };
	(void)st;
	/* Trial a saves, restarts, sees its save; it ends: freed. */
	start(&s, 3);
	s.state = "a";
	start(&s, 3);
	assert_string_equal(s.state, "a");
	ended(&s, 3);
	assert_null(s.state);
	assert_int_equal(s.scope, 0);
	/* Trial b on the same slot sees nothing, even when a's end was
	 * lost on the way (the start alone drops a's). */
	start(&s, 7);
	s.state = "b";
	start(&s, 8);
	assert_null(s.state);
	s.state = "c";
	/* An older run's end, late, changes nothing of the new one's. */
	ended(&s, 7);
	assert_string_equal(s.state, "c");
	assert_int_equal(s.scope, 8);
	ended(&s, 0);
	assert_string_equal(s.state, "c");
	ended(&s, 8);
	assert_null(s.state);
}

static void test_connections(void **st)
{
	(void)st;
	/* Outside a sweep: any scope, as before. */
	assert_true(pm_scope_may_use(false, 0, 0));
	assert_true(pm_scope_may_use(false, 3, 9));
	/* A sweep: the connection's run is the slot's. */
	assert_true(pm_scope_may_use(true, 4, 4));
	/* The run ended (slot empty) or another began: refused. */
	assert_false(pm_scope_may_use(true, 4, 0));
	assert_false(pm_scope_may_use(true, 4, 5));
	/* Opened while the slot had no run: never usable. */
	assert_false(pm_scope_may_use(true, 0, 0));
	assert_false(pm_scope_may_use(true, 0, 5));
}

static void test_text(void **st)
{
	static const char *bad[] = {
		"t 1 0 1 h 1",              /* no command line */
		"t 1 0 1 h 1 \nexit 0",     /* empty field */
		"\nexit 0",                 /* nothing */
		"t 1 0 1 h 1 0\nexit 0",    /* zero: no scope */
		"t 1 0 1 h 1 x7\nexit 0",   /* not a number */
		"t 1 0 1 h 1 7x\nexit 0",
		"t 1 0 1 h 1 -7\nexit 0",
		"t 1 0 1 h 1 +7\nexit 0",
		"t 1 0 1 h 1 4294967296\nexit 0", /* over 32 bits */
		"7\nexit 0",                /* the whole head */
	};
	uint32_t scope;
	char err[128];
	(void)st;
	assert_int_equal(pm_scope_from_trial_text("t 2 0 1 h 29502 17\nexit 0", &scope, err,
						  sizeof(err)), 0);
	assert_int_equal(scope, 17);
	assert_int_equal(pm_scope_from_trial_text("t 2 0 1 h 29502 4294967295\necho a b 5",
						  &scope, err, sizeof(err)), 0);
	assert_int_equal(scope, 4294967295u);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		scope = 99;
		err[0] = '\0';
		assert_int_equal(pm_scope_from_trial_text(bad[i], &scope, err, sizeof(err)), -1);
		assert_int_equal(scope, 0);
		assert_non_null(strstr(err, "trial start"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_root_scope_through_a_life),
		cmocka_unit_test(test_root_scopes_differ_between_trials),
		cmocka_unit_test(test_node_start),
		cmocka_unit_test(test_node_scenarios),
		cmocka_unit_test(test_connections),
		cmocka_unit_test(test_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
