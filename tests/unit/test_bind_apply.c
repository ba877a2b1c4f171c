/* runtime/affinity/bind.c's pm_bind_apply_rank, what procmgr-rank does in
 * each task before exec: the plan (here from the nogpu.xml fixture, one
 * core per rank) intersected with the affinity Slurm set, never widened;
 * the NUMA policy; OMP_NUM_THREADS; and what --procmgr-verbose is told.
 * Each case runs in a child whose affinity is first set to cpus 0-1 (or 0),
 * so that the results do not depend on the machine beyond having them;
 * the child reports what it saw through a pipe. */
#include <errno.h>
#include <numaif.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "affinity/bind.h"
#include "common/options.h"

struct env {
	char omp[32];
	bool user_omp, fail;
};

static int set_env(void *ctx, const char *name, const char *value)
{
	struct env *e = ctx;

	if (e->fail)
		return -1;
	if (!strcmp(name, "OMP_NUM_THREADS"))
		snprintf(e->omp, sizeof(e->omp), "%s", value);
	return 0;
}

static int get_env(void *ctx, const char *name, char *buf, size_t len)
{
	struct env *e = ctx;

	if (!e->user_omp || strcmp(name, "OMP_NUM_THREADS"))
		return -1;
	snprintf(buf, len, "4");
	return 0;
}

static struct pm_bind_plan *plan(unsigned what, int ntasks)
{
	struct pm_bind_plan *bp = NULL;
	char path[4096], err[256];
	const char *top = getenv("top_srcdir");

	snprintf(path, sizeof(path), "%s/tests/data/nogpu.xml", top ? top : ".");
	assert_int_equal(pm_bind_plan_node(path, what, ntasks, NULL, NULL, &bp, err, sizeof(err)),
			 0);
	return bp;
}

static void cpus_text(char *buf, size_t len)
{
	cpu_set_t s;
	size_t off = 0;

	buf[0] = '\0';
	if (sched_getaffinity(0, sizeof(s), &s))
		return;
	for (int c = 0; c < CPU_SETSIZE && off < len; c++)
		if (CPU_ISSET(c, &s))
			off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "", c);
}

/* Apply rank in a child whose affinity is cpus; what it saw, as
 * "rc=R cpus=LIST omp=N msg=TEXT". */
static void apply(struct pm_bind_plan *bp, int rank, const char *cpus, struct env e,
		  char *out, size_t len)
{
	int p[2], st;
	ssize_t n;
	size_t off = 0;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	/* The child leaves by exit(), so that a --coverage build keeps what
	 * it ran: nothing of ours may be left in stdio's buffers for it. */
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char msg[512] = "", now[256], line[1024];
		cpu_set_t s;
		int rc;

		CPU_ZERO(&s);
		CPU_SET(0, &s);
		if (!strcmp(cpus, "0-1"))
			CPU_SET(1, &s);
		if (sched_setaffinity(0, sizeof(s), &s))
			exit(1);
		rc = pm_bind_apply_rank(bp, rank, set_env, get_env, &e, msg, sizeof(msg));
		cpus_text(now, sizeof(now));
		snprintf(line, sizeof(line), "rc=%d cpus=%s omp=%s msg=%s", rc, now, e.omp, msg);
		exit(write(p[1], line, strlen(line)) > 0 ? 0 : 1);
	}
	close(p[1]);
	while ((n = read(p[0], out + off, len - 1 - off)) > 0)
		off += (size_t)n;
	out[off] = '\0';
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static int setup(void **state)
{
	cpu_set_t s;
	(void)state;

	if (sched_getaffinity(0, sizeof(s), &s) || !CPU_ISSET(0, &s) || !CPU_ISSET(1, &s))
		skip(); /* the cases need cpus 0 and 1 */
	return 0;
}

/* The plan's core (cpus 0 and 32) within Slurm's 0-1: narrowed to cpu 0,
 * and said; one thread per core it has. */
static void test_narrowed(void **state)
{
	struct pm_bind_plan *bp = plan(PM_BIND_CPU, 32);
	struct env e = { .omp = "" };
	char out[1024];
	(void)state;

	apply(bp, 0, "0-1", e, out, sizeof(out));
	assert_string_equal(out, "rc=0 cpus=0 omp=1 msg=cpus: 0, the plan's 0,32 within the "
				 "allowed 0-1.");
	pm_bind_plan_free(bp);
}

