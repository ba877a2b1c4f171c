/* Root's files in state_dir (common/privdir.h, io/safefile.h): the
 * directory judged without following a link, and files written through it
 * against the plants another user could make: a link or a FIFO under the
 * temporary name or the final one, aimed at a file root alone may change.
 * Run as root, the plants' targets owned by nobody as on a real node. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/privdir.h"
#include "io/safefile.h"

#define NOBODY 65534

static char err[512];
static char dir[] = "/tmp/pm-test-safefile.XXXXXX";
static char paths[4][4096];

/* Two at once in one call (symlink's target and name): buffers in turn. */
static const char *in(const char *name)
{
	static int next;
	char *p = paths[next++ % 4];

	snprintf(p, sizeof(paths[0]), "%s/%s", dir, name);
	return p;
}

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/pm-test-safefile.XXXXXX");
	return mkdtemp(dir) && chmod(dir, 0755) == 0 ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static struct stat st_of(mode_t type, mode_t perm, uid_t uid)
{
	struct stat st;

	memset(&st, 0, sizeof(st));
	st.st_mode = type | perm;
	st.st_uid = uid;
	return st;
}

static void test_judge(void **state)
{
	struct stat st;
	(void)state;

	st = st_of(S_IFDIR, 0755, 0);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), 0);
	st = st_of(S_IFDIR, 0700, 0);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), 0);
	/* The admin guide's old advice for metrics_dir, and /tmp. */
	st = st_of(S_IFDIR, 01777, 0);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/s may be written by other users (owner uid 0, mode 1777)"));
	assert_non_null(strstr(err, "chmod go-w"));
	st = st_of(S_IFDIR, 0775, 0);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), -1);
	st = st_of(S_IFDIR, 0757, 0);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), -1);
	st = st_of(S_IFDIR, 0755, NOBODY);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/s belongs to another user (owner uid 65534"));
	st = st_of(S_IFLNK, 0777, 0);
	assert_int_equal(pm_privdir_judge(&st, 0, "/s", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is not a directory"));
}

static void test_privdir_open(void **state)
{
	int fd;
	(void)state;

	/* Missing: created, root's, 0755. */
	fd = pm_privdir_open(in("state"), 0755, 0, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	/* A link to root's own directory is not followed. */
	assert_int_equal(symlink(in("state"), in("link")), 0);
	assert_int_equal(pm_privdir_open(in("link"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "is not a directory (a link is not followed)"));
	/* Another user's directory, and one anybody may write. */
	assert_int_equal(mkdir(in("users"), 0755), 0);
	assert_int_equal(chown(in("users"), NOBODY, NOBODY), 0);
	assert_int_equal(pm_privdir_open(in("users"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "belongs to another user"));
	assert_int_equal(mkdir(in("open"), 0755), 0);
	assert_int_equal(chmod(in("open"), 01777), 0);
	assert_int_equal(pm_privdir_open(in("open"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "may be written by other users"));
}

/* A root-only file of nobody's, 0600, "secret": the plants' target. */
static void make_target(void)
{
	int fd = open(in("secret"), O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "secret", 6), 6);
	close(fd);
	assert_int_equal(chown(in("secret"), NOBODY, NOBODY), 0);
	assert_int_equal(chmod(in("secret"), 0600), 0);
}

static void assert_target_intact(void)
{
	struct stat st;
	char buf[16] = "";
	int fd;

	assert_int_equal(lstat(in("secret"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(st.st_uid, NOBODY);
	fd = open(in("secret"), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 6);
	close(fd);
	assert_string_equal(buf, "secret");
}

static void assert_file(const char *name, const char *content, mode_t mode)
{
	struct stat st;
	char buf[64] = "";
	int fd;

	assert_int_equal(lstat(in(name), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, mode);
	assert_int_equal(st.st_uid, 0);
	fd = open(in(name), O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), (ssize_t)strlen(content));
	close(fd);
	assert_string_equal(buf, content);
}

static int opendir_fd(void)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);

	assert_true(dfd >= 0);
	return dfd;
}

/* The attack of issue 20: a link under the temporary name to a root-only
 * file. Root neither writes through it nor chmods the target 0644. */
static void test_write_tmp_link(void **state)
{
	char tmp[256];
	int dfd = opendir_fd();
	(void)state;

	make_target();
	snprintf(tmp, sizeof(tmp), ".topo.xml.%ld.tmp", (long)getpid());
	assert_int_equal(symlink(in("secret"), in(tmp)), 0);
	assert_int_equal(pm_safefile_write(dfd, "topo.xml", "<xml/>", 6, 0644, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "cannot create"));
	assert_non_null(strstr(err, "File exists"));
	assert_target_intact();
	/* Not root's to remove either, and no file made. */
	assert_int_equal(access(in("topo.xml"), F_OK), -1);
	close(dfd);
}

/* A FIFO under the temporary name: refused at once, root never blocks. */
static void test_write_tmp_fifo(void **state)
{
	char tmp[256];
	int dfd = opendir_fd();
	(void)state;

	snprintf(tmp, sizeof(tmp), ".topo.xml.%ld.tmp", (long)getpid());
	assert_int_equal(mkfifo(in(tmp), 0666), 0);
	assert_int_equal(pm_safefile_write(dfd, "topo.xml", "<xml/>", 6, 0644, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "File exists"));
	close(dfd);
}

/* Plants under the final name are replaced, never opened or followed. */
static void test_write_final_plants(void **state)
{
	int dfd = opendir_fd();
	(void)state;

	make_target();
	assert_int_equal(symlink(in("secret"), in("a.xml")), 0);
	assert_int_equal(mkfifo(in("b.xml"), 0666), 0);
	assert_int_equal(pm_safefile_write(dfd, "a.xml", "<a/>", 4, 0644, err, sizeof(err)), 0);
	assert_int_equal(pm_safefile_write(dfd, "b.xml", "<b/>", 4, 0640, err, sizeof(err)), 0);
	assert_file("a.xml", "<a/>", 0644);
	assert_file("b.xml", "<b/>", 0640);
	assert_target_intact();
	/* Written again: replaced, nothing left beside it. */
	assert_int_equal(pm_safefile_write(dfd, "a.xml", "<a2/>", 5, 0644, err, sizeof(err)), 0);
	assert_file("a.xml", "<a2/>", 0644);
	close(dfd);
}

static void test_write_bad_name(void **state)
{
	int dfd = opendir_fd();
	(void)state;

	assert_int_equal(pm_safefile_write(dfd, "../x", "", 0, 0644, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a plain name"));
	close(dfd);
}

/* A directory under the final name: the rename fails, said, and the
 * temporary file goes; a state_dir under a missing parent is said. */
static void test_write_rename_fails(void **state)
{
	int dfd = opendir_fd();
	struct stat st;
	(void)state;

	assert_int_equal(mkdir(in("topo.xml"), 0755), 0);
	assert_int_equal(close(open(in("topo.xml/inside"), O_WRONLY | O_CREAT, 0600)), 0);
	assert_int_equal(pm_safefile_write(dfd, "topo.xml", "<xml/>", 6, 0644, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "cannot rename .topo.xml."));
	assert_non_null(strstr(err, ".tmp to topo.xml: "));
	snprintf(paths[3], sizeof(paths[3]), ".topo.xml.%ld.tmp", (long)getpid());
	assert_int_equal(fstatat(dfd, paths[3], &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(lstat(in("topo.xml/inside"), &st), 0);
	close(dfd);
	assert_int_equal(pm_privdir_open(in("none/state"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "cannot create "));
	assert_non_null(strstr(err, "/none/state: No such file or directory"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judge),
		cmocka_unit_test_setup_teardown(test_privdir_open, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_tmp_link, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_tmp_fifo, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_final_plants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_bad_name, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_rename_fails, setup, teardown),
	};

	if (geteuid() != 0) {
		printf("skipped: root's files are tested as root (chown to nobody)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
