/* A sweep's root lost, with spares (sweep_loss.h): the node that took the
 * root's place (gen's root_moved) rebuilds the queue. The trials file,
 * which every node reads, gives the trials; the old root's journal
 * (FILE.journal) the ends it recorded, kept as they were; every other
 * trial is queued again, not charged a restart. The old root's attempts
 * still running are stopped everywhere first (the reclaim: TRIAL_STOP to
 * node -1, sweep_node.c), and a node's slots join the new pool once each
 * of them answered, so that no new trial finds a slot busy; its attempts
 * start above the old root's (pm_sl_attempt_base), so that an old rank's
 * late end is never taken for a new one's. */
#include "step.h"
#include "sweep_run.h"
#include "sweep_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/safefile.h"
#include "io/sys.h"
#include "sweep/sweep_loss.h"

/* A journal larger than this is not read (its lines are ~100 bytes: a
 * million trials fit). */
#define JOURNAL_MAX (256L << 20)

/* The old root's journal's text (malloc'd, *len bytes), or NULL: none or
 * unreadable (said in the log; every trial then runs again). */
static char *read_journal(struct pm_step *s, const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL, err[PATH_MAX + 256];
	size_t got = 0;
	ssize_t k;
	/* The old root's, i.e. the user's own: another user's file under its
	 * name would forge the trials' ends. */
	int fd = pm_userfile_read(path, err, sizeof(err));

	*len = 0;
	if (fd < 0 || fstat(fd, &st) || st.st_size > JOURNAL_MAX) {
		pm_log(s, "sweep: cannot read the journal: %s; every trial runs again",
		       fd < 0 ? err : "larger than 256 MiB");
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size &&
	       (k = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)k;
	close(fd);
	*len = got;
	return buf;
}

/* The journal's ends into the queue: how many trials ended already. */
static int replay(struct pm_step *s, const char *path, int *roots)
{
	struct pm_sweep_run *r = s->sweep;
	const char **names = malloc((size_t)r->file.n * sizeof(char *));
	struct pm_sl_end *ends = calloc((size_t)r->file.n, sizeof(*ends));
	struct pm_sl_replay st = { 0 };
	size_t len;
	char *text = read_journal(s, path, &len);
	uint64_t t = pm_now_ms();
	int i, ended = 0;

	*roots = 0;
	if (names && ends && text) {
		for (i = 0; i < r->file.n; i++)
			names[i] = r->file.trials[i].name;
		if (!pm_sl_replay(text, len, names, r->file.n, ends, &st)) {
			for (i = 0; i < r->file.n; i++)
				if (ends[i].state != PM_TS_QUEUED &&
				    !pm_sq_recovered(&r->q, i, ends[i].state, ends[i].exit_code,
						     ends[i].restarts, ends[i].requeues,
						     ends[i].runtime_ms, ends[i].error, t))
					ended++;
			*roots = st.roots;
		}
		if (st.unknown || st.duplicate || st.bad)
			pm_log(s, "sweep: journal %s: %d lines of no trial, %d again, %d not "
			       "lines (a torn last one is)", path, st.unknown, st.duplicate, st.bad);
	}
	free(names);
	free(ends);
	free(text);
	return ended;
}

void pm_sweep_takeover(void *ctx)
{
	struct pm_step *s = ctx;
	struct pm_sweep_run *r;
	char err[1024], path[PATH_MAX + 16], line[64];
	struct pm_msg m;
	int roots, ended, n, lost = 0;

	if (s->sweep || !s->sweep_node)
		return; /* the first root, or once only */
	if (pm_sweep_root_init(s, err, sizeof(err))) {
		pm_log(s, "sweep: taking over the root: %s", err);
		pm_gen_sweep_end(&s->gen, 1, err);
		return;
	}
	r = s->sweep;
	snprintf(path, sizeof(path), "%.*s.journal", PATH_MAX - 9, s->opts.sweep);
	ended = replay(s, path, &roots);
	r->base = pm_sl_attempt_base(roots + 1);
	r->next_attempt = r->base;
	/* This root's ends go on in the same journal, after its mark. */
	r->journal_fd = pm_userfile_append(path, 0644, err, sizeof(err));
	n = pm_sl_journal_root(s->node, line, sizeof(line));
	if (r->journal_fd < 0)
		pm_log(s, "sweep: the journal: %s; going on without it", err);
	else if (n < 0 || write(r->journal_fd, line, (size_t)n) != n)
		pm_log(s, "sweep: cannot write the journal %s: %s", path, strerror(errno));
	if (pm_sweep_pool_init(s, false)) {
		pm_sweep_finish(s, 1, "procmgr: sweep: out of memory taking over the root");
		return;
	}
	/* The old root and what was lost before its machine's word came. */
	for (n = 0; n < s->nnodes; n++)
		if (n == 0 || pm_gen_excluded(&s->gen, n))
		{
			(void)pm_sweep_pool_gone(s, n);
			lost++;
		}
	pm_sweep_ev(s, "sweep_takeover", "\"root\":\"%s\",\"trials\":%d,\"ended\":%d,"
		    "\"queued\":%d,\"nodes_lost\":%d,\"attempt_base\":%u", s->names[s->node],
		    r->file.n, ended, r->file.n - ended, lost, r->base);
	pm_log(s, "sweep: took over the root: %d of %d trials ended (journal), the rest "
	       "queued; attempts from %u", ended, r->file.n, r->base);
	pm_msg_init(&m, PM_MSG_PRINT);
	snprintf(m.text, sizeof(m.text), "procmgr: the sweep's root %s was lost; %s took its "
		 "place: %d of %d trials had ended, the other %d run again (once their slots "
		 "are free)", s->names[0], s->names[s->node], ended, r->file.n, r->file.n - ended);
	m.text_len = (uint16_t)strlen(m.text);
	pm_step_ops.send_rank(s, 0, &m);
	/* Every node's old trials stopped; the answers fill the pool. */
	pm_msg_init(&m, PM_MSG_TRIAL_STOP);
	m.gen = r->base;
	m.node = -1;
	pm_sweep_node_route(s, &m);
	if (!r->launched && pm_sweep_pool_complete(s))
		pm_sweep_launch(s);
}
