/* procmgr-rank's stderr pump (runtime/rank/rank_pump.c) over real pipes:
 * the command's stderr reaches ours and its tail is kept; when ours is
 * full the pump stops reading the command's pipe (so the command blocks,
 * as it would writing to Slurm) and never blocks itself; at the end all of
 * it goes out; our stderr gone loses nothing of the tail. With an output
 * file (--procmgr-output-dir) the file gets every byte whatever Slurm
 * takes, and the command never waits for Slurm. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rank/rank_pump.h"

struct fx {
	struct pm_loop loop;
	struct pm_rank_pump p;
	int out[2]; /* out[1] is "our stderr", out[0] what Slurm reads */
};

static int setup(void **state)
{
	static struct fx f;

	memset(&f, 0, sizeof(f));
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pm_loop_init(&f.loop), 0);
	assert_int_equal(pipe2(f.out, O_CLOEXEC | O_NONBLOCK), 0);
	assert_int_equal(pm_rank_pump_init(&f.p, &f.loop, f.out[1]), 0);
	assert_true(f.p.err_fd >= 0 && f.p.child_fd >= 0);
	*state = &f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	pm_rank_pump_free(&f->p);
	close(f->p.err_fd);
	close(f->p.child_fd);
	close(f->out[0]);
	if (f->out[1] >= 0)
		close(f->out[1]);
	close(f->loop.epfd);
	return 0;
}

static size_t slurp(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t k;

	while (n < len && (k = read(fd, buf + n, len - n)) > 0)
		n += (size_t)k;
	return n;
}

static void test_passes_through_and_keeps_tail(void **state)
{
	struct fx *f = *state;
	const char *text = "step 1\nTraceback (most recent call last):\nValueError: nan\n";
	char got[256] = "", tail[256];

	assert_int_equal(write(f->p.child_fd, text, strlen(text)), (ssize_t)strlen(text));
	pm_rank_pump_drain(&f->p, false);
	assert_int_equal(slurp(f->out[0], got, sizeof(got) - 1), strlen(text));
	assert_string_equal(got, text);
	assert_false(f->p.out_armed);
	pm_tail_lines(&f->p.tail, 2, tail, sizeof(tail));
	assert_non_null(strstr(tail, "ValueError: nan"));
	assert_null(strstr(tail, "step 1"));
}

static void test_full_stderr_waits(void **state)
{
	struct fx *f = *state;
	char fill[4096], got[256];
	const char *text = "after the wait\n";
	size_t n;

	/* Slurm does not read: our stderr fills up. */
	assert_true(fcntl(f->out[1], F_SETPIPE_SZ, 4096) > 0);
	memset(fill, 'x', sizeof(fill));
	while (write(f->out[1], fill, sizeof(fill)) > 0)
		;
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(write(f->p.child_fd, text, strlen(text)), (ssize_t)strlen(text));
	pm_rank_pump_drain(&f->p, false);
	/* Kept, waited for, the command's pipe no longer read. */
	assert_true(f->p.out_armed);
	assert_int_equal(f->p.olen, strlen(text));
	/* Slurm reads again; the pump's EPOLLOUT call writes the rest. */
	while ((n = slurp(f->out[0], fill, sizeof(fill))) == sizeof(fill))
		;
	pm_rank_pump_flush(&f->p, false);
	assert_false(f->p.out_armed);
	n = slurp(f->out[0], got, sizeof(got) - 1);
	got[n] = '\0';
	assert_string_equal(got, text);
}

