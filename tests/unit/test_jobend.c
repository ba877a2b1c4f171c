/* The step's end at the root (procmgrd/jobend.c), in-process (stepnet.c):
 * the result file in --procmgr-output-dir for each way a step ends, and
 * when srun's node is lost the job's end through scancel (a stand-in on
 * PATH that records its arguments), said in the event log. */
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

#include "procmgrd/step.h"
#include "pump.h"
#include "stepnet.h"

static char dir[64], oldpath[4096], path[128];

static int jsetup(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/pm-test-jobend-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(oldpath, sizeof(oldpath), "%s", getenv("PATH") ? getenv("PATH") : "");
	return setup(state);
}

static int jteardown(void **state)
{
	char cmd[128];

	teardown(state);
	setenv("PATH", oldpath, 1);
	snprintf(cmd, sizeof(cmd), "/bin/rm -rf %s", dir);
	return system(cmd);
}

static void has(const char *text, const char *what)
{
	if (!text)
		fail_msg("no text where '%s' was expected", what);
	if (!strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text);
}

static const char *file(const char *name)
{
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* scancel on PATH: records its arguments, exits with code. */
static void fake_scancel(int code)
{
	char bin[128];
	FILE *f;

	snprintf(bin, sizeof(bin), "%s/bin", dir);
	mkdir(bin, 0755);
	strcat(bin, "/scancel");
	f = fopen(bin, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\necho \"$@\" >%s/scancel.args\nexit %d\n", dir, code);
	fclose(f);
	assert_int_equal(chmod(bin, 0755), 0);
	snprintf(bin, sizeof(bin), "%s/bin", dir);
	setenv("PATH", bin, 1);
}

/* The root of two nodes, srun on the second, its log and output in dir. */
static struct pm_step *root(void)
{
	struct pm_step *s = &node_up(0, 2, 2, 1, 0, 0, false)->s;

	s->srun_node_id = 1;
	snprintf(s->opts.output_dir, sizeof(s->opts.output_dir), "%s", dir);
	assert_int_equal(pm_events_open(&s->events, file("events"), JOB, STEP), 0);
	return s;
}

/* srun's node lost: said once; the step's end then ends the job. */
static void test_srun_lost(void **state)
{
	struct pm_step *s;
	const char *ev;
	char *res;
	(void)state;

	fake_scancel(0);
	s = root();
	pm_step_srun_lost(s, 0); /* not srun's node */
	assert_false(s->srun_lost);
	pm_step_srun_lost(s, 1);
	assert_true(s->srun_lost);
	pm_step_srun_lost(s, 1);
	/* Not over yet: nothing written, nobody cancelled. */
	pm_step_jobend(s);
	assert_int_equal(access(file("result.77.3"), F_OK), -1);
	pm_step_terminate(s); /* and now it is: cancelled */
	pm_step_jobend(s);
	res = slurp(file("result.77.3"));
	has(res, "job=77 step=3\nresult=cancelled\nexit_code=143\ngeneration=0\nrestarts=0\n");
	has(res, "message=procmgr: the step was cancelled (procmgrd got SIGTERM from slurmstepd "
		 "on 127.0.0.1); not restarting\n");
	has(res, "srun=lost with node 127.0.0.2: procmgr ended job 77 (scancel) once the step was "
		 "over\nroot=127.0.0.1\ntime=");
	assert_string_equal(slurp(file("scancel.args")), "77\n");
	ev = slurp(file("events"));
	has(ev, "\"event\":\"srun_lost\",\"gen\":0,\"node\":\"127.0.0.2\"}");
	assert_null(strstr(strstr(ev, "srun_lost") + 1, "srun_lost")); /* once */
	has(ev, "\"event\":\"job_cancelled\",\"job\":77,\"reason\":\"srun lost with node "
		"127.0.0.2\",\"scancel\":0}");
}

/* scancel that fails, and none on PATH: its status in the event. */
static void test_scancel_fails(void **state)
{
	struct pm_step *s;
	(void)state;

	fake_scancel(3);
	s = root();
	pm_step_srun_lost(s, 1);
	pm_gen_sweep_end(&s->gen, 2, "procmgr: rank 1 failed");
	pm_step_jobend(s);
	has(slurp(file("events")), "\"scancel\":3}");
	has(slurp(file("result.77.3")), "result=failed\nexit_code=2\n");
	has(slurp(file("result.77.3")), "message=procmgr: rank 1 failed\n");
	node_down(&nodes[0]);
	unlink(file("events"));

	setenv("PATH", "/nonexistent", 1);
	s = root();
	pm_step_srun_lost(s, 1);
	pm_gen_sweep_end(&s->gen, 1, NULL);
	pm_step_jobend(s);
	has(slurp(file("events")), "\"scancel\":127}");
	has(slurp(file("result.77.3")), "message=(none)\n");
}

/* Issue 32 item 13: a node other than srun's lost (its tasks never end,
 * and srun would wait for Slurm's DOWN): srun's stderr is told before the
 * end goes down, and the step's end ends the step itself (scancel
 * JOB.STEP, not the job), in the event log. srun's node lost: the job's
 * end instead, and nothing said of the step. */
static void test_lost_node_ends_the_step(void **state)
{
	struct pm_step *s;
	char *ev;
	(void)state;

	fake_scancel(0);
	s = root();
	s->srun_node_id = -1;
	pm_step_lost_at_end(s, 1, 2, false);
	assert_true(s->end_step);
	assert_non_null(s->gen.said);
	has(s->gen.said, "procmgr: step 77.3 is over, but node 127.0.0.2 (and 1 more) was lost: "
		"Slurm would keep srun waiting for its tasks until it marks the node DOWN "
		"(SlurmdTimeout); procmgr ends the step once every other rank has exited "
		"(scancel 77.3, safe now), and srun returns their exit status within KillWait "
		"+ 2 s");
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	assert_string_equal(slurp(file("scancel.args")), "77.3\n");
	ev = slurp(file("events"));
	has(ev, "\"event\":\"step_ended\",\"step\":\"77.3\",\"reason\":\"a node was lost: "
		"its tasks never end\"}");
	has(slurp(file("result.77.3")), "result=succeeded\nexit_code=0\n");
	node_down(&nodes[0]);
	unlink(file("scancel.args"));

	/* srun's own node: the job goes instead, the step is not told of. */
	s = root();
	pm_step_srun_lost(s, 1);
	pm_step_lost_at_end(s, 1, 1, false);
	assert_false(s->end_step);
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	assert_string_equal(slurp(file("scancel.args")), "77\n");
	node_down(&nodes[0]);
	unlink(file("scancel.args"));

	/* A node lost by silence (a timeout): down, or cut off with the
	 * step going on beyond the cut (spares.bats' partition: the old
	 * root's scancel ended the side that went on). Said, no scancel. */
	s = root();
	s->srun_node_id = -1;
	pm_step_lost_at_end(s, 1, 1, true);
	assert_false(s->end_step);
	has(s->gen.said, "procmgr: step 77.3 is over here, but node 127.0.0.2 went silent (down, "
		"or cut off from this node): srun waits for its tasks until Slurm marks it DOWN "
		"(SlurmdTimeout) or they end; if it is down, scancel 77.3 ends the wait");
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	assert_int_equal(access(file("scancel.args"), F_OK), -1);
	node_down(&nodes[0]);

	/* No node lost: no scancel at all. */
	s = root();
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	assert_int_equal(access(file("scancel.args"), F_OK), -1);
}

/* Every rank succeeded, srun on a node kept; srun elsewhere. */
static void test_results(void **state)
{
	struct pm_step *s;
	char *res;
	(void)state;

	setenv("PATH", "/nonexistent", 1); /* no scancel is run */
	s = root();
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	res = slurp(file("result.77.3"));
	has(res, "result=succeeded\nexit_code=0\n");
	has(res, "message=every rank succeeded\nsrun=on node 127.0.0.2\n");
	assert_null(slurp(file("events")) ? strstr(slurp(file("events")), "job_cancelled") : NULL);
	node_down(&nodes[0]);

	s = root();
	s->srun_node_id = -1;
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	has(slurp(file("result.77.3")), "srun=not on a node of the step\n");
	node_down(&nodes[0]);
	unlink(file("result.77.3"));

	/* An output directory that is none: logged, nothing written. */
	s = root();
	snprintf(s->opts.output_dir, sizeof(s->opts.output_dir), "%s/events", dir);
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	assert_int_equal(access(file("result.77.3"), F_OK), -1);
	node_down(&nodes[0]);

	/* No output directory: nothing to write. */
	s = root();
	s->opts.output_dir[0] = '\0';
	pm_gen_sweep_end(&s->gen, 0, "");
	pm_step_jobend(s);
	assert_int_equal(access(file("result.77.3"), F_OK), -1);
	node_down(&nodes[0]);

	/* A node that is not the root writes none. */
	s = &node_up(1, 2, 2, 1, 0, 0, false)->s;
	snprintf(s->opts.output_dir, sizeof(s->opts.output_dir), "%s", dir);
	pm_step_abort_local(s, "procmgr: gone");
	pm_step_jobend(s);
	assert_int_equal(access(file("result.77.3"), F_OK), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_srun_lost, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(test_scancel_fails, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(test_results, jsetup, jteardown),
		cmocka_unit_test_setup_teardown(test_lost_node_ends_the_step, jsetup, jteardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
