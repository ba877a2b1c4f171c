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
static char paths[8][4096];

/* Two at once in one call (symlink's target and name): buffers in turn. */
static const char *in(const char *name)
{
	static int next;
	char *p = paths[next++ % 8];

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
	assert_non_null(strstr(err, "/none/state: "));
	assert_non_null(strstr(err, "/none above it does not exist: only the last directory is made"));
}


/* Issue 32 item 8: a directory above state_dir (or metrics_dir), over the
 * class of what may be found there. */
static void test_judge_above(void **state)
{
	static const struct {
		mode_t type, perm;
		uid_t uid;
		int want;
	} c[] = {
		{ S_IFDIR, 0755, 0, 0 },     { S_IFDIR, 0700, 0, 0 },
		{ S_IFDIR, 0711, 0, 0 },     { S_IFDIR, 01777, 0, 0 },  /* /tmp */
		{ S_IFDIR, 01770, 0, 0 },    { S_IFDIR, 0775, 0, -1 },
		{ S_IFDIR, 0757, 0, -1 },    { S_IFDIR, 0777, 0, -1 },
		{ S_IFDIR, 02777, 0, -1 },   { S_IFDIR, 0755, NOBODY, -1 },
		{ S_IFDIR, 01777, NOBODY, -1 }, { S_IFDIR, 0700, NOBODY, -1 },
		{ S_IFLNK, 0777, 0, 1 },     { S_IFLNK, 0777, NOBODY, -1 },
		{ S_IFREG, 0755, 0, -1 },    { S_IFIFO, 0600, 0, -1 },
	};
	struct stat st;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		st = st_of(c[i].type, c[i].perm, c[i].uid);
		err[0] = '\0';
		if (pm_privdir_judge_above(&st, 0, "/a/b/s", "/a/b", err, sizeof(err)) != c[i].want)
			fail_msg("case %zu (type %o, mode %04o, uid %u): not %d", i,
				 (unsigned)c[i].type, (unsigned)c[i].perm, (unsigned)c[i].uid,
				 c[i].want);
		if (c[i].want < 0 && !strstr(err, "/a/b/s: /a/b above it "))
			fail_msg("case %zu: %s", i, err);
	}
	st = st_of(S_IFLNK, 0777, NOBODY);
	assert_int_equal(pm_privdir_judge_above(&st, 0, "/a/b/s", "/a/b", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/a/b above it is a link of another user's (owner uid 65534"));
	st = st_of(S_IFDIR, 0777, 0);
	assert_int_equal(pm_privdir_judge_above(&st, 0, "/a/b/s", "/a/b", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "may be written by other users (owner uid 0, mode 0777): "
			       "every directory above it must be root's"));
	/* A user's own directory (owner 1000): theirs above it too. */
	st = st_of(S_IFDIR, 0755, 1000);
	assert_int_equal(pm_privdir_judge_above(&st, 1000, "/h/s", "/h", err, sizeof(err)), 0);
}

/* Whether root made anything in d since the test began. */
static int entries(const char *d)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s')\"", d);
	return system(cmd) == 0 ? 0 : 1;
}

/* state_dir below another user's link to a root-only directory, below a
 * directory they may write or own: refused, said, nothing made through it.
 * Root's own links on the way (as /var/run -> /run) are walked. */
