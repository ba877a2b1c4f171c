/* procmgrd's log: the ground floor, under every other file of procmgrd
 * (each one may say a line, and this one calls none of them). */
#include "step.h"

#include <stdarg.h>
#include <stdio.h>

void pm_log(struct pm_step *s, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "procmgrd[%s %u.%u]: ", s->names[s->node], s->job, s->stepid);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
