/* The door of the tree port: connections that have not said HELLO yet are
 * bounded in number (a cap above the node's children) and in time (a
 * deadline to say it), refusals are logged in summary, and running out of
 * descriptors pauses accepting instead of spinning. An ordinary user who
 * floods the port gets nothing, and the step goes on. */
#include "step.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static void gate_arm(struct pm_step *s)
{
	if (s->gate_armed || s->gate_w.fd < 0)
		return;
	if (pm_timer_set(s->gate_w.fd, PM_GATE_TICK_MS, PM_GATE_TICK_MS) == 0)
		s->gate_armed = true;
}

/* The window is over: what was only counted is said, and a new one may
 * start (t0 is when it does; 0 until the next refusal). */
static void window_end(struct pm_step *s, uint64_t t0)
{
	if (s->refused_more)
		pm_log(s, "%u more tree connections refused in the last %u s", s->refused_more,
		       PM_GATE_LOG_WINDOW_MS / 1000);
	s->refused_more = 0;
	s->refused_logged = 0;
	s->refused_t0 = t0;
}

/* The first PM_GATE_LOG_BURST refusals of a window in full, the others
 * counted and said in one line when the window ends. */
void pm_gate_refused(struct pm_step *s, const char *why)
{
	uint64_t now = pm_now_ms();

	if (!s->refused_t0 || now - s->refused_t0 >= PM_GATE_LOG_WINDOW_MS)
		window_end(s, now);
	if (s->refused_logged < PM_GATE_LOG_BURST) {
		s->refused_logged++;
		pm_log(s, "refused tree connection: %s", why);
	} else {
		s->refused_more++;
		gate_arm(s);
	}
}

bool pm_gate_full(const struct pm_step *s)
{
	/* With spares a lost node's children (or the root's) come here too. */
	int expect = s->nchildren + (s->opts.spares ? s->fanout : 0);

	return s->npending >= expect + PM_GATE_EXTRA;
}

int pm_gate_add(struct pm_step *s, struct pm_conn *c)
{
	if (pm_gate_full(s))
		return -1;
	if (s->npending == s->pending_cap) {
		int n = s->pending_cap ? s->pending_cap * 2 : 8;
		struct pm_pending *p = realloc(s->pending, (size_t)n * sizeof(*p));
		if (!p)
			return -1;
		s->pending = p;
		s->pending_cap = n;
	}
	s->pending[s->npending++] = (struct pm_pending){ .c = c, .t0 = pm_now_ms() };
	gate_arm(s);
	return 0;
}

void pm_gate_remove(struct pm_step *s, struct pm_conn *c)
{
	int i;

	for (i = 0; i < s->npending; i++)
		if (s->pending[i].c == c) {
			s->pending[i] = s->pending[--s->npending];
			return;
		}
}

void pm_gate_pause(struct pm_step *s, int err)
{
	if (s->accept_paused || !s->listen_w)
		return;
	pm_loop_mod(s->loop, s->listen_w, 0);
	s->accept_paused = true;
	pm_gate_refused(s, err == EMFILE || err == ENFILE ?
		      "out of file descriptors: not accepting for a moment" :
		      "accept failed: not accepting for a moment");
	gate_arm(s);
}

static void gate_tick(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	uint64_t now = pm_now_ms();
	int i;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	if (s->accept_paused && s->listen_w && pm_loop_mod(s->loop, s->listen_w, EPOLLIN) == 0)
		s->accept_paused = false;
	/* From the end: pm_conn_fail takes the entry out (child_closed). */
	for (i = s->npending - 1; i >= 0; i--)
		if (i < s->npending && now - s->pending[i].t0 >= PM_GATE_HELLO_MS)
			pm_conn_fail(s->pending[i].c, "no hello within the handshake deadline");
	if (s->refused_more && now - s->refused_t0 >= PM_GATE_LOG_WINDOW_MS)
		window_end(s, 0);
	if (!s->npending && !s->accept_paused && !s->refused_more) {
		pm_timer_set(w->fd, 0, 0);
		s->gate_armed = false;
	}
}

int pm_gate_init(struct pm_step *s)
{
	s->gate_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = gate_tick, .arg = s };
	return s->gate_w.fd < 0 || pm_loop_add(s->loop, &s->gate_w, EPOLLIN) ? -1 : 0;
}

void pm_gate_free(struct pm_step *s)
{
	if (s->gate_w.fd >= 0)
		close(s->gate_w.fd);
	free(s->pending);
	s->pending = NULL;
}
