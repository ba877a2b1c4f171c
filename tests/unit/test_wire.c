/* Unit tests of runtime/common/wire.c: the frame codec of the control tree and of
 * procmgrd's unix socket.
 *
 * Expected bytes are worked out from the layout wire.h states (magic u16,
 * version u8, type u8, length u32, then gen, rank, node, status, count as
 * u32 and the text length as u16, all big-endian, then the text), not
 * copied from a run of the code. Buffers handed to the decoder are
 * malloc'ed to exactly the length it is told, so that under make
 * check-sanitize a read past len is an AddressSanitizer error. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/wire.h"
#include "common/text.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static const char *const sentinel = "untouched";

static void contains(const char *hay, const char *needle)
{
	CHECK(hay && strstr(hay, needle), "expected \"%s\" in message \"%s\"",
	      needle, hay ? hay : "(null)");
}

/* A copy of buf[0..len) in a block of exactly len bytes. */
static uint8_t *exact(const uint8_t *buf, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	assert_non_null(p);
	if (len)
		memcpy(p, buf, len);
	return p;
}

/* Decode buf[0..len) from an exact copy. */
static int decode_exact(const uint8_t *buf, size_t len, struct pm_msg *m,
			const char **err)
{
	uint8_t *p = exact(buf, len);
	int r;

	*err = sentinel;
	r = pm_msg_decode(p, len, m, err);
	free(p);
	return r;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

/* A frame built by hand from the documented layout. */
static size_t frame(uint8_t *buf, uint8_t type, uint32_t gen, int32_t rank,
		    int32_t node, int32_t status, uint32_t count, const char *text)
{
	size_t tl = strlen(text);

	buf[0] = 'P';
	buf[1] = 'M';
	buf[2] = PM_WIRE_VERSION;
	buf[3] = type;
	put32(buf + 4, (uint32_t)(22 + tl));
	put32(buf + 8, gen);
	put32(buf + 12, (uint32_t)rank);
	put32(buf + 16, (uint32_t)node);
	put32(buf + 20, (uint32_t)status);
	put32(buf + 24, count);
	buf[28] = (uint8_t)(tl >> 8);
	buf[29] = (uint8_t)tl;
	memcpy(buf + 30, text, tl);
	return 30 + tl;
}

static void same_msg(const struct pm_msg *a, const struct pm_msg *b)
{
	assert_int_equal(a->type, b->type);
	assert_int_equal(a->gen, b->gen);
	assert_int_equal(a->rank, b->rank);
	assert_int_equal(a->node, b->node);
	assert_int_equal(a->status, b->status);
	assert_int_equal(a->count, b->count);
	assert_int_equal(a->text_len, b->text_len);
	assert_memory_equal(a->text, b->text, a->text_len);
	assert_int_equal(b->text[b->text_len], '\0');
}

/* Encode, decode, compare, re-encode, compare bytes. */
static void round_trip(const struct pm_msg *m)
{
	static uint8_t buf[PM_WIRE_FRAME_MAX], again[PM_WIRE_FRAME_MAX];
	struct pm_msg d;
	const char *err;
	int n = pm_msg_encode(m, buf, sizeof(buf)), n2;

	assert_int_equal(n, PM_WIRE_HDR + PM_WIRE_FIXED + m->text_len);
	memset(&d, 0x5a, sizeof(d));
	assert_int_equal(decode_exact(buf, (size_t)n, &d, &err), n);
	CHECK(err == sentinel, "err set on success: %s", err);
	same_msg(m, &d);
	assert_int_equal(strlen(d.text), d.text_len);
	n2 = pm_msg_encode(&d, again, sizeof(again));
	assert_int_equal(n2, n);
	assert_memory_equal(buf, again, (size_t)n);
}

/* ---- constants, names, init ----------------------------------------- */

static void test_constants(void **state)
{
	(void)state;
	/* "PM", 8 header bytes, 5 u32 + 1 u16 fixed, 4 KiB of text. */
	assert_int_equal(PM_WIRE_MAGIC, ('P' << 8) | 'M');
	assert_int_equal(PM_WIRE_HDR, 2 + 1 + 1 + 4);
	assert_int_equal(PM_WIRE_FIXED, 5 * 4 + 2);
	assert_int_equal(PM_WIRE_FRAME_MAX, 8 + 22 + 4096);
	assert_int_equal(PM_MSG_HELLO, 1);
	assert_int_equal(PM_MSG_TYPE_MAX, 33);
}

static void test_names(void **state)
{
	static const char *const want[PM_MSG_TYPE_MAX] = {
		[PM_MSG_HELLO] = "hello", [PM_MSG_FAIL] = "fail",
		[PM_MSG_STOPPED] = "stopped", [PM_MSG_DONE] = "done",
		[PM_MSG_LOST] = "lost", [PM_MSG_WELCOME] = "welcome",
		[PM_MSG_REFUSED] = "refused", [PM_MSG_STOP] = "stop",
		[PM_MSG_START] = "start", [PM_MSG_FINISH] = "finish",
		[PM_MSG_ABORT] = "abort", [PM_MSG_RANK_HELLO] = "rank-hello",
		[PM_MSG_RANK_EXIT] = "rank-exit",
		[PM_MSG_RANK_STOPPED] = "rank-stopped", [PM_MSG_PRINT] = "print",
		[PM_MSG_READY] = "ready", [PM_MSG_PING] = "ping",
		[PM_MSG_RANK_RUN] = "rank-run", [PM_MSG_REPLACE] = "replace",
		[PM_MSG_RUNNING] = "running",
		[PM_MSG_CLIENT] = "client",
		[PM_MSG_QUERY] = "query", [PM_MSG_ANSWER] = "answer",
		[PM_MSG_ANSWER_END] = "answer-end",
		[PM_MSG_RANK_STEP] = "rank-step", [PM_MSG_SLOW] = "slow",
		[PM_MSG_EVENT] = "event",
		[PM_MSG_TRIAL_START] = "trial-start", [PM_MSG_TRIAL_STOP] = "trial-stop",
		[PM_MSG_TRIAL_EXIT] = "trial-exit",
		[PM_MSG_RANK_STANDBY] = "rank-standby",
		[PM_MSG_BUDDY] = "buddy",
	};
	int t;

	(void)state;
	for (t = 1; t < PM_MSG_TYPE_MAX; t++) {
		CHECK(want[t], "type %d has no expected name", t);
		assert_string_equal(pm_msg_name(t), want[t]);
	}
	assert_string_equal(pm_msg_name(0), "unknown");
	assert_string_equal(pm_msg_name(-1), "unknown");
	assert_string_equal(pm_msg_name(PM_MSG_TYPE_MAX), "unknown");
	assert_string_equal(pm_msg_name(255), "unknown");
	assert_string_equal(pm_msg_name(-2147483647 - 1), "unknown");
}

static void test_init(void **state)
{
	struct pm_msg m;

	(void)state;
	memset(&m, 0x77, sizeof(m));
	pm_msg_init(&m, PM_MSG_FAIL);
	assert_int_equal(m.type, PM_MSG_FAIL);
	assert_int_equal(m.gen, 0);
	assert_int_equal(m.rank, -1);
	assert_int_equal(m.node, -1);
	assert_int_equal(m.status, 0);
	assert_int_equal(m.count, 0);
	assert_int_equal(m.text_len, 0);
	assert_string_equal(m.text, "");
}

static void test_set_text(void **state)
{
	struct pm_msg m;
	char *big = malloc(PM_WIRE_TEXT_MAX + 100);

	(void)state;
	assert_non_null(big);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, "hello");
	assert_int_equal(m.text_len, 5);
	assert_string_equal(m.text, "hello");
	pm_msg_set_text(&m, "");
	assert_int_equal(m.text_len, 0);
	assert_string_equal(m.text, "");

	/* Longer than the maximum: cut, still terminated. */
	memset(big, 'y', PM_WIRE_TEXT_MAX + 99);
	big[PM_WIRE_TEXT_MAX + 99] = '\0';
	pm_msg_set_text(&m, big);
	assert_int_equal(m.text_len, PM_WIRE_TEXT_MAX);
	assert_int_equal(strlen(m.text), PM_WIRE_TEXT_MAX);
	/* Exactly the maximum. */
	big[PM_WIRE_TEXT_MAX] = '\0';
	pm_msg_set_text(&m, big);
	assert_int_equal(m.text_len, PM_WIRE_TEXT_MAX);
	free(big);
}

