/* Unit tests of runtime/io/statesrv.c over real SOCK_SEQPACKET
 * socketpairs and memory files: a rank's save, load and list as the
 * Python module does them, the limits, a save cut off by the rank's death,
 * bad descriptors, another rank's state, every reply's text; and the
 * peer's rank found up its parents in a fixture /proc. No descriptor is
 * leaked. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/memblob.h"
#include "io/statesrv.h"

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

struct pair {
	int cli, srv;
	struct pm_state_peer peer;
};

static void pair_open(struct pair *p, int32_t grank)
{
	int sv[2];
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	p->cli = sv[0];
	p->srv = sv[1];
	assert_int_equal(fcntl(p->srv, F_SETFL, O_NONBLOCK), 0);
	p->peer = (struct pm_state_peer){ .grank = grank };
}

static void pair_close(struct pm_state_store *st, struct pair *p)
{
	close(p->cli);
	pm_statesrv_closed(st, &p->peer);
	close(p->srv);
}

static const struct pm_statesrv_hooks *hooks; /* NULL but in the swap tests */

/* One request through the server: its reply (and descriptor, if any). */
static int ask(struct pm_state_store *st, struct pair *p, const char *req, int fd, char *out,
	       size_t cap, int *rfd, struct pm_state_note *note)
{
	char err[256] = "";
	long n;
	int tmp = -1;

	assert_int_equal(pm_fd_send(p->cli, req, strlen(req), fd), 0);
	if (pm_statesrv_serve(st, p->srv, &p->peer, 5000, hooks, note, err, sizeof(err)) != 1)
		fail_msg("serve '%s': %s", req, err);
	n = pm_fd_recv(p->cli, out, cap - 1, rfd ? rfd : &tmp);
	assert_true(n > 0);
	out[n] = '\0';
	if (!rfd)
		assert_int_equal(tmp, -1);
	return (int)n;
}

static int rank_blob(const char *text, size_t len)
{
	int fd = memfd_create("state", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	assert_int_equal(pwrite(fd, text, len, 0), (ssize_t)len);
	return fd;
}

/* begin, write, commit: the version, or the reply's text in out. */
static void save(struct pm_state_store *st, struct pair *p, const char *name, const char *text,
		 unsigned step, char *out, size_t cap)
{
	char req[128];
	struct pm_state_note note;
	unsigned long long ticket;
	int fd;

	snprintf(req, sizeof(req), "begin %s %zu", name, strlen(text));
	ask(st, p, req, -1, out, cap, NULL, &note);
	if (sscanf(out, "ok %llu", &ticket) != 1)
		return;
	fd = rank_blob(text, strlen(text));
	snprintf(req, sizeof(req), "commit %llu %u", ticket, step);
	ask(st, p, req, fd, out, cap, NULL, &note);
	close(fd);
	if (!strncmp(out, "ok ", 3)) {
		assert_int_equal(note.did, PM_STATE_DID_SAVE);
		assert_string_equal(note.name, name);
		assert_int_equal(note.step, step);
	}
}

/* load: the bytes mapped, as the Python module maps them. */
static void load(struct pm_state_store *st, struct pair *p, const char *name, char *head,
		 char *bytes, size_t cap)
{
	char req[128];
	struct pm_state_note note;
	int fd = -1;

	snprintf(req, sizeof(req), "load %s", name);
	ask(st, p, req, -1, head, 128, &fd, &note);
	bytes[0] = '\0';
	if (fd < 0)
		return;
	{
		struct stat sb;
		void *m;
		assert_int_equal(fstat(fd, &sb), 0);
		assert_true((size_t)sb.st_size < cap);
		/* sealed: no writable shared mapping */
		assert_true(mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
				 0) == MAP_FAILED);
		m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
		assert_true(m != MAP_FAILED);
		memcpy(bytes, m, (size_t)sb.st_size);
		bytes[sb.st_size] = '\0';
		munmap(m, (size_t)sb.st_size);
	}
	close(fd);
	assert_int_equal(note.did, PM_STATE_DID_LOAD);
}

static void release(int h, void *arg)
{
	(void)arg;
	close(h);
}

static const struct pm_state_cfg cfg = { .max_rank = 100, .max_node = 150, .max_names = 4 };

