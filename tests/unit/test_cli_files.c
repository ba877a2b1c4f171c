/* The procmgr command reading a step's event log from this node's disk
 * (evlog.c): events once the step has ended (cmd_events.c), timeline
 * (cmd_timeline.c) from a step's id or a file; where state_dir is (given,
 * plugstack.conf's, the default), what is refused (a FIFO, a link), and
 * where the log is when it is not here (scontrol's view of the job, faked:
 * clitest.h). And version. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cmd.h"
#include "clitest.h"
#include "config.h"
#include "evlog.h"

static char sd[128]; /* the test's state_dir */

static const char *at(const char *rel)
{
	static char buf[4][256];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", sd, rel);
	return buf[k];
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

#define LOG "{\"time\":100.5,\"step\":\"77.3\",\"event\":\"launch\",\"nodes\":2}\n" \
	"{\"time\":101.0,\"step\":\"77.3\",\"event\":\"start\",\"gen\":0}\n" \
	"{\"time\":130.0,\"step\":\"77.3\",\"event\":\"rank_failed\",\"gen\":0,\"rank\":1," \
	"\"node\":\"n2\",\"status\":9}\n" \
	"{\"time\":131.0,\"step\":\"77.3\",\"event\":\"start\",\"gen\":1}\n" \
	"{\"time\":160.0,\"step\":\"77.3\",\"event\":\"finished\",\"gen\":1}\n"

static int up(void **state)
{
	(void)state;
	cli_tools();
	snprintf(sd, sizeof(sd), "%s/state", cli_dir());
	assert_int_equal(mkdir(sd, 0700), 0);
	assert_int_equal(mkdir(at("77"), 0700), 0);
	write_file(at("77/3.events.jsonl"), LOG);
	/* No Slurm configuration of this machine's is read. */
	setenv("SLURM_CONF", at("slurm.conf"), 1);
	setenv("PROCMGR_MUNGE_SOCKET", "/nonexistent/munge.socket", 1);
	return 0;
}

static int down(void **state)
{
	(void)state;
	unsetenv("SLURM_CONF");
	cli_tools_gone();
	return 0;
}

/* The step has ended (scontrol knows it no more): its log from here. */
static void test_events_from_disk(void **state)
{
	struct cli_out o;
	(void)state;

	cli_run(&o, pm_cmd_events, "events", "77.3", "--state-dir", sd, NULL);
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.out, "100.5 launch nodes=2\n101.0 start gen=0\n"
			    "130.0 rank_failed gen=0 rank=1 node=\"n2\" status=9\n"
			    "131.0 start gen=1\n160.0 finished gen=1\n");
	cli_run(&o, pm_cmd_events, "events", "--json", "77.3", "--state-dir", sd, NULL);
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.out, LOG);
	/* Without --state-dir, no plugstack.conf here (a login node): the
	 * default state_dir, and no word about the file. */
	cli_run(&o, pm_cmd_events, "events", "77.3", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "its log is not on this node: ");
	assert_null(strstr(o.err, "plugstack.conf"));
	/* plugstack.conf's procmgr line says where. */
	write_file(at("slurm.conf"), "ClusterName=x\nPlugStackConfig=");
	{
		FILE *f = fopen(at("slurm.conf"), "a");
		fprintf(f, "%s\n", at("plugstack.conf"));
		fclose(f);
		f = fopen(at("plugstack.conf"), "w");
		fprintf(f, "optional /usr/lib/other.so state_dir=/elsewhere\n"
			   "required /usr/lib/slurm/procmgr.so state_dir=%s\n", sd);
		fclose(f);
	}
	cli_run(&o, pm_cmd_events, "events", "77.3", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "160.0 finished gen=1\n");
}