/* ---- encoding ------------------------------------------------------- */

static void test_encode_layout(void **state)
{
	static const uint8_t want[] = {
		0x50, 0x4d, 0x01, PM_MSG_FAIL, 0x00, 0x00, 0x00, 22 + 3,
		0x01, 0x02, 0x03, 0x04,         /* gen */
		0xff, 0xff, 0xff, 0xfe,         /* rank -2 */
		0x00, 0x00, 0x01, 0x00,         /* node 256 */
		0x80, 0x00, 0x00, 0x00,         /* status INT32_MIN */
		0xde, 0xad, 0xbe, 0xef,         /* count */
		0x00, 0x03, 'a', 'b', 'c',
	};
	uint8_t buf[64];
	struct pm_msg m;

	(void)state;
	pm_msg_init(&m, PM_MSG_FAIL);
	m.gen = 0x01020304u;
	m.rank = -2;
	m.node = 256;
	m.status = INT32_MIN;
	m.count = 0xdeadbeefu;
	pm_msg_set_text(&m, "abc");
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(pm_msg_encode(&m, buf, sizeof(buf)), sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	/* Nothing written past the frame. */
	assert_int_equal(buf[sizeof(want)], 0xee);
}

/* A buffer one byte short of the frame, for every size down to 0, is
 * refused; the exact size is enough. Under ASan the exact-size blocks
 * also catch a write past len. */
static void test_encode_small(void **state)
{
	struct pm_msg m;
	const char *texts[] = { "", "x", "a longer text of a few dozen bytes" };
	size_t i, len;

	(void)state;
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
		size_t need = PM_WIRE_HDR + PM_WIRE_FIXED + strlen(texts[i]);

		pm_msg_init(&m, PM_MSG_ABORT);
		pm_msg_set_text(&m, texts[i]);
		for (len = 0; len < need; len++) {
			uint8_t *b = malloc(len ? len : 1);
			assert_non_null(b);
			CHECK(pm_msg_encode(&m, b, len) == -1,
			      "text \"%s\": encoded into %zu bytes (needs %zu)",
			      texts[i], len, need);
			free(b);
		}
		{
			uint8_t *b = malloc(need);
			assert_non_null(b);
			assert_int_equal(pm_msg_encode(&m, b, need), (int)need);
			free(b);
		}
	}
	/* A maximal frame needs PM_WIRE_FRAME_MAX. */
	{
		uint8_t *b = malloc(PM_WIRE_FRAME_MAX);
		char *t = malloc(PM_WIRE_TEXT_MAX + 1);

		assert_non_null(b);
		assert_non_null(t);
		memset(t, 'q', PM_WIRE_TEXT_MAX);
		t[PM_WIRE_TEXT_MAX] = '\0';
		pm_msg_set_text(&m, t);
		assert_int_equal(pm_msg_encode(&m, b, PM_WIRE_FRAME_MAX - 1), -1);
		assert_int_equal(pm_msg_encode(&m, b, PM_WIRE_FRAME_MAX),
				 PM_WIRE_FRAME_MAX);
		free(t);
		free(b);
	}
}

