/* Unit tests of the procmgr command's pure codecs: the signed request
 * (common/request.c), a node's status answer and its summary
 * (common/status.c), stacks made comparable and grouped, and rank lists
 * (common/stacks.c). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/request.h"
#include "common/stacks.h"
#include "common/status.h"

static const char NONCE[] = "0123456789abcdef0123456789abcdef";

static struct pm_request req(enum pm_query_kind kind, const char *args)
{
	struct pm_request r = { .kind = kind, .job = 12, .step = 0, .port = 20001 };

	snprintf(r.args, sizeof(r.args), "%s", args);
	snprintf(r.host, sizeof(r.host), "node-1.a_b");
	snprintf(r.nonce, sizeof(r.nonce), "%s", NONCE);
	return r;
}

static void test_request_round_trip(void **state)
{
	struct pm_request r = req(PM_Q_STACKS, "0-3,7"), back;
	char buf[PM_REQ_MAX];
	(void)state;

	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "procmgr-client v2 stacks job=12 step=0 to=node-1.a_b:20001 "
			    "nonce=0123456789abcdef0123456789abcdef args=0-3,7");
	assert_int_equal(pm_request_parse(buf, &back), 0);
	assert_int_equal(back.kind, PM_Q_STACKS);
	assert_int_equal(back.job, 12);
	assert_int_equal(back.step, 0);
	assert_string_equal(back.args, "0-3,7");
	assert_string_equal(back.host, "node-1.a_b");
	assert_int_equal(back.port, 20001);
	assert_string_equal(back.nonce, NONCE);
	assert_int_equal(pm_request_proof(&back, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "procmgr-root v1 job=12 step=0 to=node-1.a_b:20001 "
			    "nonce=0123456789abcdef0123456789abcdef");
	/* A host of the longest length still fits. */
	memset(r.host, 'h', PM_REQ_HOST_MAX - 1);
	r.host[PM_REQ_HOST_MAX - 1] = '\0';
	snprintf(r.args, sizeof(r.args), "%.*s", PM_REQ_ARGS_MAX - 1,
		 "0123456789012345678901234567890123456789012345678901234567890123456789"
		 "0123456789012345678901234567890123456789012345678901234567890123456789"
		 "0123456789012345678901234567890123456789012345678901234567890123456789"
		 "0123456789012345678901234567890123456789012345678901234567890123456789");
	r.job = r.step = 4294967295u;
	r.port = 65535;
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), 0);
	assert_int_equal(pm_request_parse(buf, &back), 0);
}

