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
	}
	va_end(ap);
	return rc;
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
