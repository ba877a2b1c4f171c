/* Unit tests of runtime/io/memblob.c over socketpairs: a rank's memory
 * file passed to procmgrd, sealed there, passed back and mapped; every
 * refusal (not a memory file, not sealable, still mapped writable, not the
 * size announced) and no descriptor leaked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "io/memblob.h"

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* What a rank does: a sealable memory file with the bytes, unmapped. */
static int rank_blob(const char *text, unsigned flags)
{
	size_t len = strlen(text);
	int fd = memfd_create("state", MFD_CLOEXEC | flags);
	void *p;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	memcpy(p, text, len);
	munmap(p, len);
	return fd;
}

static void test_save_seal_load(void **state)
{
	int sv[2], fd, got, back;
	char buf[64];
	uint64_t size;
	char err[160];
	const char *text = "weights of generation 3";
	void *p;
	int before = open_fds();
	(void)state;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	fd = rank_blob(text, MFD_ALLOW_SEALING);
	assert_int_equal(pm_fd_send(sv[0], "SAVE model 23\n", 14, fd), 0);
	close(fd); /* the rank lets go; procmgrd holds it now */
	assert_int_equal(pm_fd_recv(sv[1], buf, sizeof(buf), &got), 14);
	assert_memory_equal(buf, "SAVE model 23\n", 14);
	assert_true(got >= 0);
	assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(pm_memblob_seal(got, 23, &size, err, sizeof(err)), 0);
	assert_int_equal(size, 23);
	/* Sealed: neither procmgrd nor anyone with the descriptor changes it. */
	assert_int_equal(write(got, "x", 1), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(got, 1), -1);
	assert_true(mmap(NULL, 23, PROT_WRITE, MAP_SHARED, got, 0) == MAP_FAILED);
	/* Sealing again is fine (a replica re-sent). */
	assert_int_equal(pm_memblob_seal(got, 23, &size, err, sizeof(err)), 0);
	/* The next generation gets it back and maps it. */
	assert_int_equal(pm_fd_send(sv[1], "OK model 1 23\n", 14, got), 0);
	assert_int_equal(pm_fd_recv(sv[0], buf, sizeof(buf), &back), 14);
	assert_true(back >= 0);
	p = mmap(NULL, 23, PROT_READ, MAP_SHARED, back, 0);
	assert_true(p != MAP_FAILED);
	assert_memory_equal(p, text, 23);
	munmap(p, 23);
	close(back);
	close(got);
	close(sv[0]);
	close(sv[1]);
	assert_int_equal(open_fds(), before);
}

static void test_refusals(void **state)
{
	char err[160], path[] = "/tmp/pm-memblob-XXXXXX";
	uint64_t size;
	int fd, pp[2];
	void *p;
	(void)state;

	/* A file on a disk: procmgr keeps memory, never a user's file. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(pm_memblob_seal(fd, 0, &size, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a memory file"));
	close(fd);
	/* A pipe: procmgrd could block on it. */
	assert_int_equal(pipe(pp), 0);
	assert_int_equal(pm_memblob_seal(pp[0], 0, &size, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a memory file"));
	close(pp[0]);
	close(pp[1]);
	/* Not sealable. */
	fd = rank_blob("abc", 0);
	assert_int_equal(pm_memblob_seal(fd, 3, &size, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "created without MFD_ALLOW_SEALING"));
	close(fd);
	/* Still mapped writable by the rank: it could change the saved bytes. */
	fd = rank_blob("abc", MFD_ALLOW_SEALING);
	p = mmap(NULL, 3, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(pm_memblob_seal(fd, 3, &size, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "still mapped writable"));
	munmap(p, 3);
	/* Not the size announced (the limits were checked on that size). */
	assert_int_equal(pm_memblob_seal(fd, 2, &size, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "3 bytes, not the 2 announced"));
	assert_int_equal(pm_memblob_seal(fd, 3, &size, err, sizeof(err)), 0);
	close(fd);
	/* Sealed half-way by the rank. */
	fd = rank_blob("abc", MFD_ALLOW_SEALING);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL), 0);
	assert_int_equal(pm_memblob_seal(fd, 3, &size, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "leave the sealing to procmgr"));
	close(fd);
}

/* A message without a descriptor, one with two (the extra is closed, not
 * leaked), and the peer's end. */
static void test_recv_edges(void **state)
{
	int sv[2], a, b, got, before;
	char buf[16];
	(void)state;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	before = open_fds();
	assert_int_equal(pm_fd_send(sv[0], "LIST\n", 5, -1), 0);
	assert_int_equal(pm_fd_recv(sv[1], buf, sizeof(buf), &got), 5);
	assert_int_equal(got, -1);

	a = rank_blob("a", MFD_ALLOW_SEALING);
	b = rank_blob("b", MFD_ALLOW_SEALING);
	{
		union {
			struct cmsghdr h;
			char space[CMSG_SPACE(2 * sizeof(int))];
		} ctl;
		int two[2] = { a, b };
		struct iovec iov = { .iov_base = "X", .iov_len = 1 };
		struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
				    .msg_controllen = sizeof(ctl.space) };
		memset(&ctl, 0, sizeof(ctl));
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(two));
		memcpy(CMSG_DATA(&ctl.h), two, sizeof(two));
		assert_int_equal(sendmsg(sv[0], &m, 0), 1);
	}
	close(a);
	close(b);
	assert_int_equal(pm_fd_recv(sv[1], buf, sizeof(buf), &got), 1);
	assert_true(got >= 0);
	close(got);
	assert_int_equal(open_fds(), before);

	close(sv[0]);
	assert_int_equal(pm_fd_recv(sv[1], buf, sizeof(buf), &got), 0);
	assert_int_equal(got, -1);
	close(sv[1]);
	assert_int_equal(pm_fd_send(sv[1], "x", 1, -1), -1); /* closed descriptor */
}

static void test_blob_from(void **state)
{
	int fd = pm_memblob_from("replica", "0123456789", 10);
	char buf[10];
	uint64_t size;
	char err[128];
	(void)state;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 10, 0), 10);
	assert_memory_equal(buf, "0123456789", 10);
	assert_int_equal(write(fd, "x", 1), -1); /* sealed */
	assert_int_equal(pm_memblob_seal(fd, 10, &size, err, sizeof(err)), 0);
	close(fd);
	fd = pm_memblob_from("empty", "", 0);
	assert_true(fd >= 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_save_seal_load),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_recv_edges),
		cmocka_unit_test(test_blob_from),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
