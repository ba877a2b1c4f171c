/* The ranks' state socket (PROCMGR_STATE_SOCK, SOCK_SEQPACKET): who may
 * connect, and each connection's requests served by io/statesrv.c against
 * this node's store. A connection is a process of one of this node's
 * ranks: the job's user's, descending from that rank's supervisor; its
 * global rank is fixed then and is the only state it can save or load. */
#include "step.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <sys/resource.h>

#include "admit.h"
#include "common/statescope.h"
#include "common/statestore.h"
#include "io/memblob.h"
#include "common/stateproto.h"
#include "io/statesrv.h"
#include "state_repl.h"
#include "sweep_run.h"

struct sconn {
	struct pm_watch w;
	struct pm_state_peer peer;
	struct pm_step *s;
	bool saved; /* said in the log once per connection */
	/* Refused at connect: its first request is answered "err" with this,
	 * then it is closed. Closing at once, its request unread, would
	 * reset the connection and lose the answer. */
	char refused[300];
	uint64_t seq; /* the order it was accepted in (among refused ones, the oldest makes way) */
	int lrank; /* the local rank it counts against, -1: none (refused) */
	bool waiting; /* a load held until a lost node's state came (spare) */
	/* A sweep: the scope of the trial run of lrank's process
	 * (statescope.h): once its slot has another, the connection is
	 * refused. */
	uint32_t scope;
	struct sconn *prev, *next;
};

struct pm_state_link {
	struct pm_state_store store;
	struct pm_watch lw;
	struct sconn *conns;
	uint64_t saves, loads, refused;
	/* The bounds (admit.h): connections held per local rank and in all,
	 * refused ones held for their answer. */
	unsigned *per_rank, nconns, nrefused;
	uint64_t accepted;
	/* Out of descriptors: the listener rests (rest_w, a timer) instead of
	 * spinning, longer each time in a row. */
	struct pm_watch rest_w;
	unsigned starved;
	/* Refusals said at most once a second, the others counted. */
	uint64_t said_ms;
	unsigned unsaid;
};

void pm_state_link_resume(struct pm_step *s)
{
	for (struct sconn *c = s->state ? s->state->conns : NULL; c; c = c->next)
		if (c->waiting) {
			c->waiting = false;
			pm_loop_mod(s->loop, &c->w, EPOLLIN);
		}
}

/* A spare's rank asking for its state before the lost node's buddy handed
 * it over: the request stays unread, the connection unwatched, until it
 * did (pm_state_link_resume). */
static bool hold_load(struct pm_step *s, struct sconn *c)
{
	char buf[8];
	ssize_t n;

	if (!pm_state_repl_waiting(s))
		return false;
	n = recv(c->w.fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < 4 || (memcmp(buf, "load", 4) && memcmp(buf, "list", 4)))
		return false;
	c->waiting = true;
	pm_loop_mod(s->loop, &c->w, 0);
	return true;
}

static void release(int h, void *arg)
{
	(void)arg;
	close(h);
}

static void sconn_free(struct pm_step *s, struct sconn *c)
{
	struct pm_state_link *k = s->state;

	if (c->refused[0])
		k->nrefused--;
	else
		k->nconns--;
	if (c->lrank >= 0)
		k->per_rank[c->lrank]--;
	pm_statesrv_closed(&s->state->store, &c->peer);
	pm_loop_del(s->loop, &c->w);
	close(c->w.fd);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->state->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	free(c);
}

static bool reading(int handle, void *arg)
{
	return pm_state_repl_reading(arg, handle);
}

