/* Unit tests of runtime/common/contract.c: what procmgr's processes say to
 * each other outside the wire protocol.
 *
 * Expected texts are written out from the layout contract.h states (the
 * run directory's names, the ready lines, "check: reason", procmgrd's flags
 * and their ranges), not copied from a run of the code; every format is
 * also read back by its parser. */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "common/contract.h"

#define CHECK(cond, ...) do { if (!(cond)) fail_msg(__VA_ARGS__); } while (0)

static void contains(const char *hay, const char *needle)
{
	CHECK(hay && strstr(hay, needle), "expected \"%s\" in message \"%s\"", needle,
	      hay ? hay : "(null)");
}

/* ---- paths ---- */

static void test_paths(void **state)
{
	char b[256];
	(void)state;

	assert_int_equal(pm_path_jobdir(b, sizeof(b), "/var/spool/pm", 42), 0);
	assert_string_equal(b, "/var/spool/pm/42");
	assert_int_equal(pm_path_rundir(b, sizeof(b), "/s", 42, 3, 7), 0);
	assert_string_equal(b, "/s/42/3.7.run");
	assert_int_equal(pm_path_log(b, sizeof(b), "/s", 42, 3, 7), 0);
	assert_string_equal(b, "/s/42/3.7.log");
	assert_int_equal(pm_path_events(b, sizeof(b), "/s", 42, 3), 0);
	assert_string_equal(b, "/s/42/3.events.jsonl");
	assert_int_equal(pm_path_report(b, sizeof(b), "/s", 42, 3, 7), 0);
	assert_string_equal(b, "/s/42/3.7.unhealthy");
	assert_int_equal(pm_path_sock(b, sizeof(b), "/s/42/3.7.run"), 0);
	assert_string_equal(b, "/s/42/3.7.run/sock");
	assert_int_equal(pm_path_heartbeat(b, sizeof(b), "/s/42/3.7.run", 5), 0);
	assert_string_equal(b, "/s/42/3.7.run/heartbeat.5");
	assert_int_equal(pm_path_error_file(b, sizeof(b), "/s/42/3.7.run", 5), 0);
	assert_string_equal(b, "/s/42/3.7.run/error.5.json");
	{
		char g[64];
		assert_int_equal(pm_path_error_file_gen(g, sizeof(g), "/r/error.5.json", 12), 0);
		assert_string_equal(g, "/r/error.5.12.json");
		assert_int_equal(pm_path_error_file_gen(g, sizeof(g), "/tmp/err", 0), 0);
		assert_string_equal(g, "/tmp/err.0");
		assert_int_equal(pm_path_error_file_gen(g, sizeof(g), ".json", 1), 0);
		assert_string_equal(g, ".json.1");
	}
	assert_int_equal(pm_path_hang_stack(b, sizeof(b), "/s/42/3.7.run", 5), 0);
	assert_string_equal(b, "/s/42/3.7.run/hang-stack.5");
	/* Slurm's ids are 32 bits: the largest still print in full. */
	assert_int_equal(pm_path_rundir(b, sizeof(b), "/s", 4294967295u, 4294967294u,
					4294967293u), 0);
	assert_string_equal(b, "/s/4294967295/4294967294.4294967293.run");
}

static void test_paths_too_long(void **state)
{
	char b[16];
	(void)state;

	/* "/s/42/3.7.run" is 13 characters: fits in 14, not in 13. */
	assert_int_equal(pm_path_rundir(b, 14, "/s", 42, 3, 7), 0);
	assert_string_equal(b, "/s/42/3.7.run");
	assert_int_equal(pm_path_rundir(b, 13, "/s", 42, 3, 7), -1);
	assert_string_equal(b, "");
	assert_int_equal(pm_path_sock(b, sizeof(b), "/a/long/run/dir"), -1);
	assert_string_equal(b, "");
	assert_int_equal(pm_path_heartbeat(b, 0, "/r", 0), -1);
	/* "/a/long/run/dir/error.0.json" is past 16. */
	assert_int_equal(pm_path_error_file(b, sizeof(b), "/a/long/run/dir", 0), -1);
	assert_string_equal(b, "");
}

/* ---- ready lines ---- */

