/* runtime/io/conn.c over real socketpairs: whole frames whatever the socket
 * cuts (a frame a byte at a time, a burst larger than the socket's buffer),
 * PINGs consumed and counted as life, the peer's orderly close, garbage and
 * an oversize frame refused, a drop from inside on_msg, a failed send. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/conn.h"
#include "pump.h"

struct rx {
	int n;                /* messages received */
	struct pm_msg last;
	unsigned gens[512];   /* the gen of each, in order */
	int closed;           /* on_close calls */
	char why[256];        /* its why; "" for NULL */
	bool why_null;
	int drop_at;          /* drop in on_msg at this count (0: never) */
	bool free_on_close;
	char scratch[64];     /* on_msg's why, reused after the drop */
};

static struct pm_loop loop;

static void on_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct rx *r = c->w.arg;

	if (r->n < (int)(sizeof(r->gens) / sizeof(r->gens[0])))
		r->gens[r->n] = m->gen;
	r->n++;
	r->last = *m;
	if (r->drop_at && r->n == r->drop_at) {
		/* The caller's buffer, reused before on_close: the why must be
		 * the connection's own copy. */
		snprintf(r->scratch, sizeof(r->scratch), "dropped by the test at %d", r->n);
		pm_conn_drop(c, r->scratch);
		snprintf(r->scratch, sizeof(r->scratch), "reused");
	}
}

static void on_close(struct pm_conn *c, const char *why)
{
	struct rx *r = c->w.arg;

	r->closed++;
	/* Freed first, why read after, as tree_link.c's parent_closed does:
	 * why must outlive the connection (ASan sees it if not). */
	if (r->free_on_close)
		pm_conn_free(c);
	r->why_null = why == NULL;
	snprintf(r->why, sizeof(r->why), "%s", why ? why : "");
}

static bool got(void *arg)
{
	struct rx *r = arg;
	return r->n >= r->drop_at && r->n > 0 && (!r->drop_at || r->closed);
}

static bool got_n(void *arg)
{
	struct rx *r = arg;
	return r->n >= 100;
}

static bool closed(void *arg)
{
	return ((struct rx *)arg)->closed > 0;
}

static int setup(void **state)
{
	(void)state;
	return pm_loop_init(&loop);
}

static int teardown(void **state)
{
	(void)state;
	close(loop.epfd);
	return 0;
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void test_frames_both_ways(void **state)
{
	struct rx ra = { 0 }, rb = { 0 };
	struct pm_conn *a, *b;
	struct pm_msg m;
	int sv[2];
	(void)state;

	pair(sv);
	a = pm_conn_new(&loop, sv[0], on_msg, on_close, &ra);
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->id, -1);
	pm_msg_init(&m, PM_MSG_START);
	m.gen = 7;
	m.rank = -3;
	m.node = 12;
	pm_msg_set_text(&m, "hello there");
	assert_int_equal(pm_conn_ping(a), 0); /* consumed, not delivered */
	assert_int_equal(pm_conn_send(a, &m), 0);
	b->last_rx = 0;
	assert_true(pm_pump(&loop, got, &rb, 5000));
	assert_int_equal(rb.n, 1);
	assert_int_equal(rb.last.type, PM_MSG_START);
	assert_int_equal(rb.last.gen, 7);
	assert_int_equal(rb.last.rank, -3);
	assert_int_equal(rb.last.node, 12);
	assert_string_equal(rb.last.text, "hello there");
	assert_true(b->last_rx > 0); /* the bytes read are its life */
	pm_msg_init(&m, PM_MSG_STOP);
	m.gen = 8;
	assert_int_equal(pm_conn_send(b, &m), 0);
	assert_true(pm_pump(&loop, got, &ra, 5000));
	assert_int_equal(ra.last.type, PM_MSG_STOP);
	assert_int_equal(ra.last.gen, 8);
	assert_int_equal(ra.closed + rb.closed, 0);
	pm_conn_free(a);
	pm_conn_free(b);
}

/* A frame cut in every place: delivered once, whole, when its last byte
 * comes. */
static void test_byte_at_a_time(void **state)
{
	struct rx rb = { 0 };
	struct pm_conn *b;
	struct pm_msg m;
	uint8_t frame[PM_WIRE_FRAME_MAX];
	int sv[2], n, i;
	(void)state;

	pair(sv);
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	pm_msg_init(&m, PM_MSG_FAIL);
	m.gen = 3;
	m.status = 9;
	pm_msg_set_text(&m, "cut in pieces");
	n = pm_msg_encode(&m, frame, sizeof(frame));
	assert_true(n > 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(write(sv[0], frame + i, 1), 1);
		pm_pump(&loop, NULL, NULL, i == n - 1 ? 0 : 1);
		if (i < n - 1)
			assert_int_equal(rb.n, 0);
	}
	assert_true(pm_pump(&loop, got, &rb, 5000));
	assert_int_equal(rb.n, 1);
	assert_int_equal(rb.last.status, 9);
	assert_string_equal(rb.last.text, "cut in pieces");
	pm_conn_free(b);
	close(sv[0]);
}

