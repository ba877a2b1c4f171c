/* procmgrd's end of a rank link, faked: see ranksup.h. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "ranksup.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void rsup_init(struct rsup *s)
{
	char bin[128];

	memset(s, 0, sizeof(*s));
	s->pid = -1;
	s->lfd = s->fd = s->out = s->err = -1;
	snprintf(s->dir, sizeof(s->dir), "/tmp/rsup.XXXXXX");
	assert_non_null(mkdtemp(s->dir));
	snprintf(s->sock, sizeof(s->sock), "%s/sock", s->dir);
	snprintf(s->hb, sizeof(s->hb), "%s/heartbeat.0", s->dir);
	snprintf(bin, sizeof(bin), "%s/bin", s->dir);
	assert_int_equal(mkdir(bin, 0700), 0);
	signal(SIGPIPE, SIG_IGN);
}

void rsup_script(struct rsup *s, const char *name, const char *body)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/bin/%s", s->dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "#!/bin/sh\n%s\n", body);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, 0700), 0);
}

void rsup_slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t k;

	buf[0] = '\0';
	if (fd < 0)
		return;
	while (n + 1 < len && (k = read(fd, buf + n, len - 1 - n)) > 0)
		n += (size_t)k;
	buf[n] = '\0';
	close(fd);
}

static const char *const cleared[] = { "PROCMGR_STEP_OPTIONS", "PROCMGR_SOCK", "PROCMGR_ARGV0",
				       "PROCMGR_HEARTBEAT", "PROCMGR_PEER_TIMEOUT_MS",
				       "PROCMGR_RESTART_COUNT", "PROCMGR_WARM_FD", "RANK",
				       "LOCAL_RANK", "TORCHELASTIC_ERROR_FILE", NULL };

/* In the child, before exec: the plugin's environment for the rank. */
static void child_env(struct rsup *s, const struct rsup_cfg *c, const char *argv0)
{
	char v[32];
	int i;

	for (i = 0; cleared[i]; i++)
		unsetenv(cleared[i]);
	snprintf(v, sizeof(v), "%d", c->rank);
	setenv("RANK", v, 1);
	setenv("LOCAL_RANK", "0", 1);
	setenv("SLURMD_NODENAME", "n0", 1);
	if (!c->no_sock)
		setenv("PROCMGR_SOCK", s->sock, 1);
	if (!c->no_argv0)
		setenv("PROCMGR_ARGV0", argv0, 1);
	if (c->opts)
		setenv("PROCMGR_STEP_OPTIONS", c->opts, 1);
	if (c->heartbeat)
		setenv("PROCMGR_HEARTBEAT", s->hb, 1);
	if (c->peer_timeout)
		setenv("PROCMGR_PEER_TIMEOUT_MS", c->peer_timeout, 1);
	if (c->path)
		setenv("PATH", c->path, 1);
	for (i = 0; i < 6 && c->env[i]; i++)
		putenv((char *)c->env[i]);
}

void rsup_exec(struct rsup *s, const struct rsup_cfg *c, char *const argv[])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *top = getenv("top_builddir");
	char prog[PATH_MAX];
	int op[2], ep[2];

	snprintf(prog, sizeof(prog), "%s/procmgr-rank", top ? top : ".");
	assert_int_equal(access(prog, X_OK), 0);
	assert_true(strlen(s->sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, s->sock, strlen(s->sock) + 1);
	if (!c->no_listen) {
		s->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		assert_true(s->lfd >= 0);
		assert_int_equal(bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(listen(s->lfd, 4), 0);
	}
	assert_int_equal(pipe2(op, O_CLOEXEC), 0);
	assert_int_equal(pipe2(ep, O_CLOEXEC), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null < 0 || dup2(null, 0) < 0 || dup2(op[1], 1) < 0 || dup2(ep[1], 2) < 0)
			_exit(99);
		child_env(s, c, argv[0]);
		execv(prog, argv);
		_exit(99);
	}
	close(op[1]);
	close(ep[1]);
	s->out = op[0];
	s->err = ep[0];
	fcntl(s->out, F_SETFL, O_NONBLOCK);
	fcntl(s->err, F_SETFL, O_NONBLOCK);
}

