/* A step's event log as an SVG timeline. */
#include "timeline.h"

#include "common/goodput.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- one line of the log: a flat JSON object ---- */

struct rd {
	const char *p;
};

static void ws(struct rd *r)
{
	while (*r->p == ' ' || *r->p == '\t' || *r->p == '\r' || *r->p == '\n')
		r->p++;
}

/* At the opening quote: the string into out (cut to fit; \u outside ASCII
 * as '?', enough for a tooltip), or skipped if out is NULL. */
static int str(struct rd *r, char *out, size_t len)
{
	size_t off = 0;

	r->p++;
	while (*r->p && *r->p != '"') {
		char c = *r->p++;
		if (c == '\\') {
			if (!*r->p)
				return -1;
			c = *r->p++;
			switch (c) {
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'b': case 'f': c = ' '; break;
			case 'u': {
				unsigned v = 0;
				int i;
				for (i = 0; i < 4; i++) {
					char h = *r->p++;
					v <<= 4;
					if (h >= '0' && h <= '9') v |= (unsigned)(h - '0');
					else if (h >= 'a' && h <= 'f') v |= (unsigned)(h - 'a' + 10);
					else if (h >= 'A' && h <= 'F') v |= (unsigned)(h - 'A' + 10);
					else return -1;
				}
				c = v >= 0x20 && v < 0x7f ? (char)v : v == '\n' ? '\n' : '?';
				break;
			}
			case '"': case '\\': case '/': break;
			default: return -1;
			}
		}
		if (out && off + 1 < len)
			out[off++] = c;
	}
	if (*r->p != '"')
		return -1;
	r->p++;
	if (out && len)
		out[off] = '\0';
	return 0;
}

/* A value we do not keep: strings, numbers, literals, nested arrays and
 * objects (the followers list). */
static int skip(struct rd *r, int depth)
{
	ws(r);
	if (depth > 16)
		return -1;
	if (*r->p == '"')
		return str(r, NULL, 0);
	if (*r->p == '[' || *r->p == '{') {
		char close = *r->p == '[' ? ']' : '}';
		r->p++;
		ws(r);
		if (*r->p == close) {
			r->p++;
			return 0;
		}
		for (;;) {
			if (close == '}') {
				ws(r);
				if (*r->p != '"' || str(r, NULL, 0))
					return -1;
				ws(r);
				if (*r->p++ != ':')
					return -1;
			}
			if (skip(r, depth + 1))
				return -1;
			ws(r);
			if (*r->p == close) {
				r->p++;
				return 0;
			}
			if (*r->p++ != ',')
				return -1;
		}
	}
	if (!*r->p || strchr(",}]", *r->p))
		return -1;
	while (*r->p && !strchr(",}] \t\r\n", *r->p))
		r->p++;
	return 0;
}

static int num(struct rd *r, double *v)
{
	char *end;

	ws(r);
	*v = strtod(r->p, &end);
	if (end == r->p || !isfinite(*v))
		return -1;
	r->p = end;
	return 0;
}

int pm_tl_parse_line(const char *line, struct pm_tl_event *e)
{
	struct rd r = { .p = line };
	bool have_t = false, have_n = false, have_d = false;
	char key[32];
	double v;

	memset(e, 0, sizeof(*e));
	e->gen = e->rank = -1;
	e->recovery_ms = e->process_ms = -1;
	ws(&r);
	if (*r.p++ != '{')
		return -1;
	ws(&r);
	if (*r.p == '}')
		return -1;
	for (;;) {
		ws(&r);
		if (*r.p != '"' || str(&r, key, sizeof(key)))
			return -1;
		ws(&r);
		if (*r.p++ != ':')
			return -1;
		ws(&r);
		if (!strcmp(key, "time") && *r.p != '"') {
			if (num(&r, &e->t))
				return -1;
			have_t = true;
		} else if (!strcmp(key, "event") && *r.p == '"') {
			if (str(&r, e->name, sizeof(e->name)))
				return -1;
			have_n = e->name[0] != '\0';
		} else if ((!strcmp(key, "gen") || !strcmp(key, "rank")) && *r.p != '"') {
			if (num(&r, &v))
				return -1;
			*(key[0] == 'g' ? &e->gen : &e->rank) = (long)v;
		} else if ((!strcmp(key, "recovery_ms") || !strcmp(key, "process_ms")) &&
			   *r.p != '"') {
			if (num(&r, key[0] == 'r' ? &e->recovery_ms : &e->process_ms))
				return -1;
		} else if (!strcmp(key, "node") && *r.p == '"') {
			if (str(&r, e->node, sizeof(e->node)))
				return -1;
		} else if (!have_d && *r.p == '"' &&
			   (!strcmp(key, "status") || !strcmp(key, "check") ||
			    !strcmp(key, "reason") || !strcmp(key, "message"))) {
			if (str(&r, e->detail, sizeof(e->detail)))
				return -1;
			have_d = true;
		} else if (skip(&r, 0)) {
			return -1;
		}
		ws(&r);
		if (*r.p == '}')
			break;
		if (*r.p++ != ',')
			return -1;
	}
	r.p++;
	ws(&r);
	return *r.p || !have_t || !have_n ? -1 : 0;
}