static void test_request_strict(void **state)
{
	static const char *const bad[] = {
		"", "procmgr-client v2 status job=1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdef", /* no args */
		"procmgr-client v2 status job=1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdef args=- x", /* trailing */
		"procmgr-client v2 status job=01 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status job=+1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status  job=1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 reboot job=1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		/* no target, no nonce: the old command's request */
		"procmgr-client v1 status job=1 step=0 args=-",
		"procmgr-client v2 status job=1 step=0 args=-",
		"procmgr-client v2 status job=1 step=0 to=n1 "
		"nonce=0123456789abcdef0123456789abcdef args=-", /* no port */
		"procmgr-client v2 status job=1 step=0 to=n1:0 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status job=1 step=0 to=n1:65536 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status job=1 step=0 to=n1:02 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status job=1 step=0 to=:2 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status job=1 step=0 to=-n1:2 "
		"nonce=0123456789abcdef0123456789abcdef args=-",
		"procmgr-client v2 status job=1 step=0 to=n1:2 "
		"nonce=0123456789ABCDEF0123456789abcdef args=-", /* uppercase */
		"procmgr-client v2 status job=1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcde args=-", /* short */
		"procmgr-client v2 status job=1 step=0 to=n1:2 "
		"nonce=0123456789abcdef0123456789abcdefa args=-", /* long */
		"procmgr-tree v2 hello job=1 step=0 from=1 to=0 nonce=00",
	};
	struct pm_request r = req(PM_Q_STATUS, "-");
	char buf[PM_REQ_MAX];
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		print_message("%s\n", bad[i]);
		assert_int_equal(pm_request_parse(bad[i], &r), -1);
	}
	assert_true(pm_request_is_v1("procmgr-client v1 status job=1 step=0 args=-"));
	assert_false(pm_request_is_v1("procmgr-client v2 status job=1 step=0 args=-"));
	assert_int_equal(pm_request_parse("procmgr-client v2 stop job=4294967295 step=3 "
					  "to=n1:2 nonce=0123456789abcdef0123456789abcdef "
					  "args=-", &r), 0);
	assert_int_equal(r.kind, PM_Q_STOP);
	/* Arguments with a space or nothing cannot be said. */
	r = req(PM_Q_STATUS, "a b");
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	r.args[0] = '\0';
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	r = req(PM_Q_MAX, "-");
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	/* Nor a host with a space or a colon, a port out of range, a bad nonce. */
	r = req(PM_Q_STATUS, "-");
	snprintf(r.host, sizeof(r.host), "n 1");
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	assert_int_equal(pm_request_proof(&r, buf, sizeof(buf)), -1);
	snprintf(r.host, sizeof(r.host), "n:1");
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	r = req(PM_Q_STATUS, "-");
	r.port = 0;
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	r.port = 65536;
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	r = req(PM_Q_STATUS, "-");
	r.nonce[5] = 'g';
	assert_int_equal(pm_request_format(&r, buf, sizeof(buf)), -1);
	assert_int_equal(pm_request_proof(&r, buf, sizeof(buf)), -1);
	/* A buffer too small. */
	r = req(PM_Q_STATUS, "-");
	assert_int_equal(pm_request_format(&r, buf, 20), -1);
	assert_int_equal(pm_request_proof(&r, buf, 20), -1);
}

static void test_kinds(void **state)
{
	enum pm_query_kind k;
	int i;
	(void)state;

	for (i = 1; i < PM_Q_MAX; i++) {
		assert_int_equal(pm_query_kind_parse(pm_query_kind_name(i), &k), 0);
		assert_int_equal((int)k, i);
	}
	assert_int_equal(pm_query_kind_parse("unknown", &k), -1);
	assert_true(pm_query_kind_tree(PM_Q_STATUS));
	assert_true(pm_query_kind_tree(PM_Q_STACKS));
	assert_false(pm_query_kind_tree(PM_Q_RESTART));
}

