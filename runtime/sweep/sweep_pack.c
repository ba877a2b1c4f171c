#include "sweep_pack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds that keep every product in an int and the lists small. */
#define NODES_MAX 1000000
#define SLOTS_MAX 4096

static void unlink_node(struct pm_pack *p, int n)
{
	int k = p->nfree[n];

	if (p->prev[n] >= 0)
		p->next[p->prev[n]] = p->next[n];
	else
		p->head[k] = p->next[n];
	if (p->next[n] >= 0)
		p->prev[p->next[n]] = p->prev[n];
	p->next[n] = p->prev[n] = -1;
}

static void link_node(struct pm_pack *p, int n)
{
	int k = p->nfree[n];

	p->prev[n] = -1;
	p->next[n] = p->head[k];
	if (p->head[k] >= 0)
		p->prev[p->head[k]] = n;
	p->head[k] = n;
}

int pm_pack_init(struct pm_pack *p, int nodes, int slots_per_node, char *err, unsigned errlen)
{
	int n;

	memset(p, 0, sizeof(*p));
	if (nodes < 1 || nodes > NODES_MAX || slots_per_node < 1 || slots_per_node > SLOTS_MAX ||
	    (long long)nodes * slots_per_node > 64LL * 1024 * 1024) {
		snprintf(err, errlen, "a sweep packs 1..%d nodes of 1..%d slots (64 Mi slots at "
			 "most), not %d x %d", NODES_MAX, SLOTS_MAX, nodes, slots_per_node);
		return -1;
	}
	p->nodes = nodes;
	p->slots = slots_per_node;
	p->used = calloc((size_t)nodes * slots_per_node, 1);
	p->nfree = malloc(nodes * sizeof(int));
	p->lost = calloc(nodes, sizeof(bool));
	p->next = malloc(nodes * sizeof(int));
	p->prev = malloc(nodes * sizeof(int));
	p->head = malloc((slots_per_node + 1) * sizeof(int));
	if (!p->used || !p->nfree || !p->lost || !p->next || !p->prev || !p->head) {
		pm_pack_free(p);
		snprintf(err, errlen, "out of memory for %d x %d slots", nodes, slots_per_node);
		return -1;
	}
	for (n = 0; n <= slots_per_node; n++)
		p->head[n] = -1;
	/* Linked last first, so that equal nodes are chosen in ascending order. */
	for (n = nodes - 1; n >= 0; n--) {
		p->nfree[n] = slots_per_node;
		link_node(p, n);
	}
	p->usable_nodes = nodes;
	p->free_total = (long)nodes * slots_per_node;
	return 0;
}

void pm_pack_free(struct pm_pack *p)
{
	free(p->used);
	free(p->nfree);
	free(p->lost);
	free(p->next);
	free(p->prev);
	free(p->head);
	memset(p, 0, sizeof(*p));
}

/* The usable node with the fewest free slots >= want, or -1. */
static int best_fit(const struct pm_pack *p, int want)
{
	int k;

	for (k = want; k <= p->slots; k++)
		if (p->head[k] >= 0)
			return p->head[k];
	return -1;
}

static int most_free(const struct pm_pack *p)
{
	int k;

	for (k = p->slots; k > 0; k--)
		if (p->head[k] >= 0)
			return p->head[k];
	return -1;
}

enum pm_pack_result pm_pack_fits(const struct pm_pack *p, int ranks)
{
	if (ranks < 1 || (long)ranks > (long)p->usable_nodes * p->slots)
		return PM_PACK_NEVER;
	if (ranks <= p->slots)
		return best_fit(p, ranks) >= 0 ? PM_PACK_OK : PM_PACK_WAIT;
	/* Several nodes: any free slots will do, so the total decides. */
	return p->free_total >= ranks ? PM_PACK_OK : PM_PACK_WAIT;
}

/* Takes the first k free slots of node n for ranks r.. */
static void take_on(struct pm_pack *p, int n, int k, int *slot_of_rank, int r)
{
	unsigned char *u = p->used + (size_t)n * p->slots;
	int s;

	unlink_node(p, n);
	for (s = 0; s < p->slots && k > 0; s++)
		if (!u[s]) {
			u[s] = 1;
			slot_of_rank[r++] = n * p->slots + s;
			p->nfree[n]--;
			p->free_total--;
			k--;
		}
	link_node(p, n);
}

enum pm_pack_result pm_pack_take(struct pm_pack *p, int ranks, int *slot_of_rank)
{
	enum pm_pack_result fit = pm_pack_fits(p, ranks);
	int need = ranks, r = 0, k;

	if (fit != PM_PACK_OK)
		return fit;
	while (need > 0) {
		int n = best_fit(p, need);

		if (n >= 0) {
			take_on(p, n, need, slot_of_rank, r);
			break;
		}
		/* More than any node holds: all of the node with the most free slots. */
		n = most_free(p);
		k = p->nfree[n];
		take_on(p, n, k, slot_of_rank, r);
		r += k;
		need -= k;
	}
	return PM_PACK_OK;
}

void pm_pack_release(struct pm_pack *p, int ranks, const int *slot_of_rank)
{
	int r;

	for (r = 0; r < ranks; r++) {
		int s = slot_of_rank[r], n = s / p->slots;

		if (!p->used[s])
			continue;
		p->used[s] = 0;
		if (p->lost[n])
			continue;
		unlink_node(p, n);
		p->nfree[n]++;
		p->free_total++;
		link_node(p, n);
	}
}

void pm_pack_node_lost(struct pm_pack *p, int node)
{
	if (node < 0 || node >= p->nodes || p->lost[node])
		return;
	unlink_node(p, node);
	p->lost[node] = true;
	p->free_total -= p->nfree[node];
	p->usable_nodes--;
}

void pm_pack_node_join(struct pm_pack *p, int node)
{
	if (node < 0 || node >= p->nodes || !p->lost[node])
		return;
	p->lost[node] = false;
	link_node(p, node);
	p->free_total += p->nfree[node];
	p->usable_nodes++;
}
