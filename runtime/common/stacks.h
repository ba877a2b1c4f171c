/* Stacks of many ranks, made comparable and grouped: a debugger's output
 * (gdb's bt and py-bt) is reduced to what is the same in two processes
 * running the same code (function, file and line; no addresses, argument
 * values or thread ids), so that identical stacks are shown once with
 * their rank list and the outlier stands out. And rank lists ("0-3,7").
 * Pure. */
#ifndef PM_STACKS_H
#define PM_STACKS_H

#include <stddef.h>

/* gdb's text to one line per frame: "thread N:", "  FUNC at FILE:LINE",
 * "python:", "  File "F", line N, in FUNC". Lines it does not know are
 * dropped. Returns the length written (cut at a line if len is short). */
size_t pm_stack_normalize(const char *raw, char *out, size_t len);

/* The innermost Python function of a normalized stack ("spin"), else its
 * innermost native one; "" if none. */
void pm_stack_top(const char *norm, char *out, size_t len);

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