static void test_status_round_trip(void **state)
{
	struct pm_st_node n = { .node = 3, .name = "pmnode4", .phase = "running", .gen = 2,
				.ranks = 2, .health = "ok" }, n2;
	struct pm_st_rank r = { .rank = 7, .local = 1, .node = 3, .pid = 4242, .state = "running",
				.gen = 2, .beat_ms = -1, .cpu_ms = 1234, .rss_kb = 5600 }, r2;
	char buf[512];
	(void)state;

	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "node id=3 name=pmnode4 phase=running gen=2 ranks=2 health=ok");
	assert_int_equal(pm_st_parse(buf, &n2, &r2), 'N');
	assert_int_equal(n2.node, 3);
	assert_string_equal(n2.name, "pmnode4");
	assert_string_equal(n2.phase, "running");
	assert_int_equal(n2.gen, 2);
	assert_int_equal(n2.ranks, 2);
	assert_string_equal(n2.health, "ok");
	assert_int_equal(pm_st_rank_format(&r, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "rank id=7 local=1 node=3 pid=4242 state=running gen=2 "
				 "beat_ms=-1 cpu_ms=1234 rss_kb=5600");
	assert_int_equal(pm_st_parse(buf, &n2, &r2), 'R');
	assert_int_equal(r2.rank, 7);
	assert_int_equal(r2.local, 1);
	assert_int_equal(r2.node, 3);
	assert_int_equal(r2.pid, 4242);
	assert_string_equal(r2.state, "running");
	assert_int_equal(r2.gen, 2);
	assert_int_equal(r2.beat_ms, -1);
	assert_int_equal(r2.cpu_ms, 1234);
	assert_int_equal(r2.rss_kb, 5600);
	/* A rank whose supervisor has not come yet has no global rank. */
	assert_int_equal(pm_st_parse("rank id=-1 local=1 node=0 pid=0 state=absent gen=0 "
				     "beat_ms=-1 cpu_ms=-1 rss_kb=-1", &n2, &r2), 'R');
	assert_int_equal(r2.rank, -1);
	/* A node found slow: one more word, with or without the recovery's. */
	snprintf(n.slow, sizeof(n.slow), "compute:1.52");
	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "node id=3 name=pmnode4 phase=running gen=2 ranks=2 health=ok "
				 "slow=compute:1.52");
	assert_int_equal(pm_st_parse(buf, &n2, &r2), 'N');
	assert_string_equal(n2.slow, "compute:1.52");
	assert_int_equal(pm_st_parse("node id=3 name=a phase=running gen=2 ranks=2 health=ok "
				     "rec_gen=2 process_ms=1 recovery_ms=2 slow=phase:0.90", &n2, &r2), 'N');
	assert_string_equal(n2.slow, "phase:0.90");
	assert_int_equal(pm_st_parse("node id=3 name=a phase=running gen=2 ranks=2 health=ok "
				     "slow=a slow=b", &n2, &r2), -1);
	n.slow[0] = '\0';
	/* A name with a space cannot be said; a short buffer is refused. */
	snprintf(n.name, sizeof(n.name), "a b");
	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), -1);
	assert_int_equal(pm_st_rank_format(&r, buf, 10), -1);
}

static void test_status_strict(void **state)
{
	static const char *const bad[] = {
		"", "node", "node id=3", /* keys missing */
		"node id=3 name=a phase=running gen=2 ranks=2 health=ok id=4", /* twice */
		"node id=-3 name=a phase=running gen=2 ranks=2 health=ok",
		"node id=3 name=a phase=running gen=2x ranks=2 health=ok",
		"node id=3 name= phase=running gen=2 ranks=2 health=ok",
		"node id=3 name=a phase=running gen=2 ranks=2 health=ok color=red",
		"rank id=1 local=0 node=0 pid=1 state=running gen=0 beat_ms=-2 cpu_ms=0 rss_kb=0",
		"rank id=1 local=0 node=0 pid=1 state=running gen=0 beat_ms=1 cpu_ms=0",
		"rank id=-2 local=0 node=0 pid=1 state=running gen=0 beat_ms=1 cpu_ms=0 rss_kb=0",
		"rank id=1 local=-1 node=0 pid=1 state=running gen=0 beat_ms=1 cpu_ms=0 rss_kb=0",
		"host id=1",
	};
	struct pm_st_node n;
	struct pm_st_rank r;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(pm_st_parse(bad[i], &n, &r), -1);
	/* Any order. */
	assert_int_equal(pm_st_parse("node health=ok ranks=0 gen=0 phase=lost name=x id=9",
				     &n, &r), 'N');
	assert_int_equal(n.node, 9);
	assert_int_equal(n.rec_gen, 0);
	/* The root's recovery figures: all three or none; only recovery_ms
	 * may be -1 (no heartbeat). */
	assert_int_equal(pm_st_parse("node id=0 name=a phase=running gen=2 ranks=2 health=ok "
				     "rec_gen=2 process_ms=300", &n, &r), -1);
	assert_int_equal(pm_st_parse("node id=0 name=a phase=running gen=2 ranks=2 health=ok "
				     "rec_gen=2 process_ms=-1 recovery_ms=5", &n, &r), -1);
	assert_int_equal(pm_st_parse("node id=0 name=a phase=running gen=2 ranks=2 health=ok "
				     "rec_gen=2 process_ms=300 recovery_ms=-1", &n, &r), 'N');
	assert_int_equal(n.recovery_ms, -1);
}

