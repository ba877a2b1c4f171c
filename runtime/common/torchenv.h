/* The variables torchrun gives its workers only when the user has not set
 * them (torch.distributed.run and its local elastic agent), so that a
 * script tuned under torchrun behaves the same under procmgr. The ones
 * torchrun always sets are written by the plugin (plugin/taskenv.c). Pure:
 * the environment is reached through the callbacks. */
#ifndef PM_TORCHENV_H
#define PM_TORCHENV_H

/* Whether name is set; and set it. set returns 0 or -1. */
typedef int (*pm_env_isset_fn)(void *ctx, const char *name);
typedef int (*pm_env_set_fn)(void *ctx, const char *name, const char *value);

/* ROLE_NAME=default, TORCH_NCCL_ASYNC_ERROR_HANDLING=1,
 * NCCL_ASYNC_ERROR_HANDLING=1, and OMP_NUM_THREADS=1 when more than one
 * rank runs on the node, each unless set. Call it after the binding,
 * which sets OMP_NUM_THREADS to the rank's cores. 0, or -1 if a set
 * failed. */
int pm_torchenv_defaults(unsigned ntasks_local, pm_env_isset_fn isset, pm_env_set_fn set,
			 void *ctx);

#endif