/* A text_len set by hand past the maximum is refused, whatever the room. */
static void test_encode_text_too_long(void **state)
{
	static uint8_t buf[2 * PM_WIRE_FRAME_MAX];
	struct pm_msg m;

	(void)state;
	pm_msg_init(&m, PM_MSG_PRINT);
	memset(m.text, 'z', PM_WIRE_TEXT_MAX);
	m.text[PM_WIRE_TEXT_MAX] = '\0';
	m.text_len = PM_WIRE_TEXT_MAX + 1;
	assert_int_equal(pm_msg_encode(&m, buf, sizeof(buf)), -1);
	m.text_len = UINT16_MAX;
	assert_int_equal(pm_msg_encode(&m, buf, sizeof(buf)), -1);
}

/* ---- round trips ---------------------------------------------------- */

static void test_round_trip_types(void **state)
{
	struct pm_msg m;
	int t;

	(void)state;
	for (t = 1; t < PM_MSG_TYPE_MAX; t++) {
		/* As pm_msg_init leaves it. */
		pm_msg_init(&m, (enum pm_msg_type)t);
		round_trip(&m);
		/* Every field set, text included. */
		m.gen = (uint32_t)t * 7u;
		m.rank = t * 1000 + 1;
		m.node = t * 10 + 2;
		m.status = t << 8;
		m.count = (uint32_t)t | PM_FLAG_HUNG;
		pm_msg_set_text(&m, pm_msg_name(t));
		round_trip(&m);
	}
}

