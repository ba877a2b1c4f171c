/* The ranks' state in memory: the rules are in statestore.h. Blobs are few
 * (ranks per node x names, and one buddy's replicas), so a flat array
 * searched in order is enough. */
#include "statestore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pm_state_init(struct pm_state_store *s, const struct pm_state_cfg *cfg, uint32_t node)
{
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	s->node = node;
	s->next_ticket = 1;
}

void pm_state_clear(struct pm_state_store *s, void (*release)(int, void *), void *arg)
{
	struct pm_state_cfg cfg = s->cfg;

	for (size_t i = 0; i < s->nb; i++)
		if (release && s->b[i].handle >= 0)
			release(s->b[i].handle, arg);
	free(s->b);
	free(s->p);
	pm_state_init(s, &cfg, s->node);
}

int pm_state_name_check(const char *name, char *err, size_t errlen)
{
	size_t n = strlen(name);

	if (n == 0 || n > PM_STATE_NAME_MAX || name[0] == '.') {
		snprintf(err, errlen,
			 "state name '%.80s': must be 1 to %d characters, not starting with '.'",
			 name, PM_STATE_NAME_MAX);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-')) {
			snprintf(err, errlen,
				 "state name '%.80s': character %zu is not allowed (letters, digits, '.', '_', '-')",
				 name, i + 1);
			return -1;
		}
	}
	return 0;
}

static struct pm_state_blob *find(const struct pm_state_store *s, bool replica, uint32_t owner,
				  int32_t grank, const char *name)
{
	for (size_t i = 0; i < s->nb; i++) {
		struct pm_state_blob *b = &s->b[i];
		if (b->replica == replica && b->grank == grank && !strcmp(b->name, name) &&
		    (!replica || b->owner_node == owner))
			return b;
	}
	return NULL;
}

const struct pm_state_blob *pm_state_find(const struct pm_state_store *s, int32_t grank,
					  const char *name)
{
	const struct pm_state_blob *b = find(s, false, 0, grank, name);
	if (b)
		return b;
	for (size_t i = 0; i < s->nb; i++)
		if (s->b[i].replica && s->b[i].grank == grank && !strcmp(s->b[i].name, name))
			return &s->b[i];
	return NULL;
}

const struct pm_state_blob *pm_state_at(const struct pm_state_store *s, size_t i)
{
	return i < s->nb ? &s->b[i] : NULL;
}

static struct pm_state_pending *pending(const struct pm_state_store *s, uint64_t ticket)
{
	for (size_t i = 0; i < s->np; i++)
		if (s->p[i].ticket == ticket)
			return &s->p[i];
	return NULL;
}

/* What the rank keeps (own blobs) and has in flight, and how many names. */
static void rank_usage(const struct pm_state_store *s, int32_t grank, const char *name,
		       uint64_t *bytes, unsigned *names, bool *busy, uint64_t *replaced)
{
	*bytes = 0;
	*names = 0;
	*busy = false;
	*replaced = 0;
	for (size_t i = 0; i < s->nb; i++)
		if (!s->b[i].replica && s->b[i].grank == grank) {
			*bytes += s->b[i].size;
			++*names;
			if (!strcmp(s->b[i].name, name))
				*replaced = s->b[i].size;
		}
	for (size_t i = 0; i < s->np; i++)
		if (s->p[i].grank == grank) {
			*bytes += s->p[i].size;
			*busy |= !strcmp(s->p[i].name, name);
			*names += !find(s, false, 0, grank, s->p[i].name);
		}
}

static const char *human(uint64_t b, char *buf, size_t len)
{
	static const char *unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)b;
	int u = 0;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
	return buf;
}

