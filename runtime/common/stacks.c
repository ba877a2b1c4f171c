#include "stacks.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct out {
	char *p;
	size_t len, off;
	int full;
};

/* Whole lines only: a stack cut in the middle of a frame would compare
 * different from the same stack cut elsewhere. */
static void put_line(struct out *o, const char *s, size_t n)
{
	if (o->full || o->off + n + 2 > o->len) {
		o->full = 1;
		return;
	}
	memcpy(o->p + o->off, s, n);
	o->off += n;
	o->p[o->off++] = '\n';
	o->p[o->off] = '\0';
}

/* "#3  0x00005555 in foo (a=1, b=0x2) at x.c:7" -> "  foo at x.c:7" */
static void native_frame(struct out *o, const char *l)
{
	char buf[512];
	const char *p = l + 1, *fn, *fe, *rest;
	int n;

	while (isdigit((unsigned char)*p))
		p++;
	while (*p == ' ')
		p++;
	if (!strncmp(p, "0x", 2)) {
		const char *in = strstr(p, " in ");
		if (!in)
			return;
		p = in + 4;
	}
	fn = p;
	fe = strchr(fn, ' ');
	if (!fe)
		fe = fn + strlen(fn);
	rest = "";
	/* The last ") at " or ") from ": argument values may hold either. */
	{
		const char *p2, *at = NULL, *from = NULL;
		for (p2 = fe; (p2 = strstr(p2, ") at ")); p2++)
			at = p2;
		for (p2 = fe; (p2 = strstr(p2, ") from ")); p2++)
			from = p2;
		if (at && (!from || at > from))
			rest = at + 2;
		else if (from)
			rest = from + 2;
	}
	n = snprintf(buf, sizeof(buf), "  %.*s%s%s", (int)(fe - fn), fn, *rest ? " " : "", rest);
	if (n > 0)
		put_line(o, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

size_t pm_stack_normalize(const char *raw, char *out, size_t len)
{
	struct out o = { out, len, 0, 0 };
	const char *l = raw;

	if (len)
		out[0] = '\0';
	while (*l) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l) : strlen(l);
		char line[1024];
		const char *t;

		if (n >= sizeof(line))
			n = sizeof(line) - 1;
		memcpy(line, l, n);
		line[n] = '\0';
		t = line;
		while (*t == ' ')
			t++;
		if (!strncmp(line, "Thread ", 7)) {
			int id;
			char b[32];
			if (sscanf(line + 7, "%d", &id) == 1) {
				int k = snprintf(b, sizeof(b), "thread %d:", id);
				put_line(&o, b, (size_t)k);
			}
		} else if (line[0] == '#' && isdigit((unsigned char)line[1])) {
			native_frame(&o, line);
		} else if (!strncmp(line, "Traceback (most recent call first):", 35)) {
			put_line(&o, "python:", 7);
		} else if (!strncmp(t, "File \"", 6)) {
			char b[1100];
			int k = snprintf(b, sizeof(b), "  %s", t);
			put_line(&o, b, (size_t)k < sizeof(b) ? (size_t)k : sizeof(b) - 1);
		}
		l += e ? (size_t)(e - l) + 1 : strlen(l);
	}
	return o.off;
}

void pm_stack_top(const char *norm, char *out, size_t len)
{
	struct pm_stack_where *w = malloc(sizeof(*w));

	if (!len)
		return;
	out[0] = '\0';
	if (!w)
		return;
	pm_stack_where(norm, w);
	snprintf(out, len, "%s", w->py ? w->pytop : w->ntop);
	free(w);
}

