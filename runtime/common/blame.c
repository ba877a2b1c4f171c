#include "blame.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stacks.h"

struct pm_blame pm_blame_hang(int first, int followers, uint64_t lead_ms, unsigned resolution_ms,
			      int outlier)
{
	if (!followers)
		return (struct pm_blame){ PM_BLAME_HEARTBEAT, first };
	if (outlier >= 0)
		return (struct pm_blame){ PM_BLAME_STACK, outlier };
	if (lead_ms >= resolution_ms)
		return (struct pm_blame){ PM_BLAME_HEARTBEAT, first };
	return (struct pm_blame){ PM_BLAME_NONE, -1 };
}

/* appends to buf at *off, never past len */
static void add(char *buf, size_t len, size_t *off, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add(char *buf, size_t len, size_t *off, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*off >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(buf + *off, len - *off, fmt, ap);
	va_end(ap);
	if (n > 0)
		*off += (size_t)n;
	if (*off >= len)
		*off = len - 1;
}

/* "rank 3" / "ranks 0-2,5" of the ranks of stacks i with sel(i) true. */
static void rank_list(const int *ranks, const bool *sel, int n, int *tmp, char *out, size_t len)
{
	int i, k = 0;
	char list[256];

	for (i = 0; i < n; i++)
		if (sel[i])
			tmp[k++] = ranks[i];
	if (pm_ranks_format(tmp, k, list, sizeof(list)))
		snprintf(list, sizeof(list), "%d ranks", k);
	snprintf(out, len, "rank%s %s", k == 1 ? "" : "s", list);
}

int pm_blame_stacks(const char *const *texts, const int *ranks, int n, int *place,
		    struct pm_stack_verdict *v)
{
	struct pm_stack_where *w = calloc((size_t)(n > 0 ? n : 1), sizeof(*w));
	const char **keys = calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
	int *tr = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
	int *tg = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
	int *tmp = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
	int *ti = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
	bool *sel = calloc((size_t)(n > 0 ? n : 1), sizeof(bool));
	int i, j, g, t = 0, alone = -1, nalone = 0, nwait = 0, wait_place = -1, *size = NULL;
	size_t off = 0;
	char list[300];
	bool all_py = true;

	memset(v, 0, sizeof(*v));
	v->rank = -1;
	if (!w || !keys || !tr || !tg || !tmp || !ti || !sel)
		goto oom;
	for (i = 0; i < n; i++) {
		pm_stack_where(texts[i], &w[i]);
		if (place)
			place[i] = -1;
		if (!w[i].taken) {
			v->missing++;
			continue;
		}
		all_py = all_py && w[i].py;
		ti[t++] = i;
	}
	v->taken = t;
	/* The Python frames say where a Python rank is; a stack without them
	 * (no python3-dbg, Python 3.13, a native program) is compared by its
	 * main thread's native frames, and then so are all. */
	v->py = t > 0 && all_py;
	for (j = 0; j < t; j++) {
		keys[j] = v->py ? w[ti[j]].pykey : w[ti[j]].nkey;
		tr[j] = ranks[ti[j]];
	}
	v->places = pm_stack_group(keys, tr, t, tg);
	size = calloc((size_t)(v->places > 0 ? v->places : 1), sizeof(int));
	if (!size)
		goto oom;
	for (j = 0; j < t; j++) {
		const struct pm_stack_where *x = &w[ti[j]];
		size[tg[j]]++;
		if (place)
			place[ti[j]] = tg[j];
		if (v->py ? x->pycoll : x->ncoll) {
			nwait++;
			if (wait_place < 0 || tg[j] < wait_place)
				wait_place = tg[j];
		} else {
			nalone++;
			alone = j;
		}
	}
#define TOP(j) (v->py ? w[ti[j]].pytop : w[ti[j]].ntop)
	if (nwait && nalone == 1) {
		/* Every other rank waits for it in a collective. */
		v->rank = tr[alone];
		for (j = 0; j < t; j++)
			sel[j] = j != alone;
		rank_list(tr, sel, t, tmp, list, sizeof(list));
		for (j = 0; j < t && tg[j] != wait_place; j++)
			;
		add(v->words, sizeof(v->words), &off, "the only rank not waiting in a collective "
		    "(it is in %s; %s %s in %s%s)", TOP(alone), list, nwait == 1 ? "waits" : "wait",
		    TOP(j), size[wait_place] < nwait ? " and other collectives" : "");
	} else if (t >= 3 && v->places == 2 && size[1] == 1) {
		for (j = 0; j < t && tg[j] != 1; j++)
			;
		alone = j;
		v->rank = tr[alone];
		for (j = 0; j < t; j++)
			sel[j] = j != alone;
		rank_list(tr, sel, t, tmp, list, sizeof(list));
		for (j = 0; j < t && tg[j] != 0; j++)
			;
		add(v->words, sizeof(v->words), &off, "the only rank whose stack differs from the "
		    "others' (it is in %s; %s in %s)", TOP(alone), list, TOP(j));
	} else if (!t) {
		add(v->words, sizeof(v->words), &off, "no stack was taken");
	} else if (v->places == 1) {
		for (j = 0; j < t; j++)
			sel[j] = true;
		rank_list(tr, sel, t, tmp, list, sizeof(list));
		if (t == 1)
			add(v->words, sizeof(v->words), &off, "only %s's stack was taken (in %s)",
			    list, TOP(0));
		else
			add(v->words, sizeof(v->words), &off, "the stacks taken are all in one "
			    "place (%s in %s)", list, TOP(0));
	} else {
		add(v->words, sizeof(v->words), &off, "no single rank stands apart (");
		for (g = 0; g < v->places && g < 4; g++) {
			for (j = 0; j < t; j++)
				sel[j] = tg[j] == g;
			rank_list(tr, sel, t, tmp, list, sizeof(list));
			for (j = 0; j < t && tg[j] != g; j++)
				;
			add(v->words, sizeof(v->words), &off, "%s%s in %s", g ? "; " : "", list,
			    TOP(j));
		}
		if (v->places > 4)
			add(v->words, sizeof(v->words), &off, "; %d more places", v->places - 4);
		add(v->words, sizeof(v->words), &off, ")");
	}
#undef TOP
	/* The stacks not taken, one reason at a time. */
	off = 0;
	for (i = 0; i < n; i++) {
		if (w[i].taken || !w[i].why[0])
			continue;
		for (j = 0; j < n; j++) {
			sel[j] = !w[j].taken && w[j].why[0] && !strcmp(w[j].why, w[i].why);
			if (sel[j] && j != i)
				w[j].why[0] = '\0'; /* said with i's */
		}
		rank_list(ranks, sel, n, tmp, list, sizeof(list));
		add(v->missing_words, sizeof(v->missing_words), &off, "%s%s (%s)",
		    off ? "; " : "not taken: the stack of ", list, w[i].why);
		w[i].why[0] = '\0';
	}
	free(w), free(keys), free(tr), free(tg), free(tmp), free(ti), free(sel), free(size);
	return 0;
oom:
	free(w), free(keys), free(tr), free(tg), free(tmp), free(ti), free(sel), free(size);
	snprintf(v->words, sizeof(v->words), "the stacks could not be compared (out of memory)");
	return -1;
}

const char *pm_blame_name(enum pm_blame_by by)
{
	static const char *const names[] = { "heartbeat", "stack", "none" };

	return (unsigned)by < sizeof(names) / sizeof(names[0]) ? names[by] : "?";
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void fmt_ms(uint64_t ms, char *buf, size_t len)
{
	if (ms < 1000)
		snprintf(buf, len, "%llu ms", (unsigned long long)ms);
	else
		snprintf(buf, len, "%.1f s", (double)ms / 1000.0);
}

void pm_blame_text(const struct pm_blame *b, int first, const char *first_node,
		   const char *blamed_node, int *follower, int n, int nfollowers,
		   uint64_t lead_ms, const struct pm_stack_verdict *sv, char *buf, size_t len)
{
	int i, all[65];
	char ago[32], res[32], list[256];
	size_t off;

	if (n > 64)
		n = 64;
	qsort(follower, (size_t)n, sizeof(int), cmp_int);
	fmt_ms(lead_ms, ago, sizeof(ago));
	if (b->by != PM_BLAME_HEARTBEAT) {
		bool tie = lead_ms < PM_BLAME_RESOLUTION_MS;
		memcpy(all, follower, (size_t)n * sizeof(int));
		all[n] = first;
		if (pm_ranks_format(all, n + 1, list, sizeof(list)))
			snprintf(list, sizeof(list), "%d ranks", nfollowers + 1);
		fmt_ms(PM_BLAME_RESOLUTION_MS, res, sizeof(res));
		if (tie)
			off = (size_t)snprintf(buf, len, "ranks %s%s hung with their last heartbeats "
					       "within %s of each other, less than heartbeats "
					       "resolve (%s): ", list, nfollowers > n ? " and more" : "",
					       ago, res);
		else
			off = (size_t)snprintf(buf, len, "ranks %s%s hung: ", list,
					       nfollowers > n ? " and more" : "");
		if (off >= len)
			off = len ? len - 1 : 0;
		if (b->by == PM_BLAME_STACK)
			add(buf, len, &off, "rank %d on %s, %s, is the likely cause", b->rank,
			    blamed_node, sv && sv->words[0] ? sv->words : "whose stack differs from "
			    "the others'");
		else if (sv && sv->words[0])
			add(buf, len, &off, "inconclusive: %s", sv->words);
		else
			add(buf, len, &off, "inconclusive, no evidence points at one rank");
		/* The stacks outweigh a lead between beats of the same step,
		 * which the step's own work on each rank makes. */
		if (!tie && b->rank != first)
			add(buf, len, &off, " (rank %d's last heartbeat is the oldest, by %s: the "
			    "stacks say more)", first, ago);
		else if (!tie)
			add(buf, len, &off, " (its last heartbeat is also the oldest, by %s)", ago);
		if (sv && sv->missing_words[0])
			add(buf, len, &off, "; %s", sv->missing_words);
		return;
	}
	off = (size_t)snprintf(buf, len, "rank %d on %s hung", first, first_node);
	if (!nfollowers)
		return;
	off += (size_t)snprintf(buf + off, off < len ? len - off : 0,
				" first (its last heartbeat %s before any other's); rank%s", ago,
				nfollowers > 1 ? "s" : "");
	for (i = 0; i < n; i++)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s %d",
					i ? "," : "", follower[i]);
	if (nfollowers > n)
		off += (size_t)snprintf(buf + off, off < len ? len - off : 0, " and %d more",
					nfollowers - n);
	snprintf(buf + off, off < len ? len - off : 0, " followed");
}
