/* --procmgr-output-dir on a node (runtime/io/outdir.c), over a real
 * temporary directory: made with its parents, a file or another user's
 * directory refused, a planted link or FIFO never opened, files appended. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/outdir.h"

static char base[64], err[512];

static int setup(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/pm-outdir-test.XXXXXX");
	assert_non_null(mkdtemp(base));
	return 0;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("'%s' not in '%s'", needle, hay);
}

static void test_makes_missing_parents(void **state)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;
	(void)state;

	snprintf(path, sizeof(path), "%s/a/b/c", base);
	fd = pm_outdir_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	close(fd);
	/* Again: it exists, fine. */
	fd = pm_outdir_open(path, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
}

static void test_refuses(void **state)
{
	char path[PATH_MAX];
	(void)state;

	assert_int_equal(pm_outdir_open("rel/dir", err, sizeof(err)), -1);
	contains(err, "not an absolute path");
	snprintf(path, sizeof(path), "%s/file", base);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(pm_outdir_open(path, err, sizeof(err)), -1);
	contains(err, "it must be a directory");
	snprintf(path, sizeof(path), "%s/file/sub", base);
	assert_int_equal(pm_outdir_open(path, err, sizeof(err)), -1);
	contains(err, "Not a directory");
	/* Another user's directory: they could replace the files. */
	if (geteuid() == 0) {
		snprintf(path, sizeof(path), "%s/theirs", base);
		assert_int_equal(mkdir(path, 0777), 0);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(pm_outdir_open(path, err, sizeof(err)), -1);
		contains(err, "belongs to uid 65534, not to you");
	}
}

/* A component missing under a dangling link: it cannot be made, said. A
 * directory of the user's that they cannot write (as nobody in a child). */
static void test_cannot_make_or_write(void **state)
{
	char path[PATH_MAX], link[PATH_MAX];
	pid_t pid;
	int st;
	(void)state;

	snprintf(link, sizeof(link), "%s/dangling", base);
	assert_int_equal(symlink("/nonexistent/pm-outdir", link), 0);
	snprintf(path, sizeof(path), "%s/dangling/sub", base);
	assert_int_equal(pm_outdir_open(path, err, sizeof(err)), -1);
	contains(err, "cannot create ");
	contains(err, "/dangling/sub: No such file or directory");
	if (geteuid() != 0)
		return;
	assert_int_equal(chmod(base, 0755), 0);
	snprintf(path, sizeof(path), "%s/readonly", base);
	assert_int_equal(mkdir(path, 0500), 0);
	assert_int_equal(chown(path, 65534, 65534), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		_exit(pm_outdir_open(path, err, sizeof(err)) == -1 &&
		      strstr(err, "you cannot write in ") && strstr(err, "Permission denied") ?
			      0 : 1);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void test_files(void **state)
{
	char path[PATH_MAX], name[64], buf[64];
	int dfd, fd;
	(void)state;

	dfd = pm_outdir_open(base, err, sizeof(err));
	assert_true(dfd >= 0);
	assert_int_equal(pm_outdir_name(name, sizeof(name), 12, "out"), 0);
	assert_string_equal(name, "rank.12.out");
	assert_int_equal(pm_outdir_name(name, 8, 12, "out"), -1);
	/* Appended across opens (each generation's supervisor opens again). */
	fd = pm_outdir_file(dfd, "rank.0.out", err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "one\n", 4), 4);
	close(fd);
	fd = pm_outdir_file(dfd, "rank.0.out", err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "two\n", 4), 4);
	close(fd);
	snprintf(path, sizeof(path), "%s/rank.0.out", base);
	fd = open(path, O_RDONLY);
	assert_int_equal(read(fd, buf, sizeof(buf)), 8);
	assert_int_equal(memcmp(buf, "one\ntwo\n", 8), 0);
	close(fd);
	/* A link is refused, not followed. */
	snprintf(path, sizeof(path), "%s/victim", base);
	close(open(path, O_CREAT | O_WRONLY, 0600));
	assert_int_equal(symlinkat(path, dfd, "rank.1.out"), 0);
	assert_int_equal(pm_outdir_file(dfd, "rank.1.out", err, sizeof(err)), -1);
	contains(err, "symbolic link: refused");
	/* A FIFO is neither waited on nor written: opened read-write (the
	 * file is read back too) it never blocks, with or without a reader,
	 * and it is no regular file. */
	assert_int_equal(mkfifoat(dfd, "rank.2.out", 0600), 0);
	assert_int_equal(pm_outdir_file(dfd, "rank.2.out", err, sizeof(err)), -1);
	contains(err, "rank.2.out is not a regular file of yours: refused");
	{
		int rd = openat(dfd, "rank.2.out", O_RDONLY | O_NONBLOCK);
		assert_true(rd >= 0);
		assert_int_equal(pm_outdir_file(dfd, "rank.2.out", err, sizeof(err)), -1);
		contains(err, "not a regular file of yours");
		close(rd);
	}
	close(dfd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_makes_missing_parents, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cannot_make_or_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