/* The root's node line carries the last restart's figures to the summary. */
static void test_status_recovery(void **state)
{
	struct pm_st_node n[2] = { { .node = 0, .name = "n0", .phase = "running", .gen = 2,
				     .ranks = 2, .health = "ok", .rec_gen = 2,
				     .process_ms = 290, .recovery_ms = 9290 },
				   { .node = 1, .name = "n1", .phase = "running", .gen = 2,
				     .ranks = 2, .health = "ok" } }, p[2];
	struct pm_st_rank r;
	struct pm_st_summary s;
	char buf[512];
	(void)state;

	assert_int_equal(pm_st_node_format(&n[0], buf, sizeof(buf)), 0);
	assert_string_equal(buf, "node id=0 name=n0 phase=running gen=2 ranks=2 health=ok "
				 "rec_gen=2 process_ms=290 recovery_ms=9290");
	assert_int_equal(pm_st_parse(buf, &p[0], &r), 'N');
	assert_int_equal(pm_st_node_format(&n[1], buf, sizeof(buf)), 0);
	assert_null(strstr(buf, "rec_gen"));
	assert_int_equal(pm_st_parse(buf, &p[1], &r), 'N');
	pm_st_summarize(p, 2, NULL, 0, &s);
	assert_int_equal(pm_st_recovery_line(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "last restart: generation 2, every rank training again 9.29 s "
				 "after the failure (procmgr's part 0.29 s)");
	p[0].recovery_ms = -1;
	pm_st_summarize(p, 2, NULL, 0, &s);
	assert_int_equal(pm_st_recovery_line(&s, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "last restart: generation 2, every rank running again 0.29 s "
				 "after the failure (procmgr's part only: no heartbeat yet, or the "
				 "program sends none)");
	/* No restart yet: nothing to say. */
	pm_st_summarize(p + 1, 1, NULL, 0, &s);
	assert_int_equal(pm_st_recovery_line(&s, buf, sizeof(buf)), -1);
	assert_string_equal(buf, "");
}

/* A node's state in memory: both words or none, summed in the summary. */
static void test_status_state(void **state)
{
	struct pm_st_node n = { .node = 1, .name = "n1", .phase = "running", .gen = 0,
				.ranks = 2, .health = "ok", .state_bytes = 3 << 20,
				.state_max = 32ll << 30 }, p[2];
	struct pm_st_rank r;
	struct pm_st_summary s;
	char buf[512];
	(void)state;

	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "node id=1 name=n1 phase=running gen=0 ranks=2 health=ok "
				 "state_bytes=3145728 state_max=34359738368");
	assert_int_equal(pm_st_parse(buf, &p[0], &r), 'N');
	assert_int_equal(p[0].state_bytes, 3 << 20);
	assert_true(p[0].state_max == 32ll << 30);
	assert_int_equal(pm_st_parse("node id=2 name=n2 phase=running gen=0 ranks=2 health=ok "
				     "state_max=5 state_bytes=1048576", &p[1], &r), 'N');
	pm_st_summarize(p, 2, NULL, 0, &s);
	assert_int_equal(s.state_bytes, 4 << 20);
	pm_st_summary_line(&s, buf, sizeof(buf));
	assert_non_null(strstr(buf, "; state in memory 4.0 MiB"));
	/* One without the other, or a negative one: refused. */
	assert_int_equal(pm_st_parse("node id=2 name=n2 phase=running gen=0 ranks=2 health=ok "
				     "state_bytes=1", &p[1], &r), -1);
	assert_int_equal(pm_st_parse("node id=2 name=n2 phase=running gen=0 ranks=2 health=ok "
				     "state_bytes=-1 state_max=1", &p[1], &r), -1);
	/* No state kept (state_max 0): not said; a node that did not say is -1. */
	n.state_max = 0;
	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), 0);
	assert_null(strstr(buf, "state_"));
	assert_int_equal(pm_st_parse(buf, &p[0], &r), 'N');
	assert_int_equal(p[0].state_bytes, -1);
	pm_st_summarize(p, 1, NULL, 0, &s);
	assert_int_equal(s.state_bytes, -1);
}