static void on_conn(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct sconn *c = w->arg;
	struct pm_step *s = c->s;
	const struct pm_statesrv_hooks hooks = { .reading = reading, .arg = s };
	struct pm_state_link *k = s->state;
	struct pm_state_note note;
	char err[256] = "";
	int rc;
	(void)l;

	if (!(ev & EPOLLIN)) {
		sconn_free(s, c);
		return;
	}
	if (!c->refused[0] && c->peer.grank >= 0 && s->sweep_node &&
	    !pm_scope_may_use(true, c->scope, s->sweep_node->scope[c->lrank])) {
		snprintf(c->refused, sizeof(c->refused),
			 "refused: this process's trial run on rank %d has ended; a trial's state "
			 "is its run's own", c->peer.grank);
		pm_log(s, "state socket: rank %d: %s", c->peer.grank,
		       "a request from a trial run that ended, refused");
	}
	if (c->refused[0]) {
		char buf[PM_SP_LINE_MAX + 1], out[sizeof(c->refused) + 8];
		int fd = -1;
		if (pm_fd_recv(w->fd, buf, sizeof(buf), &fd) > 0) {
			snprintf(out, sizeof(out), "err %s", c->refused);
			(void)pm_fd_send(w->fd, out, strlen(out), -1);
		}
		if (fd >= 0)
			close(fd);
		sconn_free(s, c);
		return;
	}
	if (hold_load(s, c))
		return;
	rc = pm_statesrv_serve(&k->store, w->fd, &c->peer, pm_now_ms(), &hooks, &note, err,
			       sizeof(err));
	if (rc <= 0) {
		if (rc < 0)
			pm_log(s, "rank %d: %s", c->peer.grank, err);
		sconn_free(s, c);
		return;
	}
	switch (note.did) {
	case PM_STATE_DID_SAVE:
		k->saves++;
		pm_state_repl_saved(s, c->peer.grank, note.name, note.version);
		/* A save per step would flood the log and the event log: the
		 * first of each process says that saving works. */
		if (c->saved)
			break;
		c->saved = true;
		pm_log(s, "rank %d saved '%s' version %llu (%llu bytes, step %llu); this node holds %llu bytes",
		       c->peer.grank, note.name, (unsigned long long)note.version,
		       (unsigned long long)note.size, (unsigned long long)note.step,
		       (unsigned long long)k->store.held);
		pm_step_state_event(s, "state_saved", c->peer.grank, &note);
		break;
	case PM_STATE_DID_LOAD:
		k->loads++;
		pm_log(s, "rank %d restored '%s' version %llu (step %llu, %llu ms old)",
		       c->peer.grank, note.name, (unsigned long long)note.version,
		       (unsigned long long)note.step, (unsigned long long)note.age_ms);
		pm_step_state_event(s, "state_restored", c->peer.grank, &note);
		break;
	case PM_STATE_DID_REFUSE:
		k->refused++;
		pm_log(s, "rank %d: refused: %s", c->peer.grank, note.why);
		break;
	case PM_STATE_DID_NOTHING:
		break;
	}
}

static struct sconn *watch(struct pm_step *s, int fd)
{
	struct sconn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->s = s;
	c->w = (struct pm_watch){ .fd = fd, .fn = on_conn, .arg = c };
	c->seq = ++s->state->accepted;
	c->lrank = -1;
	if (pm_loop_add(s->loop, &c->w, EPOLLIN)) {
		free(c);
		return NULL;
	}
	s->state->nconns++;
	c->next = s->state->conns;
	if (c->next)
		c->next->prev = c;
	s->state->conns = c;
	return c;
}

/* A refusal in the log: the first of each second, the others counted in
 * the next one (a rank opening thousands of connections would otherwise
 * fill the disk). */
static void say_refused(struct pm_step *s, const char *why)
{
	struct pm_state_link *k = s->state;
	uint64_t now = pm_now_ms();

	if (k->said_ms && now - k->said_ms < 1000) {
		k->unsaid++;
		return;
	}
	if (k->unsaid)
		pm_log(s, "state socket: %s (and %u more refused since the last such line)", why,
		       k->unsaid);
	else
		pm_log(s, "state socket: %s", why);
	k->said_ms = now;
	k->unsaid = 0;
}

/* Refused before any request: its first request is answered with why.
 * At most PM_ADMIT_REFUSED_HELD wait for that: the oldest makes way (it
 * goes unanswered), so that refusals never hold descriptors without
 * bound. */
static void turn_away(struct pm_step *s, int fd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void turn_away(struct pm_step *s, int fd, const char *fmt, ...)
{
	struct pm_state_link *k = s->state;
	char buf[300];
	va_list ap;
	struct sconn *c, *oldest = NULL;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	say_refused(s, buf);
	if (k->nrefused >= PM_ADMIT_REFUSED_HELD) {
		for (c = k->conns; c; c = c->next)
			if (c->refused[0] && (!oldest || c->seq < oldest->seq))
				oldest = c;
		if (oldest)
			sconn_free(s, oldest);
	}
	if (!(c = watch(s, fd))) {
		close(fd);
		return;
	}
	k->nconns--;
	k->nrefused++;
	c->peer.grank = -1;
	snprintf(c->refused, sizeof(c->refused), "%s", buf);
}

static unsigned fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > ~0u)
		return 0;
	return (unsigned)rl.rlim_cur;
}

/* The bounds of admit.h for a connection of local rank lrank (-1: before
 * it is known, only the reserve and the socket's total). */
static enum pm_admit_verdict admit(struct pm_step *s, int fd, int lrank, char *why, size_t len)
{
	struct pm_state_link *k = s->state;
	struct pm_admit_cfg cfg = {
		.per_peer = lrank >= 0 ? PM_ADMIT_STATE_PER_RANK : 0,
		.per_socket = PM_ADMIT_STATE_MAX,
		.reserve = pm_admit_reserve((unsigned)(s->opts.spares ? s->nnodes : s->nchildren),
					    (unsigned)s->ntasks_local),
	};
	struct pm_admit_now now = { .peer = lrank >= 0 ? k->per_rank[lrank] : 0,
				    .socket = k->nconns, .fd = (unsigned)fd,
				    .fd_limit = fd_limit() };
	enum pm_admit_verdict v = pm_admit_decide(&cfg, &now);
	char who[32];

