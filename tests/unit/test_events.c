/* Unit tests of runtime/io/events.c: the step's event log keeps every line
 * whole, also when the file system fills up, and says the line was lost. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/events.h"

static char dir[] = "/tmp/pm-test-events.XXXXXX";

/* Every line of path is one whole JSON object of this step. */
static int whole_lines(const char *path)
{
	char line[20000];
	FILE *f = fopen(path, "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);
		assert_true(len > 2);
		assert_int_equal(line[len - 1], '\n');
		assert_int_equal(line[0], '{');
		assert_int_equal(line[len - 2], '}');
		assert_non_null(strstr(line, "\"step\":\"7.1\""));
		n++;
	}
	fclose(f);
	return n;
}

static void test_lines(void **state)
{
	struct pm_events e;
	char path[256];
	(void)state;

	snprintf(path, sizeof(path), "%s/log", dir);
	assert_int_equal(pm_events_open(&e, path, 7, 1), 0);
	assert_int_equal(pm_event(&e, "launch", "\"gen\":0"), 0);
	assert_int_equal(pm_event(&e, "finish", ""), 0);
	assert_int_equal(pm_event(&e, "x", NULL), 0);
	pm_events_close(&e);
	assert_int_equal(whole_lines(path), 3);
	unlink(path);
}

static void test_closed_log_is_quiet(void **state)
{
	struct pm_events e;
	(void)state;

	/* A node that is not the root keeps no log: nothing is written. */
	memset(&e, 0, sizeof(e));
	assert_int_equal(pm_event(&e, "launch", ""), 0);
	pm_events_close(&e);
	assert_int_equal(e.lost, 0);
}

static void test_full_file_system(void **state)
{
	char mnt[300], path[320], fields[3000];
	struct pm_events e;
	int i, written = 0, rc = 0;
	(void)state;

	if (geteuid() != 0) {
		print_message("skipped: mounting a small tmpfs needs root\n");
		skip();
	}
	snprintf(mnt, sizeof(mnt), "%s/full", dir);
	assert_int_equal(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=16k")) {
		print_message("skipped: cannot mount a tmpfs here: %s\n", strerror(errno));
		rmdir(mnt);
		skip();
	}
	snprintf(path, sizeof(path), "%s/log", mnt);
	assert_int_equal(pm_events_open(&e, path, 7, 1), 0);
	/* Lines of about 3 KiB do not divide 16 KiB: one goes in only in part. */
	memset(fields, 'a', sizeof(fields));
	memcpy(fields, "\"message\":\"", 11);
	strcpy(fields + sizeof(fields) - 2, "\"");
	for (i = 0; i < 20 && rc == 0; i++) {
		rc = pm_event(&e, "give_up", fields);
		if (rc == 0)
			written++;
	}
	assert_int_equal(rc, -1);
	assert_int_equal(errno, ENOSPC);
	assert_int_equal(e.lost, 1);
	/* A short line may still fit in what is left; if so it is whole. */
	if (pm_event(&e, "finish", "") == 0)
		written++;
	pm_events_close(&e);
	assert_true(written >= 1);
	assert_int_equal(whole_lines(path), written);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
}

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_closed_log_is_quiet),
		cmocka_unit_test(test_full_file_system),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
