/* Goodput's accounting (common/goodput.c) over recorded timelines: each
 * a step's event log as the root writes it (whole JSON lines, through
 * pm_gp_line), the figures checked against the definitions in goodput.h
 * worked out by hand: a plain failure, a restart during a restart, a lost
 * node with a spare, a hang, a sweep, no heartbeats, a step still running. */
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/goodput.h"

static struct pm_gp_tl tl;
static struct pm_gp_result r;

static int setup(void **state)
{
	(void)state;
	memset(&tl, 0, sizeof(tl));
	memset(&r, 0, sizeof(r));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pm_gp_tl_free(&tl);
	pm_gp_result_free(&r);
	return 0;
}

/* One line of the log, as the root writes it. */
static void ev(double t, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void ev(double t, const char *name, const char *fmt, ...)
{
	char fields[512], line[700];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fields, sizeof(fields), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "{\"time\":%.6f,\"step\":\"12.0\",\"event\":\"%s\"%s%s}", t,
		 name, fields[0] ? "," : "", fields);
	assert_int_equal(pm_gp_line(&tl, line), 0);
}

/* Beats of generation gen, steps from..to (inclusive), the first at t0,
 * then every dt. */
static double beats(unsigned gen, unsigned from, unsigned to, double t0, double dt)
{
	unsigned s;

	for (s = from; s <= to; s++)
		ev(t0 + (s - from) * dt + 0.001, "progress",
		   "\"gen\":%u,\"rank\":0,\"train_step\":%u,\"beat_ms\":%.3f", gen, s,
		   (t0 + (s - from) * dt) * 1000);
	return t0 + (to - from) * dt;
}

static void near(const char *what, double a, double b)
{
	if (fabs(a - b) > 1e-6)
		fail_msg("%s = %.9f, not %.9f", what, a, b);
}
#define NEAR(a, b) near(#a, (a), (b))

static void phases(const struct pm_gp_incident *in, double d, double s, double st, double ri,
		   double rc, double sl)
{
	NEAR(in->phase[PM_GP_DETECT], d);
	NEAR(in->phase[PM_GP_STOP], s);
	NEAR(in->phase[PM_GP_STARTP], st);
	NEAR(in->phase[PM_GP_REINIT], ri);
	NEAR(in->phase[PM_GP_RECOMPUTE], rc);
	NEAR(in->phase[PM_GP_SLOWDOWN], sl);
	NEAR(in->lost, d + s + st + ri + rc + sl);
}

/* Every second of the wall is somewhere, once. */
static void partition(void)
{
	NEAR(r.wall, r.useful + r.startup + r.end + r.lost + r.other);
}

static void gen0(void)
{
	ev(100, "launch", "\"gen\":0,\"nodes\":2,\"ranks\":4");
	ev(101, "running", "\"gen\":0,\"ranks\":4,\"since_start_ms\":1000");
	/* steps 0..20 every 0.5 s from 102: step 20 starts at 112 */
	beats(0, 0, 20, 102, 0.5);
	ev(102.01, "heartbeating", "\"gen\":0,\"ranks\":4,\"since_start_ms\":2000");
}

/* A rank crashes in step 20 (0.2 s into it); the restart resumes from the
 * checkpoint of step 10: steps 10..19 are computed again, and the first
 * step after the resume takes 0.8 s instead of 0.5. */
