/* Subcommands of the procmgr command, one file each (cmd_*.c). Each takes
 * the arguments after its name and returns the process exit code. */
#ifndef PM_CMD_H
#define PM_CMD_H

int pm_cmd_bind(int argc, char **argv);    /* cmd_bind.c */
int pm_cmd_health(int argc, char **argv);  /* cmd_health.c */
int pm_cmd_check(int argc, char **argv);   /* cmd_check.c: check-config */
int pm_cmd_version(int argc, char **argv); /* cmd_version.c */
int pm_cmd_timeline(int argc, char **argv); /* cmd_timeline.c, timeline.c */
int pm_cmd_goodput(int argc, char **argv);  /* cmd_goodput.c: a step's goodput from its log */
/* A step's procmgrd, through its control tree (client.c) */
int pm_cmd_status(int argc, char **argv);  /* cmd_status.c */
int pm_cmd_events(int argc, char **argv);  /* cmd_events.c */
int pm_cmd_stacks(int argc, char **argv);  /* cmd_stacks.c */
int pm_cmd_restart(int argc, char **argv); /* cmd_restart.c */
int pm_cmd_stop(int argc, char **argv);    /* cmd_stop.c */

#endif