/* The slow-node messages as procmgr-rank and procmgrd fill them. */
static void test_round_trip_slow(void **state)
{
	struct pm_msg m;
	(void)state;

	assert_int_equal(PM_MSG_RANK_STEP, 25);
	assert_int_equal(PM_MSG_SLOW, 26);
	pm_msg_init(&m, PM_MSG_RANK_STEP);
	m.gen = 3;
	pm_msg_set_text(&m, "18446744073709551615 1700000000123 12.500");
	round_trip(&m);
	pm_msg_init(&m, PM_MSG_SLOW);
	m.gen = 4;
	m.node = 7;
	pm_msg_set_text(&m, "c 7 20 10.250\ns 12 1700000000123 1700000000100 7 3\n");
	round_trip(&m);
}

static void test_round_trip_extremes(void **state)
{
	static const int32_t ints[] = {
		0, 1, -1, -2, 127, 128, -128, 255, 256, 65535, 65536,
		INT32_MAX, INT32_MIN, INT32_MIN + 1, INT32_MAX - 1,
	};
	static const uint32_t uints[] = {
		0, 1, 255, 256, 0x7fffffffu, 0x80000000u, UINT32_MAX,
	};
	static char text[PM_WIRE_TEXT_MAX + 1];
	const size_t ni = sizeof(ints) / sizeof(ints[0]);
	const size_t nu = sizeof(uints) / sizeof(uints[0]);
	struct pm_msg m;
	size_t i, tl;

	(void)state;
	for (i = 0; i < ni * nu; i++) {
		pm_msg_init(&m, PM_MSG_FAIL);
		m.gen = uints[i % nu];
		m.count = uints[(i / nu) % nu];
		m.rank = ints[i % ni];
		m.node = ints[(i + 3) % ni];
		m.status = ints[(i / ni) % ni];
		round_trip(&m);
	}

	/* Text lengths around the u16 byte boundary and the maximum, with
	 * every byte value except NUL. */
	{
		static const size_t lens[] = {
			0, 1, 2, 255, 256, 257, PM_WIRE_TEXT_MAX - 1,
			PM_WIRE_TEXT_MAX,
		};
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			for (tl = 0; tl < lens[i]; tl++)
				text[tl] = (char)(1 + tl % 255);
			text[lens[i]] = '\0';
			pm_msg_init(&m, PM_MSG_REFUSED);
			m.rank = INT32_MIN;
			m.node = INT32_MIN;
			m.status = -1;
			m.gen = UINT32_MAX;
			m.count = UINT32_MAX;
			pm_msg_set_text(&m, text);
			assert_int_equal(m.text_len, lens[i]);
			round_trip(&m);
		}
	}
}

/* ---- partial frames ------------------------------------------------- */

/* Every proper prefix of a valid frame asks for more bytes, sets no error
 * and leaves the message alone. */
static void prefixes(const struct pm_msg *src)
{
	static uint8_t buf[PM_WIRE_FRAME_MAX];
	struct pm_msg d, before;
	const char *err;
	int n = pm_msg_encode(src, buf, sizeof(buf));
	size_t cut;

	assert_true(n > 0);
	memset(&before, 0x5a, sizeof(before));
	for (cut = 0; cut < (size_t)n; cut++) {
		d = before;
		CHECK(decode_exact(buf, cut, &d, &err) == 0,
		      "%s frame of %d bytes cut at %zu: not 0 (err %s)",
		      pm_msg_name(src->type), n, cut, err);
		CHECK(err == sentinel, "cut at %zu set err \"%s\"", cut, err);
		CHECK(memcmp(&d, &before, sizeof(d)) == 0,
		      "cut at %zu wrote the message", cut);
	}
	assert_int_equal(decode_exact(buf, (size_t)n, &d, &err), n);
}

static void test_partial(void **state)
{
	static char text[PM_WIRE_TEXT_MAX + 1];
	struct pm_msg m;
	int t;

	(void)state;
	for (t = 1; t < PM_MSG_TYPE_MAX; t++) {
		pm_msg_init(&m, (enum pm_msg_type)t);
		prefixes(&m);
		m.rank = -7;
		m.status = INT32_MIN;
		pm_msg_set_text(&m, "some text");
		prefixes(&m);
	}
	memset(text, 'm', PM_WIRE_TEXT_MAX);
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, text);
	prefixes(&m);
}

