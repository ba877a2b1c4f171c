/* The step's metrics: counted from its events, formatted for node_exporter's
 * textfile collector; and the file, written whole through a rename. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/metricsname.h"
#include "procmgrd/metrics.h"

static char text[8192];

static void has(const char *line)
{
	if (!strstr(text, line))
		fail_msg("no '%s' in:\n%s", line, text);
}

static void fmt(const struct pm_metrics *m)
{
	assert_int_equal(pm_metrics_format(m, text, sizeof(text)), 0);
}

static void test_counts_from_events(void **state)
{
	struct pm_metrics m;
	(void)state;

	pm_metrics_init(&m, 42, 3);
	fmt(&m);
	has("# HELP procmgr_step_running 1 while the step runs under procmgr, 0 once it ended.\n"
	    "# TYPE procmgr_step_running gauge\nprocmgr_step_running{job=\"42\",step=\"3\"} 0\n");
	/* No restart yet: no latency to show. */
	assert_null(strstr(text, "last_restart_seconds"));
	pm_metrics_note(&m, "launch", "\"gen\":0,\"nodes\":4,\"ranks\":8");
	pm_metrics_note(&m, "rank_failed", "\"gen\":0,\"rank\":3,\"node\":\"n2\",\"status\":"
			"\"exited with code 1 (ValueError: \\\"status\\\":\\\"lost\\\")\",\"error\":\"x\"");
	pm_metrics_note(&m, "rank_failed", "\"gen\":0,\"rank\":4,\"node\":\"n2\",\"status\":"
			"\"exited with code 143\",\"ignored\":true");
	pm_metrics_note(&m, "stopped", "\"gen\":0,\"stop_ms\":12,\"delay_ms\":0");
	pm_metrics_note(&m, "start", "\"gen\":1,\"restart\":1,\"since_failure_ms\":250");
	pm_metrics_note(&m, "running", "\"gen\":1,\"ranks\":8,\"since_start_ms\":40,"
			"\"since_failure_ms\":290,\"process_ms\":290,\"heartbeats\":true");
	/* procmgr's part alone is not the recovery: no heartbeat yet. */
	fmt(&m);
	has("procmgr_last_restart_process_seconds{job=\"42\",step=\"3\"} 0.290\n");
	assert_null(strstr(text, "last_recovery_seconds"));
	pm_metrics_note(&m, "heartbeating", "\"gen\":1,\"ranks\":8,\"since_start_ms\":9040,"
			"\"since_failure_ms\":9290,\"recovery_ms\":9290,\"process_ms\":290");
	/* A hang: counted once, at its decision. */
	pm_metrics_note(&m, "rank_failed", "\"gen\":1,\"rank\":2,\"node\":\"n1\",\"status\":"
			"\"hung (no heartbeat)\",\"hung\":true,\"last_heartbeat_ms\":5");
	pm_metrics_note(&m, "hang", "\"gen\":1,\"rank\":2,\"node\":\"n1\",\"followers\":[],"
			"\"nfollowers\":0,\"lead_ms\":0");
	pm_metrics_note(&m, "start", "\"gen\":2,\"restart\":2,\"since_failure_ms\":1500");
	pm_metrics_note(&m, "rank_failed", "\"gen\":2,\"rank\":1,\"node\":\"n1\",\"status\":"
			"\"was killed by signal 9 (Killed)\"");
	pm_metrics_note(&m, "start", "\"gen\":3,\"restart\":3,\"since_failure_ms\":20");
	pm_metrics_note(&m, "health_failed", "\"gen\":3,\"node\":\"n4\",\"check\":\"gpu: GPU 1 "
			"is lost\",\"when\":\"while running\"");
	pm_metrics_note(&m, "start", "\"gen\":4,\"restart\":4,\"since_failure_ms\":700");
	pm_metrics_note(&m, "node_replaced", "\"gen\":4,\"node\":\"n4\"");
	pm_metrics_note(&m, "node_lost", "\"gen\":4,\"node\":\"n3\",\"reason\":\"x\"");
	fmt(&m);
	has("procmgr_step_running{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_step_generation{job=\"42\",step=\"3\"} 4\n");
	has("procmgr_step_nodes{job=\"42\",step=\"3\"} 4\n");
	has("procmgr_step_ranks{job=\"42\",step=\"3\"} 8\n");
	has("# TYPE procmgr_restarts_total counter\n"
	    "procmgr_restarts_total{job=\"42\",step=\"3\",reason=\"exit\"} 1\n"
	    "procmgr_restarts_total{job=\"42\",step=\"3\",reason=\"signal\"} 1\n"
	    "procmgr_restarts_total{job=\"42\",step=\"3\",reason=\"hang\"} 1\n"
	    "procmgr_restarts_total{job=\"42\",step=\"3\",reason=\"health\"} 1\n"
	    "procmgr_restarts_total{job=\"42\",step=\"3\",reason=\"lost\"} 0\n");
	has("procmgr_failures_total{job=\"42\",step=\"3\",reason=\"exit\"} 1\n");
	has("procmgr_failures_total{job=\"42\",step=\"3\",reason=\"lost\"} 1\n");
	has("procmgr_hangs_total{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_health_failures_total{job=\"42\",step=\"3\",check=\"gpu\"} 1\n");
	has("procmgr_nodes_lost_total{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_nodes_replaced_total{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_last_restart_seconds{job=\"42\",step=\"3\"} 0.700\n");
	has("procmgr_last_recovery_seconds{job=\"42\",step=\"3\"} 9.290\n");
	has("procmgr_last_restart_process_seconds{job=\"42\",step=\"3\"} 0.290\n");
	/* Slow nodes: flagged, cleared once; an evicted one is not slow any more. */
	has("procmgr_slow_nodes{job=\"42\",step=\"3\"} 0\n");
	pm_metrics_note(&m, "slow", "\"gen\":4,\"node\":\"n2\",\"evidence\":\"compute\","
			"\"ratio\":1.500,\"intervals\":5,\"of\":6");
	pm_metrics_note(&m, "slow", "\"gen\":4,\"node\":\"n3\",\"evidence\":\"phase\","
			"\"ratio\":0.900,\"intervals\":5,\"of\":6");
	fmt(&m);
	has("procmgr_slow_nodes{job=\"42\",step=\"3\"} 2\n");
	pm_metrics_note(&m, "slow_cleared", "\"gen\":4,\"node\":\"n3\",\"evidence\":\"phase\","
			"\"ratio\":0.100,\"intervals\":1,\"of\":6");
	pm_metrics_note(&m, "slow", "\"gen\":4,\"node\":\"n1\",\"evidence\":\"compute\","
			"\"ratio\":2.000,\"intervals\":6,\"of\":6,\"evicted\":true");
	fmt(&m);
	has("procmgr_slow_nodes{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_slow_flagged_total{job=\"42\",step=\"3\"} 3\n");
	has("procmgr_slow_evicted_total{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_state_restores_total{job=\"42\",step=\"3\"} 0\n");
	assert_null(strstr(text, "state_last_lost_steps"));
	pm_metrics_note(&m, "state_saved", "\"rank\":1,\"node\":\"n1\",\"name\":\"m\","
			"\"version\":1,\"bytes\":8,\"train_step\":1");
	pm_metrics_note(&m, "state_restored", "\"rank\":1,\"node\":\"n1\",\"name\":\"m\","
			"\"version\":4,\"bytes\":8,\"train_step\":4,\"age_ms\":3,\"lost_steps\":2,"
			"\"generation\":1");
	fmt(&m);
	has("procmgr_state_restores_total{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_state_savers_total{job=\"42\",step=\"3\"} 1\n");
	has("procmgr_state_last_lost_steps{job=\"42\",step=\"3\"} 2\n");
	pm_metrics_note(&m, "give_up", "\"gen\":4,\"exit_code\":1,\"message\":\"m\"");
	fmt(&m);
	has("procmgr_step_running{job=\"42\",step=\"3\"} 0\n");
	/* Too small a buffer is an error, not half a file. */
	assert_int_equal(pm_metrics_format(&m, text, 100), -1);
}

