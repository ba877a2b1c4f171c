/* pm-scale-fleet: one process that stands for every rank supervisor of the
 * scale harness's procmgrd (bench/scale/run --mode fleet). Each rank is
 * one unix-socket link to its node's procmgrd speaking procmgr-rank's
 * side of the protocol (RANK_HELLO, RANK_EXIT, RANK_STOPPED, PING), with
 * no process behind it: the times it reports are the protocol's alone,
 * without fork/exec of ranks. With 3 processes per node (procmgrd,
 * procmgr-rank, the command) pid_max is the limit near 10,000 nodes; here
 * it is one per node. With SPARES the last SPARES nodes' ranks idle until
 * one takes a lost node's place; a generation has started when the
 * ranks of the other nodes have.
 *
 *   pm-scale-fleet DIR NODES RANKS_PER_NODE TRIALS SETTLE_MS PING_MS END [SPARES]
 *
 * Node i's socket is DIR/i/sock. After every rank has started generation
 * g, and SETTLE_MS later, the last rank fails (RANK_EXIT, exit status 1),
 * TRIALS times; then END: "finish" (every rank exits 0) or "hold". STOP is
 * answered at once with RANK_STOPPED. PING_MS 0: no pings. One line per
 * milestone on stdout, wall-clock seconds (the event log's clock):
 *   connected T
 *   started GEN FIRST LAST      every rank got START GEN
 *   fail GEN RANK T
 *   stop GEN FIRST LAST COUNT   every running rank got STOP GEN
 *   end FIRST LAST              every rank got FINISH or ABORT, or lost its link */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "io/conn.h"
#include "io/loop.h"

struct sup {
	struct pm_conn *c;
	int grank, lrank, node;
	bool running, ended;
};

struct fleet {
	struct pm_loop loop;
	const char *dir;
	int nodes, rpn, total, world, trials, end_finish;
	unsigned settle_ms, ping_ms;
	struct sup *s;
	int connected, ended;
	uint32_t gen;               /* the generation being counted */
	int started, stops, stops_wanted;
	double start_first, start_last, stop_first, stop_last, end_first, end_last;
	bool failing;               /* a failure was injected in gen */
	struct pm_watch settle_w, ping_w, retry_w;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

static void send_or_log(struct sup *u, const struct pm_msg *m)
{
	if (u->c && pm_conn_send(u->c, m))
		fprintf(stderr, "pm-scale-fleet: rank %d: cannot send %s: %s\n", u->grank,
			pm_msg_name(m->type), strerror(errno));
}

static void rank_ended(struct fleet *f, struct sup *u)
{
	double t = pm_wall_s();

	if (u->ended)
		return;
	u->ended = true;
	if (f->ended++ == 0)
		f->end_first = t;
	f->end_last = t;
	if (f->ended == f->total) {
		say("end %.6f %.6f", f->end_first, f->end_last);
		pm_loop_stop(&f->loop);
	}
}

static void on_start(struct fleet *f, struct sup *u, uint32_t gen)
{
	double t = pm_wall_s();

	u->running = true;
	if (gen != f->gen) {
		f->gen = gen;
		f->started = 0;
		f->failing = false;
	}
	if (f->started++ == 0)
		f->start_first = t;
	f->start_last = t;
	if (f->started < f->world)
		return;
	say("started %u %.6f %.6f", gen, f->start_first, f->start_last);
	if ((int)gen < f->trials || f->end_finish)
		pm_timer_set(f->settle_w.fd, f->settle_ms ? f->settle_ms : 1, 0);
}

static void on_stop(struct fleet *f, struct sup *u, uint32_t gen)
{
	struct pm_msg m;
	double t = pm_wall_s();

	u->running = false;
	pm_msg_init(&m, PM_MSG_RANK_STOPPED);
	m.gen = gen;
	send_or_log(u, &m);
	if (f->stops++ == 0)
		f->stop_first = t;
	f->stop_last = t;
	if (f->stops == f->stops_wanted)
		say("stop %u %.6f %.6f %d", gen, f->stop_first, f->stop_last, f->stops);
}

static void on_msg(struct pm_conn *c, const struct pm_msg *m)
{
	struct sup *u = c->w.arg;
	struct fleet *f = (struct fleet *)c->loop; /* the loop is f's first member */

	switch (m->type) {
	case PM_MSG_START:
		on_start(f, u, m->gen);
		break;
	case PM_MSG_STOP:
		on_stop(f, u, m->gen);
		break;
	case PM_MSG_FINISH:
	case PM_MSG_ABORT:
		rank_ended(f, u);
		break;
	default:
		break;
	}
}

static void on_close(struct pm_conn *c, const char *why)
{
	struct sup *u = c->w.arg;
	struct fleet *f = (struct fleet *)c->loop;

	(void)why;
	u->c = NULL;
	pm_conn_free(c);
	rank_ended(f, u);
}

/* Nodes start in any order: a socket that is not there yet is tried again. */
static int try_connect(struct fleet *f, struct sup *u)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pm_msg m;
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d/sock", f->dir, u->node);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return errno == ENOENT || errno == ECONNREFUSED || errno == EAGAIN ? 1 : -1;
	}
	u->c = pm_conn_new(&f->loop, fd, on_msg, on_close, u);
	if (!u->c)
		return -1;
	pm_msg_init(&m, PM_MSG_RANK_HELLO);
	m.rank = u->grank;
	m.node = u->lrank;
	m.status = getpid();
	send_or_log(u, &m);
	f->connected++;
	return 0;
}