/* ---- malformed frames ----------------------------------------------- */

/* buf[0..len) is refused at every length from `from` on, with a message
 * that contains `why`. */
static void refused(const uint8_t *buf, size_t len, size_t from, const char *why)
{
	struct pm_msg d, before;
	const char *err;
	size_t l;

	memset(&before, 0x5a, sizeof(before));
	for (l = from; l <= len; l++) {
		d = before;
		CHECK(decode_exact(buf, l, &d, &err) == -1,
		      "accepted or waited at %zu bytes (want \"%s\")", l, why);
		CHECK(err != sentinel, "no err at %zu bytes", l);
		contains(err, why);
		CHECK(memcmp(&d, &before, sizeof(d)) == 0,
		      "refused frame wrote the message");
	}
}

static void test_bad_magic(void **state)
{
	uint8_t buf[64];
	size_t n;

	(void)state;
	n = frame(buf, PM_MSG_HELLO, 1, 2, 3, 4, 5, "cred");
	buf[0] = 'Q';
	refused(buf, n, 1, "magic");
	buf[0] = 0;
	refused(buf, n, 1, "magic");
	buf[0] = 'M'; /* byte-swapped magic */
	buf[1] = 'P';
	refused(buf, n, 1, "magic");
	buf[0] = 'P';
	buf[1] = 'm';
	refused(buf, n, 2, "magic");
	buf[1] = 0xff;
	refused(buf, n, 2, "magic");
	/* One good byte alone still waits. */
	{
		struct pm_msg d;
		const char *err;
		assert_int_equal(decode_exact(buf, 1, &d, &err), 0);
	}
}

static void test_bad_version(void **state)
{
	uint8_t buf[64];
	size_t n;

	(void)state;
	n = frame(buf, PM_MSG_HELLO, 1, 2, 3, 4, 5, "cred");
	buf[2] = 0;
	refused(buf, n, 3, "version");
	buf[2] = PM_WIRE_VERSION + 1;
	refused(buf, n, 3, "version");
	buf[2] = 0xff;
	refused(buf, n, 3, "version");
}

static void test_bad_type(void **state)
{
	uint8_t buf[64];
	size_t n;
	int t;

	(void)state;
	n = frame(buf, 0, 1, 2, 3, 4, 5, "");
	refused(buf, n, 4, "type");
	for (t = PM_MSG_TYPE_MAX; t <= 255; t++) {
		buf[3] = (uint8_t)t;
		refused(buf, n, 4, "type");
	}
}

static void test_bad_length(void **state)
{
	static const uint32_t bad[] = {
		0, 1, PM_WIRE_FIXED - 1, PM_WIRE_FIXED + PM_WIRE_TEXT_MAX + 1,
		0x10000, 0x7fffffffu, 0x80000000u, UINT32_MAX,
		UINT32_MAX - PM_WIRE_HDR + 1, /* would wrap HDR + plen */
	};
	static uint8_t buf[PM_WIRE_FRAME_MAX + 64];
	size_t i, n;

	(void)state;
	n = frame(buf, PM_MSG_STOP, 9, -1, -1, 0, 0, "");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put32(buf + 4, bad[i]);
		/* Refused from the header on: no waiting for a length's worth. */
		refused(buf, n, PM_WIRE_HDR, "length");
	}
}

static void test_text_length_mismatch(void **state)
{
	uint8_t buf[64];
	size_t n;

	(void)state;
	/* Text length bigger, smaller, much bigger than the frame says. */
	n = frame(buf, PM_MSG_REFUSED, 0, 0, 0, 0, 0, "why");
	buf[29] = 4;
	refused(buf, n, n, "text length");
	buf[29] = 2;
	refused(buf, n, n, "text length");
	buf[29] = 0;
	refused(buf, n, n, "text length");
	buf[28] = 0x01;
	buf[29] = 3;
	refused(buf, n, n, "text length");
	buf[28] = 0xff;
	buf[29] = 0xff;
	refused(buf, n, n, "text length");
	/* Frame says text, text length says none. */
	n = frame(buf, PM_MSG_REFUSED, 0, 0, 0, 0, 0, "");
	put32(buf + 4, PM_WIRE_FIXED + 1);
	buf[n++] = 'x';
	refused(buf, n, n, "text length");
}

