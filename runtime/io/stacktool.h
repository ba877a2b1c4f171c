/* The debugger that takes a process's stacks, found and started the same
 * way by procmgrd (procmgr stacks) and by the supervisor (on a hang): gdb
 * (with py-bt, Python frames where python3-dbg is installed), else
 * elfutils' eu-stack; its output to a file, in its own process group so
 * that a tool that overruns is killed whole. */
#ifndef PM_STACKTOOL_H
#define PM_STACKTOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* 0 and the tool's path (*gdb: whether it is gdb), -1 if neither is on
 * PATH (why: what to install). */
int pm_stacktool_find(char *path, size_t len, bool *gdb, char *why, size_t wlen);
/* The tool on target, stdout and stderr to out (created 0600, never
 * followed); the child's pid, -1 if fork failed. */
pid_t pm_stacktool_spawn(const char *tool, bool gdb, pid_t target, const char *out);

#endif