static void test_summary(void **state)
{
	struct pm_st_node n[3] = { { .phase = "running" }, { .phase = "running" },
				   { .phase = "absent" } };
	struct pm_st_rank r[4] = { { .state = "running", .gen = 1 }, { .state = "running", .gen = 1 },
				   { .state = "failed", .gen = 1 }, { .state = "idle", .gen = 0 } };
	struct pm_st_summary s;
	char buf[256];
	(void)state;

	pm_st_summarize(n, 3, r, 4, &s);
	assert_int_equal(s.nodes_up, 2);
	pm_st_summary_line(&s, buf, sizeof(buf));
	assert_string_equal(buf, "4 ranks on 3 nodes (1 not answering): 2 running, 1 failed, "
				 "1 other; generations 0 to 1");
	pm_st_summarize(n, 2, r, 2, &s);
	pm_st_summary_line(&s, buf, sizeof(buf));
	assert_string_equal(buf, "2 ranks on 2 nodes: 2 running; generation 1");
	pm_st_summarize(n, 1, r, 0, &s);
	pm_st_summary_line(&s, buf, sizeof(buf));
	assert_string_equal(buf, "0 ranks on 1 node: none");
	/* A spare's supervisor is no rank of the step (it was "1 other"). */
	{
		struct pm_st_rank sp[3] = { { .rank = 0, .state = "running", .gen = 2 },
					    { .rank = -1, .state = "spare", .gen = 0 },
					    { .rank = 1, .state = "running", .gen = 2 } };
		pm_st_summarize(n, 2, sp, 3, &s);
		pm_st_summary_line(&s, buf, sizeof(buf));
		assert_string_equal(buf, "2 ranks on 2 nodes: 2 running; generation 2; "
					 "1 spare in reserve");
	}
}

/* --procmgr-warm: each rank says its standby (none starting ready) and
 * its memory, the node the sum; both rank words or none; the summary
 * counts them and adds the memory up (a spare's standbys too). */