uint64_t pm_state_begin(struct pm_state_store *s, int32_t grank, const char *name,
			uint64_t size, char *err, size_t errlen)
{
	uint64_t bytes, replaced;
	unsigned names;
	bool busy;
	char a[32], b[32], c[32];

	if (pm_state_name_check(name, err, errlen) < 0)
		return 0;
	rank_usage(s, grank, name, &bytes, &names, &busy, &replaced);
	if (busy) {
		snprintf(err, errlen, "a save of '%s' by rank %d is in progress: one at a time per name",
			 name, grank);
		return 0;
	}
	if (!replaced && !find(s, false, 0, grank, name) && names + 1 > s->cfg.max_names) {
		snprintf(err, errlen, "save of '%s' refused: rank %d has %u names, the limit (state_max_names)",
			 name, grank, names);
		return 0;
	}
	/* What the rank keeps once this save is in: the version it replaces
	 * goes then. */
	if (bytes - replaced + size > s->cfg.max_rank) {
		snprintf(err, errlen,
			 "save of '%s' (%s) refused: rank %d would keep %s, over the per-rank limit of %s (state_max_rank)",
			 name, human(size, a, sizeof(a)), grank,
			 human(bytes - replaced + size, b, sizeof(b)), human(s->cfg.max_rank, c, sizeof(c)));
		return 0;
	}
	/* The node's memory holds both versions until the commit. */
	if (s->held + s->pending + size > s->cfg.max_node) {
		snprintf(err, errlen,
			 "save of '%s' (%s) refused: this node would hold %s, over the per-node limit of %s (state_max_node)",
			 name, human(size, a, sizeof(a)), human(s->held + s->pending + size, b, sizeof(b)),
			 human(s->cfg.max_node, c, sizeof(c)));
		return 0;
	}
	if (s->np == s->capp) {
		size_t cap = s->capp ? 2 * s->capp : 8;
		struct pm_state_pending *p = realloc(s->p, cap * sizeof(*p));
		if (!p) {
			snprintf(err, errlen, "save of '%s' refused: out of memory", name);
			return 0;
		}
		s->p = p;
		s->capp = cap;
	}
	s->p[s->np] = (struct pm_state_pending){ .grank = grank, .size = size, .ticket = s->next_ticket++ };
	snprintf(s->p[s->np].name, sizeof(s->p[s->np].name), "%s", name);
	s->pending += size;
	return s->p[s->np++].ticket;
}

static void drop_pending(struct pm_state_store *s, struct pm_state_pending *p)
{
	s->pending -= p->size;
	*p = s->p[--s->np];
}

void pm_state_abort(struct pm_state_store *s, uint64_t ticket)
{
	struct pm_state_pending *p = pending(s, ticket);
	if (p)
		drop_pending(s, p);
}

void pm_state_abort_rank(struct pm_state_store *s, int32_t grank)
{
	for (size_t i = 0; i < s->np;)
		if (s->p[i].grank == grank)
			drop_pending(s, &s->p[i]);
		else
			i++;
}

static struct pm_state_blob *append(struct pm_state_store *s)
{
	if (s->nb == s->capb) {
		size_t cap = s->capb ? 2 * s->capb : 8;
		struct pm_state_blob *b = realloc(s->b, cap * sizeof(*b));
		if (!b)
			return NULL;
		s->b = b;
		s->capb = cap;
	}
	return &s->b[s->nb++];
}

int pm_state_commit(struct pm_state_store *s, uint64_t ticket, int handle, uint64_t now_ms,
		    uint64_t step, int *old)
{
	struct pm_state_pending *p = pending(s, ticket);
	struct pm_state_blob *b;
	uint64_t version = 1;

	*old = -1;
	if (!p)
		return -1;
	b = find(s, false, 0, p->grank, p->name);
	if (b) {
		*old = b->handle;
		version = b->version + 1;
		s->held -= b->size;
	} else if (!(b = append(s))) {
		return -1;
	}
	*b = (struct pm_state_blob){ .owner_node = s->node,
				     .grank = p->grank,
				     .version = version,
				     .size = p->size,
				     .saved_ms = now_ms,
				     .step = step,
				     .handle = handle };
	memcpy(b->name, p->name, sizeof(b->name));
	s->held += p->size;
	drop_pending(s, p);
	return 0;
}

bool pm_state_may_access(uint32_t job_uid, uint32_t peer_uid, int32_t peer_grank, int32_t grank)
{
	return peer_uid == job_uid && grank >= 0 && peer_grank == grank;
}

void pm_state_mark_safe(struct pm_state_store *s, int32_t grank, const char *name,
			uint64_t version)
{
	struct pm_state_blob *b = find(s, false, 0, grank, name);
	if (b && b->version == version)
		b->safe = true;
}