static void test_nul_in_text(void **state)
{
	uint8_t buf[64];
	size_t n, at;

	(void)state;
	for (at = 0; at < 5; at++) {
		n = frame(buf, PM_MSG_PRINT, 0, 0, 0, 0, 0, "hello");
		buf[30 + at] = '\0';
		refused(buf, n, n, "NUL");
	}
}

/* ---- streams -------------------------------------------------------- */

static void test_back_to_back(void **state)
{
	static uint8_t buf[3 * PM_WIRE_FRAME_MAX];
	struct pm_msg m[3], d;
	const char *err;
	size_t off = 0, ends[3];
	int i, r;

	(void)state;
	pm_msg_init(&m[0], PM_MSG_HELLO);
	m[0].node = 4;
	pm_msg_set_text(&m[0], "credential");
	pm_msg_init(&m[1], PM_MSG_WELCOME);
	pm_msg_init(&m[2], PM_MSG_FAIL);
	m[2].gen = 3;
	m[2].rank = 17;
	m[2].node = 4;
	m[2].status = 9;
	m[2].count = PM_FLAG_LOST;
	for (i = 0; i < 3; i++) {
		r = pm_msg_encode(&m[i], buf + off, sizeof(buf) - off);
		assert_true(r > 0);
		off += (size_t)r;
		ends[i] = off;
	}

	/* All of it at once: one frame per call. */
	off = 0;
	for (i = 0; i < 3; i++) {
		r = decode_exact(buf + off, ends[2] - off, &d, &err);
		assert_int_equal(r, ends[i] - off);
		same_msg(&m[i], &d);
		off += (size_t)r;
	}
	assert_int_equal(decode_exact(buf + off, 0, &d, &err), 0);

	/* The first frame and part of the second: the first, then a wait. */
	r = decode_exact(buf, ends[1] - 1, &d, &err);
	assert_int_equal(r, ends[0]);
	same_msg(&m[0], &d);
	assert_int_equal(decode_exact(buf + r, ends[1] - 1 - (size_t)r, &d, &err), 0);

	/* A good frame followed by garbage: the good frame is returned; the
	 * garbage is refused only when it is reached. */
	buf[ends[0]] = 'X';
	r = decode_exact(buf, ends[1], &d, &err);
	assert_int_equal(r, ends[0]);
	same_msg(&m[0], &d);
	assert_int_equal(decode_exact(buf + r, ends[1] - (size_t)r, &d, &err), -1);
	contains(err, "magic");
}

/* ---- fuzz ----------------------------------------------------------- */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned below(unsigned n)
{
	return (unsigned)(xorshift() % n);
}

/* A valid frame with random fields and text. */
static size_t random_frame(uint8_t *buf, size_t cap)
{
	struct pm_msg m;
	size_t i, tl;
	int n;

	pm_msg_init(&m, (enum pm_msg_type)(1 + below(PM_MSG_TYPE_MAX - 1)));
	m.gen = (uint32_t)xorshift();
	m.rank = (int32_t)(uint32_t)xorshift();
	m.node = (int32_t)(uint32_t)xorshift();
	m.status = (int32_t)(uint32_t)xorshift();
	m.count = (uint32_t)xorshift();
	/* Mostly short texts, sometimes up to the maximum. */
	tl = below(8) ? below(40) : below(PM_WIRE_TEXT_MAX + 1);
	for (i = 0; i < tl; i++)
		m.text[i] = (char)(1 + below(255));
	m.text[tl] = '\0';
	m.text_len = (uint16_t)tl;
	n = pm_msg_encode(&m, buf, cap);
	assert_true(n > 0);
	return (size_t)n;
}