static void test_plain_failure(void **state)
{
	char json[4096], text[512];
	(void)state;

	gen0();
	ev(112.2, "rank_failed", "\"gen\":0,\"rank\":3,\"node\":\"n2\",\"status\":\"exited with code 1\","
	   "\"error\":\"boom \\\"gen\\\":7\"");
	ev(112.25, "rank_failed", "\"gen\":0,\"rank\":2,\"node\":\"n2\",\"status\":\"exited with "
	   "code 143\",\"ignored\":true");
	ev(112.3, "stopped", "\"gen\":0,\"stop_ms\":100,\"delay_ms\":0");
	ev(112.3, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":100");
	ev(112.8, "running", "\"gen\":1,\"ranks\":4,\"since_failure_ms\":600,\"process_ms\":600");
	beats(1, 10, 10, 115.8, 0);
	beats(1, 11, 40, 116.6, 0.5); /* step 10 took 0.8 s; step 40 starts at 131.1 */
	ev(131.7, "generation_succeeded", "\"gen\":1");
	ev(131.7, "finish", "\"gen\":1");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_true(r.known);
	assert_true(r.ended);
	NEAR(r.wall, 31.7);
	NEAR(r.steady, 0.5);
	assert_int_equal(r.steps, 41); /* 0..40, each once */
	NEAR(r.useful, 20.5);
	NEAR(r.goodput, 20.5 / 31.7);
	NEAR(r.startup, 2);
	NEAR(r.end, 0.1);
	assert_int_equal(r.nincidents, 1);
	assert_string_equal(r.inc[0].cause, "crash");
	assert_int_equal(r.inc[0].gen, 0);
	NEAR(r.inc[0].at, 112.2);
	/* recompute: 0.2 s of step 20 thrown away, 10 steps again */
	phases(&r.inc[0], 0, 0.1, 0.5, 3.0, 0.2 + 10 * 0.5, 0.3);
	NEAR(r.lost, r.inc[0].lost);
	NEAR(r.other, 0);
	partition();
	assert_int_equal(pm_gp_json(&r, json, sizeof(json)), 0);
	assert_non_null(strstr(json, "\"known\":true,\"why_unknown\":null"));
	assert_non_null(strstr(json, "\"wall_s\":31.700,\"useful_s\":20.500,\"goodput\":0.6467,"
			       "\"steady_step_s\":0.500000,\"steps\":41"));
	assert_non_null(strstr(json, "\"incidents\":[{\"gen\":0,\"cause\":\"crash\",\"at\":112.200,"
			       "\"lost_s\":9.100,\"detect_s\":0.000,\"stop_s\":0.100,\"start_s\":0.500,"
			       "\"reinit_s\":3.000,\"recompute_s\":5.200,\"slowdown_s\":0.300}]"));
	assert_int_equal(pm_gp_text(&r, text, sizeof(text)), 0);
	assert_string_equal(text, "procmgr: goodput 64.7% (useful 20.5 s of 31.7 s wall: 41 steps "
			    "at 0.500 s; 1 incident lost 9.10 s: detection 0.00, stop 0.10, start "
			    "0.50, re-initialisation 3.00, recompute 5.20, slowdown 0.30 s; start-up "
			    "2.0 s)");
}

/* Generation 1 fails before its first beat (an import error): its start
 * is the first incident's re-initialisation up to that failure, and the
 * steps generation 2 computes again are the first failure's. */
static void test_restart_during_restart(void **state)
{
	(void)state;

	gen0();
	ev(112.2, "rank_failed", "\"gen\":0,\"rank\":3,\"node\":\"n2\",\"status\":\"exited with code 1\"");
	ev(112.3, "stopped", "\"gen\":0,\"stop_ms\":100,\"delay_ms\":0");
	ev(112.3, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":100");
	ev(112.8, "running", "\"gen\":1,\"ranks\":4,\"since_failure_ms\":600,\"process_ms\":600");
	ev(113.5, "rank_failed", "\"gen\":1,\"rank\":0,\"node\":\"n1\",\"status\":\"was killed by "
	   "signal 9 (Killed)\"");
	ev(113.6, "stopped", "\"gen\":1,\"stop_ms\":100,\"delay_ms\":0");
	ev(113.6, "start", "\"gen\":2,\"restart\":2,\"since_failure_ms\":100");
	ev(114.0, "running", "\"gen\":2,\"ranks\":4,\"since_failure_ms\":500,\"process_ms\":500");
	beats(2, 10, 40, 117.0, 0.5);
	ev(132.6, "generation_succeeded", "\"gen\":2");
	ev(132.6, "finish", "\"gen\":2");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_true(r.known);
	assert_int_equal(r.nincidents, 2);
	assert_int_equal(r.steps, 41);
	phases(&r.inc[0], 0, 0.1, 0.5, 0.7, 0.2 + 10 * 0.5, 0);
	assert_int_equal(r.inc[1].gen, 1);
	phases(&r.inc[1], 0, 0.1, 0.4, 3.0, 0, 0);
	NEAR(r.wall, 32.6);
	NEAR(r.lost, 10.0);
	NEAR(r.other, 0);
	partition();
}

/* A node dies after step 20's beat; the peer timeout finds it 6 s later,
 * a spare takes its slot and the ranks resume from the state in memory:
 * no step is computed again. */
