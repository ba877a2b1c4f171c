/* The timeline: event log lines read, and the SVG drawn from them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli/timeline.h"
#include "common/goodput.h"

static void test_parse_line(void **state)
{
	struct pm_tl_event e;
	(void)state;

	assert_int_equal(pm_tl_parse_line("{\"time\":1796282925.229303,\"step\":\"1.0\",\"event\":"
					  "\"rank_failed\",\"gen\":2,\"rank\":3,\"node\":\"pmnode2\","
					  "\"status\":\"exited with code 1 (ValueError: \\u0022x\\u0022)\","
					  "\"error\":\"long\\u000atrace\"}\n", &e), 0);
	assert_true(e.t > 1796282925.2 && e.t < 1796282925.3);
	assert_string_equal(e.name, "rank_failed");
	assert_int_equal(e.gen, 2);
	assert_int_equal(e.rank, 3);
	assert_string_equal(e.node, "pmnode2");
	assert_string_equal(e.detail, "exited with code 1 (ValueError: \"x\")");
	/* Arrays and nested values are passed over; absent fields are -1 / "". */
	assert_int_equal(pm_tl_parse_line(" {\"time\":5,\"event\":\"hang\",\"followers\":[1,[2],"
					  "{\"a\":\"]\"}],\"ok\":true,\"x\":null}", &e), 0);
	assert_string_equal(e.name, "hang");
	assert_int_equal(e.rank, -1);
	assert_string_equal(e.node, "");
	/* Not events. */
	static const char *const bad[] = {
		"", "\n", "{}", "[]", "{\"time\":1}", "{\"event\":\"x\"}", "{\"time\":\"1\",\"event\":\"x\"}",
		"{\"time\":1,\"event\":\"x\"", "{\"time\":1,\"event\":\"x\"} extra",
		"{\"time\":nan,\"event\":\"x\"}", "{\"time\":1,\"event\":\"x\",\"a\":[1,}",
		"{\"time\":1,\"event\":\"x\\", "{\"time\":1,\"event\":\"\\uzzzz\"}",
		"{\"time\":1,\"event\":\"\"}", "{\"time\":1,,\"event\":\"x\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (pm_tl_parse_line(bad[i], &e) != -1)
			fail_msg("'%s' was taken as an event", bad[i]);
}

static const char *const log_lines[] = {
	"{\"time\":100.0,\"event\":\"launch\",\"gen\":0,\"nodes\":3,\"ranks\":6}",
	"{\"time\":101.0,\"event\":\"rank_failed\",\"gen\":0,\"rank\":3,\"node\":\"n10\","
	"\"status\":\"exited with code 1 (<bad> & \\\"worse\\\")\"}",
	"{\"time\":101.1,\"event\":\"stopped\",\"gen\":0,\"stop_ms\":100,\"delay_ms\":0}",
	"{\"time\":101.2,\"event\":\"start\",\"gen\":1,\"restart\":1,\"since_failure_ms\":200}",
	"{\"time\":102.0,\"event\":\"health_failed\",\"gen\":1,\"node\":\"n2\",\"check\":\"gpu: lost\"}",
	"{\"time\":103.0,\"event\":\"something_new\",\"gen\":1}",
	"{\"time\":104.0,\"event\":\"finish\",\"gen\":1}",
};

static char *render(const struct pm_tl_opts *o)
{
	struct pm_tl_event ev[8];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	assert_non_null(f);
	for (i = 0; i < 7; i++)
		assert_int_equal(pm_tl_parse_line(log_lines[i], &ev[i]), 0);
	assert_int_equal(pm_tl_render(ev, 7, o, f), 0);
	fclose(f);
	return buf;
}

static int occurrences(const char *s, const char *what)
{
	int n = 0;

	for (; (s = strstr(s, what)); s += strlen(what))
		n++;
	return n;
}

static void test_render(void **state)
{
	struct pm_tl_opts o = { .title = "step 42.0 <x>" };
	char *svg = render(&o), *n2, *n10;
	(void)state;

	assert_non_null(strstr(svg, "<?xml version=\"1.0\""));
	assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_non_null(strstr(svg, ">step 42.0 &lt;x&gt;</text>"));
	/* Two generations, two bands. */
	assert_int_equal(occurrences(svg, ">gen "), 2);
	assert_non_null(strstr(svg, ">gen 0</text>"));
	assert_non_null(strstr(svg, ">gen 1</text>"));
	/* Rows: the step's, then the nodes in their natural order. */
	n2 = strstr(svg, ">n2</text>");
	n10 = strstr(svg, ">n10</text>");
	assert_non_null(n2);
	assert_non_null(n10);
	assert_true(n2 < n10);
	/* One mark per event, with its details, escaped. */
	assert_int_equal(occurrences(svg, "<g><title>"), 7);
	assert_non_null(strstr(svg, "<title>+1.000 s: rank_failed gen 0 rank 3 on n10: exited with "
				    "code 1 (&lt;bad&gt; &amp; &quot;worse&quot;)</title>"));
	assert_non_null(strstr(svg, "<title>+2.000 s: health_failed gen 1 on n2: gpu: lost</title>"));
	/* The axis: seconds since the first event. */
	assert_non_null(strstr(svg, ">0 s</text>"));
	assert_non_null(strstr(svg, ">4 s</text>"));
	/* The legend names what is drawn, and only that. */
	assert_non_null(strstr(svg, ">rank failed</text>"));
	assert_non_null(strstr(svg, ">other</text>"));
	assert_null(strstr(svg, ">hang</text>"));
	assert_non_null(strstr(svg, "</svg>\n"));
	assert_null(strstr(svg, "<html>"));
	free(svg);
	o.html = true;
	svg = render(&o);
	assert_non_null(strstr(svg, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>"
				    "step 42.0 &lt;x&gt;</title>"));
	assert_non_null(strstr(svg, "</svg>\n</body></html>\n"));
	free(svg);
}