static void test_privdir_parents(void **state)
{
	int fd;
	(void)state;

	assert_int_equal(mkdir(in("rootonly"), 0700), 0);
	assert_int_equal(mkdir(in("x"), 0755), 0);
	assert_int_equal(symlink(in("rootonly"), in("x/link")), 0);
	assert_int_equal(lchown(in("x/link"), NOBODY, NOBODY), 0);
	assert_int_equal(pm_privdir_open(in("x/link/state"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/x/link above it is a link of another user's"));
	assert_int_equal(entries(in("rootonly")), 0);
	assert_int_equal(pm_privdir_find(in("x/link/state"), 0, NULL, err, sizeof(err)), -1);
	/* A link of theirs further up. */
	assert_int_equal(mkdir(in("rootonly/sub"), 0755), 0);
	assert_int_equal(symlink(in("rootonly"), in("ulink")), 0);
	assert_int_equal(lchown(in("ulink"), NOBODY, NOBODY), 0);
	assert_int_equal(pm_privdir_open(in("ulink/sub/state"), 0755, 0, err, sizeof(err)), -1);
	assert_int_equal(entries(in("rootonly/sub")), 0);
	/* A parent anyone may write (not sticky), one of theirs, 2 levels up. */
	assert_int_equal(mkdir(in("open"), 0755), 0);
	assert_int_equal(chmod(in("open"), 0777), 0);
	assert_int_equal(mkdir(in("open/r"), 0755), 0);
	assert_int_equal(pm_privdir_open(in("open/r/state"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/open above it may be written by other users (owner uid 0, "
			       "mode 0777)"));
	assert_int_equal(entries(in("open/r")), 0);
	assert_int_equal(mkdir(in("users"), 0755), 0);
	assert_int_equal(chown(in("users"), NOBODY, NOBODY), 0);
	assert_int_equal(pm_privdir_open(in("users/state"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/users above it belongs to another user (owner uid 65534"));
	assert_int_equal(entries(in("users")), 0);
	/* Root's link to a directory below theirs: the target is walked. */
	assert_int_equal(mkdir(in("users/sub"), 0755), 0);
	assert_int_equal(symlink(in("users/sub"), in("rlink")), 0);
	assert_int_equal(pm_privdir_open(in("rlink/state"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/rlink -> "));
	assert_non_null(strstr(err, "/users above it belongs to another user"));
	assert_int_equal(entries(in("users/sub")), 0);
	/* Allowed: a sticky directory anyone may write (like /tmp), root's own
	 * links (absolute and relative), "." and "..". */
	assert_int_equal(mkdir(in("sticky"), 0755), 0);
	assert_int_equal(chmod(in("sticky"), 01777), 0);
	fd = pm_privdir_open(in("sticky/state"), 0755, 0, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(symlink(in("x"), in("rabs")), 0);
	assert_int_equal(symlink("x", in("rrel")), 0);
	fd = pm_privdir_open(in("rabs/state"), 0755, 0, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pm_privdir_find(in("rrel/./state"), 0, &fd, err, sizeof(err)), 0);
	close(fd);
	assert_int_equal(access(in("x/state"), F_OK), 0);
	assert_int_equal(pm_privdir_find(in("x/../x/state/"), 0, NULL, err, sizeof(err)), 0);
	/* Nothing made by find: missing last (1, as the plugin makes it), missing
	 * above (-1). */
	assert_int_equal(pm_privdir_find(in("x/none"), 0, NULL, err, sizeof(err)), 1);
	assert_int_equal(access(in("x/none"), F_OK), -1);
	assert_int_equal(pm_privdir_find(in("x/none/state"), 0, NULL, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "/x/none above it does not exist"));
	/* A loop of root's links ends. */
	assert_int_equal(symlink(in("loop2"), in("loop1")), 0);
	assert_int_equal(symlink(in("loop1"), in("loop2")), 0);
	assert_int_equal(pm_privdir_open(in("loop1/state"), 0755, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "more than 16 links above it"));
}

/* Issue 32 item 7: what a user's process may find under a name it writes. */
static void test_userfile_judge(void **state)
{
	static const struct {
		mode_t type, perm;
		uid_t uid;
		const char *what; /* NULL: ours */
	} c[] = {
		{ S_IFREG, 0644, 1000, NULL },       { S_IFREG, 0600, 1000, NULL },
		{ S_IFREG, 0666, 1000, NULL },       { S_IFREG, 0666, NOBODY, "another user's file" },
		{ S_IFREG, 0600, 0, "another user's file" },
		{ S_IFIFO, 0666, 1000, "a FIFO" },   { S_IFIFO, 0666, NOBODY, "a FIFO" },
		{ S_IFLNK, 0777, 1000, "a link" },   { S_IFLNK, 0777, NOBODY, "a link" },
		{ S_IFDIR, 0755, 1000, "a directory" }, { S_IFSOCK, 0777, 1000, "not a regular file" },
		{ S_IFCHR, 0666, 0, "not a regular file" },
	};
	struct stat st;
	size_t i;
	(void)state;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		st = st_of(c[i].type, c[i].perm, c[i].uid);
		err[0] = '\0';
		if (pm_userfile_judge(&st, 1000, "/shared/t.journal", err, sizeof(err)) !=
		    (c[i].what ? -1 : 0))
			fail_msg("case %zu: %s", i, err);
		if (c[i].what && (!strstr(err, "/shared/t.journal is ") ||
				  !strstr(err, c[i].what) || !strstr(err, "not written through")))
			fail_msg("case %zu: %s", i, err);
	}
}

/* What another user (nobody) plants in a sticky directory anyone may write,
 * under the name a sweep's journal takes. */
enum plant { P_FIFO, P_LINK, P_FILE, P_HARDLINK, P_DIR, P_NPLANTS };
static const char *plant_what[] = { "a FIFO", "a link", "another user's file",
				    "another user's file", "a directory" };

static void make_plant(enum plant p, const char *name)
{
	switch (p) {
	case P_FIFO:
		assert_int_equal(mkfifo(in(name), 0666), 0);
		break;
	case P_LINK:
		assert_int_equal(symlink(in("own"), in(name)), 0);
		break;
	case P_FILE:
		assert_int_equal(close(open(in(name), O_WRONLY | O_CREAT | O_EXCL, 0666)), 0);
		assert_int_equal(chmod(in(name), 0666), 0);
		break;
	case P_HARDLINK:
		assert_int_equal(link(in("sticky/theirs"), in(name)), 0);
		break;
	case P_DIR:
		assert_int_equal(mkdir(in(name), 0777), 0);
		break;
	default:
		break;
	}
	if (p != P_HARDLINK)
		assert_int_equal(lchown(in(name), NOBODY, NOBODY), 0);
}

static off_t size_of(const char *name)
{
	struct stat st;

	assert_int_equal(stat(in(name), &st), 0);
	return st.st_size;
}

static void test_userfile_plants(void **state)
{
	struct stat before, after;
	char buf[16];
	int p, fd, rfd;
	(void)state;

	assert_int_equal(mkdir(in("sticky"), 0755), 0);
	assert_int_equal(chmod(in("sticky"), 01777), 0);
	/* The user's own file a link could aim at, and another user's 0666
	 * file a hard link could. */
	assert_int_equal(close(open(in("own"), O_WRONLY | O_CREAT | O_EXCL, 0644)), 0);
	assert_int_equal(close(open(in("sticky/theirs"), O_WRONLY | O_CREAT | O_EXCL, 0666)), 0);
	assert_int_equal(chown(in("sticky/theirs"), NOBODY, NOBODY), 0);
	assert_int_equal(chmod(in("sticky/theirs"), 0666), 0);
	for (p = 0; p < P_NPLANTS; p++) {
		make_plant((enum plant)p, "sticky/t.journal");
		assert_int_equal(lstat(in("sticky/t.journal"), &before), 0);
		/* The attacker reads the FIFO: nothing may come. */
		rfd = p == P_FIFO ? open(in("sticky/t.journal"), O_RDONLY | O_NONBLOCK) : -1;
		err[0] = '\0';
		assert_int_equal(pm_userfile_create(in("sticky/t.journal"), O_APPEND, 0644, err,
						    sizeof(err)), -1);
		if (!strstr(err, plant_what[p]) || !strstr(err, "not written through"))
			fail_msg("plant %d: %s", p, err);
		assert_int_equal(pm_userfile_append(in("sticky/t.journal"), 0644, err,
						    sizeof(err)), -1);
		if (!strstr(err, plant_what[p]))
			fail_msg("plant %d, append: %s", p, err);
		assert_int_equal(pm_userfile_read(in("sticky/t.journal"), err, sizeof(err)), -1);
		/* The plant is left as it was, nothing written through it. */
		assert_int_equal(lstat(in("sticky/t.journal"), &after), 0);
		assert_int_equal(after.st_ino, before.st_ino);
		assert_int_equal(after.st_mode, before.st_mode);
		if (p == P_FIFO) {
			assert_int_equal(read(rfd, buf, sizeof(buf)), 0);
			close(rfd);
		}
		assert_int_equal(size_of("own"), 0);
		assert_int_equal(size_of("sticky/theirs"), 0);
		if (p == P_DIR)
			assert_int_equal(rmdir(in("sticky/t.journal")), 0);
		else
			assert_int_equal(unlink(in("sticky/t.journal")), 0);
	}
	/* An earlier run's journal of the user's own: replaced, the lines of
	 * the old run gone; a hard link of it elsewhere keeps them. */
	fd = open(in("sticky/t.journal"), O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_int_equal(write(fd, "old\n", 4), 4);
	close(fd);
	assert_int_equal(link(in("sticky/t.journal"), in("kept")), 0);
	fd = pm_userfile_create(in("sticky/t.journal"), O_APPEND, 0644, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "new\n", 4), 4);
	close(fd);
	assert_int_equal(size_of("kept"), 4);
	/* A take-over appends to the same run's journal, and reads it back. */
	fd = pm_userfile_append(in("sticky/t.journal"), 0644, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "more\n", 5), 5);
	close(fd);
	fd = pm_userfile_read(in("sticky/t.journal"), err, sizeof(err));
	assert_true(fd >= 0);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(read(fd, buf, sizeof(buf) - 1), 9);
	close(fd);
	assert_string_equal(buf, "new\nmore\n");
	/* None yet: append makes it, read says so. */
	fd = pm_userfile_append(in("sticky/none.journal"), 0644, err, sizeof(err));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(pm_userfile_read(in("sticky/gone.journal"), err, sizeof(err)), -1);
	assert_int_equal(errno, ENOENT);
}

/* The results' temporary file: a name no plant can take ahead. */
static void test_userfile_temp(void **state)
{
	char t1[4200], t2[4200];
	struct stat st;
	int fd1, fd2;
	(void)state;

	make_plant(P_FILE, "r.results.tmp");
	fd1 = pm_userfile_temp(in("r.results"), t1, sizeof(t1), 0644, err, sizeof(err));
	fd2 = pm_userfile_temp(in("r.results"), t2, sizeof(t2), 0644, err, sizeof(err));
	assert_true(fd1 >= 0 && fd2 >= 0);
	assert_string_not_equal(t1, t2);
	assert_int_equal(strncmp(t1, in("r.results."), strlen(in("r.results."))), 0);
	assert_int_equal(fstat(fd1, &st), 0);
	assert_int_equal(st.st_uid, geteuid());
	assert_int_equal(st.st_nlink, 1);
	close(fd1);
	close(fd2);
	assert_int_equal(size_of("r.results.tmp"), 0);
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
		cmocka_unit_test(test_judge_above),
		cmocka_unit_test_setup_teardown(test_privdir_parents, setup, teardown),
		cmocka_unit_test(test_userfile_judge),
		cmocka_unit_test_setup_teardown(test_userfile_plants, setup, teardown),
		cmocka_unit_test_setup_teardown(test_userfile_temp, setup, teardown),
	};

	if (geteuid() != 0) {
		printf("skipped: root's files are tested as root (chown to nobody)\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