int pm_stack_group(const char *const *stacks, const int *ranks, int n, int *group)
{
	int i, j, ng = 0;
	int *size, *first, *order, *rename;

	if (n <= 0)
		return 0;
	size = calloc((size_t)n, sizeof(int));
	first = calloc((size_t)n, sizeof(int));
	order = calloc((size_t)n, sizeof(int));
	rename = calloc((size_t)n, sizeof(int));
	if (!size || !first || !order || !rename) {
		for (i = 0; i < n; i++)
			group[i] = i;
		free(size), free(first), free(order), free(rename);
		return n;
	}
	for (i = 0; i < n; i++) {
		for (j = 0; j < i && strcmp(stacks[i], stacks[j]); j++)
			;
		if (j < i) {
			group[i] = group[j];
		} else {
			group[i] = ng;
			first[ng] = ranks[i];
			ng++;
		}
		size[group[i]]++;
		if (ranks[i] < first[group[i]])
			first[group[i]] = ranks[i];
	}
	/* Biggest first: the outliers come last, where the eye ends. */
	for (i = 0; i < ng; i++)
		order[i] = i;
	for (i = 1; i < ng; i++)
		for (j = i; j > 0; j--) {
			int a = order[j - 1], b = order[j];
			if (size[b] > size[a] || (size[b] == size[a] && first[b] < first[a])) {
				order[j - 1] = b;
				order[j] = a;
			} else {
				break;
			}
		}
	for (i = 0; i < ng; i++)
		rename[order[i]] = i;
	for (i = 0; i < n; i++)
		group[i] = rename[group[i]];
	free(size), free(first), free(order), free(rename);
	return ng;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int pm_ranks_format(int *ranks, int n, char *buf, size_t len)
{
	size_t off = 0;
	int i = 0, k;

	if (!len)
		return -1;
	buf[0] = '\0';
	qsort(ranks, (size_t)n, sizeof(int), cmp_int);
	while (i < n) {
		int lo = ranks[i], hi = lo;
		while (i < n && ranks[i] <= hi + 1) {
			if (ranks[i] > hi)
				hi = ranks[i];
			i++;
		}
		k = lo == hi ? snprintf(buf + off, len - off, "%s%d", off ? "," : "", lo) :
			       snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", lo, hi);
		if (k < 0 || (size_t)k >= len - off)
			return -1;
		off += (size_t)k;
	}
	return 0;
}

/* Each item "N" or "N-M" (N <= M), comma-separated; calls fn for each. */
static int walk(const char *list, int rank, int *hit, char *why, size_t len)
{
	const char *p = list;

	if (!*p) {
		snprintf(why, len, "an empty rank list");
		return -1;
	}
	while (*p) {
		char *end;
		long lo, hi;
		errno = 0;
		if (!isdigit((unsigned char)*p))
			goto bad;
		lo = strtol(p, &end, 10);
		hi = lo;
		if (*end == '-') {
			if (!isdigit((unsigned char)end[1]))
				goto bad;
			hi = strtol(end + 1, &end, 10);
		}
		if (errno || lo > hi || hi > 0x7fffffffL || (*end && *end != ','))
			goto bad;
		if (rank >= lo && rank <= hi)
			*hit = 1;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p)
			goto bad;
	}
	return 0;
bad:
	snprintf(why, len, "bad rank list '%.64s' (allowed: ranks and ranges such as 0-3,7)",
		 list);
	return -1;
}

int pm_ranks_contains(const char *list, int rank)
{
	char why[128];
	int hit = 0;

	return walk(list, rank, &hit, why, sizeof(why)) ? -1 : hit;
}

int pm_ranks_check(const char *list, char *why, size_t len)
{
	int hit = 0;

	return walk(list, -1, &hit, why, len);
}

/* One line of s at l: its length, without the newline. */
static size_t line_len(const char *l)
{
	return strcspn(l, "\n");
}

static const char *next_line(const char *l)
{
	l += line_len(l);
	return *l ? l + 1 : l;
}

/* gdb numbers the threads it attached to from 1, the process's main
 * thread first; a stack without thread 1 (another tool) has its first
 * thread as the main one, one without thread lines only that. */
static int main_thread(const char *norm)
{
	const char *l;
	int first = -1, id;

	for (l = norm; *l; l = next_line(l))
		if (sscanf(l, "thread %d:", &id) == 1) {
			if (id == 1)
				return 1;
			if (first < 0)
				first = id;
		}
	return first;
}