static void put_frame(struct rsup *s, const struct pm_msg *m)
{
	uint8_t buf[PM_WIRE_FRAME_MAX];
	int n = pm_msg_encode(m, buf, sizeof(buf)), off = 0;

	assert_true(n > 0);
	assert_true(s->fd >= 0);
	while (off < n) {
		ssize_t k = write(s->fd, buf + off, (size_t)(n - off));
		if (k < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = s->fd, .events = POLLOUT };
			poll(&p, 1, 100);
			continue;
		}
		assert_true(k > 0);
		off += (int)k;
	}
}

static void read_text(int *fd, char *text, size_t *len, size_t cap)
{
	ssize_t k;

	while (*fd >= 0 && *len + 1 < cap) {
		k = read(*fd, text + *len, cap - 1 - *len);
		if (k > 0) {
			*len += (size_t)k;
			text[*len] = '\0';
			continue;
		}
		if (k == 0 || errno != EAGAIN) {
			close(*fd);
			*fd = -1;
		}
		break;
	}
}

static void read_link(struct rsup *s)
{
	ssize_t k;
	int n;

	for (;;) {
		if (s->in_len == sizeof(s->in))
			break; /* decoded below, then read again */
		k = read(s->fd, s->in + s->in_len, sizeof(s->in) - s->in_len);
		if (k < 0 && errno == EAGAIN)
			break;
		if (k <= 0) { /* procmgr-rank closed its end: its last frames first */
			close(s->fd);
			s->fd = -2;
			break;
		}
		s->in_len += (size_t)k;
	}
	for (;;) {
		struct pm_msg m;
		const char *why = NULL;
		n = pm_msg_decode(s->in, s->in_len, &m, &why);
		if (n < 0)
			fail_msg("a malformed frame from procmgr-rank: %s", why);
		if (n == 0)
			break;
		memmove(s->in, s->in + n, s->in_len - (size_t)n);
		s->in_len -= (size_t)n;
		if (m.type == PM_MSG_PING) { /* procmgrd's liveness: a PING back */
			struct pm_msg p;
			s->pings++;
			if (s->mute || s->fd < 0)
				continue;
			pm_msg_init(&p, PM_MSG_PING);
			put_frame(s, &p);
			continue;
		}
		assert_true(s->nmsgs < RS_MSGS);
		s->msgs[s->nmsgs++] = m;
	}
}

/* One bounded round: the link, the pipes, its end. */
static void step(struct rsup *s, int ms)
{
	struct pollfd p[4];
	int n = 0;

	if (s->lfd >= 0)
		p[n++] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
	if (s->fd >= 0)
		p[n++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
	if (s->out >= 0)
		p[n++] = (struct pollfd){ .fd = s->out, .events = POLLIN };
	if (s->err >= 0)
		p[n++] = (struct pollfd){ .fd = s->err, .events = POLLIN };
	poll(p, (nfds_t)n, ms);
	if (s->lfd >= 0) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) { /* one supervisor per test */
			s->fd = fd;
			close(s->lfd);
			s->lfd = -1;
		}
	}
	if (s->fd >= 0)
		read_link(s);
	read_text(&s->out, s->outtext, &s->outlen, sizeof(s->outtext));
	read_text(&s->err, s->errtext, &s->errlen, sizeof(s->errtext));
	if (s->pid > 0 && !s->reaped && waitpid(s->pid, &s->status, WNOHANG) == s->pid)
		s->reaped = true;
}

void rsup_hello(struct rsup *s, int rank)
{
	struct pm_msg m;

	if (!rsup_recv(s, &m))
		fail_msg("no HELLO from procmgr-rank; its stderr: %s", s->errtext);
	assert_int_equal(m.type, PM_MSG_RANK_HELLO);
	assert_int_equal(m.rank, rank);
	assert_int_equal(m.node, 0);
	assert_int_equal(m.status, s->pid);
}

static int first_untaken(struct rsup *s, int type)
{
	int i;

	for (i = s->next; i < s->nmsgs; i++)
		if (s->msgs[i].type != 0 && (type < 0 || s->msgs[i].type == type))
			return i;
	return -1;
}

