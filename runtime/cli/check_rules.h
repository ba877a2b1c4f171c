/* check-config's judgements, pure: what a plugstack.conf line needs from
 * the cluster and the node. check_cluster.c gathers the facts. */
#ifndef PM_CHECK_RULES_H
#define PM_CHECK_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* "22.05.8" -> 22, 5; -1 if it is not a Slurm version. */
int pm_slurm_release(const char *version, unsigned *major, unsigned *minor);

/* The 32-bit value of the defined data symbol name in an ELF64 shared
 * object held in buf (procmgr.so's plugin_version: the Slurm release it was
 * built for, as SLURM_VERSION_NUMBER). 0, or -1 with the reason in err. */
int pm_elf_u32(const unsigned char *buf, size_t len, const char *name, uint32_t *out,
	       char *err, size_t errlen);

/* 0 if a plugin built for Slurm vernum (SLURM_VERSION_NUMBER) loads into
 * Slurm version ("24.11.5"); else -1 and why in err. */
int pm_judge_release(uint32_t vernum, const char *version, const char *who,
		     char *err, size_t errlen);

/* Slurm's MpiParams has a ports= range (every step then gets its reserved
 * ports). */
bool pm_mpiparams_ports(const char *mpiparams);

/* state_dir and metrics_dir: the plugin's own rule, io/safefile.h's
 * pm_privdir_find. */

/* SlurmdUser (scontrol's "root(0)" or slurm.conf's "root"): slurmstepd
 * drains as this user, and slurmctld takes node updates from root or
 * SlurmUser only. */
int pm_judge_drain(const char *slurmd_user, const char *slurm_user, char *err, size_t errlen);

#endif