/* More than the socket holds: what does not fit waits in the connection
 * and goes out as the peer reads, in order. */
static void test_partial_writes(void **state)
{
	struct rx ra = { 0 }, rb = { 0 };
	struct pm_conn *a, *b;
	struct pm_msg m;
	char text[PM_WIRE_TEXT_MAX + 1];
	int sv[2], i, small = 4096;
	(void)state;

	pair(sv);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
	a = pm_conn_new(&loop, sv[0], on_msg, on_close, &ra);
	memset(text, 'x', PM_WIRE_TEXT_MAX);
	text[PM_WIRE_TEXT_MAX] = '\0';
	for (i = 0; i < 100; i++) {
		pm_msg_init(&m, PM_MSG_PRINT);
		m.gen = (unsigned)i;
		pm_msg_set_text(&m, text);
		assert_int_equal(pm_conn_send(a, &m), 0);
	}
	assert_true(a->out_len > 0); /* the socket took only part */
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	assert_true(pm_pump(&loop, got_n, &rb, 10000));
	assert_int_equal(rb.n, 100);
	for (i = 0; i < 100; i++)
		assert_int_equal(rb.gens[i], (unsigned)i);
	assert_int_equal(strlen(rb.last.text), PM_WIRE_TEXT_MAX);
	assert_int_equal(a->out_len, 0);
	pm_conn_free(a);
	pm_conn_free(b);
}

static void test_peer_close_is_orderly(void **state)
{
	struct rx rb = { .free_on_close = true };
	int sv[2];
	(void)state;

	pair(sv);
	assert_non_null(pm_conn_new(&loop, sv[1], on_msg, on_close, &rb));
	close(sv[0]);
	assert_true(pm_pump(&loop, closed, &rb, 5000));
	assert_int_equal(rb.closed, 1);
	assert_true(rb.why_null);
}

static void garbage(const void *bytes, size_t n, const char *why)
{
	struct rx rb = { .free_on_close = true };
	int sv[2];

	pair(sv);
	assert_non_null(pm_conn_new(&loop, sv[1], on_msg, on_close, &rb));
	assert_int_equal(write(sv[0], bytes, n), (ssize_t)n);
	assert_true(pm_pump(&loop, closed, &rb, 5000));
	assert_int_equal(rb.n, 0);
	assert_string_equal(rb.why, why);
	close(sv[0]);
}

static void test_garbage_refused(void **state)
{
	/* An HTTP client on the port: refused at its first byte. */
	(void)state;
	garbage("GET / HTTP/1.0\r\n", 16, "not a procmgr frame (bad magic)");
}

static void test_oversize_frame_refused(void **state)
{
	/* A length beyond the largest frame: refused from the header, without
	 * waiting for (or buffering) the bytes it announces. */
	uint8_t hdr[PM_WIRE_HDR] = { 0x50, 0x4d, PM_WIRE_VERSION, PM_MSG_PRINT,
				     0x00, 0x10, 0x00, 0x00 };
	(void)state;
	garbage(hdr, sizeof(hdr), "bad frame length");
}

/* Dropped from on_msg: nothing more is delivered, on_close says why, once;
 * the connection refuses to send from then on. */
static void test_drop_from_on_msg(void **state)
{
	struct rx rb = { .drop_at = 2 };
	struct pm_conn *b;
	struct pm_msg m;
	uint8_t frames[3 * 64];
	int sv[2], i, n = 0;
	(void)state;

	pair(sv);
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	for (i = 0; i < 3; i++) {
		pm_msg_init(&m, PM_MSG_STOP);
		m.gen = (unsigned)i;
		n += pm_msg_encode(&m, frames + n, sizeof(frames) - (size_t)n);
	}
	assert_int_equal(write(sv[0], frames, (size_t)n), n); /* one read, three frames */
	assert_true(pm_pump(&loop, got, &rb, 5000));
	assert_int_equal(rb.n, 2);
	assert_int_equal(rb.closed, 1);
	assert_string_equal(rb.why, "dropped by the test at 2");
	assert_int_equal(pm_conn_send(b, &m), -1);
	pm_conn_fail(b, "again"); /* already dead: no second close */
	assert_int_equal(rb.closed, 1);
	pm_conn_free(b);
	close(sv[0]);
}

/* Dropped from on_msg, freed by on_close before it reads why. */
static void test_drop_then_free(void **state)
{
	struct rx rb = { .drop_at = 1, .free_on_close = true };
	struct pm_msg m;
	uint8_t frame[64];
	int sv[2], n;
	(void)state;

	pair(sv);
	assert_non_null(pm_conn_new(&loop, sv[1], on_msg, on_close, &rb));
	pm_msg_init(&m, PM_MSG_STOP);
	n = pm_msg_encode(&m, frame, sizeof(frame));
	assert_int_equal(write(sv[0], frame, (size_t)n), n);
	assert_true(pm_pump(&loop, got, &rb, 5000));
	assert_int_equal(rb.closed, 1);
	assert_string_equal(rb.why, "dropped by the test at 1");
	close(sv[0]);
}

