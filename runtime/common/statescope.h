/* Whose state a sweep's trial sees (issue 32): the ranks' state belongs to
 * one run of a trial on its slots, its "scope". A trial's restarts in
 * place keep the scope and see their own saves (the point of saving); a
 * new trial on the same slots, or the same trial requeued after a node
 * loss (its ranks elsewhere, some of its state gone with the node), gets a
 * new scope and sees nothing; a scope's state is freed when its run ends.
 * The rules, pure: the root names the scope of each start (the attempt
 * that began the run), each node keeps its slots' scopes and judges
 * every start and every connection of the state socket by them. Outside a
 * sweep there are no scopes: a step's ranks keep their state across
 * generations, as before. */
#ifndef PM_STATESCOPE_H
#define PM_STATESCOPE_H

#include <stdbool.h>
#include <stdint.h>

/* The root's record of a trial's run: its scope (0: none yet) and the
 * trial's requeue count when that run began. */
struct pm_scope_run {
	uint32_t scope;
	int requeues;
};

/* The scope of a start of a trial, attempt its new attempt number (> 0),
 * requeues the trial's requeue count now: the run's scope when the start
 * is a restart in place (a run began and no requeue since), else attempt,
 * which begins a new run (*run updated). */
uint32_t pm_scope_of_start(struct pm_scope_run *run, int requeues, uint32_t attempt);

/* What a node does with a slot's state at a start of scope start, the
 * slot's scope being cur (0: none): kept when it is the same run, else
 * dropped (another trial's, or an earlier run's of the same trial). */
enum pm_scope_act { PM_SCOPE_KEEP, PM_SCOPE_DROP };
enum pm_scope_act pm_scope_on_start(uint32_t cur, uint32_t start);

/* The root's word that the run of scope ended on a slot whose scope is
 * cur: true if the slot's state goes (the same run: a later run's start,
 * come first, is not undone by an older end). */
bool pm_scope_on_end(uint32_t cur, uint32_t ended);

/* May a connection to the state socket opened under scope conn still save
 * or load, the slot's scope being cur? Outside a sweep always; in a sweep
 * only while its run is the slot's (a process left from an ended run must
 * not write into the next run's state, nor read it). */
bool pm_scope_may_use(bool sweep, uint32_t conn, uint32_t cur);

/* TRIAL_START's text head carries the scope as its last field:
 * "NAME WORLD LOCAL_RANK LOCAL_WORLD MASTER PORT SCOPE\nCMD". The scope
 * read from text; 0 with err if it is missing or malformed. */
int pm_scope_from_trial_text(const char *text, uint32_t *scope, char *err, unsigned errlen);

#endif