/* The main thread's frames, native and Python, as calls of fn (line,
 * length, python?). gdb lists every thread twice (bt, then py-bt): both
 * lists are the main thread's. Returns whether any frame was seen at all,
 * in any thread. */
static bool main_frames(const char *norm, void (*fn)(void *, const char *, size_t, bool),
			void *arg)
{
	const char *l;
	int main = main_thread(norm), cur = -1, id;
	bool py = false, any = false;

	for (l = norm; *l; l = next_line(l)) {
		size_t n = line_len(l);
		if (sscanf(l, "thread %d:", &id) == 1) {
			cur = id;
			py = false;
		} else if (n == 7 && !strncmp(l, "python:", 7)) {
			py = true;
		} else if (!strncmp(l, "  ", 2)) {
			any = true;
			if (cur == main && fn)
				fn(arg, l, n, py || !strncmp(l, "  File \"", 8));
		}
	}
	return any;
}

struct brief {
	struct out native, py;
};

static void brief_one(void *arg, const char *l, size_t n, bool py)
{
	struct brief *b = arg;

	put_line(py ? &b->py : &b->native, l, n);
}

size_t pm_stack_brief(const char *norm, char *out, size_t len)
{
	static const size_t part = 64 * 1024;
	struct brief b;
	char head[32];
	const char *l;
	int main = main_thread(norm), k;
	struct out o = { out, len, 0, 0 };

	if (len)
		out[0] = '\0';
	b.native = (struct out){ malloc(part), part, 0, 0 };
	b.py = (struct out){ malloc(part), part, 0, 0 };
	if (!b.native.p || !b.py.p) {
		free(b.native.p), free(b.py.p);
		return 0;
	}
	b.native.p[0] = b.py.p[0] = '\0';
	main_frames(norm, brief_one, &b);
	if (b.native.off || b.py.off) {
		if (main >= 0) {
			k = snprintf(head, sizeof(head), "thread %d:", main);
			put_line(&o, head, (size_t)k);
		}
		if (b.py.off)
			put_line(&o, "python:", 7);
		for (l = b.py.off ? b.py.p : b.native.p; *l; l = next_line(l))
			put_line(&o, l, line_len(l));
	}
	free(b.native.p), free(b.py.p);
	return o.off;
}

/* A native frame's function: "  c10d::Work::wait(std::chrono...) () from
 * x.so" -> "c10d::Work::wait". */
static void frame_fn(const char *l, size_t n, char *out, size_t len)
{
	size_t k;

	l += 2;
	n -= 2;
	k = strcspn(l, " (\n");
	if (k > n)
		k = n;
	snprintf(out, len, "%.*s", (int)k, l);
}

/* The C library's and the kernel's waits, said by the function above. */
static bool libc_fn(const char *fn)
{
	static const char *const waits[] = {
		"poll", "ppoll", "epoll_wait", "epoll_pwait", "select", "pselect", "nanosleep",
		"clock_nanosleep", "read", "write", "recv", "recvfrom", "recvmsg", "send",
		"sendto", "sendmsg", "accept", "accept4", "connect", "pthread_cond_wait",
		"pthread_cond_timedwait", "pthread_cond_clockwait", "pthread_join", "sem_wait",
		"sem_timedwait", "syscall", "wait4", "waitpid", "sleep", "usleep", "pause",
		"sigwait", "sigtimedwait", "start_thread", "clone", "clone3", "raise", "abort",
		"??", NULL
	};
	int i;

	if (fn[0] == '_' || !fn[0])
		return true;
	for (i = 0; waits[i]; i++)
		if (!strcmp(fn, waits[i]))
			return true;
	return false;
}

static bool coll_fn(const char *fn)
{
	return strstr(fn, "c10d::") || strstr(fn, "gloo::") || !strncmp(fn, "nccl", 4) ||
	       !strncmp(fn, "MPI_", 4) || !strncmp(fn, "PMPI_", 5);
}

