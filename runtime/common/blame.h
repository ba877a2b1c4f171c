/* Which rank a hang is blamed on, and on what evidence. Pure.
 *
 * A hang's usual shape is one rank stuck and every other waiting for it in
 * a collective: their last heartbeats were all taken at the same training
 * step, apart by what the step's work took on each rank, and their order
 * says little. The stacks say more: the one rank that is somewhere else
 * while the others wait in a collective (or all share one place) is the
 * likely cause, whatever the heartbeats. Without that, the oldest
 * heartbeat is evidence when it leads the next by more than heartbeats
 * resolve; below that nothing points at one rank and the answer says so. */
#ifndef PM_BLAME_H
#define PM_BLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What two heartbeats' times can tell apart, in ms. A beat is stamped by
 * its supervisor when its event loop reads the heartbeat file's inotify
 * event, not when the program wrote it: a busy node wakes a supervisor
 * tens of ms late,
 * the file's mtime is the kernel's coarse clock (1-4 ms), and the beats of
 * ranks on different nodes are compared through wall clocks that NTP keeps
 * within a few ms to tens of ms. 100 ms is above all three together. */
#define PM_BLAME_RESOLUTION_MS 100

enum pm_blame_by {
	PM_BLAME_HEARTBEAT, /* hung alone, or the stacks name nobody and its last heartbeat
			     * leads the others' by more than the resolution */
	PM_BLAME_STACK,     /* the stacks name it (pm_blame_stacks) */
	PM_BLAME_NONE,      /* the stacks name nobody and the heartbeats tie */
};

struct pm_blame {
	enum pm_blame_by by;
	int rank; /* -1 with PM_BLAME_NONE */
};

/* first: the rank whose last heartbeat is the oldest; followers: how many
 * other ranks were judged hung; lead_ms: how much older first's beat is
 * than the next; outlier: the rank the stacks name (pm_blame_stacks, -1:
 * none). A rank judged hung alone (no followers) is blamed: the others
 * were still beating when the stop reached them. */
struct pm_blame pm_blame_hang(int first, int followers, uint64_t lead_ms, unsigned resolution_ms,
			      int outlier);

/* What the stacks of a hang say (pure). Ranks are compared by their main
 * thread (common/stacks.h's pm_stack_where): by its innermost Python
 * frame when every stack taken has Python frames, else by its native
 * frames; never by the other threads, which differ between ranks waiting
 * in the same collective (gloo's send and receive threads). A rank is
 * named when it is the only one not waiting in a collective while another
 * waits in one, or, of 3 stacks or more, the only one whose place differs
 * from the others' (which share one). Stacks not taken count for nothing
 * and are said. */
struct pm_stack_verdict {
	int rank;           /* the rank the stacks name, -1: none */
	int taken, missing; /* stacks taken; not taken */
	int places;         /* distinct places among those taken */
	bool py;            /* compared by the Python frames */
	/* Why that rank ("the only rank not waiting in a collective (it is
	 * in spin; ranks 0-2 wait in all_reduce)"), else why none ("no
	 * single rank stands apart (ranks 0-1 in x; ranks 2-3 in y)"). */
	char words[768];
	/* The stacks not taken and why, "" if none: "not taken: rank 3's
	 * (gdb did not finish within 10.0 s)". */
	char missing_words[768];
};

/* texts[i]: rank ranks[i]'s normalized stack, or the line saying why it
 * was not taken. place[i] := the place of stack i, numbered from 0 by
 * decreasing size (ties: the lowest rank first), -1 for one not taken;
 * NULL if not wanted. Returns -1 (out of memory) or 0. */
int pm_blame_stacks(const char *const *texts, const int *ranks, int n, int *place,
		    struct pm_stack_verdict *v);

/* The verdict in words, into buf: "rank 3 on n2 hung first (its last
 * heartbeat 1.2 s before any other's); ranks 0, 1 followed", or, for a
 * tie, the ranks, how close their beats were and the stack's outlier or
 * "inconclusive" in the words of the stacks' verdict sv (NULL: not
 * asked). follower: n (at most 64) of the
 * nfollowers other hung ranks, sorted here; the rest are "and more". */
void pm_blame_text(const struct pm_blame *b, int first, const char *first_node,
		   const char *blamed_node, int *follower, int n, int nfollowers,
		   uint64_t lead_ms, const struct pm_stack_verdict *sv, char *buf, size_t len);

/* The blame's name in the event log: "heartbeat", "stack", "none". */
const char *pm_blame_name(enum pm_blame_by by);

#endif