int pm_state_put_replica(struct pm_state_store *s, const struct pm_state_blob *meta, int handle,
			 int *old, char *err, size_t errlen)
{
	struct pm_state_blob *b = find(s, true, meta->owner_node, meta->grank, meta->name);
	uint64_t replaced = b ? b->size : 0;
	char x[32], y[32], z[32];

	*old = handle; /* refused: the caller closes what it brought */
	if (meta->owner_node == s->node) {
		snprintf(err, errlen, "replica of rank %d's '%s' from this node itself", meta->grank,
			 meta->name);
		return -1;
	}
	if (b && b->version >= meta->version) {
		snprintf(err, errlen, "replica of rank %d's '%s' version %llu: version %llu is held already",
			 meta->grank, meta->name, (unsigned long long)meta->version,
			 (unsigned long long)b->version);
		return -1;
	}
	if (s->held - replaced + s->pending + meta->size > s->cfg.max_node) {
		snprintf(err, errlen,
			 "replica of rank %d's '%s' (%s) refused: this node would hold %s, over the per-node limit of %s",
			 meta->grank, meta->name, human(meta->size, x, sizeof(x)),
			 human(s->held - replaced + s->pending + meta->size, y, sizeof(y)),
			 human(s->cfg.max_node, z, sizeof(z)));
		return -1;
	}
	if (b) {
		*old = b->handle;
	} else {
		*old = -1;
		if (!(b = append(s))) {
			*old = handle;
			snprintf(err, errlen, "replica of rank %d's '%s': out of memory", meta->grank, meta->name);
			return -1;
		}
	}
	*b = *meta;
	b->replica = true;
	b->safe = true; /* a replica is the safe copy */
	b->handle = handle;
	s->held = s->held - replaced + meta->size;
	return 0;
}

void pm_state_drop_replicas(struct pm_state_store *s, uint32_t owner_node,
			    void (*release)(int, void *), void *arg)
{
	for (size_t i = 0; i < s->nb;) {
		struct pm_state_blob *b = &s->b[i];
		if (b->replica && b->owner_node == owner_node) {
			if (release && b->handle >= 0)
				release(b->handle, arg);
			s->held -= b->size;
			*b = s->b[--s->nb];
		} else {
			i++;
		}
	}
}

/* Blob i goes: its file handed to release, the last blob in its place. */
static void drop_at(struct pm_state_store *s, size_t i, void (*release)(int, void *), void *arg)
{
	struct pm_state_blob *b = &s->b[i];

	if (release && b->handle >= 0)
		release(b->handle, arg);
	s->held -= b->size;
	*b = s->b[--s->nb];
}

size_t pm_state_drop_superseded(struct pm_state_store *s, int32_t grank, const char *name,
				uint32_t by_owner, void (*release)(int, void *), void *arg)
{
	size_t dropped = 0;

	for (size_t i = 0; i < s->nb;) {
		struct pm_state_blob *b = &s->b[i];
		if (b->replica && b->owner_node != by_owner && b->grank == grank &&
		    !strcmp(b->name, name)) {
			drop_at(s, i, release, arg);
			dropped++;
		} else {
			i++;
		}
	}
	return dropped;
}

size_t pm_state_drop_rank(struct pm_state_store *s, uint32_t owner, int32_t grank,
			  void (*release)(int, void *), void *arg)
{
	bool own = owner == s->node;
	size_t dropped = 0;

	if (own)
		pm_state_abort_rank(s, grank);
	for (size_t i = 0; i < s->nb;) {
		struct pm_state_blob *b = &s->b[i];
		if (b->grank == grank && (own || (b->replica && b->owner_node == owner))) {
			drop_at(s, i, release, arg);
			dropped++;
		} else {
			i++;
		}
	}
	return dropped;
}

long pm_state_buddy(uint32_t i, uint32_t n, const uint32_t *dom)
{
	/* Half the ring away: a bijection (every node is one node's buddy,
	 * so the replicas' memory is spread evenly), and neighbours, which
	 * tend to share a switch or a rack, are not paired. */
	uint32_t start;

	if (n < 2 || i >= n)
		return -1;
	start = (i + n / 2) % n;
	if (!dom)
		return start;
	for (uint32_t j = 0; j < n; j++) {
		uint32_t k = (start + j) % n;
		if (k != i && dom[k] != dom[i])
			return k;
	}
	return start; /* one domain: any other node */
}