static bool take(struct rsup *s, int type, struct pm_msg *m)
{
	uint64_t end = now_ms() + RS_WAIT_MS;
	int i;

	while ((i = first_untaken(s, type)) < 0 && now_ms() < end && s->fd != -2 &&
	       !(s->reaped && s->fd < 0))
		step(s, 10);
	if (i < 0 && (i = first_untaken(s, type)) < 0)
		return false;
	*m = s->msgs[i];
	s->msgs[i].type = 0; /* taken */
	while (s->next < s->nmsgs && s->msgs[s->next].type == 0)
		s->next++;
	return true;
}

bool rsup_recv(struct rsup *s, struct pm_msg *m)
{
	return take(s, -1, m);
}

bool rsup_expect(struct rsup *s, int type, struct pm_msg *m)
{
	return take(s, type, m);
}

void rsup_send(struct rsup *s, int type, uint32_t gen, int rank, int node, int status,
	       unsigned count, const char *text)
{
	struct pm_msg m;

	pm_msg_init(&m, (enum pm_msg_type)type);
	m.gen = gen;
	m.rank = rank;
	m.node = node;
	m.status = status;
	m.count = count;
	if (text)
		pm_msg_set_text(&m, text);
	put_frame(s, &m);
}

bool rsup_await_pings(struct rsup *s, int n)
{
	uint64_t end = now_ms() + RS_WAIT_MS;

	while (s->pings < n && now_ms() < end && !s->reaped)
		step(s, 10);
	return s->pings >= n && !s->reaped;
}

static bool has(struct rsup *s, const char *text, const char *needle, int *fd)
{
	uint64_t end = now_ms() + RS_WAIT_MS;

	while (!strstr(text, needle) && now_ms() < end && *fd >= 0)
		step(s, 10);
	return strstr(text, needle) != NULL;
}

bool rsup_out_has(struct rsup *s, const char *needle)
{
	return has(s, s->outtext, needle, &s->out);
}

bool rsup_err_has(struct rsup *s, const char *needle)
{
	return has(s, s->errtext, needle, &s->err);
}

int rsup_exit_code(struct rsup *s)
{
	uint64_t end = now_ms() + RS_WAIT_MS;

	while (!s->reaped && now_ms() < end)
		step(s, 10);
	if (!s->reaped)
		return -1;
	step(s, 0); /* what it said last */
	return WIFEXITED(s->status) ? WEXITSTATUS(s->status) : -1;
}

bool rsup_pid_gone(pid_t pid)
{
	uint64_t end = now_ms() + RS_WAIT_MS;
	char path[64], stat[512];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		const char *p;
		if (kill(pid, 0) && errno == ESRCH)
			return true;
		rsup_slurp(path, stat, sizeof(stat));
		p = strrchr(stat, ')');
		if (p && (p[2] == 'Z' || p[2] == 'X'))
			return true;
		if (now_ms() >= end)
			return false;
		poll(NULL, 0, 10);
	}
}

void rsup_close_link(struct rsup *s)
{
	assert_true(s->fd >= 0);
	close(s->fd);
	s->fd = -2;
}

static int rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void rsup_free(struct rsup *s)
{
	if (s->pid > 0 && !s->reaped) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &s->status, 0);
	}
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->fd >= 0)
		close(s->fd);
	if (s->out >= 0)
		close(s->out);
	if (s->err >= 0)
		close(s->err);
	nftw(s->dir, rm, 16, FTW_DEPTH | FTW_PHYS);
}

pid_t rsup_start_gen0(struct rsup *s, const struct rsup_cfg *c, char *const argv[])
{
	struct pm_msg m;

	rsup_exec(s, c, argv);
	rsup_hello(s, c->rank);
	rsup_send(s, PM_MSG_START, 0, -1, -1, 0, 0, NULL);
	assert_true(rsup_expect(s, PM_MSG_RANK_RUN, &m));
	assert_int_equal(m.gen, 0);
	/* Not asserted alive: a command that ends at once may already be
	 * reaped by its supervisor when RUN arrives. */
	assert_true(m.status > 1);
	return m.status;
}
