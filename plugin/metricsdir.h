/* The step's metrics file in the site's metrics_dir, as root: the directory
 * must be root's alone (no other user creates, replaces or plants a file
 * there); node 0 creates the step's file for the job's user, whose procmgrd
 * rewrites it in place; a finished step's file stays PM_METRICS_KEEP_S for
 * the scrapes, then a later step's end removes it. Errors go to slurmd's
 * log only: metrics are not worth failing a step for. */
#ifndef PM_METRICSDIR_H
#define PM_METRICSDIR_H

struct pm_node;

/* As root, before procmgrd starts (node 0 only). */
void pm_metricsdir_prepare(const struct pm_node *n);
/* As root, once procmgrd has ended (node 0 only): its file goes if it
 * never said the step ended; finished steps' files past their time go. */
void pm_metricsdir_end(const struct pm_node *n);

#endif