static void test_events_not_here(void **state)
{
	struct cli_out o;
	char want[512];
	(void)state;

	/* Not a file a reader may open: a FIFO would block, a link lead
	 * elsewhere. */
	assert_int_equal(mkfifo(at("77/4.events.jsonl"), 0600), 0);
	cli_run(&o, pm_cmd_events, "events", "77.4", "--state-dir", sd, NULL);
	assert_int_equal(o.rc, 1);
	snprintf(want, sizeof(want), "procmgr events: no running step 77.4 (scontrol: "
		 "slurm_load_jobs error: Invalid job id specified); cannot read its log %s: not a "
		 "regular file\n", at("77/4.events.jsonl"));
	assert_string_equal(o.err, want);
	assert_int_equal(symlink(at("77/3.events.jsonl"), at("77/5.events.jsonl")), 0);
	cli_run(&o, pm_cmd_events, "events", "77.5", "--state-dir", sd, NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "cannot read its log");
	cli_has(o.err, strerror(ELOOP));
	assert_string_equal(o.out, "");
	/* Not here: where it is, from Slurm's view of the job. */
	cli_run(&o, pm_cmd_events, "events", "77.6", "--state-dir", sd, NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "its log is not on this node: job 77 is not known to Slurm any more: the "
		       "log went with state_dir/77 at the job's end\n");
	cli_answer("scontrol show job -o 77", "JobId=77 JobName=x JobState=COMPLETED Reason=None\n",
		   0);
	cli_run(&o, pm_cmd_events, "events", "77.6", "--state-dir", sd, NULL);
	cli_has(o.err, "job 77 is COMPLETED: the log went with state_dir/77");
	cli_answer("scontrol show job -o 77", "JobId=77 JobState=RUNNING NodeList=n[4-7] X=1\n", 0);
	cli_run(&o, pm_cmd_events, "events", "77.6", "--state-dir", sd, NULL);
	snprintf(want, sizeof(want), "its log is not on this node: it is %s on the step's first "
		 "node (n4 for a step on all of job 77's nodes), until the job ends: run this "
		 "there, as the job's user or root\n", at("77/6.events.jsonl"));
	cli_has(o.err, want);
	cli_answer("scontrol show job -o 77", "JobId=77 JobState=RUNNING\n", 0);
	cli_run(&o, pm_cmd_events, "events", "77.6", "--state-dir", sd, NULL);
	cli_has(o.err, "on the step's first node, until job 77 ends\n");
	/* A state_dir no path can hold. */
	{
		char longdir[5000];
		memset(longdir, 'd', sizeof(longdir) - 1);
		longdir[0] = '/';
		longdir[sizeof(longdir) - 1] = '\0';
		cli_run(&o, pm_cmd_events, "events", "77.6", "--state-dir", longdir, NULL);
		assert_int_equal(o.rc, 1);
		cli_has(o.err, strerror(ENAMETOOLONG));
	}
	/* Bad input: exit 2. */
	cli_run(&o, pm_cmd_events, "events", "0", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "procmgr events: bad step '0'");
	cli_run(&o, pm_cmd_events, "events", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "which step?");
	cli_run(&o, pm_cmd_events, "events", "-h", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "usage: procmgr events JOBID[.STEP]");
}

static void test_evlog_state_dir(void **state)
{
	char dir[4096];
	(void)state;

	pm_evlog_state_dir("/given", dir, sizeof(dir));
	assert_string_equal(dir, "/given");
	/* No slurm.conf: plugstack.conf beside it, absent: the default. */
	pm_evlog_state_dir(NULL, dir, sizeof(dir));
	assert_string_equal(dir, "/var/spool/procmgr");
	/* A procmgr line the plugin would refuse says nothing. */
	write_file(at("slurm.conf"), "");
	write_file(at("plugstack.conf"), "required procmgr.so colour=blue\n");
	pm_evlog_state_dir(NULL, dir, sizeof(dir));
	assert_string_equal(dir, "/var/spool/procmgr");
	write_file(at("plugstack.conf"), "required procmgr.so state_dir=/site/state\n");
	pm_evlog_state_dir(NULL, dir, sizeof(dir));
	assert_string_equal(dir, "/site/state");
}

/* ---- timeline ---- */

