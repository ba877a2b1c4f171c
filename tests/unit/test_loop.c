/* The event loop (runtime/io/loop.c): a watch that an earlier callback of
 * the same epoll batch deleted and freed is not called (it would be a use
 * after free: a lost peer's connection freed by the liveness tick while
 * its own event waits in the batch). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/loop.h"

struct peer {
	struct pm_watch w; /* first: the callback gets it */
	int rd, wr;
	struct peer *other; /* freed by this one's callback */
	int *calls;
	int stop_wr;        /* written when called: the loop stops next batch */
};

static struct peer *survivor; /* the one that ran, and freed the other */

static void on_ready(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct peer *p = (struct peer *)w;
	char c;
	(void)ev;

	(*p->calls)++;
	assert_int_equal(read(p->rd, &c, 1), 1);
	if (p->other) {
		pm_loop_del(l, &p->other->w);
		close(p->other->rd);
		close(p->other->wr);
		free(p->other);
		p->other = NULL;
	}
	survivor = p;
	assert_int_equal(write(p->stop_wr, "x", 1), 1);
}

static void on_stop(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	(void)w;
	(void)ev;
	l->stop = true;
}

static struct peer *peer(struct pm_loop *l, int *calls)
{
	struct peer *p = calloc(1, sizeof(*p));
	int fds[2];

	assert_non_null(p);
	assert_int_equal(pipe(fds), 0);
	p->rd = fds[0];
	p->wr = fds[1];
	p->calls = calls;
	p->w = (struct pm_watch){ .fd = p->rd, .fn = on_ready, .arg = p };
	assert_int_equal(pm_loop_add(l, &p->w, EPOLLIN), 0);
	assert_int_equal(write(p->wr, "x", 1), 1);
	return p;
}

static void test_freed_in_batch_is_skipped(void **state)
{
	struct pm_loop l;
	struct pm_watch stop;
	int calls = 0, sp[2];
	struct peer *a, *b;
	(void)state;

	assert_int_equal(pm_loop_init(&l), 0);
	assert_int_equal(pipe(sp), 0);
	stop = (struct pm_watch){ .fd = sp[0], .fn = on_stop };
	assert_int_equal(pm_loop_add(&l, &stop, EPOLLIN), 0);
	a = peer(&l, &calls);
	b = peer(&l, &calls);
	a->stop_wr = b->stop_wr = sp[1];
	/* Both readable: one batch. Whichever comes first frees the other. */
	a->other = b;
	b->other = a;
	/* The first called writes the stop pipe: the loop stops in the next
	 * batch, after the first has run whole. */
	assert_int_equal(pm_loop_run(&l), 0);
	assert_int_equal(calls, 1);
	assert_non_null(survivor);
	close(survivor->rd);
	close(survivor->wr);
	free(survivor);
	close(sp[0]);
	close(sp[1]);
	close(l.epfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_freed_in_batch_is_skipped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