static void ready_round_trip(enum pm_ready_kind kind, const char *node, const char *text,
			     const char *line, const char *want_node, const char *want_text)
{
	char buf[PM_READY_MAX];
	struct pm_ready r;

	assert_int_equal(pm_ready_format(buf, sizeof(buf), kind, node, text), 0);
	assert_string_equal(buf, line);
	assert_int_equal(pm_ready_parse(buf, &r), 0);
	assert_int_equal(r.kind, kind);
	assert_string_equal(r.node, want_node);
	assert_string_equal(r.text, want_text);
}

static void test_ready_lines(void **state)
{
	(void)state;
	ready_round_trip(PM_READY_OK, NULL, NULL, "ok\n", "", "");
	ready_round_trip(PM_READY_HEALTH, "pmnode2", "script:/c.sh: fan 3 failed",
			 "health\tpmnode2\tscript:/c.sh: fan 3 failed\n", "pmnode2",
			 "script:/c.sh: fan 3 failed");
	ready_round_trip(PM_READY_ERROR, NULL, "cannot run /x: No such file or directory",
			 "error: cannot run /x: No such file or directory\n", "",
			 "cannot run /x: No such file or directory");
}

/* A reason with tabs and newlines must not end the line or add a field. */
static void test_ready_control_characters(void **state)
{
	(void)state;
	ready_round_trip(PM_READY_HEALTH, "n\t1", "a\tb\nc\r",
			 "health\tn 1\ta b c \n", "n 1", "a b c ");
	ready_round_trip(PM_READY_ERROR, NULL, "two\nlines", "error: two lines\n", "",
			 "two lines");
}

static void test_ready_parse(void **state)
{
	struct pm_ready r;
	(void)state;

	/* Without its newline too: the reader may have cut it off. */
	assert_int_equal(pm_ready_parse("ok", &r), 0);
	assert_int_equal(r.kind, PM_READY_OK);
	/* A health line without a reason still names the node. */
	assert_int_equal(pm_ready_parse("health\tpmnode3\n", &r), 0);
	assert_int_equal(r.kind, PM_READY_HEALTH);
	assert_string_equal(r.node, "pmnode3");
	assert_string_equal(r.text, "");
	/* Only the first line counts. */
	assert_int_equal(pm_ready_parse("error: first\nerror: second\n", &r), 0);
	assert_string_equal(r.text, "first");
	assert_int_equal(pm_ready_parse("", &r), -1);
	assert_int_equal(pm_ready_parse("okay\n", &r), -1);
	assert_int_equal(pm_ready_parse("ok \n", &r), -1);
	assert_int_equal(pm_ready_parse("error:no space\n", &r), -1);
	assert_int_equal(pm_ready_parse("segfault\n", &r), -1);
}

static void test_ready_too_long(void **state)
{
	char big[PM_READY_MAX * 2], buf[32], node[300];
	struct pm_ready r;
	(void)state;

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* Cut, but still one whole line that reads back. */
	assert_int_equal(pm_ready_format(buf, sizeof(buf), PM_READY_ERROR, NULL, big), -1);
	assert_int_equal(strlen(buf), sizeof(buf) - 1);
	assert_int_equal(buf[sizeof(buf) - 2], '\n');
	assert_int_equal(pm_ready_parse(buf, &r), 0);
	assert_int_equal(r.kind, PM_READY_ERROR);
	assert_int_equal(strlen(r.text), sizeof(buf) - 1 - strlen("error: \n"));
	/* The node's tab survives a reason that is cut. */
	assert_int_equal(pm_ready_format(buf, sizeof(buf), PM_READY_HEALTH, "n1", big), -1);
	assert_int_equal(pm_ready_parse(buf, &r), 0);
	assert_string_equal(r.node, "n1");
	assert_int_equal(pm_ready_format(buf, 3, PM_READY_OK, NULL, NULL), -1);
	/* A node name longer than any host name is not taken. */
	memset(node, 'n', sizeof(node) - 1);
	node[sizeof(node) - 1] = '\0';
	assert_int_equal(pm_ready_format(big, sizeof(big), PM_READY_HEALTH, node, "why"), 0);
	assert_int_equal(pm_ready_parse(big, &r), -1);
}

/* ---- the health report ---- */