static void test_fail_from_outside(void **state)
{
	struct rx rb = { 0 };
	struct pm_conn *b;
	int sv[2];
	(void)state;

	pair(sv);
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	pm_conn_fail(b, "no heartbeat for 3 s");
	assert_int_equal(rb.closed, 1);
	assert_string_equal(rb.why, "no heartbeat for 3 s");
	assert_true(b->dead);
	pm_conn_free(b);
	close(sv[0]);
}

/* Sending to a peer that is gone fails (EPIPE), and does not raise
 * SIGPIPE. */
static void test_send_to_closed_peer(void **state)
{
	struct rx ra = { 0 };
	struct pm_conn *a;
	struct pm_msg m;
	int sv[2];
	(void)state;

	pair(sv);
	a = pm_conn_new(&loop, sv[0], on_msg, on_close, &ra);
	close(sv[1]);
	pm_msg_init(&m, PM_MSG_STOP);
	assert_int_equal(pm_conn_send(a, &m), -1);
	assert_int_equal(errno, EPIPE);
	pm_conn_free(a);
}

/* What was queued when the peer went away: the EPOLLOUT flush fails and
 * the connection closes with the error. */
static void test_flush_fails_later(void **state)
{
	struct rx ra = { .free_on_close = true };
	struct pm_conn *a;
	struct pm_msg m;
	int sv[2], small = 4096, i;
	(void)state;

	pair(sv);
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	a = pm_conn_new(&loop, sv[0], on_msg, on_close, &ra);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, "0123456789012345678901234567890123456789012345678901234567890");
	for (i = 0; i < 2000 && !a->out_len; i++)
		assert_int_equal(pm_conn_send(a, &m), 0);
	assert_true(a->out_len > 0);
	close(sv[1]);
	assert_true(pm_pump(&loop, closed, &ra, 5000));
	assert_int_equal(ra.closed, 1);
}

static void test_liveness(void **state)
{
	struct rx ra = { 0 }, rb = { 0 };
	struct pm_conn *a, *b;
	uint64_t now;
	int sv[2];
	(void)state;

	pair(sv);
	a = pm_conn_new(&loop, sv[0], on_msg, on_close, &ra);
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	now = a->last_rx;
	assert_false(pm_conn_silent(a, now + 100000, 0)); /* no timeout: never */
	assert_false(pm_conn_silent(a, now + 2999, 3000));
	assert_true(pm_conn_silent(a, now + 3000, 3000));
	assert_false(pm_conn_silent(a, now - 1, 3000)); /* a clock behind: not silent */
	assert_int_equal(pm_conn_ping_period(3000), 1000);
	/* A first tick pings; the peer reads the PING (not delivered) and so
	 * hears of us. */
	b->last_rx = 0;
	assert_false(pm_conn_keepalive(a, now, 3000));
	assert_true(pm_pump(&loop, NULL, NULL, 20));
	assert_true(b->last_rx > 0);
	assert_int_equal(rb.n, 0);
	/* Silent for the timeout beyond a tick on time: lost. */
	a->last_rx = now;
	assert_false(pm_conn_keepalive(a, now + 1000, 3000));
	assert_false(pm_conn_keepalive(a, now + 2000, 3000));
	assert_false(pm_conn_keepalive(a, now + 3000, 3000));
	assert_true(pm_conn_keepalive(a, now + 4000, 3000));
	pm_conn_free(a);
	pm_conn_free(b);
}

/* pm_conn_free with bytes still queued tries them once more: the peer
 * gets what fits. */
static void test_free_flushes(void **state)
{
	struct rx ra = { 0 }, rb = { 0 };
	struct pm_conn *a, *b;
	struct pm_msg m;
	int sv[2];
	(void)state;

	pair(sv);
	a = pm_conn_new(&loop, sv[0], on_msg, on_close, &ra);
	pm_msg_init(&m, PM_MSG_FINISH);
	m.gen = 5;
	assert_int_equal(pm_conn_send(a, &m), 0);
	pm_conn_free(a);
	b = pm_conn_new(&loop, sv[1], on_msg, on_close, &rb);
	assert_true(pm_pump(&loop, closed, &rb, 5000));
	assert_int_equal(rb.n, 1);
	assert_int_equal(rb.last.type, PM_MSG_FINISH);
	assert_true(rb.why_null);
	pm_conn_free(b);
}

static void test_new_fails_on_bad_fd(void **state)
{
	struct rx ra = { 0 };
	(void)state;

	assert_null(pm_conn_new(&loop, -1, on_msg, on_close, &ra));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_frames_both_ways, setup, teardown),
		cmocka_unit_test_setup_teardown(test_byte_at_a_time, setup, teardown),
		cmocka_unit_test_setup_teardown(test_partial_writes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_close_is_orderly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oversize_frame_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_from_on_msg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drop_then_free, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fail_from_outside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_to_closed_peer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_fails_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_liveness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_free_flushes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_new_fails_on_bad_fd, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