	if (v != PM_ADMIT_TAKE) {
		snprintf(who, sizeof(who), "rank %d", lrank >= 0 ? s->gen.ranks[lrank].grank : -1);
		pm_admit_why(v, &cfg, &now, "the state socket", who, why, len);
	}
	return v;
}

static void accept_one(struct pm_step *s, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	pid_t *sup;
	int i, lrank;
	struct sconn *c;
	char why[300];

	/* The reserve and the socket's total before anything is read: past
	 * them the connection is closed at once, unanswered (holding it for
	 * its answer would spend what the bound keeps). */
	if (admit(s, fd, -1, why, sizeof(why)) != PM_ADMIT_TAKE) {
		say_refused(s, why);
		close(fd);
		return;
	}

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) || len != sizeof(cred)) {
		turn_away(s, fd, "refused: the peer's credentials cannot be read");
		return;
	}
	if (cred.uid != s->uid) {
		turn_away(s, fd, "refused: uid %u is not the job's user (uid %u): a rank's state "
			  "is its own", (unsigned)cred.uid, (unsigned)s->uid);
		return;
	}
	sup = calloc((size_t)s->ntasks_local, sizeof(*sup));
	for (i = 0; sup && i < s->ntasks_local; i++) {
		struct ucred sc;
		socklen_t sl = sizeof(sc);
		if (s->ranks[i] &&
		    !getsockopt(s->ranks[i]->w.fd, SOL_SOCKET, SO_PEERCRED, &sc, &sl))
			sup[i] = sc.pid;
	}
	/* The pid SO_PEERCRED gave is the connecting process's at connect():
	 * it may have exited and its pid gone to another process since. A
	 * process that started after this accept is not the peer; a pidfd
	 * taken first says whether the one we judged lived through the walk
	 * (a window remains between connect and accept, while this loop was
	 * busy: SO_PEERPIDFD, Linux 6.5, would close it). */
	{
		struct timespec bt;
		uint64_t now_ticks, started;
		int pfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
		clock_gettime(CLOCK_BOOTTIME, &bt);
		now_ticks = (uint64_t)bt.tv_sec * (uint64_t)sysconf(_SC_CLK_TCK) +
			    (uint64_t)bt.tv_nsec / (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
		lrank = -1;
		if (sup && pfd >= 0 && !pm_state_peer_start("/proc", cred.pid, &started) &&
		    started <= now_ticks) {
			struct pollfd pp = { .fd = pfd, .events = POLLIN };
			lrank = pm_state_peer_index("/proc", cred.pid, sup, s->ntasks_local);
			if (poll(&pp, 1, 0) != 0)
				lrank = -1; /* it exited meanwhile: what we read may be another's */
		}
		if (pfd >= 0)
			close(pfd);
	}
	free(sup);
	if (lrank < 0 || s->gen.ranks[lrank].grank < 0) {
		turn_away(s, fd, "refused: pid %d is not a process of one of this step's ranks on "
			  "this node", (int)cred.pid);
		return;
	}
	if (admit(s, fd, lrank, why, sizeof(why)) != PM_ADMIT_TAKE) {
		turn_away(s, fd, "%s", why);
		return;
	}
	if (!(c = watch(s, fd))) {
		pm_log(s, "state socket: cannot watch a connection: %s", strerror(errno));
		close(fd);
		return;
	}
	c->peer.grank = s->gen.ranks[lrank].grank;
	c->lrank = lrank;
	s->state->per_rank[lrank]++;
	c->scope = s->sweep_node ? s->sweep_node->scope[lrank] : 0;
}

static void on_accept(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	struct pm_state_link *k = s->state;
	int fd;
	(void)l;
	(void)ev;

	while ((fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
		k->starved = 0;
		accept_one(s, fd);
	}
	/* Out of descriptors: the listener stays readable and the loop would
	 * spin on it; it rests, and the connections wait in its backlog. */
	if (pm_admit_starved(errno) && pm_loop_mod(s->loop, &k->lw, 0) == 0) {
		unsigned ms = pm_admit_backoff_ms(++k->starved);
		if (k->starved == 1)
			pm_log(s, "state socket: cannot accept (%s): resting %u ms", strerror(errno),
			       ms);
		pm_timer_set(k->rest_w.fd, ms, 0);
	}
}

static void on_rested(struct pm_loop *l, struct pm_watch *w, uint32_t ev)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)ev;

	pm_timer_ack(w->fd);
	pm_loop_mod(s->loop, &s->state->lw, EPOLLIN);
}

