/* Stacks of many ranks, made comparable and grouped: a debugger's output
 * (gdb's bt and py-bt) is reduced to what is the same in two processes
 * running the same code (function, file and line; no addresses, argument
 * values or thread ids), so that identical stacks are shown once with
 * their rank list and the outlier stands out. And rank lists ("0-3,7").
 * Pure. */
#ifndef PM_STACKS_H
#define PM_STACKS_H

#include <stdbool.h>
#include <stddef.h>

/* gdb's text to one line per frame: "thread N:", "  FUNC at FILE:LINE",
 * "python:", "  File "F", line N, in FUNC". Lines it does not know are
 * dropped. Returns the length written (cut at a line if len is short). */
size_t pm_stack_normalize(const char *raw, char *out, size_t len);

/* Where a normalized stack's main thread is: its innermost Python
 * function ("spin"), else its innermost native function that is not the C
 * library's wait (pm_stack_where); "" if none. */
void pm_stack_top(const char *norm, char *out, size_t len);

/* The view of a normalized stack that ranks are compared by, and that
 * `procmgr stacks` shows without --native: its main thread's (gdb's
 * thread 1, else the first listed) Python frames under "python:" when it
 * has any, else that thread's native frames, after its "thread N:" line.
 * The other threads (a communication library's, which differ between
 * ranks waiting in the same collective) are left out. Returns the length
 * written ("" when the stack has no frames). */
size_t pm_stack_brief(const char *norm, char *out, size_t len);

/* Where one rank is, as a hang's verdict compares ranks. */
struct pm_stack_where {
	bool taken;      /* the stack has frames; else why says why not */
	bool py;         /* its main thread has Python frames */
	/* By the main thread's innermost Python frame ("spin in F"), and by
	 * the main thread's native function names (no files or lines). */
	char pykey[512], nkey[2048];
	/* Their names in words: "spin"; the innermost native function that
	 * is not the C library's ("c10d::Work::wait"). */
	char pytop[128], ntop[128];
	/* Waiting on the other ranks: the innermost Python frame is
	 * torch.distributed's; a native frame is c10d's, gloo's, NCCL's or
	 * MPI's. */
	bool pycoll, ncoll;
	char why[384];   /* not taken: why ("the stack tool did not finish within 10.0 s") */
};

/* text: a normalized stack, or the line saying why there is none
 * ("procmgr: no stack for rank 3: ..."). */
void pm_stack_where(const char *text, struct pm_stack_where *w);

/* A stack tool's bound on a node with this load (the 1-minute average)
 * and CPUs: base, stretched by how many runnable tasks share each CPU
 * (a debugger attaching to a Python rank needs about a CPU second), at
 * most max. */
unsigned pm_stack_bound_ms(unsigned base, double load, long cpus, unsigned max);
/* procmgr stacks' bound per rank (procmgrd/query_stacks.c) at most: the
 * command waits this long and a little more. */
#define PM_STACKS_MAX_MS 120000

/* Why a stack tool was stopped, in words that say the bound and how busy
 * the node was: "TOOL did not finish within 10.0 s (node load 24.1 on 2
 * CPUs; --procmgr-stack-timeout raises the bound)"; tool NULL: it never
 * had its turn ("waiting: no turn among this node's stack tools within
 * 10.0 s (...)"). load < 0: unknown. */
void pm_stack_overrun_words(const char *tool, unsigned ms, double load, long cpus,
			    const char *raise, char *buf, size_t len);

/* group[i] := the index of the group of stacks[i]; groups are numbered
 * from 0 by decreasing size (ties: the lowest rank first), ranks[] being
 * each stack's rank. Returns the number of groups. */
int pm_stack_group(const char *const *stacks, const int *ranks, int n, int *group);

/* Ranks in ascending order as "0-3,7,9-10" (sorted in place; duplicates
 * merged). -1 if it does not fit. */
int pm_ranks_format(int *ranks, int n, char *buf, size_t len);
/* "0-3,7": whether rank is in the list; -1 for a malformed list. */
int pm_ranks_contains(const char *list, int rank);
/* 0 if list is a well-formed rank list, else -1 and why. */
int pm_ranks_check(const char *list, char *why, size_t len);

#endif