static void test_fuzz(void **state)
{
	static uint8_t src[2 * PM_WIRE_FRAME_MAX], again[PM_WIRE_FRAME_MAX];
	unsigned long it, accepted = 0, waited = 0, refused_n = 0;
	struct pm_msg d;
	const char *err;

	(void)state;
	for (it = 0; it < 200000; it++) {
		size_t len, i, k;
		uint8_t *p;
		int r;

		switch (below(4)) {
		case 0: /* random bytes, sometimes behind a valid header start */
			len = below(80);
			for (i = 0; i < len; i++)
				src[i] = (uint8_t)xorshift();
			if (len >= 4 && below(2)) {
				src[0] = 'P';
				src[1] = 'M';
				src[2] = PM_WIRE_VERSION;
				src[3] = (uint8_t)(1 + below(PM_MSG_TYPE_MAX - 1));
				if (len >= 8 && below(2))
					put32(src + 4, (uint32_t)(len - 8 + below(3)) - 1);
			}
			break;
		case 1: /* a valid frame with a few bytes changed */
			len = random_frame(src, sizeof(src));
			for (k = 1 + below(3); k > 0; k--) {
				i = below(len < 32 ? (unsigned)len : 32);
				if (below(4) == 0)
					i = below((unsigned)len);
				src[i] = below(2) ? (uint8_t)xorshift()
						  : (uint8_t)(src[i] ^ (1u << below(8)));
			}
			break;
		case 2: /* a valid frame, cut or with bytes after it */
			len = random_frame(src, sizeof(src));
			if (below(2))
				len = below((unsigned)len + 1);
			else
				for (k = below(40); k > 0; k--)
					src[len++] = (uint8_t)xorshift();
			break;
		default: /* a valid frame */
			len = random_frame(src, sizeof(src));
			break;
		}

		p = exact(src, len);
		err = sentinel;
		r = pm_msg_decode(p, len, &d, &err);
		CHECK(r >= -1 && r <= (int)len,
		      "iteration %lu: returned %d for %zu bytes", it, r, len);
		if (r > 0) {
			int n2;

			accepted++;
			CHECK(err == sentinel, "iteration %lu: err on success", it);
			assert_true(r >= PM_WIRE_HDR + PM_WIRE_FIXED);
			assert_true(d.type > 0 && d.type < PM_MSG_TYPE_MAX);
			assert_true(d.text_len <= PM_WIRE_TEXT_MAX);
			assert_int_equal(strlen(d.text), d.text_len);
			n2 = pm_msg_encode(&d, again, sizeof(again));
			CHECK(n2 == r, "iteration %lu: re-encoded to %d bytes, not %d",
			      it, n2, r);
			CHECK(memcmp(again, p, (size_t)r) == 0,
			      "iteration %lu: re-encoded bytes differ", it);
		} else if (r == 0) {
			waited++;
			CHECK(err == sentinel, "iteration %lu: err on wait", it);
			CHECK(len < PM_WIRE_FRAME_MAX,
			      "iteration %lu: waits with %zu bytes", it, len);
		} else {
			refused_n++;
			CHECK(err != sentinel && err && *err,
			      "iteration %lu: refused without a reason", it);
		}
		free(p);
	}
	/* The generator exercises all three outcomes. */
	CHECK(accepted > 10000 && waited > 1000 && refused_n > 10000,
	      "accepted %lu, waited %lu, refused %lu", accepted, waited, refused_n);
}

/* The job user's text (stacks) on root's terminal: no escape sequence, no
 * C1 control gets through; lines, tabs and other UTF-8 stay. */
static void test_text_visible(void **state)
{
	char s[] = "\x1b]0;owned\x07" "frame\x1b[2J\tok\r\n\x7f\xc2\x9b""31m \xc3\xa9t\xc3\xa9";
	(void)state;

	assert_int_equal(pm_text_visible(s), 7);
	assert_string_equal(s, "?]0;owned?frame?[2J\tok?\n???31m \xc3\xa9t\xc3\xa9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_constants),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_init),
		cmocka_unit_test(test_set_text),
		cmocka_unit_test(test_encode_layout),
		cmocka_unit_test(test_encode_small),
		cmocka_unit_test(test_encode_text_too_long),
		cmocka_unit_test(test_round_trip_types),
		cmocka_unit_test(test_round_trip_slow),
		cmocka_unit_test(test_round_trip_extremes),
		cmocka_unit_test(test_partial),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_bad_version),
		cmocka_unit_test(test_bad_type),
		cmocka_unit_test(test_bad_length),
		cmocka_unit_test(test_text_length_mismatch),
		cmocka_unit_test(test_nul_in_text),
		cmocka_unit_test(test_back_to_back),
		cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_text_visible),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