int pm_state_link_init(struct pm_step *s, const char *path, unsigned max_rank_mib,
		       unsigned max_node_mib)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pm_state_cfg cfg = { .max_rank = (uint64_t)max_rank_mib << 20,
				    .max_node = (uint64_t)max_node_mib << 20,
				    .max_names = PM_STATE_NAMES_MAX };
	struct pm_state_link *k;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		pm_log(s, "state socket path too long: %s", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	if (!(k = calloc(1, sizeof(*k))))
		return -1;
	k->per_rank = calloc((size_t)s->ntasks_local + 1, sizeof(*k->per_rank));
	k->rest_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_rested, .arg = s };
	if (!k->per_rank || k->rest_w.fd < 0 || pm_loop_add(s->loop, &k->rest_w, EPOLLIN)) {
		pm_log(s, "state socket: %m");
		if (k->rest_w.fd >= 0)
			close(k->rest_w.fd);
		free(k->per_rank);
		free(k);
		return -1;
	}
	pm_state_init(&k->store, &cfg, (uint32_t)s->node);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || chmod(path, 0600) ||
	    listen(fd, 128)) {
		pm_log(s, "state socket %s: %m", path);
		goto fail;
	}
	k->lw = (struct pm_watch){ .fd = fd, .fn = on_accept, .arg = s };
	if (pm_loop_add(s->loop, &k->lw, EPOLLIN))
		goto fail;
	s->state = k;
	s->repl = pm_state_repl_new(s, &k->store, PM_REPL_RATE_DEFAULT);
	if (!s->repl)
		pm_log(s, "state socket: no replication to a buddy (out of memory or descriptors)");
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	pm_loop_del(s->loop, &k->rest_w);
	close(k->rest_w.fd);
	free(k->per_rank);
	free(k);
	return -1;
}

void pm_state_link_set_rate(struct pm_step *s, uint64_t bytes_per_s)
{
	if (s->repl)
		pm_state_repl_set_rate(s->repl, bytes_per_s);
}

void pm_state_link_usage(const struct pm_step *s, struct pm_state_usage *u)
{
	memset(u, 0, sizeof(*u));
	if (!s->state)
		return;
	u->held = s->state->store.held;
	u->blobs = s->state->store.nb;
	u->max_node = s->state->store.cfg.max_node;
	u->max_rank = s->state->store.cfg.max_rank;
	u->saves = s->state->saves;
	u->loads = s->state->loads;
	u->refused = s->state->refused;
	u->conns = s->state->nconns + s->state->nrefused;
}

void pm_state_link_drop(struct pm_step *s, int lrank, int owner)
{
	struct pm_state_link *k = s->state;
	uint64_t before;
	size_t n;

	if (!k)
		return;
	before = k->store.held;
	if (lrank < 0) {
		n = k->store.nb;
		pm_state_drop_replicas(&k->store, (uint32_t)owner, release, NULL);
		n -= k->store.nb;
		if (n)
			pm_log(s, "state: node %s lost: its %zu replicas here freed (%llu bytes)",
			       owner < s->nnodes ? s->names[owner] : "?", n,
			       (unsigned long long)(before - k->store.held));
		return;
	}
	if (lrank >= s->ntasks_local || s->gen.ranks[lrank].grank < 0)
		return;
	n = pm_state_drop_rank(&k->store, (uint32_t)s->node, s->gen.ranks[lrank].grank, release,
			       NULL);
	/* Its buddy's replicas too, and nothing of it is sent any more. */
	pm_state_repl_dropped(s, s->gen.ranks[lrank].grank);
	if (n)
		pm_log(s, "state: rank %d's trial run ended: its %zu blobs freed (%llu bytes)",
		       s->gen.ranks[lrank].grank, n, (unsigned long long)(before - k->store.held));
}

/* Every blob goes with procmgrd: at the step's end, scancel or a lost
 * node nothing of it stays (memfds live only as long as a descriptor or a
 * mapping does, and the ranks are gone by then). */
void pm_state_link_free(struct pm_step *s)
{
	if (!s->state)
		return;
	while (s->state->conns)
		sconn_free(s, s->state->conns);
	pm_state_repl_free(s->repl);
	s->repl = NULL;
	pm_loop_del(s->loop, &s->state->lw);
	close(s->state->lw.fd);
	pm_loop_del(s->loop, &s->state->rest_w);
	close(s->state->rest_w.fd);
	free(s->state->per_rank);
	pm_state_clear(&s->state->store, release, NULL);
	free(s->state);
	s->state = NULL;
}
