/* Subcommands of the procmgr command, one file each (cmd_*.c). Each takes
 * the arguments after its name and returns the process exit code. */
#ifndef PM_CMD_H
#define PM_CMD_H

int pm_cmd_bind(int argc, char **argv);    /* cmd_bind.c */
int pm_cmd_health(int argc, char **argv);  /* cmd_health.c */
int pm_cmd_check(int argc, char **argv);   /* cmd_check.c: check-config */
int pm_cmd_version(int argc, char **argv); /* cmd_version.c */
int pm_cmd_timeline(int argc, char **argv); /* cmd_timeline.c, timeline.c */

#endif