static void test_report_round_trip(void **state)
{
	char buf[256];
	struct pm_report r;
	(void)state;

	assert_int_equal(pm_report_format(buf, sizeof(buf), "script:/etc/c.sh",
					  "fan 3 failed: on pmnode2"), 0);
	assert_string_equal(buf, "script:/etc/c.sh: fan 3 failed: on pmnode2");
	/* The file's line, with its newline. */
	strcat(buf, "\n");
	assert_int_equal(pm_report_parse(buf, &r), 0);
	assert_string_equal(r.check, "script:/etc/c.sh");
	assert_string_equal(r.reason, "fan 3 failed: on pmnode2");

	assert_int_equal(pm_report_format(buf, sizeof(buf), "mem", "a\nb\tc"), 0);
	assert_string_equal(buf, "mem: a b c");
	assert_int_equal(pm_report_format(buf, sizeof(buf), "gpu:8", ""), 0);
	assert_int_equal(pm_report_parse(buf, &r), 0);
	assert_string_equal(r.check, "gpu:8");
	assert_string_equal(r.reason, "");
}

static void test_report_refused(void **state)
{
	char buf[16], big[PATH_MAX + 1200];
	struct pm_report r;
	(void)state;

	assert_int_equal(pm_report_format(buf, sizeof(buf), "", "why"), -1);
	assert_int_equal(pm_report_format(buf, sizeof(buf), "disk:/a b", "why"), -1);
	assert_int_equal(pm_report_format(buf, sizeof(buf), "mem", "far too long a reason"),
			 -1);
	assert_int_equal(pm_report_parse("no separator\n", &r), -1);
	assert_int_equal(pm_report_parse(": no check\n", &r), -1);
	assert_int_equal(pm_report_parse("mem\n: on the next line", &r), -1);
	memset(big, 'c', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* A check longer than any path. */
	memcpy(big + PATH_MAX + 40, ": r", 3);
	assert_int_equal(pm_report_parse(big, &r), -1);
	/* A reason past its 1023 characters. */
	memcpy(big + 10, ": r", 3);
	assert_int_equal(pm_report_parse(big, &r), -1);
	/* A script's path well past 64 characters comes back whole. */
	memset(big, 'd', 300);
	memcpy(big, "script:/", 8);
	strcpy(big + 300, ": fan 3 failed\n");
	assert_int_equal(pm_report_parse(big, &r), 0);
	assert_int_equal(strlen(r.check), 300);
	assert_string_equal(r.reason, "fan 3 failed");
}

/* ---- procmgrd's command line ---- */

static void full_args(struct pm_daemon_args *a)
{
	pm_daemon_args_init(a);
	a->job = 4294967295u;
	a->step = 3;
	a->node_id = 2;
	a->nodes = "pmnode[1-4]";
	a->ntasks_local = 2;
	a->ntasks = 8;
	a->port = 20001;
	a->fanout = 2;
	a->rundir = "/s/7/3.2.run";
	a->events = "/s/7/3.events.jsonl";
	a->munge_socket = "/run/munge/munge.socket.2";
	a->opts = "procmgr restart=on-failure:2 grace=1.5";
	a->ready_fd = 9;
	a->watch_pid = 1234;
	a->health_report = "/s/7/3.2.unhealthy";
	a->health_timeout_ms = 1500;
	a->peer_timeout_ms = 2500;
	a->metrics_dir = "/var/lib/prometheus/node-exporter";
	a->connect_timeout_ms = 45000;
	a->state_max_rank_mib = 512;
	a->state_max_node_mib = 4096;
	a->state_repl_mib_s = 300;
}

static void same_str(const char *a, const char *b)
{
	if (!a || !b)
		assert_ptr_equal(a, b);
	else
		assert_string_equal(a, b);
}

static void same_args(const struct pm_daemon_args *a, const struct pm_daemon_args *b)
{
	assert_int_equal(a->job, b->job);
	assert_int_equal(a->step, b->step);
	assert_int_equal(a->node_id, b->node_id);
	same_str(a->nodes, b->nodes);
	assert_int_equal(a->ntasks_local, b->ntasks_local);
	assert_int_equal(a->ntasks, b->ntasks);
	assert_int_equal(a->port, b->port);
	assert_int_equal(a->fanout, b->fanout);
	same_str(a->rundir, b->rundir);
	same_str(a->events, b->events);
	same_str(a->munge_socket, b->munge_socket);
	same_str(a->opts, b->opts);
	assert_int_equal(a->ready_fd, b->ready_fd);
	assert_int_equal(a->watch_pid, b->watch_pid);
	same_str(a->health_report, b->health_report);
	assert_int_equal(a->health_timeout_ms, b->health_timeout_ms);
	assert_int_equal(a->peer_timeout_ms, b->peer_timeout_ms);
	same_str(a->metrics_dir, b->metrics_dir);
	assert_int_equal(a->connect_timeout_ms, b->connect_timeout_ms);
	assert_int_equal(a->state_max_rank_mib, b->state_max_rank_mib);
	assert_int_equal(a->state_max_node_mib, b->state_max_node_mib);
	assert_int_equal(a->state_repl_mib_s, b->state_repl_mib_s);
}

static int argc_of(char **argv)
{
	int n = 0;
	while (argv[n])
		n++;
	return n;
}

static void test_args_round_trip(void **state)
{
	struct pm_daemon_args a, b;
	char *argv[PM_DAEMON_ARGV_MAX], buf[4096], err[512];
	(void)state;

	full_args(&a);
	assert_int_equal(pm_daemon_args_format(&a, "/usr/libexec/procmgrd", argv,
					       PM_DAEMON_ARGV_MAX, buf, sizeof(buf), err,
					       sizeof(err)), 0);
	assert_string_equal(argv[0], "/usr/libexec/procmgrd");
	/* The first flags name the step's procmgrd on a node (pgrep -f). */
	assert_string_equal(argv[1], "--job");
	assert_string_equal(argv[2], "4294967295");
	assert_string_equal(argv[3], "--step");
	assert_string_equal(argv[5], "--node-id");
	assert_string_equal(argv[6], "2");
	assert_int_equal(argc_of(argv), 45);
	assert_string_equal(argv[31], "--munge-socket");
	assert_int_equal(pm_daemon_args_parse(&b, argc_of(argv), argv, err, sizeof(err)), 0);
	same_args(&a, &b);
}

static void test_args_optional_left_out(void **state)
{
	struct pm_daemon_args a, b;
	char *argv[PM_DAEMON_ARGV_MAX], buf[4096], err[512];
	int i;
	(void)state;

	pm_daemon_args_init(&a);
	a.nodes = "n1";
	a.ntasks_local = a.ntasks = 1;
	a.port = 1;
	a.rundir = "/r";
	a.munge_socket = "";
	assert_int_equal(pm_daemon_args_format(&a, "procmgrd", argv, PM_DAEMON_ARGV_MAX, buf,
					       sizeof(buf), err, sizeof(err)), 0);
	for (i = 0; argv[i]; i++) {
		assert_string_not_equal(argv[i], "--events");
		assert_string_not_equal(argv[i], "--ready-fd");
		assert_string_not_equal(argv[i], "--watch-pid");
		assert_string_not_equal(argv[i], "--munge-socket");
		assert_string_not_equal(argv[i], "--health-report");
		assert_string_not_equal(argv[i], "--metrics-dir");
	}
	assert_int_equal(pm_daemon_args_parse(&b, argc_of(argv), argv, err, sizeof(err)), 0);
	a.munge_socket = NULL;
	a.opts = "";
	same_args(&a, &b);
	assert_int_equal(b.fanout, 32);
	assert_int_equal(b.health_timeout_ms, 30000);
	assert_int_equal(b.ready_fd, -1);
}

static void parse_fails(const char *want, int argc, ...)
{
	char *argv[64], err[512] = "";
	struct pm_daemon_args a;
	va_list ap;
	int i;

	va_start(ap, argc);
	argv[0] = "procmgrd";
	for (i = 1; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc] = NULL;
	va_end(ap);
	assert_int_equal(pm_daemon_args_parse(&a, argc, argv, err, sizeof(err)), -1);
	contains(err, want);
}

#define REQ "--job", "1", "--step", "0", "--node-id", "0", "--nodes", "n1", \
	"--ntasks-local", "1", "--ntasks", "1", "--port", "5", "--rundir", "/r"

static void test_args_refused(void **state)
{
	(void)state;
	parse_fails("bad value '1' for --fanout: allowed 2..1024", 19, REQ, "--fanout", "1");
	parse_fails("bad value '65536' for --port: allowed 1..65535", 17, "--job", "1",
		    "--step", "0", "--node-id", "0", "--nodes", "n1", "--ntasks-local", "1",
		    "--ntasks", "1", "--port", "65536", "--rundir", "/r");
	parse_fails("bad value 'x' for --job", 3, "--job", "x");
	parse_fails("bad value '-1' for --node-id: allowed 0..10000000", 2, "--node-id=-1");
	parse_fails("bad value '0' for --ntasks-local: allowed 1..100000", 3,
		    "--ntasks-local", "0");
	parse_fails("bad value '0' for --health-timeout: allowed 1..3600000", 3,
		    "--health-timeout", "0");
	parse_fails("bad value '' for --watch-pid", 2, "--watch-pid=");
	parse_fails("missing --rundir", 15, "--job", "1", "--step", "0", "--node-id", "0",
		    "--nodes", "n1", "--ntasks-local", "1", "--ntasks", "1", "--port", "5");
	parse_fails("missing --job", 1);
	parse_fails("--events needs a value", 18, REQ, "--events");
	parse_fails("--nodes needs a value", 3, "--nodes", "");
	parse_fails("unknown argument '--fan'", 19, REQ, "--fan", "3");
	parse_fails("unexpected argument 'extra'", 18, REQ, "extra");
}

static void test_args_equals_and_last_wins(void **state)
{
	char *argv[] = { "procmgrd", REQ, "--fanout=4", "--port", "6", "--opts=a=b", NULL };
	struct pm_daemon_args a;
	char err[512];
	(void)state;

	assert_int_equal(pm_daemon_args_parse(&a, argc_of(argv), argv, err, sizeof(err)), 0);
	assert_int_equal(a.fanout, 4);
	assert_int_equal(a.port, 6);
	assert_string_equal(a.opts, "a=b");
}

static void test_args_format_refused(void **state)
{
	struct pm_daemon_args a;
	char *argv[PM_DAEMON_ARGV_MAX], buf[4096], err[512];
	char longpath[PATH_MAX + 1];
	(void)state;

	full_args(&a);
	a.fanout = 1;
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf,
					       sizeof(buf), err, sizeof(err)), -1);
	contains(err, "bad value '1' for --fanout: allowed 2..1024");

	full_args(&a);
	a.nodes = NULL;
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf,
					       sizeof(buf), err, sizeof(err)), -1);
	contains(err, "missing --nodes");

	full_args(&a);
	a.watch_pid = -5;
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf,
					       sizeof(buf), err, sizeof(err)), -1);
	contains(err, "--watch-pid");

	full_args(&a);
	memset(longpath, 'p', PATH_MAX);
	longpath[PATH_MAX] = '\0';
	a.rundir = longpath;
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf,
					       sizeof(buf), err, sizeof(err)), -1);
	contains(err, "value of --rundir is too long");
}