static void test_timeline_of_a_step(void **state)
{
	struct cli_out o;
	char *html;
	(void)state;

	cli_run(&o, pm_cmd_timeline, "timeline", "77.3", "--state-dir", sd, "--svg", "-", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "<svg");
	cli_has(o.out, "procmgr: step 77.3");
	cli_has(o.out, "</svg>");
	assert_string_equal(o.err, "");
	/* STEP 0 by default; an HTML page in a file. */
	write_file(at("77/0.events.jsonl"), LOG "\n");
	cli_run(&o, pm_cmd_timeline, "timeline", "77", "--state-dir", sd, "--html",
		at("t.html"), NULL);
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.out, "");
	{
		static char buf[65536];
		FILE *f = fopen(at("t.html"), "r");
		size_t n;
		assert_non_null(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		html = buf;
	}
	cli_has(html, "<html");
	cli_has(html, "procmgr: step 77.0");
	cli_run(&o, pm_cmd_timeline, "timeline", "77.9", "--state-dir", sd, "--svg", "-", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr timeline: ");
	cli_has(o.err, "77/9.events.jsonl: No such file or directory\n");
	assert_string_equal(o.out, "");
}

static void test_timeline_of_a_file(void **state)
{
	struct cli_out o;
	char many[64 * 100 + 1] = "";
	int i, saved;
	(void)state;

	/* More events than the first allocation, and lines that are none. */
	for (i = 0; i < 100; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many),
			 "{\"time\":%d.0,\"step\":\"1.0\",\"event\":\"start\",\"gen\":%d}\n",
			 100 + i, i);
	strcat(many, "junk\n\n");
	write_file(at("many.jsonl"), many);
	cli_run(&o, pm_cmd_timeline, "timeline", "--events", at("many.jsonl"), "--svg", "-", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "<svg");
	cli_has(o.out, "many.jsonl");
	cli_has(o.err, "many.jsonl: 1 line skipped: not an event\n");
	write_file(at("none.jsonl"), "junk\nmore junk\n");
	cli_run(&o, pm_cmd_timeline, "timeline", "--events", at("none.jsonl"), "--svg", "-", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "none.jsonl: no events (no line of it is an event of procmgr's log)\n");
	write_file(at("empty.jsonl"), "");
	cli_run(&o, pm_cmd_timeline, "timeline", "--events", at("empty.jsonl"), "--svg", "-", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "empty.jsonl: no events\n");
	/* Standard input. */
	saved = dup(0);
	assert_true(saved >= 0);
	{
		int fd = open(at("77/3.events.jsonl"), O_RDONLY);
		assert_true(fd >= 0);
		assert_int_equal(dup2(fd, 0), 0);
		close(fd);
	}
	cli_run(&o, pm_cmd_timeline, "timeline", "--events", "-", "--svg", "-", NULL);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "procmgr: -");
	/* Where the picture cannot go. */
	cli_run(&o, pm_cmd_timeline, "timeline", "--events", at("many.jsonl"), "--svg",
		"/nonexistent/x.svg", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "procmgr timeline: /nonexistent/x.svg: No such file or directory\n");
	cli_run(&o, pm_cmd_timeline, "timeline", "--events", at("gone.jsonl"), "--svg", "-", NULL);
	assert_int_equal(o.rc, 1);
	cli_has(o.err, "gone.jsonl: No such file or directory\n");
}

static void test_timeline_usage(void **state)
{
	static const struct {
		const char *args[6];
		int rc;
		const char *says;
	} cases[] = {
		{ { "x", "--svg", "-" }, 2, "procmgr timeline: 'x' is not JOBID or JOBID.STEP\n" },
		{ { "7.x", "--svg", "-" }, 2, "procmgr timeline: '7.x' is not JOBID or JOBID.STEP\n" },
		{ { "7x", "--svg", "-" }, 2, "'7x' is not JOBID" },
		{ { "7", "8", "--svg", "-" }, 2, "procmgr timeline: one step at a time\n" },
		{ { "7" }, 2, "say where the picture goes: --svg FILE or --html FILE" },
		{ { "--svg", "-" }, 2, "say which step: JOBID[.STEP] or --events FILE" },
		{ { "--colour", "7" }, 2, "usage: procmgr timeline" },
	};
	struct cli_out o;
	char longdir[5000];
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].args;
		cli_run(&o, pm_cmd_timeline, "timeline", a[0], a[1], a[2], a[3], a[4], NULL);
		if (o.rc != cases[i].rc || !strstr(o.err, cases[i].says))
			fail_msg("case %zu: exit %d, '%s'", i, o.rc, o.err);
		assert_string_equal(o.out, "");
	}
	cli_run(&o, pm_cmd_timeline, "timeline", "-h", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "Draws a step's timeline");
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[0] = '/';
	longdir[sizeof(longdir) - 1] = '\0';
	cli_run(&o, pm_cmd_timeline, "timeline", "7", "--state-dir", longdir, "--svg", "-", NULL);
	assert_int_equal(o.rc, 2);
	cli_has(o.err, "is too long\n");
}

static void test_version(void **state)
{
	struct cli_out o;
	(void)state;

	cli_run(&o, pm_cmd_version, "version", NULL);
	assert_int_equal(o.rc, 0);
	assert_string_equal(o.out, "procmgr " PACKAGE_VERSION "\n");
	cli_run(&o, pm_cmd_version, "version", "--help", NULL);
	assert_int_equal(o.rc, 0);
	cli_has(o.out, "usage: procmgr version (or procmgr --version)");
	cli_run(&o, pm_cmd_version, "version", "now", NULL);
	assert_int_equal(o.rc, 2);
	assert_string_equal(o.err, "usage: procmgr version\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_events_from_disk, up, down),
		cmocka_unit_test_setup_teardown(test_events_not_here, up, down),
		cmocka_unit_test_setup_teardown(test_evlog_state_dir, up, down),
		cmocka_unit_test_setup_teardown(test_timeline_of_a_step, up, down),
		cmocka_unit_test_setup_teardown(test_timeline_of_a_file, up, down),
		cmocka_unit_test_setup_teardown(test_timeline_usage, up, down),
		cmocka_unit_test_setup_teardown(test_version, up, down),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
