/* The sweep's trials file, then the trials it yields run through the queue
 * and packer on 2 nodes x 4 slots (the input's bytes decide which runs fail
 * and when a node is lost or a trial stopped, slots held until their ranks
 * end), then the results text. What parses obeys the
 * grammar of sweep_file.h; the sweep always ends, no slot is held twice,
 * and every results line is one line. */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sweep/sweep_file.h"
#include "sweep/sweep_queue.h"
#include "sweep/sweep_results.h"

static void check_trial(const struct pm_trial *t)
{
	char why[256];

	assert(t->ranks >= 1 && t->ranks <= 8);
	assert(pm_sweep_name_check(t->name, strlen(t->name), why, sizeof(why)) == 0);
	assert(t->cmd[0] && t->cmd[0] != ' ' && t->cmd[0] != '\t' && t->cmd[0] != '#');
	assert(!strchr(t->cmd, '\n') && strlen(t->cmd) <= PM_SWEEP_CMD_MAX);
}

static void run(const struct pm_sweep *sw, const uint8_t *data, size_t size)
{
	struct pm_sq_cfg cfg = { 0 };
	struct pm_sq q;
	int *ranks = malloc(sw->n * sizeof(int)), start[8], i, k, n, aff[8], guard = 0;
	uint64_t now = 0;
	size_t pos = 0;
	char err[256], line[1024], sum[8192];

	cfg.nodes = 2;
	cfg.slots_per_node = 4;
	cfg.policy.mode = PM_RESTART_ON_FAILURE;
	cfg.policy.max_restarts = 2;
	cfg.policy.delay_ms = 5;
	cfg.policy.max_delay_ms = 20;
	cfg.port_first = 29500;
	cfg.port_count = 8;
	for (i = 0; i < sw->n; i++)
		ranks[i] = sw->trials[i].ranks;
	assert(pm_sq_init(&q, &cfg, ranks, sw->n, err, sizeof(err)) == 0);
	while (!pm_sq_finished(&q)) {
		uint8_t b = size ? data[pos++ % size] : 0;

		assert(++guard < 100000);
		n = pm_sq_schedule(&q, now, start, 8);
		for (k = 0; k < n; k++)
			assert(pm_sq_started(&q, start[k], now) == 0);
		now += 1 + (b & 7);
		if (b == 0xff && !q.pack.lost[1]) {
			/* Every slot's rank still runs: those off node 1 are held. */
			unsigned char busy[8];
			memset(busy, 1, sizeof(busy));
			(void)pm_sq_node_lost(&q, 1, now, aff, 8, busy);
			continue;
		}
		/* Held slots' ranks end, one per step, before any other end. */
		for (i = 0; i < 8; i++)
			if (q.owner[i] == PM_SQ_HELD) {
				assert(pm_sq_unhold(&q, i) == 0);
				break;
			}
		if (i < 8)
			continue;
		if (b == 0xfe) { /* the user stops the first running trial */
			unsigned char busy[8];
			memset(busy, 1, sizeof(busy));
			for (i = 0; i < q.n; i++)
				if (q.t[i].state == PM_TS_RUNNING) {
					assert(pm_sq_stop(&q, i, now, busy) == 0);
					break;
				}
			continue;
		}
		/* End the first running trial, failed if the byte says so. */
		for (i = 0; i < q.n; i++)
			if (q.t[i].state == PM_TS_RUNNING) {
				assert(pm_sq_ended(&q, i, b & 0x10, b >> 5, "err\tline\n", now,
						   NULL) >= 0);
				break;
			}
		if (i == q.n && pm_sq_next_due(&q) != UINT64_MAX)
			now = pm_sq_next_due(&q);
	}
	{
		struct pm_sr_trial *r = malloc(sw->n * sizeof(*r));

		for (i = 0; i < sw->n; i++) {
			pm_sr_from_queue(&q, i, sw->trials[i].name, now, &r[i]);
			assert(r[i].state == PM_TS_DONE || r[i].state == PM_TS_FAILED);
			n = pm_sr_tsv_line(&r[i], line, sizeof(line));
			assert(n > 0 && (size_t)n == strlen(line) && strchr(line, '\n') == line + n - 1);
			n = pm_sr_json_line(&r[i], line, sizeof(line));
			assert(n > 0 && strchr(line, '\n') == line + n - 1);
		}
		assert(pm_sr_summary(r, sw->n, "results.tsv", sum, sizeof(sum)) == strlen(sum));
		free(r);
	}
	/* A stopped last trial's ranks may end after the sweep's decisions. */
	for (i = 0; i < 8; i++)
		if (q.owner[i] == PM_SQ_HELD)
			assert(pm_sq_unhold(&q, i) == 0);
	assert(q.pack.free_total == (q.pack.lost[1] ? 4 : 8));
	assert(q.port_nfree == 8);
	pm_sq_free(&q);
	free(ranks);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pm_sweep sw;
	char err[512];
	int i;

	if (pm_sweep_parse((const char *)data, size, "f", 1, 8, &sw, err, sizeof(err))) {
		assert(err[0] && strlen(err) < sizeof(err) && sw.n == 0 && !sw.trials);
		return 0;
	}
	assert(sw.n >= 1);
	for (i = 0; i < sw.n; i++)
		check_trial(&sw.trials[i]);
	if (sw.n <= 64)
		run(&sw, data, size);
	pm_sweep_free(&sw);
	return 0;
}