static void test_lost_node_with_spare(void **state)
{
	(void)state;

	gen0();
	ev(118.0, "node_lost", "\"gen\":0,\"node\":\"n2\",\"reason\":\"no heartbeat for 5 s\",\"slot\":1");
	ev(118.0, "node_replaced", "\"gen\":0,\"node\":\"n2\",\"spare\":\"n3\",\"slot\":1");
	ev(118.5, "stopped", "\"gen\":0,\"stop_ms\":500,\"delay_ms\":0");
	ev(118.5, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":500");
	ev(119.0, "running", "\"gen\":1,\"ranks\":4,\"since_failure_ms\":1000,\"process_ms\":1000");
	beats(1, 20, 40, 121.0, 0.5);
	ev(131.6, "generation_succeeded", "\"gen\":1");
	ev(131.6, "finish", "\"gen\":1");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_true(r.known);
	assert_int_equal(r.nincidents, 1);
	assert_string_equal(r.inc[0].cause, "node_lost");
	NEAR(r.inc[0].at, 112.0); /* its last beat: the loss itself is not seen */
	phases(&r.inc[0], 6.0, 0.5, 0.5, 2.0, 0, 0);
	assert_int_equal(r.steps, 41);
	NEAR(r.other, 0);
	partition();
}

/* Rank 1 stops beating after step 20's beat; its supervisor judges it hung
 * 5 s later (the hang timeout), its stack takes a second: detection is
 * the hang timeout, the stacks are the stop's. */
static void test_hang(void **state)
{
	(void)state;

	gen0();
	ev(118.0, "rank_failed", "\"gen\":0,\"rank\":1,\"node\":\"n1\",\"status\":\"hung (no "
	   "heartbeat)\",\"hung\":true,\"last_heartbeat_ms\":112000,\"judged_ms_ago\":1000");
	ev(118.2, "hang", "\"gen\":0,\"rank\":1,\"node\":\"n1\",\"followers\":[],\"nfollowers\":0");
	ev(118.3, "stopped", "\"gen\":0,\"stop_ms\":300,\"delay_ms\":0");
	ev(118.3, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":1300");
	ev(118.8, "running", "\"gen\":1,\"ranks\":4,\"since_failure_ms\":1800,\"process_ms\":800");
	beats(1, 20, 40, 120.8, 0.5);
	ev(131.4, "generation_succeeded", "\"gen\":1");
	ev(131.4, "finish", "\"gen\":1");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_int_equal(r.nincidents, 1);
	assert_string_equal(r.inc[0].cause, "hang");
	phases(&r.inc[0], 5.0, 1.3, 0.5, 2.0, 0, 0);
	partition();
}

/* The program never heartbeats with a step: what is known (the wall, the
 * detection, the stop, procmgr's start) is said, the rest is unknown, not
 * zero. */
static void test_no_heartbeats(void **state)
{
	char json[4096], text[1024];
	(void)state;

	ev(100, "launch", "\"gen\":0,\"nodes\":2,\"ranks\":4");
	ev(101, "running", "\"gen\":0,\"ranks\":4,\"since_start_ms\":1000");
	ev(112.2, "rank_failed", "\"gen\":0,\"rank\":3,\"node\":\"n2\",\"status\":\"exited with code 1\"");
	ev(112.3, "stopped", "\"gen\":0,\"stop_ms\":100,\"delay_ms\":0");
	ev(112.3, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":100");
	ev(112.8, "running", "\"gen\":1,\"ranks\":4,\"since_failure_ms\":600,\"process_ms\":600,"
	   "\"heartbeats\":false");
	ev(131.7, "generation_succeeded", "\"gen\":1");
	ev(131.7, "finish", "\"gen\":1");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_false(r.known);
	assert_non_null(strstr(r.why, "procmgr.heartbeat(step)"));
	NEAR(r.wall, 31.7);
	assert_true(r.useful < 0 && r.goodput < 0 && r.lost < 0);
	assert_int_equal(r.nincidents, 1);
	NEAR(r.inc[0].phase[PM_GP_DETECT], 0);
	NEAR(r.inc[0].phase[PM_GP_STOP], 0.1);
	NEAR(r.inc[0].phase[PM_GP_STARTP], 0.5);
	assert_true(r.inc[0].phase[PM_GP_REINIT] < 0 && r.inc[0].phase[PM_GP_RECOMPUTE] < 0 &&
		    r.inc[0].phase[PM_GP_SLOWDOWN] < 0 && r.inc[0].lost < 0);
	assert_int_equal(pm_gp_json(&r, json, sizeof(json)), 0);
	assert_non_null(strstr(json, "\"known\":false,\"why_unknown\":\"no heartbeat"));
	assert_non_null(strstr(json, "\"useful_s\":null,\"goodput\":null"));
	assert_non_null(strstr(json, "\"lost_s\":null,\"detect_s\":0.000,\"stop_s\":0.100,"
			       "\"start_s\":0.500,\"reinit_s\":null,\"recompute_s\":null,"
			       "\"slowdown_s\":null"));
	assert_int_equal(pm_gp_text(&r, text, sizeof(text)), 0);
	assert_non_null(strstr(text, "procmgr: goodput unknown (31.7 s wall; 1 incident: detection "
			       "0.00, stop 0.10, start 0.50 s): no heartbeat with a step"));
}

