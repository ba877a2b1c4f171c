/* The simulation's event queue: time order, insertion order among equal
 * times, frames inline and on the heap, and many events. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "queue.h"

static void test_order(void **state)
{
	struct sim_queue q = { 0 };
	struct sim_ev e;
	(void)state;

	assert_int_equal(sim_push(&q, 30, 1, 3, 0, NULL, 0), 0);
	assert_int_equal(sim_push(&q, 10, 1, 1, 0, NULL, 0), 0);
	assert_int_equal(sim_push(&q, 20, 1, 2, 0, NULL, 0), 0);
	assert_int_equal(sim_push(&q, 10, 1, 4, 0, NULL, 0), 0);
	assert_true(sim_pop(&q, &e));
	assert_int_equal(e.node, 1);
	assert_true(sim_pop(&q, &e));
	assert_int_equal(e.node, 4); /* same time: the order of insertion */
	assert_true(sim_pop(&q, &e));
	assert_int_equal(e.node, 2);
	assert_true(sim_pop(&q, &e));
	assert_int_equal(e.node, 3);
	assert_false(sim_pop(&q, &e));
	sim_queue_free(&q);
}

static void test_frames(void **state)
{
	struct sim_queue q = { 0 };
	uint8_t small[8] = "abcdefg", big[300];
	struct sim_ev e;
	(void)state;

	memset(big, 'x', sizeof(big));
	assert_int_equal(sim_push(&q, 2, 0, 0, 0, big, sizeof(big)), 0);
	assert_int_equal(sim_push(&q, 1, 0, 0, 0, small, sizeof(small)), 0);
	assert_true(sim_pop(&q, &e));
	assert_int_equal(e.len, sizeof(small));
	assert_memory_equal(sim_ev_frame(&e), small, sizeof(small));
	sim_ev_done(&e);
	assert_true(sim_pop(&q, &e));
	assert_int_equal(e.len, sizeof(big));
	assert_memory_equal(sim_ev_frame(&e), big, sizeof(big));
	sim_ev_done(&e);
	/* A frame left in the queue is freed with it. */
	assert_int_equal(sim_push(&q, 3, 0, 0, 0, big, sizeof(big)), 0);
	sim_queue_free(&q);
	assert_int_equal(sim_push(&q, 1, 0, 0, 0, big, 70000), -1);
	sim_queue_free(&q);
}

static void test_many(void **state)
{
	struct sim_queue q = { 0 };
	struct sim_ev e;
	uint64_t last = 0, x = 12345;
	int i;
	(void)state;

	for (i = 0; i < 100000; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		assert_int_equal(sim_push(&q, x >> 40, 0, i, 0, NULL, 0), 0);
	}
	for (i = 0; sim_pop(&q, &e); i++) {
		assert_true(e.t >= last);
		last = e.t;
	}
	assert_int_equal(i, 100000);
	sim_queue_free(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
