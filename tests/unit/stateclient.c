/* tests/unit/stateclient.h: a rank's end of the state socket. */
#include "stateclient.h"

#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/memblob.h"
#include "procmgrd/state_repl_int.h"
#include "pump.h"
#include "stepnet.h"

char sc_tmp[64];
uint64_t sc_want;

int sc_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

bool sc_readable(void *arg)
{
	struct pollfd p = { .fd = *(int *)arg, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

bool sc_eof(void *arg)
{
	char b;

	return recv(*(int *)arg, &b, 1, MSG_DONTWAIT | MSG_PEEK) == 0;
}

int sc_ask(int sock, const char *req, int fd, char *out, size_t cap, int *rfd)
{
	int got = -1;
	long n;

	out[0] = '\0';
	if (rfd)
		*rfd = -1;
	assert_int_equal(pm_fd_send(sock, req, strlen(req), fd), 0);
	if (!pm_pump(&loop, sc_readable, &sock, 5000))
		return -1;
	n = pm_fd_recv(sock, out, cap - 1, &got);
	if (n <= 0)
		return -1;
	out[n] = '\0';
	if (rfd)
		*rfd = got;
	else
		assert_int_equal(got, -1);
	return 0;
}

int sc_blob(const void *buf, size_t len)
{
	int fd = memfd_create("state", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	assert_int_equal(pwrite(fd, buf, len, 0), (ssize_t)len);
	return fd;
}

void sc_save(int sock, const char *name, const void *buf, size_t len, unsigned step,
	     char *out, size_t cap)
{
	char req[160];
	unsigned long long ticket;
	int fd;

	snprintf(req, sizeof(req), "begin %s %zu", name, len);
	assert_int_equal(sc_ask(sock, req, -1, out, cap, NULL), 0);
	if (sscanf(out, "ok %llu", &ticket) != 1)
		return;
	fd = sc_blob(buf, len);
	snprintf(req, sizeof(req), "commit %llu %u", ticket, step);
	assert_int_equal(sc_ask(sock, req, fd, out, cap, NULL), 0);
	close(fd);
}

char *sc_load(int sock, const char *name, char *head, size_t cap, size_t *len)
{
	char req[160], *bytes;
	struct stat sb;
	void *m;
	int fd;

	snprintf(req, sizeof(req), "load %s", name);
	assert_int_equal(sc_ask(sock, req, -1, head, cap, &fd), 0);
	*len = 0;
	if (fd < 0)
		return NULL;
	assert_int_equal(fstat(fd, &sb), 0);
	*len = (size_t)sb.st_size;
	bytes = malloc(*len + 1);
	assert_non_null(bytes);
	m = mmap(NULL, *len ? *len : 1, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	memcpy(bytes, m, *len);
	bytes[*len] = '\0';
	munmap(m, *len ? *len : 1);
	close(fd);
	return bytes;
}

void sc_mktmp(char *dir, size_t cap)
{
	snprintf(dir, cap, "/tmp/pm-test-state-XXXXXX");
	assert_non_null(mkdtemp(dir));
}

void sc_rmtmp(const char *dir)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
}

const char *sc_sock(int id)
{
	static char p[MAXN][128];

	snprintf(p[id], sizeof(p[id]), "%s/state%d.sock", sc_tmp, id);
	return p[id];
}

struct tnode *sc_node(int id, int nnodes, unsigned spares)
{
	struct tnode *t = node_up(id, nnodes, 2, 1, spares, 0, true);

	assert_int_equal(pm_state_link_init(&t->s, sc_sock(id), 8, 16), 0);
	assert_non_null(t->s.repl);
	return t;
}

void sc_rank_in(struct tnode *t, struct peer *sup, int grank)
{
	rank_pair(t, sup);
	rank_hello(sup, 0, grank);
	assert_true(pm_pump(&loop, rank0_in, t, 5000));
}

struct pm_state_repl *sc_repl(struct tnode *t)
{
	return t->s.repl;
}

bool sc_received(void *arg)
{
	return sc_repl(arg)->received >= sc_want;
}

bool sc_replicated(void *arg)
{
	return sc_repl(arg)->replicated >= sc_want;
}

char *sc_replica(struct tnode *t, int32_t grank, const char *name, uint64_t *version)
{
	const struct pm_state_blob *b = pm_state_find(sc_repl(t)->st, grank, name);
	char *buf;

	assert_non_null(b);
	assert_true(b->replica);
	buf = malloc(b->size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(b->handle, buf, b->size, 0), (ssize_t)b->size);
	buf[b->size] = '\0';
	*version = b->version;
	return buf;
}

int sc_safe_of(const char *list, const char *name)
{
	char want[80];
	const char *l;
	unsigned long long v, size, step, age;
	int safe;

	snprintf(want, sizeof(want), "\n%s ", name);
	if (!(l = strstr(list, want)) ||
	    sscanf(l + strlen(want), "%llu %llu %llu %llu %d", &v, &size, &step, &age, &safe) != 5)
		return -1;
	return safe;
}
