/* Slurm's side of the SPANK plugin, in-process, for the plugin's unit
 * tests: the task's environment (spank_getenv/spank_setenv on a table),
 * S_JOB_ARGV, and slurm_error/slurm_info recorded. The plugin's files link
 * this in place of slurmstepd, srun and libslurm (the seam is spank.h). */
#include "fake_spank.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct fake_spank fake_spank;

void fake_spank_reset(void)
{
	memset(&fake_spank, 0, sizeof(fake_spank));
}

const char *fake_spank_env(const char *name)
{
	int i;

	for (i = 0; i < fake_spank.nenv; i++)
		if (!strcmp(fake_spank.env[i].name, name))
			return fake_spank.env[i].value;
	return NULL;
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
	const char *v = fake_spank_env(var);
	(void)sp;

	if (!v)
		return ESPANK_ENV_NOEXIST;
	if ((int)strlen(v) >= len)
		return ESPANK_NOSPACE;
	snprintf(buf, (size_t)len, "%s", v);
	return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
	int i;
	(void)sp;

	if (fake_spank.setenv_fails && !strcmp(var, fake_spank.setenv_fails))
		return ESPANK_ERROR;
	for (i = 0; i < fake_spank.nenv; i++)
		if (!strcmp(fake_spank.env[i].name, var)) {
			if (overwrite)
				snprintf(fake_spank.env[i].value, sizeof(fake_spank.env[i].value),
					 "%s", val);
			return ESPANK_SUCCESS;
		}
	if (fake_spank.nenv == FAKE_SPANK_ENV_MAX)
		return ESPANK_ERROR;
	snprintf(fake_spank.env[i].name, sizeof(fake_spank.env[i].name), "%s", var);
	snprintf(fake_spank.env[i].value, sizeof(fake_spank.env[i].value), "%s", val);
	fake_spank.nenv++;
	return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
	va_list ap;
	spank_err_t rc = ESPANK_BAD_ARG;
	(void)sp;

	va_start(ap, item);
	if (item == S_JOB_ARGV && fake_spank.argv) {
		int *argc = va_arg(ap, int *);
		char ***argv = va_arg(ap, char ***);
		*argc = fake_spank.argc;
		*argv = fake_spank.argv;
		rc = ESPANK_SUCCESS;
	} else if ((unsigned)item < FAKE_SPANK_ITEM_MAX && fake_spank.have[item]) {
		/* Each item with the type spank.h gives it. */
		rc = ESPANK_SUCCESS;
		switch (item) {
		case S_JOB_UID:
			*va_arg(ap, uid_t *) = (uid_t)fake_spank.item[item];
			break;
		case S_JOB_GID:
			*va_arg(ap, gid_t *) = (gid_t)fake_spank.item[item];
			break;
		case S_TASK_ID:
			*va_arg(ap, int *) = (int)fake_spank.item[item];
			break;
		case S_JOB_SUPPLEMENTARY_GIDS: {
			gid_t **gids = va_arg(ap, gid_t **);
			int *n = va_arg(ap, int *);
			*gids = fake_spank.gids;
			*n = fake_spank.ngids;
			break;
		}
		case S_JOB_ID:
		case S_JOB_STEPID:
		case S_JOB_NNODES:
		case S_JOB_NODEID:
		case S_JOB_LOCAL_TASK_COUNT:
		case S_JOB_TOTAL_TASK_COUNT:
		case S_TASK_GLOBAL_ID:
			*va_arg(ap, uint32_t *) = fake_spank.item[item];
			break;
		default:
			rc = ESPANK_BAD_ARG;
		}
	}
	va_end(ap);
	return rc;
}

void fake_spank_item(spank_item_t item, uint32_t value)
{
	fake_spank.item[item] = value;
	fake_spank.have[item] = true;
}

spank_context_t spank_context(void)
{
	return fake_spank.ctx;
}

int spank_remote(spank_t sp)
{
	(void)sp;
	return fake_spank.ctx == S_CTX_REMOTE;
}

/* Slurm copies the option; so does this, name included. */
spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
	int i = fake_spank.nopts;
	(void)sp;

	if (i == FAKE_SPANK_OPT_MAX || fake_spank.register_fails == i + 1)
		return ESPANK_ERROR;
	fake_spank.opts[i] = *opt;
	snprintf(fake_spank.optnames[i], sizeof(fake_spank.optnames[i]), "%s", opt->name);
	fake_spank.opts[i].name = fake_spank.optnames[i];
	fake_spank.nopts++;
	return ESPANK_SUCCESS;
}

int fake_spank_option(const char *name, const char *arg, int remote)
{
	int i;

	for (i = 0; i < fake_spank.nopts; i++)
		if (!strcmp(fake_spank.optnames[i], name))
			return fake_spank.opts[i].cb(fake_spank.opts[i].val, arg, remote);
	return -2;
}

static void say(char *to, size_t len, const char *fmt, va_list ap)
{
	vsnprintf(to, len, fmt, ap);
}

void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fake_spank.error, sizeof(fake_spank.error), fmt, ap);
	va_end(ap);
	fake_spank.nerrors++;
}

void slurm_info(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say(fake_spank.info, sizeof(fake_spank.info), fmt, ap);
	va_end(ap);
	fake_spank.ninfos++;
}