/* ---- the picture ---- */

#define W 1100.0
#define LEFT 120.0
#define RIGHT 40.0
#define TOP 64.0
#define ROW 26.0
#define MAX_ROWS 48 /* nodes drawn one a row; the rest share the last */

struct kind {
	const char *name, *label, *color;
	char shape; /* c circle, o ring, d diamond, s square, x cross, t triangle, b bar */
};

static const struct kind kinds[] = {
	{ "launch", "launch", "#188038", 't' },
	{ "start", "generation starts", "#188038", 't' },
	{ "running", "every rank runs", "#34a853", 'c' },
	{ "heartbeating", "every rank beats", "#12b5cb", 'c' },
	{ "rank_failed", "rank failed", "#d93025", 'c' },
	{ "hang", "hang", "#f29900", 'd' },
	{ "health_failed", "health check failed", "#9334e6", 's' },
	{ "node_lost", "node lost", "#202124", 'x' },
	{ "node_replaced", "node replaced", "#1a73e8", 't' },
	{ "stopped", "every rank stopped", "#80868b", 'b' },
	{ "generation_succeeded", "generation succeeded", "#188038", 'o' },
	{ "finish", "finished", "#188038", 's' },
	{ "give_up", "gave up", "#d93025", 's' },
	{ "cancelled", "cancelled", "#5f6368", 's' },
};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))
static const struct kind other = { "", "other", "#9aa0a6", 'c' };

static const struct kind *kind_of(const char *name)
{
	size_t i;

	for (i = 0; i < NKINDS; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return &other;
}

static void xml(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\n': fputs("&#10;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				fputc(*s, f);
		}
	}
}

static void mark(FILE *f, const struct kind *k, double x, double y, bool hollow)
{
	const char *fill = hollow ? "none" : k->color;

	switch (k->shape) {
	case 'd':
		fprintf(f, "<path d=\"M%.1f %.1fl7 7l-7 7l-7 -7z\" fill=\"%s\" stroke=\"%s\"/>",
			x, y - 7, fill, k->color);
		break;
	case 's':
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"11\" height=\"11\" fill=\"%s\" "
			"stroke=\"%s\"/>", x - 5.5, y - 5.5, fill, k->color);
		break;
	case 'x':
		fprintf(f, "<path d=\"M%.1f %.1fl12 12m0 -12l-12 12\" stroke=\"%s\" "
			"stroke-width=\"3\"/>", x - 6, y - 6, k->color);
		break;
	case 't':
		fprintf(f, "<path d=\"M%.1f %.1fl12 6l-12 6z\" fill=\"%s\" stroke=\"%s\"/>", x, y - 6,
			fill, k->color);
		break;
	case 'b':
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"3\" height=\"16\" fill=\"%s\"/>",
			x - 1.5, y - 8, k->color);
		break;
	case 'o':
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"2\"/>", x, y, k->color);
		break;
	default:
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"6\" fill=\"%s\" stroke=\"%s\" "
			"stroke-width=\"2\"/>", x, y, fill, k->color);
	}
}

