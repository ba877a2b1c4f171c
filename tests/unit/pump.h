/* For the unit tests that drive the event loop over real descriptors: run
 * it until a condition holds, checked every few milliseconds by a timer of
 * its own. The deadline only ends a test that would hang: it is not a
 * timed assertion (the condition is what the test awaits). */
#ifndef PM_TEST_PUMP_H
#define PM_TEST_PUMP_H

#include <stdbool.h>
#include <unistd.h>

#include "io/loop.h"

struct pm_pump {
	struct pm_watch w;
	bool (*until)(void *arg);
	void *arg;
	uint64_t deadline;
};

static void pm_pump_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_pump *p = (struct pm_pump *)w;
	(void)ev;

	pm_timer_ack(w->fd);
	if ((p->until && p->until(p->arg)) || pm_now_ms() >= p->deadline)
		pm_loop_stop(l);
}

/* Whether until(arg) held before the deadline (until NULL: run the loop
 * for ms, to let what is in flight arrive). What the code under test
 * stops the loop for does not end the wait. */
static inline bool pm_pump(struct pm_loop *l, bool (*until)(void *), void *arg, unsigned ms)
{
	struct pm_pump p = { .w = { .fd = pm_timer_new(), .fn = pm_pump_tick },
			     .until = until, .arg = arg, .deadline = pm_now_ms() + ms };
	bool ok;

	if (p.w.fd < 0 || pm_loop_add(l, &p.w, EPOLLIN) || pm_timer_set(p.w.fd, 2, 2))
		return false;
	p.w.arg = &p;
	do {
		l->stop = false;
		pm_loop_run(l);
	} while (!(until && until(arg)) && pm_now_ms() < p.deadline);
	ok = until ? until(arg) : true;
	pm_loop_del(l, &p.w);
	close(p.w.fd);
	l->stop = false;
	return ok;
}

#endif