static void test_health_labels_bounded(void **state)
{
	struct pm_metrics m;
	char f[128];
	int i;
	(void)state;

	pm_metrics_init(&m, 1, 0);
	for (i = 0; i < 12; i++) {
		snprintf(f, sizeof(f), "\"gen\":0,\"node\":\"n\",\"check\":\"script%d: failed\"", i);
		pm_metrics_note(&m, "health_failed", f);
	}
	/* A label value never carries a quote or what follows the name. */
	pm_metrics_note(&m, "health_failed", "\"check\":\"\\\"evil\\\" x\"");
	pm_metrics_note(&m, "health_failed", "\"check\":\"script0: again\"");
	fmt(&m);
	has("check=\"script0\"} 2\n");
	has("check=\"script7\"} 1\n");
	assert_null(strstr(text, "script8"));
	has("check=\"other\"} 5\n");
	assert_null(strstr(text, "evil"));
}

/* The file the plugin made for us: rewritten in place, shorter or longer;
 * never created (the directory is root's), never through a link or a FIFO,
 * never another user's. */
static void test_file_rewritten_in_place(void **state)
{
	char dir[] = "/tmp/pm-metrics.XXXXXX", path[256], buf[64], cmd[300];
	struct stat st;
	FILE *f;
	size_t n;
	int fd;
	(void)state;

	assert_non_null(mkdtemp(dir));
	assert_int_equal(pm_metrics_path(path, sizeof(path), dir, 7, 1), 0);
	assert_string_equal(strrchr(path, '/'), "/procmgr-7.1.prom");
	/* Not made for us: not created either. */
	assert_int_equal(pm_metrics_write(dir, 7, 1, "procmgr_x 1\n"), -1);
	assert_int_equal(errno, ENOENT);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pm_metrics_write(dir, 7, 1, "procmgr_x 100\n"), 0);
	assert_int_equal(pm_metrics_write(dir, 7, 1, "procmgr_x 2\n"), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, "procmgr_x 2\n");
	/* Nothing else is left in the directory. */
	snprintf(cmd, sizeof(cmd), "test $(ls -A %s | wc -l) = 1", dir);
	assert_int_equal(system(cmd), 0);
	/* Another user's file is not written. */
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(pm_metrics_write(dir, 7, 1, "procmgr_x 3\n"), -1);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, 12);
	}
	/* A symlink or a FIFO in the file's place: refused, never blocks. */
	unlink(path);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(pm_metrics_write(dir, 7, 1, "procmgr_x 3\n"), -1);
	unlink(path);
	assert_int_equal(mkfifo(path, 0666), 0);
	assert_int_equal(pm_metrics_write(dir, 7, 1, "procmgr_x 3\n"), -1);
	unlink(path);
	assert_int_equal(rmdir(dir), 0);
}