/* A restart's recovery: read from heartbeating, drawn as a span from the
 * failure to every rank's first heartbeat, with its figure. */
static void test_recovery_span(void **state)
{
	static const char *const lines[] = {
		"{\"time\":100.0,\"event\":\"launch\",\"gen\":0,\"nodes\":1,\"ranks\":2}",
		"{\"time\":101.0,\"event\":\"rank_failed\",\"gen\":0,\"rank\":1,\"node\":\"n0\"}",
		"{\"time\":101.2,\"event\":\"start\",\"gen\":1,\"restart\":1}",
		"{\"time\":101.3,\"event\":\"running\",\"gen\":1,\"ranks\":2,"
		"\"since_failure_ms\":300,\"process_ms\":300,\"heartbeats\":true}",
		"{\"time\":110.29,\"event\":\"heartbeating\",\"gen\":1,\"ranks\":2,"
		"\"since_start_ms\":9090,\"since_failure_ms\":9290,\"recovery_ms\":9290,"
		"\"process_ms\":300}",
	};
	struct pm_tl_event ev[5];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;
	(void)state;

	assert_non_null(f);
	for (i = 0; i < 5; i++)
		assert_int_equal(pm_tl_parse_line(lines[i], &ev[i]), 0);
	assert_true(ev[3].recovery_ms < 0);
	assert_true(ev[3].process_ms > 299.9 && ev[3].process_ms < 300.1);
	assert_true(ev[4].recovery_ms > 9289.9 && ev[4].recovery_ms < 9290.1);
	assert_int_equal(pm_tl_render(ev, 5, NULL, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "<title>recovery of gen 1: every rank training again 9.29 s "
				    "after the failure (procmgr's part 0.30 s)</title>"));
	assert_int_equal(occurrences(buf, ">recovery 9.29 s</text>"), 1);
	free(buf);
}

static void test_many_nodes_and_nothing(void **state)
{
	struct pm_tl_event ev[200];
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int i;
	(void)state;

	for (i = 0; i < 200; i++) {
		char line[128];
		snprintf(line, sizeof(line), "{\"time\":%d,\"event\":\"rank_failed\",\"node\":\"n%d\"}",
			 i, i);
		assert_int_equal(pm_tl_parse_line(line, &ev[i]), 0);
	}
	f = open_memstream(&buf, &len);
	assert_int_equal(pm_tl_render(ev, 200, NULL, f), 0);
	assert_int_equal(pm_tl_render(ev, 0, NULL, f), -1);
	fclose(f);
	/* Rows are bounded: the rest share one. */
	assert_non_null(strstr(buf, ">other nodes</text>"));
	assert_int_equal(occurrences(buf, "text-anchor=\"end\""), 48);
	assert_int_equal(occurrences(buf, "<g><title>"), 200);
	free(buf);
}

/* Goodput's phases (issue 35): a span per phase of each incident, from
 * its failure, end to end, with its seconds as the tooltip. */
static void test_goodput_phases(void **state)
{
	struct pm_gp_incident in = { .gen = 0, .cause = "crash", .at = 101.0,
				     .phase = { 0, 0.1, 0.1, 1.0, 0.5, -1 } };
	struct pm_gp_result gp = { .nincidents = 1, .inc = &in };
	struct pm_tl_opts o = { .gp = &gp };
	char *svg = render(&o), *a, *b;
	(void)state;

	/* detection 0 and the unknown slowdown are not drawn */
	assert_null(strstr(svg, "class=\"phase-detect\""));
	assert_null(strstr(svg, "class=\"phase-slowdown\""));
	a = strstr(svg, "<title>gen 0's incident (crash): stop 0.10 s</title><rect class=\"phase-stop\"");
	b = strstr(svg, "<title>gen 0's incident (crash): recompute 0.50 s</title><rect class=\"phase-recompute\"");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(strstr(svg, "class=\"phase-start\""));
	assert_non_null(strstr(svg, "class=\"phase-reinit\""));
	assert_true(a < b);
	assert_non_null(strstr(svg, ">reinit</text>")); /* the legend */
	free(svg);
	svg = render(NULL);
	assert_null(strstr(svg, "phase-"));
	free(svg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_line),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_goodput_phases),
		cmocka_unit_test(test_recovery_span),
		cmocka_unit_test(test_many_nodes_and_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
