/* A step's timeline as a picture: its event log (the root's
 * STEP.events.jsonl, one JSON object a line) in, SVG out. Generations are
 * bands across the picture, nodes are rows, and failures, hangs, health
 * failures, lost and replaced nodes, stops and starts are marks on a time
 * axis, each with its details as a tooltip; a restart's recovery (failure
 * to every rank training again) is a span with its figure. Pure: text in,
 * text out. */
#ifndef PM_TIMELINE_H
#define PM_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct pm_tl_event {
	double t;        /* epoch seconds */
	char name[32];   /* "rank_failed", "start", ... */
	long gen, rank;  /* -1 when the event has none */
	char node[64];   /* "" when the event is the step's, not a node's */
	char detail[256]; /* status, reason, check or message, for the tooltip */
	/* heartbeating after a restart: ms from the failure to every rank's
	 * first heartbeat, and procmgr's part of it (-1 when absent) */
	double recovery_ms, process_ms;
};

/* One line of the event log; 0, or -1 if it is not an event (not a JSON
 * object, or no "time" and "event"). */
int pm_tl_parse_line(const char *line, struct pm_tl_event *e);

struct pm_gp_result;
struct pm_tl_opts {
	const char *title; /* "job 42 step 0" */
	bool html;         /* an HTML page around the SVG */
	/* goodput's incidents (common/goodput.h), or NULL: each incident's
	 * phases as coloured spans under the step's row, from its failure on,
	 * end to end (recompute and slowdown are not spent there, but their
	 * length is what the picture says) */
	const struct pm_gp_result *gp;
};

/* The picture of n events (in the log's order) onto out. -1 if there are
 * none to draw. */
int pm_tl_render(const struct pm_tl_event *ev, int n, const struct pm_tl_opts *o, FILE *out);

#endif