/* What the plugin sweeps: a finished step's file (or one never written)
 * once PM_METRICS_KEEP_S passed; never a running step's. */
static void test_sweep_rules(void **state)
{
	const char *fin = "# HELP x\nprocmgr_step_running{job=\"7\",step=\"1\"} 0\nprocmgr_y 1\n";
	const char *run = "procmgr_step_running{job=\"7\",step=\"1\"} 1\n";
	const char *fake = "x procmgr_step_running{job=\"7\",step=\"1\"} 0\n";
	uint32_t job, step;
	char name[64];
	(void)state;

	assert_int_equal(pm_metrics_name(name, sizeof(name), 12, 3), 0);
	assert_string_equal(name, "procmgr-12.3.prom");
	assert_int_equal(pm_metrics_name_parse(name, &job, &step), 0);
	assert_int_equal(job, 12);
	assert_int_equal(step, 3);
	assert_int_equal(pm_metrics_name_parse("procmgr-12.3.prom.tmp", &job, &step), -1);
	assert_int_equal(pm_metrics_name_parse("procmgr-012.3.prom", &job, &step), -1);
	assert_int_equal(pm_metrics_name_parse("procmgr-+12.3.prom", &job, &step), -1);
	assert_int_equal(pm_metrics_name_parse("node.prom", &job, &step), -1);
	assert_true(pm_metrics_finished(fin));
	assert_false(pm_metrics_finished(run));
	assert_false(pm_metrics_finished(fake));
	assert_false(pm_metrics_sweepable(fin, PM_METRICS_KEEP_S - 1));
	assert_true(pm_metrics_sweepable(fin, PM_METRICS_KEEP_S));
	assert_false(pm_metrics_sweepable(run, 100000));
	assert_true(pm_metrics_sweepable("", PM_METRICS_KEEP_S));
	assert_false(pm_metrics_sweepable("", 0));
}

/* Goodput (issue 35): the ratio and the lost seconds by phase, only what
 * is known. */
static void test_goodput(void **state)
{
	struct pm_metrics m;
	(void)state;

	pm_metrics_init(&m, 42, 3);
	fmt(&m);
	assert_null(strstr(text, "goodput"));
	assert_null(strstr(text, "lost_seconds"));
	/* no heartbeat with a step: the wall and procmgr's phases only */
	m.gp_wall_s = 31.7;
	m.gp_lost_s[0] = 0;
	m.gp_lost_s[1] = 0.1;
	m.gp_lost_s[2] = 0.5;
	fmt(&m);
	has("procmgr_wall_seconds{job=\"42\",step=\"3\"} 31.700\n");
	has("# TYPE procmgr_lost_seconds_total counter\n"
	    "procmgr_lost_seconds_total{job=\"42\",step=\"3\",phase=\"detect\"} 0.000\n"
	    "procmgr_lost_seconds_total{job=\"42\",step=\"3\",phase=\"stop\"} 0.100\n"
	    "procmgr_lost_seconds_total{job=\"42\",step=\"3\",phase=\"start\"} 0.500\n");
	assert_null(strstr(text, "phase=\"reinit\""));
	assert_null(strstr(text, "goodput_ratio"));
	m.goodput = 0.6467;
	m.gp_useful_s = 20.5;
	m.gp_lost_s[3] = 3;
	m.gp_lost_s[4] = 5.2;
	m.gp_lost_s[5] = 0.3;
	fmt(&m);
	has("procmgr_goodput_ratio{job=\"42\",step=\"3\"} 0.6467\n");
	has("procmgr_useful_seconds{job=\"42\",step=\"3\"} 20.500\n");
	has("phase=\"slowdown\"} 0.300\n");
	/* one HELP and TYPE for the family */
	assert_null(strstr(strstr(text, "# TYPE procmgr_lost_seconds_total") + 1,
			   "# TYPE procmgr_lost_seconds_total"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counts_from_events),
		cmocka_unit_test(test_goodput),
		cmocka_unit_test(test_health_labels_bounded),
		cmocka_unit_test(test_file_rewritten_in_place),
		cmocka_unit_test(test_sweep_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