struct wherectx {
	struct pm_stack_where *w;
	struct out nkey;
	bool have_py, have_ntop;
	char first[128];
};

static void where_one(void *arg, const char *l, size_t n, bool py)
{
	struct wherectx *c = arg;
	struct pm_stack_where *w = c->w;
	char fn[128];

	if (py) {
		const char *f, *fe, *in;
		if (c->have_py)
			return; /* only the innermost */
		c->have_py = true;
		w->py = true;
		/* '  File "F", line N, in FUNC' */
		f = l + 8;
		fe = memchr(f, '"', (size_t)(l + n - f));
		in = fe ? strstr(fe, ", in ") : NULL;
		if (!fe || !in || in > l + n)
			return;
		in += 5;
		snprintf(w->pytop, sizeof(w->pytop), "%.*s", (int)(l + n - in), in);
		snprintf(w->pykey, sizeof(w->pykey), "%.*s in %.*s", (int)(l + n - in), in,
			 (int)(fe - f), f);
		w->pycoll = memmem(f, (size_t)(fe - f), "/torch/distributed/", 19) != NULL;
		return;
	}
	frame_fn(l, n, fn, sizeof(fn));
	put_line(&c->nkey, fn, strlen(fn));
	if (!c->first[0])
		snprintf(c->first, sizeof(c->first), "%s", fn);
	if (!c->have_ntop && !libc_fn(fn)) {
		c->have_ntop = true;
		snprintf(w->ntop, sizeof(w->ntop), "%s", fn);
	}
	if (coll_fn(fn))
		w->ncoll = true;
}

void pm_stack_where(const char *text, struct pm_stack_where *w)
{
	struct wherectx c = { .w = w };
	const char *p = text;
	size_t n;

	memset(w, 0, sizeof(*w));
	c.nkey = (struct out){ w->nkey, sizeof(w->nkey), 0, 0 };
	w->taken = main_frames(text, where_one, &c);
	if (!w->ntop[0])
		snprintf(w->ntop, sizeof(w->ntop), "%s", c.first);
	if (w->taken)
		return;
	/* "procmgr: no stack for rank 3 (pid 9): WHY" / "procmgr: no stack: WHY" */
	if (!strncmp(p, "procmgr: ", 9))
		p += 9;
	if (!strncmp(p, "no stack for rank ", 18)) {
		const char *c2 = strstr(p, ": ");
		if (c2 && c2 < p + line_len(p))
			p = c2 + 2;
	} else if (!strncmp(p, "no stack: ", 10)) {
		p += 10;
	}
	n = line_len(p);
	if (n)
		snprintf(w->why, sizeof(w->why), "%.*s", (int)n, p);
	else
		snprintf(w->why, sizeof(w->why), "the stack tool found no frames");
}

unsigned pm_stack_bound_ms(unsigned base, double load, long cpus, unsigned max)
{
	double ms = base;

	if (cpus > 0 && load > (double)cpus)
		ms = ms * load / (double)cpus;
	if (ms > max)
		ms = max;
	return ms < base ? base : (unsigned)ms;
}

void pm_stack_overrun_words(const char *tool, unsigned ms, double load, long cpus,
			    const char *raise, char *buf, size_t len)
{
	int n = tool ? snprintf(buf, len, "%s did not finish within %.1f s", tool, ms / 1000.0)
		     : snprintf(buf, len, "waiting: no turn among this node's stack tools within "
				"%.1f s", ms / 1000.0);

	if (n < 0 || (size_t)n >= len)
		return;
	if (load >= 0 && cpus > 0)
		snprintf(buf + n, len - (size_t)n, " (node load %.1f on %ld CPU%s%s%s)", load, cpus,
			 cpus == 1 ? "" : "s", raise && *raise ? "; " : "", raise ? raise : "");
	else if (raise && *raise)
		snprintf(buf + n, len - (size_t)n, " (%s)", raise);
}
