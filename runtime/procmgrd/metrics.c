/* procmgrd's metrics: the root's events feed the counters (metrics_text.c),
 * each change is published in the site's metrics_dir (metrics_file.c). */
#include "metrics.h"
#include "step.h"

#include <errno.h>
#include <string.h>

static void publish(struct pm_step *s)
{
	char text[8192];

	if (pm_metrics_format(&s->metrics, text, sizeof(text)) == 0 &&
	    pm_metrics_write(s->metrics_dir, s->job, s->stepid, text) == 0)
		return;
	/* Reported once: metrics are not worth failing a step for. */
	if (!s->metrics_failed)
		pm_log(s, "metrics_dir %s: cannot write the step's metrics: %s; no more tries",
		       s->metrics_dir, strerror(errno));
	s->metrics_failed = true;
}

void pm_step_metrics_event(struct pm_step *s, const char *name, const char *fields)
{
	if (!s->metrics_dir || s->node != 0 || s->metrics_failed)
		return;
	if (!s->metrics_started) {
		pm_metrics_init(&s->metrics, s->job, s->stepid);
		s->metrics_started = true;
	}
	pm_metrics_note(&s->metrics, name, fields);
	publish(s);
}

/* The final counters stay for the scrapes (the plugin removes them later,
 * as root: the directory is not ours to delete in). */
void pm_step_metrics_end(struct pm_step *s)
{
	(void)s;
}