/* A tick step of 1, 2 or 5 times a power of ten, for about 8 ticks. */
static double tick_step(double span)
{
	double raw = span / 8, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

static int by_name(const void *a, const void *b)
{
	return strverscmp(a, b); /* node2 before node10 */
}

static bool is_start(const struct pm_tl_event *e)
{
	return !strcmp(e->name, "launch") || !strcmp(e->name, "start");
}

static bool is_end(const struct pm_tl_event *e)
{
	return !strcmp(e->name, "finish") || !strcmp(e->name, "give_up");
}

int pm_tl_render(const struct pm_tl_event *ev, int n, const struct pm_tl_opts *o, FILE *f)
{
	char rows[MAX_ROWS][64];
	int nrows = 1, i, j, more = 0;
	double t0, t1, pw = W - LEFT - RIGHT, h, step, t, band0 = -1;
	long band_gen = 0;
	bool used[NKINDS + 1] = { false };

	if (n <= 0)
		return -1;
	snprintf(rows[0], sizeof(rows[0]), "step");
	rows[MAX_ROWS - 1][0] = '\0';
	t0 = t1 = ev[0].t;
	for (i = 0; i < n; i++) {
		if (ev[i].t < t0)
			t0 = ev[i].t;
		if (ev[i].t > t1)
			t1 = ev[i].t;
		if (!ev[i].node[0])
			continue;
		for (j = 1; j < nrows && strcmp(rows[j], ev[i].node); j++)
			;
		if (j == nrows) {
			if (nrows < MAX_ROWS - 1) {
				snprintf(rows[nrows++], sizeof(rows[0]), "%s", ev[i].node);
			} else if (!more++) {
				nrows++;
			}
		}
	}
	qsort(rows + 1, (size_t)(nrows - 1 - (more ? 1 : 0)), sizeof(rows[0]), by_name);
	if (more)
		snprintf(rows[MAX_ROWS - 1], sizeof(rows[0]), "other nodes");
	if (t1 - t0 < 1e-3)
		t1 = t0 + 1e-3;
	h = TOP + nrows * ROW + 120;
#define X(tt) (LEFT + ((tt) - t0) / (t1 - t0) * pw)
#define Y(r) (TOP + (r) * ROW + ROW / 2)

	if (o && o->html)
		fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
	if (o && o->html)
		xml(f, o->title ? o->title : "procmgr timeline");
	if (o && o->html)
		fprintf(f, "</title></head><body>\n");
	else
		fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
		W, h, W, h);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%.0f\" y=\"22\" font-size=\"16\" font-weight=\"bold\">", LEFT);
	xml(f, o && o->title ? o->title : "procmgr timeline");
	fprintf(f, "</text>\n");

	/* Generations: from each start to the next, or to the end. */
	for (i = 0; i <= n; i++) {
		bool last = i == n;
		if (!last && !is_start(&ev[i]) && !is_end(&ev[i]))
			continue;
		if (band0 >= 0) {
			double x0 = X(band0), x1 = X(last ? t1 : ev[i].t);
			fprintf(f, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" "
				"fill=\"%s\"/>\n", x0, TOP - 18, x1 - x0 > 0.5 ? x1 - x0 : 0.5,
				nrows * ROW + 18, band_gen % 2 ? "#fef7e0" : "#e8f0fe");
			fprintf(f, "<text x=\"%.1f\" y=\"%.0f\" fill=\"#3c4043\">gen %ld</text>\n",
				x0 + 3, TOP - 5, band_gen);
			band0 = -1;
		}
		if (!last && is_start(&ev[i])) {
			band0 = ev[i].t;
			band_gen = ev[i].gen >= 0 ? ev[i].gen : band_gen + 1;
		}
	}
	/* Rows. */
	for (j = 0; j < nrows; j++) {
		fprintf(f, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#dadce0\"/>\n",
			LEFT, Y(j), W - RIGHT, Y(j));
		fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" dominant-baseline=\"middle\">",
			LEFT - 8, Y(j));
		xml(f, rows[j]);
		fprintf(f, "</text>\n");
	}
	/* The time axis, in seconds since the first event. */
	step = tick_step(t1 - t0);
	fprintf(f, "<line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\" stroke=\"#3c4043\"/>\n",
		LEFT, TOP + nrows * ROW, W - RIGHT, TOP + nrows * ROW);
	for (t = 0; t <= t1 - t0 + step * 1e-6; t += step) {
		double x = X(t0 + t);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#3c4043\"/>"
			"<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\">%g s</text>\n", x,
			TOP + nrows * ROW, x, TOP + nrows * ROW + 5, x, TOP + nrows * ROW + 18, t);
	}
	/* Each recovery: a span on the step's row, from the failure to every
	 * rank's first heartbeat, the figure a user feels above it. */
	for (i = 0; i < n; i++) {
		double x0, x1;
		if (strcmp(ev[i].name, "heartbeating") || ev[i].recovery_ms < 0)
			continue;
		x0 = X(ev[i].t - ev[i].recovery_ms / 1000);
		x1 = X(ev[i].t);
		fprintf(f, "<g><title>recovery of gen %ld: every rank training again %.2f s after "
			"the failure", ev[i].gen, ev[i].recovery_ms / 1000);
		if (ev[i].process_ms >= 0)
			fprintf(f, " (procmgr's part %.2f s)", ev[i].process_ms / 1000);
		fprintf(f, "</title><path d=\"M%.1f %.1fv-6H%.1fv6\" fill=\"none\" "
			"stroke=\"#12b5cb\" stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\" fill=\"#12b5cb\">recovery %.2f s</text></g>\n",
			x0 < LEFT ? LEFT : x0, Y(0) - 3, x1, (x0 + x1) / 2, Y(0) - 12,
			ev[i].recovery_ms / 1000);
	}
	/* Goodput's phases of each incident (issue 35): a span each under
	 * the step's row, in the order they come, from the failure on. */
	if (o && o->gp) {
		static const char *const pc[PM_GP_NPHASES] = { "#ea4335", "#9aa0a6", "#34a853",
							       "#fbbc04", "#a142f4", "#ff6d01" };
		unsigned k;
		for (k = 0; k < o->gp->nincidents; k++) {
			const struct pm_gp_incident *in = &o->gp->inc[k];
			double x = in->at;
			int p;
			for (p = 0; p < PM_GP_NPHASES; p++) {
				double x0, x1;
				if (in->phase[p] <= 0)
					continue;
				x0 = X(x);
				x1 = X(x + in->phase[p]);
				if (x1 > W - RIGHT)
					x1 = W - RIGHT;
				fprintf(f, "<g><title>gen %u's incident (%s): %s %.2f s</title><rect "
					"class=\"phase-%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
					"height=\"6\" fill=\"%s\"/></g>\n", in->gen, in->cause,
					pm_gp_phase_name((enum pm_gp_phase)p), in->phase[p],
					pm_gp_phase_name((enum pm_gp_phase)p), x0, Y(0) + 4,
					x1 - x0 > 1 ? x1 - x0 : 1, pc[p]);
				x += in->phase[p];
			}
		}
		if (o->gp->nincidents) {
			double lx = LEFT, ly = TOP + nrows * ROW + 30;
			fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" dominant-baseline=\"middle\">lost:"
				"</text>\n", lx, ly);
			lx += 36;
			for (int p = 0; p < PM_GP_NPHASES; p++) {
				fprintf(f, "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" height=\"6\" "
					"fill=\"%s\"/><text x=\"%.0f\" y=\"%.0f\" "
					"dominant-baseline=\"middle\">%s</text>\n", lx, ly - 3, pc[p],
					lx + 16, ly, pm_gp_phase_name((enum pm_gp_phase)p));
				lx += 30 + 7.0 * (double)strlen(pm_gp_phase_name((enum pm_gp_phase)p));
			}
		}
	}
	/* The marks, each with what happened as its tooltip. */
	for (i = 0; i < n; i++) {
		const struct kind *k = kind_of(ev[i].name);
		int row = 0;
		char title[512];

		if (ev[i].node[0]) {
			for (row = 1; row < nrows && row < MAX_ROWS - (more ? 1 : 0) &&
			     strcmp(rows[row], ev[i].node); row++)
				;
			if (row >= nrows)
				row = nrows - 1;
		}
		used[k == &other ? NKINDS : (size_t)(k - kinds)] = true;
		snprintf(title, sizeof(title), "+%.3f s: %s", ev[i].t - t0, ev[i].name);
		fprintf(f, "<g><title>");
		xml(f, title);
		if (ev[i].gen >= 0)
			fprintf(f, " gen %ld", ev[i].gen);
		if (ev[i].rank >= 0)
			fprintf(f, " rank %ld", ev[i].rank);
		if (ev[i].node[0]) {
			fprintf(f, " on ");
			xml(f, ev[i].node);
		}
		if (ev[i].detail[0]) {
			fprintf(f, ": ");
			xml(f, ev[i].detail);
		}
		fprintf(f, "</title>");
		mark(f, k, X(ev[i].t), Y(row), false);
		fprintf(f, "</g>\n");
	}
	/* What the marks mean: those drawn only. */
	{
		double x = LEFT, y = TOP + nrows * ROW + 50;
		size_t kk;
		for (kk = 0; kk <= NKINDS; kk++) {
			const struct kind *k = kk < NKINDS ? &kinds[kk] : &other;
			if (!used[kk])
				continue;
			if (x > W - RIGHT - 150) {
				x = LEFT;
				y += 20;
			}
			mark(f, k, x, y, false);
			fprintf(f, "<text x=\"%.0f\" y=\"%.0f\" dominant-baseline=\"middle\">%s</text>\n",
				x + 14, y, k->label);
			x += 30 + 7.0 * (double)strlen(k->label);
		}
	}
	fprintf(f, "</svg>\n");
	if (o && o->html)
		fprintf(f, "</body></html>\n");
#undef X
#undef Y
	return 0;
}