/* Never a command line cut short: too small a buffer or argv is an error. */
static void test_args_format_too_long(void **state)
{
	struct pm_daemon_args a;
	char *argv[PM_DAEMON_ARGV_MAX], buf[4096], err[512];
	size_t need = 0;
	int i, n;
	(void)state;

	full_args(&a);
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf,
					       sizeof(buf), err, sizeof(err)), 0);
	n = argc_of(argv);
	for (i = 0; i < n; i++)
		need += strlen(argv[i]) + 1;
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf, need,
					       err, sizeof(err)), 0);
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, PM_DAEMON_ARGV_MAX, buf,
					       need - 1, err, sizeof(err)), -1);
	contains(err, "does not fit");
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, (size_t)n + 1, buf, sizeof(buf),
					       err, sizeof(err)), 0);
	assert_int_equal(pm_daemon_args_format(&a, "p", argv, (size_t)n, buf, sizeof(buf),
					       err, sizeof(err)), -1);
	contains(err, "does not fit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_paths_too_long),
		cmocka_unit_test(test_ready_lines),
		cmocka_unit_test(test_ready_control_characters),
		cmocka_unit_test(test_ready_parse),
		cmocka_unit_test(test_ready_too_long),
		cmocka_unit_test(test_report_round_trip),
		cmocka_unit_test(test_report_refused),
		cmocka_unit_test(test_args_round_trip),
		cmocka_unit_test(test_args_optional_left_out),
		cmocka_unit_test(test_args_refused),
		cmocka_unit_test(test_args_equals_and_last_wins),
		cmocka_unit_test(test_args_format_refused),
		cmocka_unit_test(test_args_format_too_long),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