/* A sweep: no heartbeat reaches the root, and a goodput would be per
 * trial: said, with the wall time. */
static void test_sweep(void **state)
{
	(void)state;

	ev(100, "sweep", "\"trials\":4,\"slots\":4,\"nodes\":2,\"file\":\"/x\"");
	ev(100, "launch", "\"gen\":0,\"nodes\":2,\"ranks\":4");
	ev(101, "trial_start", "\"trial\":\"t1\",\"attempt\":1");
	ev(110, "finish", "\"gen\":0");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_false(r.known);
	assert_true(r.sweep);
	assert_non_null(strstr(r.why, "sweep"));
	NEAR(r.wall, 10);
}

/* While the step runs (in its restart's delay, then training again): the
 * open phases end now. */
static void test_live(void **state)
{
	(void)state;

	gen0();
	ev(112.2, "rank_failed", "\"gen\":0,\"rank\":3,\"node\":\"n2\",\"status\":\"exited with code 1\"");
	ev(112.3, "stopped", "\"gen\":0,\"stop_ms\":100,\"delay_ms\":2000");
	assert_int_equal(pm_gp_compute(&tl, 113.3, &r), 0);
	assert_false(r.ended);
	NEAR(r.wall, 13.3);
	phases(&r.inc[0], 0, 0.1, 1.0, 0, 0.2, 0);
	partition();
	pm_gp_result_free(&r);
	ev(114.3, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":2100");
	ev(114.8, "running", "\"gen\":1,\"ranks\":4");
	beats(1, 20, 24, 116.8, 0.5);
	assert_int_equal(pm_gp_compute(&tl, 119.0, &r), 0);
	NEAR(r.end, 0.2); /* step 24 under way */
	phases(&r.inc[0], 0, 0.1, 2.5, 2.0, 0.2, 0);
	partition();
	pm_gp_result_free(&r);
	/* procmgr stop ends it (no finish follows) */
	ev(119.5, "stop_requested", "\"gen\":1,\"by\":\"root\"");
	assert_int_equal(pm_gp_compute(&tl, 999, &r), 0);
	assert_true(r.ended);
	NEAR(r.wall, 19.5);
}

/* The status answer's line: everything procmgr status shows, both ways. */
static void test_status_codec(void **state)
{
	char line[512];
	struct pm_gp_result b;
	(void)state;

	gen0();
	ev(112.2, "rank_failed", "\"gen\":0,\"rank\":3,\"node\":\"n2\",\"status\":\"exited with code 1\"");
	assert_int_equal(pm_gp_compute(&tl, 113, &r), 0);
	assert_int_equal(pm_gp_status_format(&r, line, sizeof(line)), 0);
	assert_int_equal(pm_gp_status_parse(line, &b), 1);
	assert_true(b.known);
	NEAR(b.wall, r.wall);
	NEAR(b.useful, r.useful);
	assert_true(fabs(b.goodput - r.goodput) < 1e-4);
	assert_int_equal(b.steps, r.steps);
	assert_int_equal(b.nincidents, 1);
	NEAR(b.total[PM_GP_STOP], r.total[PM_GP_STOP]);
	assert_int_equal(pm_gp_status_parse("N node=0 name=x", &b), 0);
	assert_int_equal(pm_gp_status_parse("goodput known=1 wall=x", &b), -1);
	assert_int_equal(pm_gp_status_parse("goodput known=1", &b), -1);
	assert_int_equal(pm_gp_line(&tl, "not json"), 1);
	/* too small a buffer is said */
	assert_int_equal(pm_gp_status_format(&r, line, 20), -1);
	assert_int_equal(pm_gp_json(&r, line, 20), -1);
}

static void test_sample_due(void **state)
{
	(void)state;
	assert_false(pm_gp_sample_due(0, 999));
	assert_true(pm_gp_sample_due(0, 1000));
	assert_true(pm_gp_sample_due(59999, 1000));
	assert_false(pm_gp_sample_due(60000, 9999));
	assert_true(pm_gp_sample_due(60000, 10000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_plain_failure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_restart_during_restart, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_node_with_spare, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_heartbeats, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_live, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_codec, setup, teardown),
		cmocka_unit_test(test_sample_due),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
