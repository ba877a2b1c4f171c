/* Unit tests of runtime/common/mpi.c: which MPI plugins refuse restarts. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "common/mpi.h"

static struct pm_opts opts(enum pm_restart_mode m, int max, unsigned spares)
{
	struct pm_opts o;

	pm_opts_init(&o);
	o.enabled = true;
	o.restart = m;
	o.restart_max = max;
	o.spares = spares;
	return o;
}

static void test_restarts_refused_with_stepd_servers(void **state)
{
	const char *types[] = { "pmix", "pmix_v4", "pmix_v3", "pmi2" };
	struct pm_opts o = opts(PM_RESTART_ON_FAILURE, 3, 0);
	char err[PM_ERRLEN];
	(void)state;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		err[0] = '\0';
		assert_int_equal(pm_mpi_check(&o, types[i], err, sizeof(err)), -1);
		/* Says what was refused, why, and what works instead. */
		assert_non_null(strstr(err, types[i]));
		assert_non_null(strstr(err, "one launch per step"));
		assert_non_null(strstr(err, "--procmgr-restart=never"));
	}
	o = opts(PM_RESTART_ALWAYS, -1, 0);
	assert_int_equal(pm_mpi_check(&o, "pmix", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "PMIx"));
	assert_int_equal(pm_mpi_check(&o, "pmi2", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "PMI2"));
}

/* Spares relaunch a lost node's ranks: the same second launch. */
static void test_spares_refused(void **state)
{
	struct pm_opts o = opts(PM_RESTART_NEVER, -1, 1);
	char err[PM_ERRLEN];
	(void)state;

	assert_int_equal(pm_mpi_check(&o, "pmix", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--procmgr-spares"));
}

static void test_allowed(void **state)
{
	struct pm_opts never = opts(PM_RESTART_NEVER, -1, 0);
	struct pm_opts zero = opts(PM_RESTART_ON_FAILURE, 0, 0);
	struct pm_opts restart = opts(PM_RESTART_ON_FAILURE, 3, 0);
	struct pm_opts off = opts(PM_RESTART_ALWAYS, -1, 0);
	char err[PM_ERRLEN];
	(void)state;

	off.enabled = false;
	/* MPI without restarts: supervised once. */
	assert_int_equal(pm_mpi_check(&never, "pmix", err, sizeof(err)), 0);
	assert_int_equal(pm_mpi_check(&zero, "pmi2", err, sizeof(err)), 0);
	/* Restarts without a Slurm MPI server. */
	assert_int_equal(pm_mpi_check(&restart, "none", err, sizeof(err)), 0);
	assert_int_equal(pm_mpi_check(&restart, NULL, err, sizeof(err)), 0);
	assert_int_equal(pm_mpi_check(&restart, "cray_shasta", err, sizeof(err)), 0);
	/* A step procmgr does not supervise. */
	assert_int_equal(pm_mpi_check(&off, "pmix", err, sizeof(err)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_restarts_refused_with_stepd_servers),
		cmocka_unit_test(test_spares_refused),
		cmocka_unit_test(test_allowed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
