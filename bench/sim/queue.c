#include "queue.h"

#include <stdlib.h>
#include <string.h>

static bool before(const struct sim_ev *a, const struct sim_ev *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

int sim_push(struct sim_queue *q, uint64_t t, int kind, int node, int arg,
	     const uint8_t *frame, size_t len)
{
	struct sim_ev e = { .t = t, .seq = q->seq++, .kind = (uint8_t)kind, .node = node,
			    .arg = arg, .len = (uint16_t)len };
	size_t i;

	if (len > UINT16_MAX)
		return -1;
	if (len > SIM_INLINE) {
		e.f.heap = malloc(len);
		if (!e.f.heap)
			return -1;
		memcpy(e.f.heap, frame, len);
	} else if (len) {
		memcpy(e.f.in, frame, len);
	}
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct sim_ev *n = realloc(q->ev, cap * sizeof(*n));
		if (!n) {
			if (len > SIM_INLINE)
				free(e.f.heap);
			return -1;
		}
		q->ev = n;
		q->cap = cap;
	}
	for (i = q->len++; i > 0 && before(&e, &q->ev[(i - 1) / 2]); i = (i - 1) / 2)
		q->ev[i] = q->ev[(i - 1) / 2];
	q->ev[i] = e;
	return 0;
}

bool sim_pop(struct sim_queue *q, struct sim_ev *out)
{
	struct sim_ev last;
	size_t i = 0, c;

	if (!q->len)
		return false;
	*out = q->ev[0];
	last = q->ev[--q->len];
	while ((c = 2 * i + 1) < q->len) {
		if (c + 1 < q->len && before(&q->ev[c + 1], &q->ev[c]))
			c++;
		if (!before(&q->ev[c], &last))
			break;
		q->ev[i] = q->ev[c];
		i = c;
	}
	if (q->len)
		q->ev[i] = last;
	return true;
}

const uint8_t *sim_ev_frame(const struct sim_ev *e)
{
	return e->len > SIM_INLINE ? e->f.heap : e->f.in;
}

void sim_ev_done(struct sim_ev *e)
{
	if (e->len > SIM_INLINE)
		free(e->f.heap);
	e->len = 0;
}

void sim_queue_free(struct sim_queue *q)
{
	struct sim_ev e;

	while (sim_pop(q, &e))
		sim_ev_done(&e);
	free(q->ev);
	memset(q, 0, sizeof(*q));
}
