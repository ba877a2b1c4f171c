/* The small text parsers: host lists, check specs, durations, the tree
 * handshake, the ready and report lines, procmgrd's argv, torch's error
 * file and the error report made of stderr's tail. Each input is
 * given to every one; what parses must format back the same way where a
 * formatter exists. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/checkspec.h"
#include "common/contract.h"
#include "common/duration.h"
#include "common/errinfo.h"
#include "common/handshake.h"
#include "common/hostlist.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[512], buf[PM_HS_MAX], *argv[48], *save = NULL, *tok;
	struct pm_check checks[16];
	struct pm_hs h, h2;
	struct pm_ready r;
	struct pm_report rep;
	struct pm_daemon_args a;
	char **names = NULL;
	unsigned ms, first, count;
	int n, argc = 0;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	n = pm_hostlist_expand(s, 1000, &names);
	if (n > 0)
		pm_hostlist_free(names, n);
	(void)pm_ports_parse(s, &first, &count);
	(void)pm_checks_parse(s, checks, 16, err, sizeof(err));
	(void)pm_duration_parse(s, &ms);
	if (pm_hs_parse(s, &h) == 0) {
		assert(pm_hs_format(&h, buf, sizeof(buf)) == 0 && !strcmp(buf, s));
		assert(pm_hs_parse(buf, &h2) == 0 && h2.job == h.job && h2.from == h.from);
	}
	(void)pm_ready_parse(s, &r);
	(void)pm_report_parse(s, &rep);
	{
		static struct pm_tail t;
		char msg[64], trace[64], tail[PM_TAIL_BYTES], text[512], sum[PM_ERR_SUMMARY_MAX + 4];
		if (pm_errfile_parse((const char *)data, size, msg, sizeof(msg), trace,
				     sizeof(trace)) == 0)
			assert(strlen(msg) < sizeof(msg) && strlen(trace) < sizeof(trace));
		pm_tail_reset(&t);
		pm_tail_feed(&t, (const char *)data, size);
		pm_tail_lines(&t, PM_TAIL_LINES, tail, sizeof(tail));
		pm_err_from_tail(tail, text, sizeof(text));
		pm_err_summary(text, sum, sizeof(sum));
		assert(strlen(sum) <= PM_ERR_SUMMARY_MAX + 3 && !strchr(sum, '\n'));
	}
	argv[argc++] = "procmgrd";
	for (tok = strtok_r(s, " ", &save); tok && argc < 47; tok = strtok_r(NULL, " ", &save))
		argv[argc++] = tok;
	argv[argc] = NULL;
	(void)pm_daemon_args_parse(&a, argc, argv, err, sizeof(err));
	free(s);
	return 0;
}
