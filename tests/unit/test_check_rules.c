/* Unit tests of runtime/cli/check_rules.c: check-config's judgements. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>

#include "cli/check_rules.h"

static void test_release(void **state)
{
	unsigned a = 0, b = 0;
	(void)state;

	assert_int_equal(pm_slurm_release("22.05.8", &a, &b), 0);
	assert_int_equal(a, 22);
	assert_int_equal(b, 5);
	assert_int_equal(pm_slurm_release("24.11.5-1", &a, &b), 0);
	assert_int_equal(b, 11);
	assert_int_equal(pm_slurm_release("25.05", &a, &b), 0);
	assert_int_equal(pm_slurm_release("", &a, &b), -1);
	assert_int_equal(pm_slurm_release("slurm", &a, &b), -1);
	assert_int_equal(pm_slurm_release("22", &a, &b), -1);
	assert_int_equal(pm_slurm_release("22.x", &a, &b), -1);
	assert_int_equal(pm_slurm_release("300.05.1", &a, &b), -1);
	assert_int_equal(pm_slurm_release(NULL, &a, &b), -1);
}

/* Slurm compares major.minor only: 22.05.x loads a plugin of 22.05.y. */
static void test_judge_release(void **state)
{
	char err[1024];
	(void)state;

	assert_int_equal(pm_judge_release(0x160508, "22.05.11", "slurmctld", err, sizeof(err)), 0);
	assert_int_equal(pm_judge_release(0x160508, "24.11.5", "node n1", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "node n1 runs Slurm 24.11.5"));
	assert_non_null(strstr(err, "built for 22.05"));
	assert_non_null(strstr(err, "rebuild procmgr against Slurm 24.11"));
	assert_int_equal(pm_judge_release(0x180b05, "24.05.4", "x", err, sizeof(err)), -1);
	assert_int_equal(pm_judge_release(0x180b05, "garbage", "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'garbage'"));
	/* 26.05 (Debian forky): its own release only, named both ways. */
	assert_int_equal(pm_judge_release(0x1a0505, "26.05.5-1", "slurmctld", err, sizeof(err)), 0);
	assert_int_equal(pm_judge_release(0x1a0505, "25.11.2", "node n2", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "node n2 runs Slurm 25.11.2, the plugin is built for 26.05"));
	assert_non_null(strstr(err, "rebuild procmgr against Slurm 25.11"));
	assert_int_equal(pm_judge_release(0x180b05, "26.05.5", "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "built for 24.11"));
	assert_int_equal(pm_judge_release(0x180b05, "garbage", "x", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'garbage'"));
}

/* Truncated or foreign input is refused, never read past. */
static void test_elf_refuses_garbage(void **state)
{
	unsigned char buf[256];
	uint32_t v;
	char err[256];
	(void)state;

	memset(buf, 0, sizeof(buf));
	assert_int_equal(pm_elf_u32(buf, sizeof(buf), "plugin_version", &v, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a 64-bit ELF"));
	memcpy(buf, "\177ELF\2", 5);
	assert_int_equal(pm_elf_u32(buf, 10, "plugin_version", &v, err, sizeof(err)), -1);
	/* Section headers said to lie beyond the buffer. */
	buf[58] = 64; /* e_shentsize */
	buf[60] = 200; /* e_shnum */
	buf[40] = 128; /* e_shoff */
	assert_int_equal(pm_elf_u32(buf, sizeof(buf), "plugin_version", &v, err, sizeof(err)), -1);
}

static void test_ports(void **state)
{
	(void)state;
	assert_true(pm_mpiparams_ports("ports=20000-20999"));
	assert_true(pm_mpiparams_ports("x=1,ports=12000-12999"));
	assert_false(pm_mpiparams_ports(""));
	assert_false(pm_mpiparams_ports(NULL));
	assert_false(pm_mpiparams_ports("(null)"));
	assert_false(pm_mpiparams_ports("ports="));
	assert_false(pm_mpiparams_ports("myports=1-2"));
}

static void test_drain(void **state)
{
	char err[1024];
	(void)state;

	assert_int_equal(pm_judge_drain("root(0)", "slurm(64030)", err, sizeof(err)), 0);
	assert_int_equal(pm_judge_drain("root", "root", err, sizeof(err)), 0);
	assert_int_equal(pm_judge_drain(NULL, NULL, err, sizeof(err)), 0);
	assert_int_equal(pm_judge_drain("slurm(64030)", "slurm(64030)", err, sizeof(err)), 0);
	assert_int_equal(pm_judge_drain("nobody(65534)", "slurm(64030)", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "runs as nobody"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_release),
		cmocka_unit_test(test_judge_release),
		cmocka_unit_test(test_elf_refuses_garbage),
		cmocka_unit_test(test_ports),
		cmocka_unit_test(test_drain),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