/* At exit everything still held goes out, whatever its size. */
static void test_final_drain_blocks_for_all(void **state)
{
	struct fx *f = *state;
	static char big[60000], got[70000];
	size_t n = 0;
	pid_t pid, r;
	int st;

	memset(big, 'y', sizeof(big));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) { /* the command: more than our stderr's pipe holds */
		(void)!write(f->p.child_fd, big, sizeof(big));
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	/* Slurm, reading everything while the pump blocks on it. */
	r = fork();
	assert_true(r >= 0);
	if (r == 0) {
		ssize_t k;
		close(f->out[1]);
		close(f->p.err_fd);
		close(f->p.child_fd);
		fcntl(f->out[0], F_SETFL, 0);
		while ((k = read(f->out[0], got, sizeof(got))) > 0)
			n += (size_t)k;
		_exit(n == sizeof(big) ? 0 : 1);
	}
	/* Our stderr as Slurm gives it: blocking, and small. */
	assert_int_equal(fcntl(f->out[1], F_SETFL, 0), 0);
	assert_int_equal(fcntl(f->out[1], F_SETPIPE_SZ, 4096) > 0, 1);
	pm_rank_pump_drain(&f->p, true);
	pm_rank_pump_flush(&f->p, true);
	assert_int_equal(f->p.olen, 0);
	close(f->out[1]);
	f->out[1] = -1;
	assert_int_equal(waitpid(r, &st, 0), r);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_stderr_gone_keeps_tail(void **state)
{
	struct fx *f = *state;
	const char *text = "RuntimeError: lost\n";
	char tail[128];

	close(f->out[0]);
	f->out[0] = open("/dev/null", O_RDONLY);
	assert_int_equal(write(f->p.child_fd, text, strlen(text)), (ssize_t)strlen(text));
	pm_rank_pump_drain(&f->p, false);
	assert_int_equal(f->p.olen, 0);
	assert_false(f->p.out_armed);
	pm_tail_lines(&f->p.tail, 5, tail, sizeof(tail));
	assert_non_null(strstr(tail, "RuntimeError: lost"));
}

/* --procmgr-output-dir: a file of the rank's output. */
static int output_file(void)
{
	char path[] = "/tmp/pm-pump-test.XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

static size_t file_len(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end >= 0);
	return (size_t)end;
}

/* With a file, Slurm's full pipe does not stop the command: the pipe is
 * still read, the file gets all at once, Slurm all once it reads. */
static void test_file_gets_all_while_slurm_waits(void **state)
{
	struct fx *f = *state;
	char fill[4096], got[256], copy[256];
	const char *a = "line one\n", *b = "line two\n";
	int fd = output_file();
	size_t n;

	pm_rank_pump_set_file(&f->p, fd);
	assert_true(fcntl(f->out[1], F_SETPIPE_SZ, 4096) > 0);
	memset(fill, 'x', sizeof(fill));
	while (write(f->out[1], fill, sizeof(fill)) > 0)
		;
	assert_int_equal(write(f->p.child_fd, a, strlen(a)), (ssize_t)strlen(a));
	pm_rank_pump_drain(&f->p, false);
	assert_true(f->p.out_armed);
	assert_int_equal(write(f->p.child_fd, b, strlen(b)), (ssize_t)strlen(b));
	pm_rank_pump_drain(&f->p, false);
	/* Both read while Slurm waits: the command never blocked. */
	assert_int_equal(f->p.olen, strlen(a) + strlen(b));
	assert_int_equal(pread(fd, copy, sizeof(copy), 0), (ssize_t)(strlen(a) + strlen(b)));
	assert_int_equal(memcmp(copy, "line one\nline two\n", strlen(a) + strlen(b)), 0);
	while ((n = slurp(f->out[0], fill, sizeof(fill))) == sizeof(fill))
		;
	pm_rank_pump_flush(&f->p, false);
	n = slurp(f->out[0], got, sizeof(got) - 1);
	got[n] = '\0';
	assert_string_equal(got, "line one\nline two\n");
}

/* Slurm takes nothing (srun gone, slurmstepd stuck): beyond the backlog
 * Slurm's copy is dropped, said in a line once it reads again; the file
 * has every byte. */
static void test_file_backlog_drops_for_slurm_only(void **state)
{
	struct fx *f = *state;
	static char chunk[60000], fill[65536];
	size_t total = 0, n;
	int fd = output_file();

	pm_rank_pump_set_file(&f->p, fd);
	assert_true(fcntl(f->out[1], F_SETPIPE_SZ, 4096) > 0);
	memset(fill, 'x', sizeof(fill));
	while (write(f->out[1], fill, sizeof(fill)) > 0)
		;
	memset(chunk, 'z', sizeof(chunk));
	while (total < PM_PUMP_BACKLOG + (1u << 20)) {
		assert_int_equal(write(f->p.child_fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
		total += sizeof(chunk);
		pm_rank_pump_drain(&f->p, false);
		pm_rank_pump_drain(&f->p, false);
	}
	assert_int_equal(file_len(fd), total);
	assert_true(f->p.olen <= PM_PUMP_BACKLOG + sizeof(chunk));
	assert_true(f->p.dropped > 0);
	assert_int_equal(f->p.olen + f->p.dropped, total);
	/* Slurm reads again: what it was kept, then the line. */
	fcntl(f->out[0], F_SETFL, O_NONBLOCK);
	{
		static char all[8u << 20];
		size_t got = 0;
		int rounds = 0;
		while (f->p.olen && rounds++ < 100000) {
			while ((n = slurp(f->out[0], all + got, sizeof(all) - got)) > 0)
				got += n;
			pm_rank_pump_flush(&f->p, false);
		}
		while ((n = slurp(f->out[0], all + got, sizeof(all) - got - 1)) > 0)
			got += n;
		all[got] = '\0';
		assert_non_null(strstr(all, "bytes of this rank's output were not passed to srun"));
	}
	assert_int_equal(f->p.dropped, 0);
}

/* srun gone and Slurm's pipe closed: the file still gets it, nothing dies. */
static void test_file_with_slurm_gone(void **state)
{
	struct fx *f = *state;
	const char *text = "after srun\n";
	char copy[64];
	int fd = output_file();

	pm_rank_pump_set_file(&f->p, fd);
	close(f->out[0]);
	f->out[0] = open("/dev/null", O_RDONLY);
	assert_int_equal(write(f->p.child_fd, text, strlen(text)), (ssize_t)strlen(text));
	pm_rank_pump_drain(&f->p, false);
	pm_rank_pump_flush(&f->p, true);
	assert_int_equal(f->p.olen, 0);
	assert_int_equal(pread(fd, copy, sizeof(copy), 0), (ssize_t)strlen(text));
	assert_int_equal(memcmp(copy, text, strlen(text)), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_passes_through_and_keeps_tail),
		T(test_full_stderr_waits),
		T(test_final_drain_blocks_for_all),
		T(test_stderr_gone_keeps_tail),
		T(test_file_gets_all_while_slurm_waits),
		T(test_file_backlog_drops_for_slurm_only),
		T(test_file_with_slurm_gone),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
