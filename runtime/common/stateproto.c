/* The state socket's requests and replies: stateproto.h. */
#include "stateproto.h"

#include <stdio.h>
#include <string.h>

struct verb {
	const char *name;
	enum pm_sp_kind kind;
	int nargs;
	bool fd;
	const char *usage;
};

static const struct verb verbs[] = {
	{ "begin", PM_SP_BEGIN, 2, false, "begin NAME SIZE" },
	{ "commit", PM_SP_COMMIT, 2, true, "commit TICKET STEP, with the memfd attached" },
	{ "swap", PM_SP_SWAP, 2, true, "swap TICKET STEP, with the memfd attached" },
	{ "abort", PM_SP_ABORT, 1, false, "abort TICKET" },
	{ "load", PM_SP_LOAD, 1, false, "load NAME" },
	{ "list", PM_SP_LIST, 0, false, "list" },
};
#define NVERBS (sizeof(verbs) / sizeof(verbs[0]))

/* A decimal number lo..hi without sign, blank or leading zeros. */
static int number(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int pm_sp_parse(const char *buf, size_t len, bool has_fd, struct pm_sp_req *r, char *err,
		size_t errlen)
{
	char line[PM_SP_LINE_MAX + 1], *tok[4], *save = NULL, *t;
	const struct verb *v = NULL;
	int n = 0;

	memset(r, 0, sizeof(*r));
	if (len && buf[len - 1] == '\n')
		len--;
	if (!len) {
		snprintf(err, errlen, "empty request: begin, commit, swap, abort, load or list");
		return -1;
	}
	if (len >= PM_SP_LINE_MAX) {
		snprintf(err, errlen, "request too long: at most %d bytes", PM_SP_LINE_MAX - 1);
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e) {
			snprintf(err, errlen,
				 "request not one line of printable ASCII (byte %zu is 0x%02x)", i + 1,
				 (unsigned char)buf[i]);
			return -1;
		}
	memcpy(line, buf, len);
	line[len] = '\0';
	for (t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == 4) {
			n++;
			break;
		}
		tok[n++] = t;
	}
	if (!n) {
		snprintf(err, errlen, "empty request: begin, commit, swap, abort, load or list");
		return -1;
	}
	for (size_t i = 0; i < NVERBS; i++)
		if (!strcmp(tok[0], verbs[i].name))
			v = &verbs[i];
	if (!v) {
		snprintf(err, errlen, "unknown request '%.32s': begin, commit, swap, abort, load or list",
			 tok[0]);
		return -1;
	}
	if (n - 1 != v->nargs) {
		snprintf(err, errlen, "'%s' takes %d argument%s: %s", v->name, v->nargs,
			 v->nargs == 1 ? "" : "s", v->usage);
		return -1;
	}
	if (has_fd != v->fd) {
		snprintf(err, errlen, has_fd ? "'%s' takes no descriptor: %s" :
			 "'%s' needs its descriptor attached (SCM_RIGHTS): %s", v->name, v->usage);
		return -1;
	}
	r->kind = v->kind;
	switch (v->kind) {
	case PM_SP_BEGIN:
		if (pm_state_name_check(tok[1], err, errlen))
			return -1;
		snprintf(r->name, sizeof(r->name), "%s", tok[1]);
		if (number(tok[2], 1, PM_SP_SIZE_MAX, &r->size)) {
			snprintf(err, errlen, "bad size '%.32s': bytes, 1 to %llu", tok[2],
				 (unsigned long long)PM_SP_SIZE_MAX);
			return -1;
		}
		break;
	case PM_SP_COMMIT:
	case PM_SP_SWAP:
	case PM_SP_ABORT:
		if (number(tok[1], 1, UINT64_MAX, &r->ticket)) {
			snprintf(err, errlen, "bad ticket '%.32s': the number begin answered", tok[1]);
			return -1;
		}
		if (v->kind != PM_SP_ABORT && number(tok[2], 0, UINT64_MAX, &r->step)) {
			snprintf(err, errlen, "bad step '%.32s': a whole number, 0 for none", tok[2]);
			return -1;
		}
		break;
	case PM_SP_LOAD:
		if (pm_state_name_check(tok[1], err, errlen))
			return -1;
		snprintf(r->name, sizeof(r->name), "%s", tok[1]);
		break;
	case PM_SP_LIST:
		break;
	}
	return 0;
}

static int fit(int n, size_t len)
{
	return n < 0 || (size_t)n >= len ? -1 : n;
}

int pm_sp_format(const struct pm_sp_req *r, char *buf, size_t len)
{
	switch (r->kind) {
	case PM_SP_BEGIN:
		return fit(snprintf(buf, len, "begin %s %llu", r->name, (unsigned long long)r->size),
			   len);
	case PM_SP_COMMIT:
	case PM_SP_SWAP:
		return fit(snprintf(buf, len, "%s %llu %llu", r->kind == PM_SP_SWAP ? "swap" : "commit",
				    (unsigned long long)r->ticket, (unsigned long long)r->step),
			   len);
	case PM_SP_ABORT:
		return fit(snprintf(buf, len, "abort %llu", (unsigned long long)r->ticket), len);
	case PM_SP_LOAD:
		return fit(snprintf(buf, len, "load %s", r->name), len);
	case PM_SP_LIST:
		return fit(snprintf(buf, len, "list"), len);
	}
	return -1;
}

static unsigned long long age(const struct pm_state_blob *b, uint64_t now_ms)
{
	return now_ms > b->saved_ms ? (unsigned long long)(now_ms - b->saved_ms) : 0;
}

int pm_sp_format_load(const struct pm_state_blob *b, uint64_t now_ms, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "ok %llu %llu %llu %llu", (unsigned long long)b->version,
			    (unsigned long long)b->size, (unsigned long long)b->step,
			    age(b, now_ms)), len);
}

int pm_sp_format_entry(const struct pm_state_blob *b, uint64_t now_ms, char *buf, size_t len)
{
	return fit(snprintf(buf, len, "%s %llu %llu %llu %llu %d", b->name,
			    (unsigned long long)b->version, (unsigned long long)b->size,
			    (unsigned long long)b->step, age(b, now_ms), b->safe ? 1 : 0), len);
}
