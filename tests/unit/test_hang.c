/* A hang's stacks at procmgrd (query_hang.c), in-process over two real
 * nodes (stepnet.c): each node reads what its supervisors left at the
 * hang, keeps it beside the step's logs and sends it up the tree; the root
 * finds the rank whose stack differs, and says the grouped summary to
 * rank 0's supervisor (srun's stderr) and in the event log. */
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

#include "common/blame.h"
#include "common/contract.h"
#include "procmgrd/query.h"
#include "pump.h"
#include "stepnet.h"

static char dir[64];

static void has(const char *text, const char *what)
{
	if (!text || !strstr(text, what))
		fail_msg("'%s' not in '%s'", what, text ? text : "(null)");
}

/* What supervisor lrank of node left at the hang (rank/rank_stack.h). */
static void left_stack(int node, int lrank, const char *raw)
{
	char path[4096];
	FILE *f;

	assert_int_equal(pm_path_hang_stack(path, sizeof(path),
					    pm_query_rundir(&nodes[node].s), lrank), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(raw, f);
	fclose(f);
}

static bool up(void *arg)
{
	int i;
	(void)arg;

	for (i = 0; i < 2; i++)
		if (!nodes[0].s.ranks[i] || !nodes[1].s.ranks[i])
			return false;
	return nodes[1].s.parent_ok;
}

static bool printed(void *arg)
{
	struct peer *p = arg;
	int i;

	for (i = 0; i < p->n && i < 16; i++)
		if (p->got[i].type == PM_MSG_PRINT)
			return true;
	return false;
}

static int outlier(int *node)
{
	struct pm_stack_verdict v;
	uint64_t last = 0;

	return pm_query_hang_outlier(&nodes[0].s, node, &v, &last);
}

static bool root_has_all(void *arg)
{
	int node = -1;
	(void)arg;
	return outlier(&node) == 3;
}

#define SAME "Thread 1 (Thread 0x7f (LWP 11)):\n" \
	     "#0  0x0000 in ncclAllReduce (a=1) at nccl.c:10\n" \
	     "#1  0x0000 in main () at train.c:7\n"
#define ODD "Thread 1 (Thread 0x7f (LWP 12)):\n" \
	    "#0  0x0000 in load_batch (a=1) at data.c:99\n" \
	    "#1  0x0000 in main () at train.c:7\n"

/* Two nodes of two ranks: ranks 0 and 1 (node 0) in the allreduce, rank 2
 * (node 1) without a stack (ptrace refused), rank 3 (node 1) elsewhere:
 * the one that differs. */
static void test_hang_stacks(void **state)
{
	struct peer r[4];
	char run[2][128], path[256], *got;
	int i, node = -1;
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/pm-test-hang-XXXXXX");
	assert_non_null(mkdtemp(dir));
	node_up(0, 2, 2, 2, 0, 0, true);
	node_up(1, 2, 2, 2, 0, 0, true);
	for (i = 0; i < 2; i++) {
		snprintf(run[i], sizeof(run[i]), "%s/n%d", dir, i);
		assert_int_equal(mkdir(run[i], 0700), 0);
		snprintf(run[i] + strlen(run[i]), sizeof(run[i]) - strlen(run[i]), "/run");
		assert_int_equal(mkdir(run[i], 0700), 0);
		pm_query_free(&nodes[i].s);
		assert_int_equal(pm_query_init(&nodes[i].s, run[i], NULL), 0);
	}
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	assert_int_equal(pm_events_open(&nodes[0].s.events, path, JOB, STEP), 0);
	attach_to_parent(&nodes[1]);
	for (i = 0; i < 4; i++) {
		rank_pair(&nodes[i / 2], &r[i]);
		rank_hello(&r[i], i % 2, i);
	}
	assert_true(pm_pump(&loop, up, NULL, 5000));
	left_stack(0, 0, SAME);
	left_stack(0, 1, SAME);
	left_stack(1, 0, "procmgr: no stack: ptrace: Operation not permitted\n");
	left_stack(1, 1, ODD);
	/* Each supervisor's end reads its stack: node 1's go up the tree. */
	pm_query_rank_ended(&nodes[1].s, 0);
	pm_query_rank_ended(&nodes[1].s, 1);
	pm_query_rank_ended(&nodes[0].s, 0);
	pm_query_rank_ended(&nodes[0].s, 1);
	pm_query_rank_ended(&nodes[0].s, 1); /* read once: its file is gone */
	assert_true(pm_pump(&loop, root_has_all, NULL, 5000));
	assert_int_equal(outlier(&node), 3);
	assert_int_equal(node, 1);
	/* Kept where the step's logs are, on the node that read it. */
	snprintf(path, sizeof(path), "%s/n1/%u.hang.3.stack", dir, STEP);
	has(slurp(path), "load_batch at data.c:99");
	snprintf(path, sizeof(path), "%s/n1/%u.hang.2.stack", dir, STEP);
	has(slurp(path), "procmgr: no stack for rank 2: ptrace: Operation not permitted");
	/* The root's summary at its "hang" event. */
	nodes[0].s.gen.hang.blamed = 3;
	nodes[0].s.gen.hang.blamed_by = PM_BLAME_STACK;
	pm_query_hang_report(&nodes[0].s);
	assert_true(pm_pump(&loop, printed, &r[0], 5000));
	got = r[0].got[r[0].n - 1].text;
	/* The stack not taken is no place of its own, and says why. */
	has(got, "stacks at the hang of generation 0: 4 ranks, 3 stacks taken in 2 places (by "
		 "the main thread), 1 not taken (kept in ");
	has(got, "\nprocmgr:   ranks 0-1 in ncclAllReduce\nprocmgr:   rank 3 in load_batch\n"
		 "procmgr:   no stack for rank 2: ptrace: Operation not permitted\n");
	has(got, "rank 3 (its stack stands apart) was in load_batch:\nthread 1:\n  load_batch at "
		 "data.c:99\n");
	snprintf(path, sizeof(path), "%s/events.jsonl", dir);
	got = slurp(path);
	has(got, "\"event\":\"hang_stacks\"");
	has(got, "\"rank\":3,\"top\":\"load_batch");
	has(got, "\"ranks\":4,\"taken\":3,");
	/* Said and forgotten: nothing left to blame. */
	assert_int_equal(outlier(&node), -1);
	for (i = 0; i < 4; i++)
		peer_free(&r[i]);
	snprintf(path, sizeof(path), "/bin/rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static bool two_in(void *arg)
{
	(void)arg;
	return nodes[0].s.ranks[0] && nodes[0].s.ranks[1];
}

/* A rank whose stack never came still has its line; a tool that wrote
 * nothing, or found no frames, is said as such. */
static void test_hang_missing(void **state)
{
	struct peer r[2];
	char run[128], path[256], *got;
	int i;
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/pm-test-hang-XXXXXX");
	assert_non_null(mkdtemp(dir));
	node_up(0, 1, 2, 3, 0, 0, true);
	snprintf(run, sizeof(run), "%s/run", dir);
	assert_int_equal(mkdir(run, 0700), 0);
	pm_query_free(&nodes[0].s);
	assert_int_equal(pm_query_init(&nodes[0].s, run, NULL), 0);
	for (i = 0; i < 2; i++) {
		rank_pair(&nodes[0], &r[i]);
		rank_hello(&r[i], i, i);
	}
	assert_true(pm_pump(&loop, two_in, NULL, 5000));
	left_stack(0, 0, "");
	left_stack(0, 1, "gdb: warning: something\nCould not attach to process 42\n");
	pm_query_rank_ended(&nodes[0].s, 0);
	pm_query_rank_ended(&nodes[0].s, 1);
	nodes[0].s.gen.hang.blamed = -1;
	nodes[0].s.gen.hang.rank = 1;
	nodes[0].s.gen.hang.blamed_by = PM_BLAME_NONE;
	pm_query_hang_report(&nodes[0].s);
	assert_true(pm_pump(&loop, printed, &r[0], 5000));
	got = r[0].got[r[0].n - 1].text;
	has(got, "3 ranks, no stack taken (kept in");
	/* Nobody blamed: no rank's stack is shown as the suspect's, and no
	 * "?" stands for a function. */
	if (strstr(got, "was in") || strstr(got, "?"))
		fail_msg("a suspect in '%s'", got);
	has(got, "no stack for rank 0: the stack tool wrote nothing");
	has(got, "no stack for rank 1: the stack tool found no frames and said: Could not "
		 "attach to process 42");
	has(got, "no stack for rank 2: none came before the stop");
	snprintf(path, sizeof(path), "%s/%u.hang.1.stack", dir, STEP);
	has(slurp(path), "Could not attach");
	for (i = 0; i < 2; i++)
		peer_free(&r[i]);
	snprintf(path, sizeof(path), "/bin/rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

static bool one_in(void *arg)
{
	(void)arg;
	return nodes[1].s.ranks[0] != NULL;
}

/* After a failover the root is node 1: a stack read there is the root's
 * to keep (it was sent to a parent that is gone, and the summary at the
 * hang said every rank's stack missing). */
static void test_hang_moved_root(void **state)
{
	struct peer r;
	struct pm_stack_verdict v;
	char run[128], path[256];
	uint64_t last = 0;
	int node = -1;
	(void)state;

	snprintf(dir, sizeof(dir), "/tmp/pm-test-hang-XXXXXX");
	assert_non_null(mkdtemp(dir));
	node_up(1, 2, 2, 1, 0, 0, true);
	nodes[1].s.gen.root = true;
	snprintf(run, sizeof(run), "%s/run", dir);
	assert_int_equal(mkdir(run, 0700), 0);
	pm_query_free(&nodes[1].s);
	assert_int_equal(pm_query_init(&nodes[1].s, run, NULL), 0);
	rank_pair(&nodes[1], &r);
	rank_hello(&r, 0, 1);
	assert_true(pm_pump(&loop, one_in, NULL, 5000));
	left_stack(1, 0, ODD);
	pm_query_rank_ended(&nodes[1].s, 0);
	pm_query_hang_outlier(&nodes[1].s, &node, &v, &last);
	assert_true(last > 0);
	assert_int_equal(v.taken, 1);
	peer_free(&r);
	snprintf(path, sizeof(path), "/bin/rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_hang_stacks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hang_moved_root, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
