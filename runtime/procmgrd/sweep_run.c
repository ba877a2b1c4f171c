/* The root of a sweep step: the trial queue (runtime/sweep/sweep_queue.c)
 * on the step's slots. The queue decides (which trial, which slots, which
 * port, restart or not); this file carries its decisions out as messages
 * to the nodes concerned, collects each attempt's ends, and at the end
 * writes the results and ends the step. See sweep_run.h. */
#include "step.h"
#include "sweep_run.h"
#include "sweep_int.h"
#include "query.h"
#include "gen_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/errinfo.h"
#include "common/text.h"
#include "io/safefile.h"
#include "io/sys.h"
#include "sweep/sweep_file.h"
#include "sweep/sweep_metric.h"
#include "sweep/sweep_queue.h"
#include "sweep/sweep_results.h"

static uint64_t now(void)
{
	return pm_now_ms();
}

void pm_sweep_ev(struct pm_step *s, const char *name, const char *fmt, ...)
{
	char f[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(f, sizeof(f), fmt, ap);
	va_end(ap);
	pm_step_ops.event(s, name, f);
}

static int trial_check(const struct pm_sweep *f, int ntasks, char *err, size_t errlen)
{
	int i;

	for (i = 0; i < f->n; i++) {
		size_t n = strlen(f->trials[i].cmd);
		if (n + TRIAL_HEAD_MAX > PM_WIRE_TEXT_MAX) {
			snprintf(err, errlen, "--procmgr-sweep: line %d (trial %s): the command has "
				 "%zu bytes; a trial's command may have at most %d",
				 f->trials[i].line, f->trials[i].name, n,
				 PM_WIRE_TEXT_MAX - TRIAL_HEAD_MAX);
			return -1;
		}
	}
	(void)ntasks;
	return 0;
}

int pm_sweep_run_init(struct pm_step *s, char *err, size_t errlen)
{
	if (!s->opts.sweep[0])
		return 0;
	s->sweep_node = calloc(1, sizeof(*s->sweep_node));
	if (!s->sweep_node)
		goto oom;
	s->sweep_node->pending = calloc((size_t)s->ntasks_local + 1, sizeof(struct pm_msg));
	s->sweep_node->has_pending = calloc((size_t)s->ntasks_local + 1, sizeof(bool));
	s->sweep_node->cur = calloc((size_t)s->ntasks_local + 1, sizeof(uint32_t));
	s->sweep_node->scope = calloc((size_t)s->ntasks_local + 1, sizeof(uint32_t));
	if (!s->sweep_node->pending || !s->sweep_node->has_pending || !s->sweep_node->cur ||
	    !s->sweep_node->scope)
		goto oom;
	if (s->node != 0)
		return 0;
	if (pm_sweep_root_init(s, err, errlen))
		return -1;
	pm_sweep_journal_open(s);
	return 0;
oom:
	snprintf(err, errlen, "--procmgr-sweep: out of memory");
	return -1;
}

int pm_sweep_root_init(struct pm_step *s, char *err, size_t errlen)
{
	struct pm_sweep_run *r;
	struct pm_sq_cfg cfg = { 0 };
	int *ranks, i, dr = s->opts.trial_ranks ? (int)s->opts.trial_ranks : 1;
	char dir[PATH_MAX + 8];

	if (s->ntasks != s->nnodes * s->ntasks_local) {
		snprintf(err, errlen, "--procmgr-sweep needs the same number of tasks on every node "
			 "(%d tasks on %d nodes, %d on this one): use --ntasks-per-node=N",
			 s->ntasks, s->nnodes, s->ntasks_local);
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		goto oom;
	s->sweep = r;
	r->due_w.fd = -1;
	r->journal_fd = -1;
	r->L = s->ntasks_local;
	if (pm_sweep_read(s->opts.sweep, dr, s->ntasks, &r->file, err, errlen))
		return -1;
	if (trial_check(&r->file, s->ntasks, err, errlen))
		return -1;
	/* Each trial's outputs, beside the trials file: made here, as the
	 * job's user, so that a directory nobody may write fails now. */
	snprintf(dir, sizeof(dir), "%s.out", s->opts.sweep);
	if (mkdir(dir, 0755) && errno != EEXIST) {
		snprintf(err, errlen, "--procmgr-sweep: cannot make the trials' output directory "
			 "%.400s: %s", dir, strerror(errno));
		return -1;
	}
	snprintf(r->results, sizeof(r->results), "%.*s.results", PATH_MAX - 9, s->opts.sweep);
	cfg.nodes = s->nnodes;
	cfg.slots_per_node = s->ntasks_local;
	pm_policy_from_opts(&cfg.policy, &s->opts);
	/* MASTER_PORTs after the step's own two (the tree's and its
	 * MASTER_PORT): one per slot at most runs at once. */
	cfg.port_first = (int)s->port + 2;
	cfg.port_count = s->ntasks;
	ranks = malloc((size_t)r->file.n * sizeof(int));
	r->attempt = calloc((size_t)r->file.n, sizeof(uint32_t));
	r->scope = calloc((size_t)r->file.n, sizeof(*r->scope));
	r->live = calloc((size_t)r->file.n, sizeof(int));
	r->failing = calloc((size_t)r->file.n, sizeof(bool));
	r->restart_req = calloc((size_t)r->file.n, sizeof(bool));
	r->fail_code = calloc((size_t)r->file.n, sizeof(int));
	r->fail_err = calloc((size_t)r->file.n, sizeof(char *));
	r->slot_live = calloc((size_t)s->ntasks, 1);
	r->slot_attempt = calloc((size_t)s->ntasks, sizeof(uint32_t));
	if (!ranks || !r->attempt || !r->scope || !r->live || !r->failing || !r->restart_req || !r->fail_code ||
	    !r->fail_err ||
	    !r->slot_live || !r->slot_attempt) {
		free(ranks);
		goto oom;
	}
	for (i = 0; i < r->file.n; i++)
		ranks[i] = r->file.trials[i].ranks;
	i = pm_sq_init(&r->q, &cfg, ranks, r->file.n, err, (unsigned)errlen);
	free(ranks);
	if (i)
		return -1;
	r->next_attempt = 1;
	return 0;
oom:
	snprintf(err, errlen, "--procmgr-sweep: out of memory");
	return -1;
}

void pm_sweep_run_free(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	int i;

	if (s->sweep_node) {
		free(s->sweep_node->pending);
		free(s->sweep_node->has_pending);
		free(s->sweep_node->cur);
		free(s->sweep_node->scope);
		free(s->sweep_node);
		s->sweep_node = NULL;
	}
	if (!r)
		return;
	if (r->due_w.fd >= 0) {
		pm_loop_del(s->loop, &r->due_w);
		close(r->due_w.fd);
	}
	pm_sweep_journal_close(s);
	if (r->q.t)
		pm_sq_free(&r->q);
	for (i = 0; r->fail_err && i < r->file.n; i++)
		free(r->fail_err[i]);
	free(r->fail_err);
	free(r->attempt);
	free(r->scope);
	free(r->live);
	free(r->failing);
	free(r->restart_req);
	free(r->fail_code);
	free(r->slot_live);
	free(r->slot_attempt);
	pm_sweep_free(&r->file);
	free(r);
	s->sweep = NULL;
}

static void start_trial(struct pm_step *s, int i)
{
	struct pm_sweep_run *r = s->sweep;
	struct pm_sq_trial *t = &r->q.t[i];
	const struct pm_trial *ft = &r->file.trials[i];
	int k, master = t->slot_of_rank[0] / r->L;
	struct pm_msg m;
	uint32_t scope;

	r->attempt[i] = r->next_attempt++;
	/* A result is its attempt's: the last one's goes. */
	(void)pm_sq_set_result(&r->q, i, NULL);
	/* A restart in place sees its run's saves; a first start or a
	 * requeue begins a run that sees nothing. */
	scope = pm_scope_of_start(&r->scope[i], t->requeues, r->attempt[i]);
	r->live[i] = t->ranks;
	r->failing[i] = false;
	for (k = 0; k < t->ranks; k++) {
		int slot = t->slot_of_rank[k], node = slot / r->L, j, lr = 0, lw = 0;
		/* Its local rank and world: the trial's ranks on the same node. */
		for (j = 0; j < t->ranks; j++) {
			if (t->slot_of_rank[j] / r->L != node)
				continue;
			if (j < k)
				lr++;
			lw++;
		}
		r->slot_live[slot] = 1;
		r->slot_attempt[slot] = r->attempt[i];
		pm_msg_init(&m, PM_MSG_TRIAL_START);
		m.gen = r->attempt[i];
		m.rank = k;
		m.node = node;
		m.status = slot % r->L;
		m.count = (uint32_t)t->restarts;
		snprintf(m.text, sizeof(m.text), "%s %d %d %d %s %d %u\n%s", ft->name, t->ranks, lr,
			 lw, s->names[master], t->port, scope, ft->cmd);
		m.text_len = (uint16_t)strlen(m.text);
		pm_sweep_node_route(s, &m);
	}
	pm_sweep_ev(s, "trial_start", "\"trial\":\"%s\",\"attempt\":%u,\"ranks\":%d,\"restarts\":%d,"
	   "\"master\":\"%s\",\"port\":%d,\"first_slot\":%d", ft->name, r->attempt[i], t->ranks,
	   t->restarts, s->names[master], t->port, t->slot_of_rank[0]);
	pm_sq_started(&r->q, i, now());
}


static void arm_due(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	uint64_t due = pm_sq_next_due(&r->q), t = now();

	if (r->due_w.fd < 0)
		return;
	if (due == UINT64_MAX)
		pm_timer_set(r->due_w.fd, 0, 0);
	else
		pm_timer_set(r->due_w.fd, due > t ? (unsigned)(due - t) : 1, 0);
}

void pm_sweep_schedule(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	int start[START_BATCH], n, i;

	if (r->ended || !r->launched || pm_gen_terminal(&s->gen))
		return;
	do {
		n = pm_sq_schedule(&r->q, now(), start, START_BATCH);
		for (i = 0; i < n; i++)
			start_trial(s, start[i]);
	} while (n == START_BATCH);
	arm_due(s);
	if (pm_sq_finished(&r->q))
		pm_sweep_finish(s, 0, NULL);
}

static void on_due(struct pm_loop *l, struct pm_watch *w, uint32_t e)
{
	struct pm_step *s = w->arg;
	(void)l;
	(void)e;

	pm_timer_ack(w->fd);
	pm_sweep_schedule(s);
}

void pm_sweep_launch(void *ctx)
{
	struct pm_step *s = ctx;
	struct pm_sweep_run *r = s->sweep;

	if (!r || r->launched)
		return;
	/* A root that took over starts once its pool is (the reclaim's
	 * answers, pm_sweep_reclaimed): a trial would find no room before. */
	if (r->base && !pm_sweep_pool_complete(s))
		return;
	/* The pool: the spares out of it (sweep_journal.c); a root that took
	 * over made it already. */
	if (!r->gone && pm_sweep_pool_init(s, true)) {
		r->launched = true;
		pm_sweep_finish(s, 1, "procmgr: sweep: out of memory at the launch");
		return;
	}
	r->launched = true;
	r->t0 = now();
	r->due_w = (struct pm_watch){ .fd = pm_timer_new(), .fn = on_due, .arg = s };
	if (r->due_w.fd >= 0 && pm_loop_add(s->loop, &r->due_w, EPOLLIN)) {
		close(r->due_w.fd);
		r->due_w.fd = -1;
	}
	pm_sweep_ev(s, "sweep", "\"trials\":%d,\"slots\":%d,\"nodes\":%d,\"file\":\"%s\"", r->file.n,
	   s->ntasks, s->nnodes, s->opts.sweep);
	pm_sweep_schedule(s);
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

/* The first line of a rank's error (the rest is its traceback). */
static char *first_line(const char *text)
{
	size_t n = strcspn(text, "\n");
	char *e = malloc(n + 1);

	if (e) {
		memcpy(e, text, n);
		e[n] = '\0';
	}
	return e;
}

static void trial_ended(struct pm_step *s, int i)
{
	struct pm_sweep_run *r = s->sweep;
	unsigned delay = 0;
	int st;
	bool asked;
	char esc[600], how[400];

	asked = r->restart_req[i] && !r->failing[i];
	if (asked) /* procmgr restart --trial: said when asked */
		st = pm_sq_restart(&r->q, i, now());
	else
		st = pm_sq_ended(&r->q, i, r->failing[i], r->failing[i] ? r->fail_code[i] : 0,
				 r->fail_err[i], now(), &delay);
	r->restart_req[i] = false;
	if (st == PM_TS_DONE || st == PM_TS_FAILED) {
		pm_sweep_journal_end(s, i);
		pm_sweep_free_state(s, i, -1);
	}
	pm_json_escape(r->fail_err[i] ? r->fail_err[i] : "", esc, sizeof(esc));
	pm_sweep_ev(s, "trial_end", "\"trial\":\"%s\",\"attempt\":%u,\"state\":\"%s\",\"exit_code\":%d,"
	   "\"restarts\":%d,\"delay_ms\":%u,\"error\":\"%s\"", r->file.trials[i].name,
	   r->attempt[i], st >= 0 ? pm_ts_name((enum pm_ts)st) : "?",
	   r->failing[i] ? r->fail_code[i] : 0, r->q.t[i].restarts, delay, esc);
	if ((st == PM_TS_RESTARTING || st == PM_TS_FAILED) && !asked) {
		/* A decision, said as a step's are: on srun's stderr. */
		struct pm_msg m;
		pm_msg_init(&m, PM_MSG_PRINT);
		pm_err_exit_line(r->fail_code[i], r->fail_err[i], how, sizeof(how));
		snprintf(m.text, sizeof(m.text), "procmgr: trial %s %s; %s", r->file.trials[i].name,
			 how, st == PM_TS_FAILED ? "no restart left: failed" : "restarting it alone");
		m.text_len = (uint16_t)strlen(m.text);
		pm_step_ops.send_rank(s, 0, &m);
	}
	free(r->fail_err[i]);
	r->fail_err[i] = NULL;
	pm_sweep_schedule(s);
}

void pm_sweep_stop_ranks(struct pm_step *s, int i, int skip_node)
{
	struct pm_sweep_run *r = s->sweep;
	const struct pm_sq_trial *t = &r->q.t[i];
	int k;

	for (k = 0; k < t->ranks; k++) {
		int sl = t->slot_of_rank[k];
		struct pm_msg stop;

		if (!r->slot_live[sl] || r->slot_attempt[sl] != r->attempt[i] ||
		    sl / r->L == skip_node)
			continue;
		pm_msg_init(&stop, PM_MSG_TRIAL_STOP);
		stop.gen = r->attempt[i];
		stop.node = sl / r->L;
		stop.status = sl % r->L;
		pm_sweep_node_route(s, &stop);
	}
}

void pm_sweep_free_state(struct pm_step *s, int i, int skip_node)
{
	struct pm_sweep_run *r = s->sweep;
	const struct pm_sq_trial *t = &r->q.t[i];
	int k;

	if (!r->scope[i].scope)
		return; /* never started */
	/* Its slots as last granted: released slots keep slot_of_rank. */
	for (k = 0; k < t->ranks; k++) {
		int sl = t->slot_of_rank[k];
		struct pm_msg m;

		if (sl / r->L == skip_node)
			continue;
		pm_msg_init(&m, PM_MSG_TRIAL_STOP);
		m.gen = r->scope[i].scope;
		m.node = sl / r->L;
		m.status = sl % r->L;
		m.count = PM_FLAG_ENDED;
		pm_sweep_node_route(s, &m);
	}
}

int pm_sweep_held_exit(struct pm_step *s, int slot, uint32_t attempt)
{
	struct pm_sweep_run *r = s->sweep;

	if (r->q.owner[slot] != PM_SQ_HELD || r->slot_attempt[slot] != attempt ||
	    !r->slot_live[slot])
		return 0;
	r->slot_live[slot] = 0;
	(void)pm_sq_unhold(&r->q, slot);
	pm_sweep_schedule(s);
	return 1;
}

void pm_sweep_trial_exit(struct pm_step *s, const struct pm_msg *m)
{
	struct pm_sweep_run *r = s->sweep;
	struct pm_metric res;
	const char *error;
	int slot, i, has;
	bool failed;

	if (!r || r->ended || m->node < 0 || m->node >= s->nnodes || m->rank < 0 ||
	    m->rank >= r->L)
		return;
	slot = m->node * r->L + m->rank;
	if (pm_sweep_reclaimed(s, slot, m->gen)) { /* a root that took over */
		if (!r->launched && pm_sweep_pool_complete(s))
			pm_sweep_launch(s);
		else
			pm_sweep_schedule(s);
		return;
	}
	if (pm_sweep_held_exit(s, slot, m->gen))
		return; /* a requeued or stopped trial's rank: the slot is free */
	i = r->q.owner[slot];
	if (i < 0 || r->attempt[i] != m->gen || !r->slot_live[slot])
		return; /* an earlier attempt's late news */
	r->slot_live[slot] = 0;
	r->live[i]--;
	/* Rank 0's result is the trial's (sweep_metric.h); one the codec
	 * refuses is none. */
	has = pm_metric_decode(m, &res, &error);
	if (has > 0 && r->q.t[i].slot_of_rank[0] == slot) {
		char text[PM_METRIC_TEXT_MAX];
		pm_metric_format(&res, text, sizeof(text));
		if (pm_sq_set_result(&r->q, i, text))
			pm_log(s, "sweep: trial %s: out of memory for its result",
			       r->file.trials[i].name);
	}
	failed = !(m->count & PM_FLAG_STOPPED) && (m->status != 0 || (m->count & PM_FLAG_HUNG));
	if (failed && !r->failing[i]) {
		r->failing[i] = true;
		r->fail_code[i] = (m->count & PM_FLAG_HUNG) ? 124 : exit_code(m->status);
		if (m->count & PM_FLAG_HUNG) {
			char t[128];
			snprintf(t, sizeof(t), "hung: no heartbeat for the hang timeout (rank on %s)",
				 s->names[m->node]);
			r->fail_err[i] = strdup(t);
		} else {
			/* None said: NULL (the queue says "exit code N"). */
			if (*error)
				r->fail_err[i] = first_line(error);
		}
		/* Its other ranks stop; the others' trials are not touched. */
		pm_sweep_stop_ranks(s, i, -1);
	}
	if (r->live[i] == 0)
		trial_ended(s, i);
}

/* The results file, beside the trials file, as the job's user. */
static void write_results(struct pm_step *s, struct pm_sr_trial *tr, int n)
{
	struct pm_sweep_run *r = s->sweep;
	char tmp[PATH_MAX + 48], line[2048], err[PATH_MAX + 256];
	FILE *f;
	int i, fd;

	/* Made new under a name no other user can plant ahead (io/safefile.h). */
	fd = pm_userfile_temp(r->results, tmp, sizeof(tmp), 0644, err, sizeof(err));
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		pm_log(s, "sweep: cannot write the results: %s", fd < 0 ? err : strerror(errno));
		if (fd >= 0)
			close(fd);
		r->results[0] = '\0';
		return;
	}
	fputs(pm_sr_tsv_header(), f);
	for (i = 0; i < n; i++)
		if (pm_sr_tsv_line(&tr[i], line, sizeof(line)) > 0)
			fputs(line, f);
	if (fclose(f)) {
		pm_log(s, "sweep: cannot write %s: %m", tmp);
		unlink(tmp);
		r->results[0] = '\0';
	} else if (rename(tmp, r->results)) {
		/* Another user's file there, in a sticky directory: the results
		 * stay where they are, and the summary names that file. */
		pm_log(s, "sweep: cannot rename %s to %s: %m; the results stay in %s", tmp,
		       r->results, tmp);
		pm_gen_tell(&s->gen, "procmgr: sweep: cannot replace %.400s (%m: another user's "
			    "file?); the results stay in %.400s", r->results, tmp);
		snprintf(r->results, sizeof(r->results), "%.*s", PATH_MAX - 1, tmp);
	}
}

static struct pm_sr_trial *rows(struct pm_step *s)
{
	struct pm_sweep_run *r = s->sweep;
	struct pm_sr_trial *tr = calloc((size_t)r->file.n + 1, sizeof(*tr));
	int i;

	for (i = 0; tr && i < r->file.n; i++)
		pm_sr_from_queue(&r->q, i, r->file.trials[i].name, now(), &tr[i]);
	return tr;
}

/* Every trial ended (or the step cannot go on: why): results, summary,
 * and the step's end. */
void pm_sweep_finish(struct pm_step *s, int code_if_ok, const char *why)
{
	struct pm_sweep_run *r = s->sweep;
	struct pm_sr_trial *tr;
	struct pm_sr_counts c;
	char sum[PM_WIRE_TEXT_MAX], text[PM_WIRE_TEXT_MAX + 1];
	struct pm_msg m;
	int code;

	if (r->ended)
		return;
	r->ended = true;
	if (r->due_w.fd >= 0)
		pm_timer_set(r->due_w.fd, 0, 0);
	tr = rows(s);
	if (!tr) {
		pm_gen_sweep_end(&s->gen, 1, "procmgr: sweep: out of memory at the end");
		return;
	}
	write_results(s, tr, r->file.n);
	pm_sr_count(tr, r->file.n, &c);
	pm_sr_summary(tr, r->file.n, r->results[0] ? r->results : NULL, sum, sizeof(sum));
	code = pm_sr_exit_code(tr, r->file.n);
	if (!code)
		code = code_if_ok;
	pm_sweep_ev(s, "sweep_end", "\"trials\":%d,\"done\":%d,\"failed\":%d,\"exit_code\":%d,"
	   "\"runtime_ms\":%llu", c.total, c.done, c.failed, code,
	   (unsigned long long)(now() - r->t0));
	free(tr);
	snprintf(text, sizeof(text), "%s%s%s", why ? why : "", why ? "\n" : "", sum);
	/* srun's stderr, through the supervisor of rank 0 (on this node). */
	pm_msg_init(&m, PM_MSG_PRINT);
	pm_msg_set_text(&m, text);
	{
		size_t l = strlen(m.text);
		if (l && m.text[l - 1] == '\n')
			m.text[--m.text_len] = '\0';
	}
	pm_step_ops.send_rank(s, 0, &m);
	pm_gen_sweep_end(&s->gen, code, "");
}

void pm_sweep_fail(void *ctx, const struct pm_msg *m)
{
	struct pm_step *s = ctx;
	char why[PM_WIRE_TEXT_MAX];
	int code = 1;

	if (!s->sweep)
		return;
	if (m->count & PM_FLAG_CANCEL) {
		snprintf(why, sizeof(why), "procmgr: the sweep was cancelled (%.900s); trials not "
			 "ended are not counted done", m->text);
		code = 128 + 15;
	} else if (m->count & PM_FLAG_HEALTH) {
		snprintf(why, sizeof(why), "procmgr: node %s failed a health check: %.900s; "
			 "ending the sweep", pm_gen_node_name(&s->gen, m->node), m->text);
	} else {
		snprintf(why, sizeof(why), "procmgr: a node or a supervisor of the sweep was lost "
			 "(node %s%s%.900s); ending the sweep", pm_gen_node_name(&s->gen, m->node),
			 m->text_len ? ": " : "", m->text);
	}
	pm_log(s, "%s", why);
	pm_sweep_finish(s, code, why);
}

/* Where a trial runs, by node: "pq1:0,1/pq2:0". */
static void slots_text(struct pm_step *s, int i, char *buf, size_t len)
{
	struct pm_sweep_run *r = s->sweep;
	const struct pm_sq_trial *t = &r->q.t[i];
	size_t off = 0;
	int k, last = -1;

	buf[0] = '\0';
	if (t->state != PM_TS_STARTING && t->state != PM_TS_RUNNING &&
	    t->state != PM_TS_RESTARTING) {
		snprintf(buf, len, "-");
		return;
	}
	for (k = 0; k < t->ranks && off + 80 < len; k++) {
		int sl = t->slot_of_rank[k], node = sl / r->L;
		if (node != last)
			off += (size_t)snprintf(buf + off, len - off, "%s%s:%d", last < 0 ? "" : "/",
						s->names[node], sl % r->L);
		else
			off += (size_t)snprintf(buf + off, len - off, ",%d", sl % r->L);
		last = node;
	}
}

void pm_sweep_status(struct pm_step *s, struct pm_q *q)
{
	struct pm_sweep_run *r = s->sweep;
	char *text, slots[1024], err[256];
	size_t cap, off = 0;
	uint64_t t = now();
	int i;

	if (!r || s->node != 0)
		return;
	cap = (size_t)r->file.n * (sizeof(slots) / 4 + 400 + PM_METRIC_TEXT_MAX) + 1;
	text = malloc(cap);
	if (!text)
		return;
	for (i = 0; i < r->file.n; i++) {
		struct pm_sr_trial tr;
		char ex[16];
		size_t e;
		pm_sr_from_queue(&r->q, i, r->file.trials[i].name, t, &tr);
		slots_text(s, i, slots, sizeof(slots));
		snprintf(ex, sizeof(ex), tr.exit_code < 0 ? "-" : "%d", tr.exit_code);
		snprintf(err, sizeof(err), "%s", tr.error && tr.error[0] ? tr.error : "-");
		for (e = 0; err[e]; e++)
			if (err[e] == '\n' || err[e] == '\t')
				err[e] = ' ';
		off += (size_t)snprintf(text + off, cap - off, "trial %s %s %s %d %llu %s %s %s\n",
					tr.name, pm_ts_name(tr.state), slots, tr.restarts,
					(unsigned long long)tr.runtime_ms, ex,
					tr.result ? tr.result : "-", err);
		if (off >= cap)
			break;
	}
	text[off < cap ? off : cap - 1] = '\0';
	pm_q_text(s, q, -1, text);
	free(text);
}