static void test_status_standby(void **state)
{
	struct pm_st_node n = { .node = 1, .name = "n1", .phase = "running", .gen = 1,
				.ranks = 2, .health = "ok", .state_bytes = -1, .state_max = -1,
				.standby_kb = 460800 };
	struct pm_st_rank r = { .rank = 3, .local = 1, .node = 1, .pid = 77, .state = "running",
				.gen = 1, .beat_ms = -1, .cpu_ms = 5, .rss_kb = 9,
				.standby = "ready", .standby_kb = 230400 };
	struct pm_st_node pn[2];
	struct pm_st_rank pr[3], none;
	struct pm_st_summary s;
	char buf[512];
	(void)state;

	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, " standby_kb=460800"));
	assert_int_equal(pm_st_parse(buf, &pn[0], &none), 'N');
	assert_int_equal(pn[0].standby_kb, 460800);
	assert_int_equal(pm_st_rank_format(&r, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, " standby=ready standby_kb=230400"));
	assert_int_equal(pm_st_parse(buf, &pn[1], &pr[0]), 'R');
	assert_string_equal(pr[0].standby, "ready");
	assert_int_equal(pr[0].standby_kb, 230400);
	/* Without warm: no words, and nothing read back. */
	r.standby[0] = '\0';
	n.standby_kb = 0;
	assert_int_equal(pm_st_rank_format(&r, buf, sizeof(buf)), 0);
	assert_null(strstr(buf, "standby"));
	assert_int_equal(pm_st_parse(buf, &pn[1], &none), 'R');
	assert_string_equal(none.standby, "");
	assert_int_equal(none.standby_kb, -1);
	assert_int_equal(pm_st_node_format(&n, buf, sizeof(buf)), 0);
	assert_null(strstr(buf, "standby"));
	/* Refused: one word of the two, a state with a blank, a bad number. */
	assert_int_equal(pm_st_parse("rank id=0 local=0 node=0 pid=1 state=running gen=1 "
				     "beat_ms=-1 cpu_ms=0 rss_kb=0 standby=ready", &pn[1], &none), -1);
	assert_int_equal(pm_st_parse("rank id=0 local=0 node=0 pid=1 state=running gen=1 "
				     "beat_ms=-1 cpu_ms=0 rss_kb=0 standby_kb=5", &pn[1], &none), -1);
	assert_int_equal(pm_st_parse("rank id=0 local=0 node=0 pid=1 state=running gen=1 "
				     "beat_ms=-1 cpu_ms=0 rss_kb=0 standby=ready standby_kb=x",
				     &pn[1], &none), -1);
	assert_int_equal(pm_st_parse("node id=2 name=n2 phase=running gen=0 ranks=2 health=ok "
				     "standby_kb=-3", &pn[1], &none), -1);
	snprintf(r.standby, sizeof(r.standby), "a b");
	assert_int_equal(pm_st_rank_format(&r, buf, sizeof(buf)), -1);
	/* The summary: ready, starting, none; the nodes' memory added up. */
	assert_int_equal(pm_st_parse("node id=2 name=n2 phase=spare gen=0 ranks=1 health=ok "
				     "standby_kb=1024", &pn[1], &none), 'N');
	pr[1] = pr[0];
	snprintf(pr[1].standby, sizeof(pr[1].standby), "starting");
	pr[2] = pr[0];
	pr[2].rank = -1;
	snprintf(pr[2].state, sizeof(pr[2].state), "spare");
	pm_st_summarize(pn, 2, pr, 3, &s);
	assert_int_equal(s.sb_ready, 2);
	assert_int_equal(s.sb_starting, 1);
	assert_int_equal(s.sb_none, 0);
	assert_int_equal(s.standby_kb, 461824);
	pm_st_summary_line(&s, buf, sizeof(buf));
	assert_string_equal(buf, "2 ranks on 2 nodes: 2 running; generation 1; 1 spare in "
				 "reserve; standbys: 2 ready, 1 starting, holding 451.0 MiB");
}

/* gdb 13's output for a Python process (thread apply all bt, then py-bt). */
static const char gdb_out[] =
	"[Thread debugging using libthread_db enabled]\n"
	"Using host libthread_db library \"/lib/x86_64-linux-gnu/libthread_db.so.1\".\n"
	"0x00007f3e8a0e4d23 in clock_nanosleep () from /lib/x86_64-linux-gnu/libc.so.6\n"
	"\n"
	"Thread 1 (Thread 0x7f3e8a3b5040 (LWP 4242) \"python3\"):\n"
	"#0  0x00007f3e8a0e4d23 in __GI___clock_nanosleep (clockid=1, flags=0, req=0x7ffd) at "
	"../sysdeps/unix/sysv/linux/clock_nanosleep.c:48\n"
	"#1  0x00005612 in pysleep (timeout=<optimized out>) at ../Modules/timemodule.c:2159\n"
	"#2  0x00007f3e8a0a in start_thread () from /lib/x86_64-linux-gnu/libc.so.6\n"
	"#3  main (argc=2, argv=0x7ffd) at ../Programs/python.c:15\n"
	"Traceback (most recent call first):\n"
	"  <built-in method sleep of module object at remote 0x7f3e8a1e0>\n"
	"  File \"/tmp/stuck.py\", line 5, in spin\n"
	"    time.sleep(1)\n"
	"  File \"/tmp/stuck.py\", line 8, in <module>\n"
	"    spin()\n";

