/* The small text parsers: host lists, check specs, durations, the tree
 * handshake, the ready and report lines, procmgrd's argv, torch's error
 * file and the error report made of stderr's tail, the procmgr command's
 * request, a node's status lines, stacks and rank lists. Each input is
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
#include "common/request.h"
#include "common/stacks.h"
#include "common/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), err[512], buf[PM_HS_MAX], *argv[48], *save = NULL, *tok;
	struct pm_check checks[16];
	struct pm_hs h, h2;
	struct pm_ready r;
	struct pm_report rep;
	struct pm_daemon_args a;
	struct pm_request q, q2;
	struct pm_st_node sn;
	struct pm_st_rank sr;
	char qbuf[PM_REQ_MAX], norm[4096], top[64], line[512];
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
	if (pm_request_parse(s, &q) == 0) {
		assert(pm_request_format(&q, qbuf, sizeof(qbuf)) == 0 && !strcmp(qbuf, s));
		assert(pm_request_parse(qbuf, &q2) == 0 && q2.kind == q.kind && q2.job == q.job);
	}
	n = pm_st_parse(s, &sn, &sr);
	if (n == 'N')
		assert(pm_st_node_format(&sn, line, sizeof(line)) == 0 &&
		       pm_st_parse(line, &sn, &sr) == 'N');
	else if (n == 'R')
		assert(pm_st_rank_format(&sr, line, sizeof(line)) == 0 &&
		       pm_st_parse(line, &sn, &sr) == 'R');
	assert(pm_stack_normalize(s, norm, sizeof(norm)) < sizeof(norm));
	pm_stack_top(norm, top, sizeof(top));
	if (pm_ranks_check(s, err, sizeof(err)) == 0)
		assert(pm_ranks_contains(s, 0) >= 0);
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