static void connect_all(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct fleet *f = w->arg;
	int i, rc;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	for (i = 0; i < f->total; i++) {
		if (f->s[i].c || f->s[i].ended)
			continue;
		rc = try_connect(f, &f->s[i]);
		if (rc < 0) {
			fprintf(stderr, "pm-scale-fleet: node %d: %s\n", f->s[i].node,
				strerror(errno));
			rank_ended(f, &f->s[i]);
		}
	}
	if (f->connected + f->ended < f->total)
		pm_timer_set(w->fd, 20, 0);
	else
		say("connected %.6f", pm_wall_s());
}

static void settle(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct fleet *f = w->arg;
	struct pm_msg m;
	int i;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_msg_init(&m, PM_MSG_RANK_EXIT);
	m.gen = f->gen;
	if ((int)f->gen < f->trials) {
		struct sup *u = &f->s[f->world - 1];
		f->stops = 0;
		f->stops_wanted = f->world - 1;
		m.status = 1 << 8; /* a wait status: exit code 1 */
		u->running = false;
		say("fail %u %d %.6f", f->gen, u->grank, pm_wall_s());
		send_or_log(u, &m);
		return;
	}
	for (i = 0; i < f->total; i++)
		if (f->s[i].running) {
			f->s[i].running = false;
			send_or_log(&f->s[i], &m);
		}
}

static void ping(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct fleet *f = w->arg;
	int i;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	for (i = 0; i < f->total; i++)
		if (f->s[i].c)
			pm_conn_ping(f->s[i].c);
}

static int add_timer(struct fleet *f, struct pm_watch *w, pm_io_fn fn)
{
	*w = (struct pm_watch){ .fd = pm_timer_new(), .fn = fn, .arg = f };
	return w->fd < 0 ? -1 : pm_loop_add(&f->loop, w, EPOLLIN);
}

static int usage(void)
{
	fprintf(stderr, "usage: pm-scale-fleet DIR NODES RANKS_PER_NODE TRIALS SETTLE_MS "
		"PING_MS finish|hold [SPARES]\n  NODES >= 1, RANKS_PER_NODE >= 1, TRIALS >= 0, "
		"0 <= SPARES < NODES\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct fleet f; /* the loop first: on_msg finds f from c->loop */
	int i;

	if (argc != 8 && argc != 9)
		return usage();
	f.dir = argv[1];
	f.nodes = atoi(argv[2]);
	f.rpn = atoi(argv[3]);
	f.trials = atoi(argv[4]);
	f.settle_ms = (unsigned)atoi(argv[5]);
	f.ping_ms = (unsigned)atoi(argv[6]);
	f.end_finish = strcmp(argv[7], "finish") == 0;
	if (f.nodes < 1 || f.rpn < 1 || f.trials < 0 ||
	    (!f.end_finish && strcmp(argv[7], "hold")))
		return usage();
	f.total = f.nodes * f.rpn;
	f.world = argc == 9 ? (f.nodes - atoi(argv[8])) * f.rpn : f.total;
	if (f.world < f.rpn || f.world > f.total)
		return usage();
	f.gen = (uint32_t)-1;
	f.s = calloc((size_t)f.total, sizeof(*f.s));
	if (!f.s || pm_loop_init(&f.loop)) {
		perror("pm-scale-fleet");
		return 1;
	}
	for (i = 0; i < f.total; i++)
		f.s[i] = (struct sup){ .grank = i, .lrank = i % f.rpn, .node = i / f.rpn };
	signal(SIGPIPE, SIG_IGN);
	if (add_timer(&f, &f.retry_w, connect_all) || add_timer(&f, &f.settle_w, settle) ||
	    add_timer(&f, &f.ping_w, ping) || pm_timer_set(f.retry_w.fd, 1, 0) ||
	    (f.ping_ms && pm_timer_set(f.ping_w.fd, f.ping_ms, f.ping_ms))) {
		perror("pm-scale-fleet: timers");
		return 1;
	}
	if (pm_loop_run(&f.loop)) {
		perror("pm-scale-fleet: epoll");
		return 1;
	}
	return 0;
}