static void test_save_load_versions(void **state)
{
	struct pm_state_store st;
	struct pair a, b;
	char out[1024], bytes[256];
	int before = open_fds();
	(void)state;

	pm_state_init(&st, &cfg, 0);
	pair_open(&a, 3);
	load(&st, &a, "model", out, bytes, sizeof(bytes));
	assert_string_equal(out, "none");
	save(&st, &a, "model", "weights at step 24", 24, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	save(&st, &a, "model", "weights at step 25", 25, out, sizeof(out));
	assert_string_equal(out, "ok 2");
	save(&st, &a, "step", "25", 25, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	pair_close(&st, &a);
	/* The next generation of rank 3: a new connection. */
	pair_open(&b, 3);
	load(&st, &b, "model", out, bytes, sizeof(bytes));
	assert_string_equal(out, "ok 2 18 25 0");
	assert_string_equal(bytes, "weights at step 25");
	ask(&st, &b, "list", -1, out, sizeof(out), NULL, &(struct pm_state_note){ 0 });
	assert_string_equal(out, "ok 2\nmodel 2 18 25 0 0\nstep 1 2 25 0 0");
	pair_close(&st, &b);
	/* Rank 4 sees nothing of rank 3's. */
	pair_open(&b, 4);
	load(&st, &b, "model", out, bytes, sizeof(bytes));
	assert_string_equal(out, "none");
	ask(&st, &b, "list", -1, out, sizeof(out), NULL, &(struct pm_state_note){ 0 });
	assert_string_equal(out, "ok 0");
	pair_close(&st, &b);
	pm_state_clear(&st, release, NULL);
	assert_int_equal(open_fds(), before);
}

static void test_limits_and_refusals(void **state)
{
	struct pm_state_store st;
	struct pair a, b;
	struct pm_state_note note;
	char out[1024], bytes[256];
	int fd, before = open_fds();
	(void)state;

	pm_state_init(&st, &cfg, 0);
	pair_open(&a, 0);
	save(&st, &a, "model", "v1", 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	/* Over the rank's limit: refused with the limit, the rank goes on. */
	ask(&st, &a, "begin big 200", -1, out, sizeof(out), NULL, &note);
	assert_int_equal(note.did, PM_STATE_DID_REFUSE);
	assert_string_equal(out, "err save of 'big' (200 B) refused: rank 0 would keep 202 B, "
				 "over the per-rank limit of 100 B (state_max_rank)");
	save(&st, &a, "model", "v2", 2, out, sizeof(out));
	assert_string_equal(out, "ok 2");
	/* Over the node's: two ranks. */
	pair_open(&b, 1);
	save(&st, &b, "model", "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567", 1, out, sizeof(out));
	assert_string_equal(out, "ok 1");
	{
		struct pair c;
		pair_open(&c, 2);
		ask(&st, &c, "begin more 61", -1, out, sizeof(out), NULL, &note);
		assert_string_equal(out, "err save of 'more' (61 B) refused: this node would hold "
					 "151 B, over the per-node limit of 150 B (state_max_node)");
		pair_close(&st, &c);
	}
	/* A bad request is answered, the connection stays. */
	ask(&st, &b, "save model 3", -1, out, sizeof(out), NULL, &note);
	assert_string_equal(out, "err unknown request 'save': begin, commit, swap, abort, load or list");
	/* A ticket of another connection, or none. */
	ask(&st, &a, "begin model 2", -1, out, sizeof(out), NULL, &note);
	assert_string_equal(out, "ok 4");
	ask(&st, &a, "begin other 2", -1, out, sizeof(out), NULL, &note);
	assert_string_equal(out, "err a save is in flight on this connection: commit or abort it first");
	fd = rank_blob("xx", 2);
	ask(&st, &b, "commit 4 9", fd, out, sizeof(out), NULL, &note);
	assert_string_equal(out, "err no save with that ticket in flight on this connection");
	/* Not the size announced: refused, the save is over, v2 stays. */
	close(fd);
	fd = rank_blob("xxx", 3);
	ask(&st, &a, "commit 4 9", fd, out, sizeof(out), NULL, &note);
	close(fd);
	assert_int_equal(note.did, PM_STATE_DID_REFUSE);
	assert_non_null(strstr(out, "err "));
	assert_int_equal(st.pending, 0);
	/* Not a memory file: a pipe. */
	ask(&st, &a, "begin model 2", -1, out, sizeof(out), NULL, &note);
	{
		int pp[2];
		assert_int_equal(pipe(pp), 0);
		ask(&st, &a, "commit 5 9", pp[0], out, sizeof(out), NULL, &note);
		close(pp[0]);
		close(pp[1]);
	}
	assert_non_null(strstr(out, "err "));
	/* Abort: nothing changes. */
	ask(&st, &a, "begin model 2", -1, out, sizeof(out), NULL, &note);
	ask(&st, &a, "abort 6", -1, out, sizeof(out), NULL, &note);
	assert_string_equal(out, "ok");
	assert_int_equal(st.pending, 0);
	load(&st, &a, "model", out, bytes, sizeof(bytes));
	assert_string_equal(out, "ok 2 2 2 0");
	assert_string_equal(bytes, "v2");
	pair_close(&st, &a);
	pair_close(&st, &b);
	pm_state_clear(&st, release, NULL);
	assert_int_equal(open_fds(), before);
}

/* The rank died between begin and commit: its connection closes, the
 * save is aborted, the last good version is what the next one loads. */
static void test_cut_off(void **state)
{
	struct pm_state_store st;
	struct pair a, b;
	struct pm_state_note note;
	char out[256], bytes[256], err[128];
	int before = open_fds();
	(void)state;

	pm_state_init(&st, &cfg, 0);
	pair_open(&a, 2);
	save(&st, &a, "model", "good", 7, out, sizeof(out));
	ask(&st, &a, "begin model 4", -1, out, sizeof(out), NULL, &note);
	assert_string_equal(out, "ok 2");
	assert_int_equal(st.pending, 4);
	close(a.cli); /* SIGKILL */
	assert_int_equal(pm_statesrv_serve(&st, a.srv, &a.peer, 0, NULL, &note, err, sizeof(err)), 0);
	pm_statesrv_closed(&st, &a.peer);
	close(a.srv);
	assert_int_equal(st.pending, 0);
	pair_open(&b, 2);
	load(&st, &b, "model", out, bytes, sizeof(bytes));
	assert_string_equal(out, "ok 1 4 7 0");
	assert_string_equal(bytes, "good");
	pair_close(&st, &b);
	pm_state_clear(&st, release, NULL);
	assert_int_equal(open_fds(), before);
}

static void stat_file(const char *root, int pid, const char *comm, int ppid)
{
	char path[256];
	FILE *f;
	snprintf(path, sizeof(path), "%s/%d", root, pid);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/%d/stat", root, pid);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%d (%s) S %d 1 1 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %d 100 10\n", pid,
		comm, ppid, 1000 + pid);
	fclose(f);
}

/* swap: the file given, its version kept writable; the reply hands back
 * the version it replaced (*back, -1 if none). Returns the reply in out. */
static void swap(struct pm_state_store *st, struct pair *p, const char *name, int fd,
		 size_t len, unsigned step, char *out, size_t cap, int *back)
{
	char req[128];
	struct pm_state_note note;
	unsigned long long ticket;

	*back = -1;
	snprintf(req, sizeof(req), "begin %s %zu", name, len);
	ask(st, p, req, -1, out, cap, NULL, &note);
	assert_int_equal(sscanf(out, "ok %llu", &ticket), 1);
	snprintf(req, sizeof(req), "swap %llu %u", ticket, step);
	ask(st, p, req, fd, out, cap, back, &note);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return !fstat(a, &sa) && !fstat(b, &sb) && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

static int reading_fd = -1;
static bool reading(int handle, void *arg)
{
	(void)arg;
	return reading_fd >= 0 && same_file(handle, reading_fd);
}

/* Two files per name take turns: each swap hands back the one before,
 * writable and of its size, while the version kept is the new one; a
 * committed (sealed) version, a loaded one and one being sent to the
 * buddy never come back. */
static void test_swap_takes_turns(void **state)
{
	static const struct pm_statesrv_hooks h = { .reading = reading };
	struct pm_state_store st;
	struct pair a, b;
	char out[1024], bytes[256];
	int f1, f2, back, back2, before = open_fds();
	(void)state;

	hooks = &h;
	pm_state_init(&st, &cfg, 0);
	pair_open(&a, 3);
	f1 = rank_blob("version one", 11);
	swap(&st, &a, "model", f1, 11, 1, out, sizeof(out), &back);
	assert_string_equal(out, "ok 1");
	assert_int_equal(back, -1); /* nothing before it */
	f2 = rank_blob("version two", 11);
	swap(&st, &a, "model", f2, 11, 2, out, sizeof(out), &back);
	assert_string_equal(out, "ok 2");
	assert_true(back >= 0 && same_file(back, f1));
	assert_true(pm_memblob_writable(back));
	/* Its size is fixed (nothing procmgrd reads may end short). */
	assert_int_equal(ftruncate(back, 3), -1);
	/* Written again in place: the next version, f2 comes back. */
	assert_int_equal(pwrite(back, "version 333", 11, 0), 11);
	swap(&st, &a, "model", back, 11, 3, out, sizeof(out), &back2);
	assert_string_equal(out, "ok 3");
	assert_true(back2 >= 0 && same_file(back2, f2));
	close(back);
	close(f2);
	/* Being sent to the buddy: kept, not handed back. */
	reading_fd = f1;
	assert_int_equal(pwrite(back2, "version 444", 11, 0), 11);
	swap(&st, &a, "model", back2, 11, 4, out, sizeof(out), &back);
	assert_string_equal(out, "ok 4");
	assert_int_equal(back, -1);
	reading_fd = -1;
	close(back2);
	close(f1);
	/* A commit's version is sealed: a swap after it gets nothing back. */
	save(&st, &a, "model", "version 555", 5, out, sizeof(out));
	assert_string_equal(out, "ok 5");
	f1 = rank_blob("version six", 11);
	swap(&st, &a, "model", f1, 11, 6, out, sizeof(out), &back);
	assert_string_equal(out, "ok 6");
	assert_int_equal(back, -1);
	pair_close(&st, &a);
	/* The next generation loads version 6 (its file is sealed then, a
	 * writable mapping refused: load() checks it) and swaps twice: the
	 * loaded file never comes back to be written. */
	pair_open(&b, 3);
	load(&st, &b, "model", out, bytes, sizeof(bytes));
	assert_string_equal(bytes, "version six");
	assert_false(pm_memblob_writable(f1));
	close(f1);
	f2 = rank_blob("version sev", 11);
	swap(&st, &b, "model", f2, 11, 7, out, sizeof(out), &back);
	assert_string_equal(out, "ok 7");
	assert_int_equal(back, -1);
	/* A swap of the wrong size is refused; version 7 stays. */
	f1 = rank_blob("short", 5);
	swap(&st, &b, "model", f1, 11, 8, out, sizeof(out), &back);
	assert_string_equal(out, "err 5 bytes, not the 11 announced");
	assert_int_equal(back, -1);
	close(f1);
	load(&st, &b, "model", out, bytes, sizeof(bytes));
	assert_string_equal(bytes, "version sev");
	close(f2);
	pair_close(&st, &b);
	pm_state_clear(&st, release, NULL);
	hooks = NULL;
	assert_int_equal(open_fds(), before);
}

static void test_peer_index(void **state)
{
	char root[] = "/tmp/test_statesrv.XXXXXX";
	pid_t sup[3] = { 40, 0, 50 };
	(void)state;

	assert_non_null(mkdtemp(root));
	stat_file(root, 50, "procmgr-rank", 10);
	stat_file(root, 60, "python3", 50);
	stat_file(root, 70, "a) S 40 (x", 60); /* a name that lies */
	stat_file(root, 80, "other", 1);
	assert_int_equal(pm_state_peer_index(root, 70, sup, 3), 2);
	assert_int_equal(pm_state_peer_index(root, 60, sup, 3), 2);
	assert_int_equal(pm_state_peer_index(root, 50, sup, 3), 2);
	assert_int_equal(pm_state_peer_index(root, 80, sup, 3), -1);
	assert_int_equal(pm_state_peer_index(root, 90, sup, 3), -1); /* gone */
	assert_int_equal(pm_state_peer_index(root, 60, sup, 1), -1);
	assert_int_equal(pm_state_peer_index("/proc", getpid(), (pid_t[]){ getppid() }, 1), 0);
	/* The start time, read past a name that lies. */
	{
		uint64_t t = 0, me = 0, parent = 0;
		assert_int_equal(pm_state_peer_start(root, 70, &t), 0);
		assert_int_equal(t, 1070);
		assert_int_equal(pm_state_peer_start(root, 90, &t), -1);
		assert_int_equal(pm_state_peer_start("/proc", getpid(), &me), 0);
		assert_int_equal(pm_state_peer_start("/proc", getppid(), &parent), 0);
		assert_true(parent <= me);
	}
	{
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
		assert_int_equal(system(cmd), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_save_load_versions),
		cmocka_unit_test(test_limits_and_refusals),
		cmocka_unit_test(test_cut_off),
		cmocka_unit_test(test_swap_takes_turns),
		cmocka_unit_test(test_peer_index),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
