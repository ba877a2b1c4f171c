#include "sweep_loss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The rules as a table: by spares (rows of two), root, spare left. A node
 * handled already is the one case outside it (nothing). */
static const unsigned rules[2][2][2] = {
	/* no spares: a node and its subtree out, requeued; the root: the end */
	[0][0][0] = PM_SL_REQUEUE | PM_SL_SUBTREE,
	[0][0][1] = PM_SL_REQUEUE | PM_SL_SUBTREE,
	[0][1][0] = PM_SL_END,
	[0][1][1] = PM_SL_END,
	/* spares: the node alone out (its subtree re-attaches) */
	[1][0][0] = PM_SL_REQUEUE,
	[1][0][1] = PM_SL_REQUEUE | PM_SL_SPARE,
	[1][1][0] = PM_SL_REBUILD,
	[1][1][1] = PM_SL_REBUILD | PM_SL_SPARE,
};

unsigned pm_sl_decide(const struct pm_sl_case *c)
{
	if (c->again)
		return PM_SL_NOTHING;
	return rules[c->spares][c->root][c->spare_left];
}

int pm_sl_next_spare(const bool *in_pool, const bool *lost, const bool *ready, int nodes,
		     int first)
{
	int n;

	for (n = first < 0 ? 0 : first; n < nodes; n++)
		if (!in_pool[n] && !lost[n] && (!ready || ready[n]))
			return n;
	return -1;
}

int pm_sl_journal_line(const char *name, const struct pm_sl_end *e, char *buf, size_t len)
{
	char err[PM_SQ_ERR_MAX + 1];
	size_t i;
	int n;

	snprintf(err, sizeof(err), "%s", e->error[0] ? e->error : "-");
	for (i = 0; err[i]; i++)
		if (err[i] == '\t' || err[i] == '\n' || err[i] == '\r')
			err[i] = ' ';
	n = snprintf(buf, len, "%s\t%s\t%d\t%d\t%d\t%llu\t%s\n", name, pm_ts_name(e->state),
		     e->exit_code, e->restarts, e->requeues, (unsigned long long)e->runtime_ms,
		     err);
	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -1;
	}
	return n;
}

int pm_sl_journal_root(int node, char *buf, size_t len)
{
	int n = snprintf(buf, len, "#root %d\n", node);

	if (n < 0 || (size_t)n >= len) {
		if (len)
			buf[0] = '\0';
		return -1;
	}
	return n;
}

struct byname {
	const char *name;
	int i;
};

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct byname *)a)->name, ((const struct byname *)b)->name);
}

/* A decimal field of the line, up to the next tab: 0, or -1. */
static int number(char **p, long long max, long long *out)
{
	char *end;
	long long v;

	if (**p < '0' || **p > '9')
		return -1;
	v = strtoll(*p, &end, 10);
	if (*end != '\t' || v > max)
		return -1;
	*out = v;
	*p = end + 1;
	return 0;
}

/* One line (NUL-terminated, its LF gone) into e and the name: 0, or -1. */
static int parse(char *line, char **name, struct pm_sl_end *e)
{
	char *p = strchr(line, '\t'), *st;
	long long v[4];
	int k;

	if (!p || p == line)
		return -1;
	*p++ = '\0';
	*name = line;
	st = p;
	p = strchr(p, '\t');
	if (!p)
		return -1;
	*p++ = '\0';
	if (!strcmp(st, "done"))
		e->state = PM_TS_DONE;
	else if (!strcmp(st, "failed"))
		e->state = PM_TS_FAILED;
	else
		return -1;
	for (k = 0; k < 4; k++)
		if (number(&p, k == 3 ? (long long)1 << 53 : 1 << 30, &v[k]))
			return -1;
	e->exit_code = (int)v[0];
	e->restarts = (int)v[1];
	e->requeues = (int)v[2];
	e->runtime_ms = (uint64_t)v[3];
	snprintf(e->error, sizeof(e->error), "%s", strcmp(p, "-") ? p : "");
	return 0;
}

int pm_sl_replay(const char *text, size_t len, const char *const *names, int n,
		 struct pm_sl_end *out, struct pm_sl_replay *st)
{
	struct byname *idx = malloc((size_t)(n > 0 ? n : 1) * sizeof(*idx));
	char *line = malloc(len + 1);
	size_t off = 0;
	int i;

	memset(st, 0, sizeof(*st));
	if (!idx || !line) {
		free(idx);
		free(line);
		return -1;
	}
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		out[i].state = PM_TS_QUEUED;
		out[i].exit_code = -1;
		idx[i].name = names[i];
		idx[i].i = i;
	}
	qsort(idx, (size_t)n, sizeof(*idx), cmp_name);
	while (off < len) {
		const char *lf = memchr(text + off, '\n', len - off);
		size_t l = lf ? (size_t)(lf - (text + off)) : len - off;
		struct pm_sl_end e;
		struct byname key, *hit;
		char *name;
		int node;

		memcpy(line, text + off, l);
		line[l] = '\0';
		off += l + 1;
		if (!lf || memchr(line, '\0', l)) { /* torn by the root's loss, or binary */
			st->bad++;
			continue;
		}
		if (!strncmp(line, "#root ", 6)) {
			if (sscanf(line + 6, "%d", &node) == 1 && node >= 0)
				st->roots++;
			else
				st->bad++;
			continue;
		}
		if (parse(line, &name, &e)) {
			st->bad++;
			continue;
		}
		key.name = name;
		hit = n ? bsearch(&key, idx, (size_t)n, sizeof(*idx), cmp_name) : NULL;
		if (!hit) {
			st->unknown++;
		} else if (out[hit->i].state != PM_TS_QUEUED) {
			st->duplicate++;
		} else {
			out[hit->i] = e;
			st->ended++;
		}
	}
	free(idx);
	free(line);
	return 0;
}

uint32_t pm_sl_attempt_base(int roots)
{
	if (roots <= 0)
		return 1;
	if (roots > 255)
		roots = 255;
	return (uint32_t)roots << 24;
}