static void test_stack_normalize(void **state)
{
	char out[2048], top[64];
	(void)state;

	pm_stack_normalize(gdb_out, out, sizeof(out));
	assert_string_equal(out,
		"thread 1:\n"
		"  __GI___clock_nanosleep at ../sysdeps/unix/sysv/linux/clock_nanosleep.c:48\n"
		"  pysleep at ../Modules/timemodule.c:2159\n"
		"  start_thread from /lib/x86_64-linux-gnu/libc.so.6\n"
		"  main at ../Programs/python.c:15\n"
		"python:\n"
		"  File \"/tmp/stuck.py\", line 5, in spin\n"
		"  File \"/tmp/stuck.py\", line 8, in <module>\n");
	pm_stack_top(out, top, sizeof(top));
	assert_string_equal(top, "spin");
	/* The C library's wait says nothing: the function that called it. */
	pm_stack_top("thread 1:\n  pause from libc.so.6\n  main at x.c:3\n", top, sizeof(top));
	assert_string_equal(top, "main");
	pm_stack_top("thread 1:\n  pause from libc.so.6\n", top, sizeof(top));
	assert_string_equal(top, "pause");
	pm_stack_top("", top, sizeof(top));
	assert_string_equal(top, "");
	/* Cut at a whole line, never inside one. */
	pm_stack_normalize(gdb_out, out, 30);
	assert_string_equal(out, "thread 1:\n");
}

static void test_stack_group(void **state)
{
	const char *const st[] = { "a\n", "b\n", "a\n", "c\n", "a\n", "b\n" };
	const int ranks[] = { 5, 4, 3, 2, 1, 0 };
	int group[6];
	(void)state;

	assert_int_equal(pm_stack_group(st, ranks, 6, group), 3);
	/* "a" (3 ranks) first, "b" (2), then the outlier "c". */
	assert_int_equal(group[0], 0);
	assert_int_equal(group[2], 0);
	assert_int_equal(group[4], 0);
	assert_int_equal(group[1], 1);
	assert_int_equal(group[5], 1);
	assert_int_equal(group[3], 2);
	assert_int_equal(pm_stack_group(st, ranks, 0, group), 0);
}

static void test_ranks(void **state)
{
	int r[] = { 7, 0, 3, 1, 2, 9, 10, 3 };
	char buf[64], why[128];
	(void)state;

	assert_int_equal(pm_ranks_format(r, 8, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-3,7,9-10");
	assert_int_equal(pm_ranks_format(r, 8, buf, 5), -1);
	assert_int_equal(pm_ranks_contains("0-3,7", 2), 1);
	assert_int_equal(pm_ranks_contains("0-3,7", 7), 1);
	assert_int_equal(pm_ranks_contains("0-3,7", 5), 0);
	assert_int_equal(pm_ranks_check("0-3,7", why, sizeof(why)), 0);
	assert_int_equal(pm_ranks_check("3-1", why, sizeof(why)), -1);
	assert_string_equal(why, "bad rank list '3-1' (allowed: ranks and ranges such as 0-3,7)");
	assert_int_equal(pm_ranks_check("", why, sizeof(why)), -1);
	assert_int_equal(pm_ranks_check("1,", why, sizeof(why)), -1);
	assert_int_equal(pm_ranks_check("-1", why, sizeof(why)), -1);
	assert_int_equal(pm_ranks_check("1-", why, sizeof(why)), -1);
	assert_int_equal(pm_ranks_check("a", why, sizeof(why)), -1);
	assert_int_equal(pm_ranks_contains("x", 1), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_request_strict),
		cmocka_unit_test(test_kinds),
		cmocka_unit_test(test_status_round_trip),
		cmocka_unit_test(test_status_strict),
		cmocka_unit_test(test_status_recovery),
		cmocka_unit_test(test_status_state),
		cmocka_unit_test(test_summary),
		cmocka_unit_test(test_status_standby),
		cmocka_unit_test(test_stack_normalize),
		cmocka_unit_test(test_stack_group),
		cmocka_unit_test(test_ranks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