/* Slurm's cpus do not meet the plan's: Slurm's are kept, never widened. */
static void test_no_overlap(void **state)
{
	struct pm_bind_plan *bp = plan(PM_BIND_CPU, 32);
	struct env e = { .omp = "" };
	char out[1024];
	(void)state;

	apply(bp, 5, "0-1", e, out, sizeof(out));
	assert_string_equal(out, "rc=0 cpus=0,1 omp=2 msg=cpus: kept 0-1, which Slurm set and "
				 "which does not overlap the plan's 5,37.");
	pm_bind_plan_free(bp);
}

/* Already tighter than the plan (a package of 32 cpus): kept, said; the
 * user's OMP_NUM_THREADS stays, said too. */
static void test_tighter_kept(void **state)
{
	struct pm_bind_plan *bp = plan(PM_BIND_CPU, 2);
	struct env e = { .omp = "", .user_omp = true };
	char out[1024];
	(void)state;

	apply(bp, 0, "0", e, out, sizeof(out));
	assert_non_null(strstr(out, "rc=0 cpus=0 omp= msg=cpus: kept 0, already tighter than "
				    "the plan's 0-15,32-47. OMP_NUM_THREADS=4 kept (set by the "
				    "user)."));
	/* Exactly the plan's: nothing to say. */
	pm_bind_plan_free(bp);
	bp = plan(PM_BIND_CPU, 32);
	e.user_omp = false;
	apply(bp, 1, "0-1", e, out, sizeof(out));
	assert_string_equal(out, "rc=0 cpus=1 omp=1 msg=cpus: 1, the plan's 1,33 within the "
				 "allowed 0-1.");
	pm_bind_plan_free(bp);
}

static void test_env_refused(void **state)
{
	struct pm_bind_plan *bp = plan(PM_BIND_CPU, 32);
	struct env e = { .omp = "", .fail = true };
	char out[1024];
	(void)state;

	apply(bp, 0, "0-1", e, out, sizeof(out));
	assert_non_null(strstr(out, "rc=-1 "));
	assert_non_null(strstr(out, "cannot set OMP_NUM_THREADS=1 in the task's environment"));
	pm_bind_plan_free(bp);
}

/* The NUMA policy: where the kernel answers get_mempolicy, the rank's node
 * is preferred (or bound, strict) if this task may use it, else left and
 * said; where it does not, only strict fails. */
static void test_memory(void **state)
{
	unsigned long allowed[16] = { 0 };
	bool numa = get_mempolicy(NULL, allowed, 1024, NULL, MPOL_F_MEMS_ALLOWED) == 0;
	struct pm_bind_plan *bp = plan(PM_BIND_MEM, 32), *strict;
	struct env e = { .omp = "" };
	char out[1024];
	(void)state;

	/* Rank 31's node is the fixture's node 3. */
	apply(bp, 31, "0-1", e, out, sizeof(out));
	if (!numa)
		assert_non_null(strstr(out, "rc=0 cpus=0,1 omp= msg=memory: no NUMA policy"));
	else if (!(allowed[0] & 8))
		assert_string_equal(out, "rc=0 cpus=0,1 omp= msg=memory: NUMA node 3 is not "
					 "allowed to this task; policy left as it was.");
	strict = plan(PM_BIND_MEM_STRICT, 32);
	apply(strict, 0, "0-1", e, out, sizeof(out));
	if (!numa)
		assert_non_null(strstr(out, "rc=-1 cpus=0,1 omp= msg=get_mempolicy("
					    "MPOL_F_MEMS_ALLOWED): "));
	else if (allowed[0] & 1)
		assert_string_equal(out, "rc=0 cpus=0,1 omp= msg=");
	apply(bp, 0, "0-1", e, out, sizeof(out));
	if (numa && (allowed[0] & 1))
		assert_string_equal(out, "rc=0 cpus=0,1 omp= msg=");
	pm_bind_plan_free(strict);
	pm_bind_plan_free(bp);
}

/* A message buffer too small for the remark: cut, never overrun. */
static void test_short_message(void **state)
{
	struct pm_bind_plan *bp = plan(PM_BIND_CPU, 32);
	struct env e = { .omp = "" };
	char msg[8] = "";
	(void)state;

	assert_int_equal(pm_bind_apply_rank(bp, 40, set_env, get_env, &e, msg, sizeof(msg)), -1);
	assert_string_equal(msg, "local r");
	pm_bind_plan_free(bp);
	assert_int_equal(pm_bind_apply_rank(NULL, 0, set_env, get_env, &e, msg, sizeof(msg)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_narrowed, setup),
		cmocka_unit_test_setup(test_no_overlap, setup),
		cmocka_unit_test_setup(test_tighter_kept, setup),
		cmocka_unit_test_setup(test_env_refused, setup),
		cmocka_unit_test_setup(test_memory, setup),
		cmocka_unit_test_setup(test_short_message, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
