#include "wire.h"

#include <string.h>

static const char *const names[PM_MSG_TYPE_MAX] = {
	[PM_MSG_HELLO] = "hello", [PM_MSG_FAIL] = "fail",
	[PM_MSG_STOPPED] = "stopped", [PM_MSG_DONE] = "done",
	[PM_MSG_LOST] = "lost", [PM_MSG_WELCOME] = "welcome",
	[PM_MSG_REFUSED] = "refused", [PM_MSG_STOP] = "stop",
	[PM_MSG_START] = "start", [PM_MSG_FINISH] = "finish",
	[PM_MSG_ABORT] = "abort", [PM_MSG_RANK_HELLO] = "rank-hello",
	[PM_MSG_RANK_EXIT] = "rank-exit", [PM_MSG_RANK_STOPPED] = "rank-stopped",
	[PM_MSG_PRINT] = "print", [PM_MSG_READY] = "ready", [PM_MSG_PING] = "ping",
	[PM_MSG_RANK_RUN] = "rank-run", [PM_MSG_REPLACE] = "replace",
	[PM_MSG_RUNNING] = "running",
	[PM_MSG_CLIENT] = "client",
	[PM_MSG_QUERY] = "query", [PM_MSG_ANSWER] = "answer",
	[PM_MSG_ANSWER_END] = "answer-end",
	[PM_MSG_RANK_STEP] = "rank-step", [PM_MSG_SLOW] = "slow",
	[PM_MSG_EVENT] = "event",
	[PM_MSG_TRIAL_START] = "trial-start",
	[PM_MSG_TRIAL_STOP] = "trial-stop",
	[PM_MSG_TRIAL_EXIT] = "trial-exit",
	[PM_MSG_RANK_STANDBY] = "rank-standby",
	[PM_MSG_BUDDY] = "buddy",
};

const char *pm_msg_name(int type)
{
	if (type <= 0 || type >= PM_MSG_TYPE_MAX)
		return "unknown";
	return names[type];
}

void pm_msg_init(struct pm_msg *m, enum pm_msg_type type)
{
	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->rank = -1;
	m->node = -1;
}

void pm_msg_set_text(struct pm_msg *m, const char *text)
{
	size_t n = strlen(text);
	if (n > PM_WIRE_TEXT_MAX)
		n = PM_WIRE_TEXT_MAX;
	memcpy(m->text, text, n);
	m->text[n] = '\0';
	m->text_len = (uint16_t)n;
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int pm_msg_encode(const struct pm_msg *m, uint8_t *buf, size_t len)
{
	size_t total = PM_WIRE_HDR + PM_WIRE_FIXED + m->text_len;
	uint8_t *p = buf;

	if (m->text_len > PM_WIRE_TEXT_MAX || total > len)
		return -1;
	*p++ = (uint8_t)(PM_WIRE_MAGIC >> 8);
	*p++ = (uint8_t)PM_WIRE_MAGIC;
	*p++ = PM_WIRE_VERSION;
	*p++ = m->type;
	p = put32(p, (uint32_t)(PM_WIRE_FIXED + m->text_len));
	p = put32(p, m->gen);
	p = put32(p, (uint32_t)m->rank);
	p = put32(p, (uint32_t)m->node);
	p = put32(p, (uint32_t)m->status);
	p = put32(p, m->count);
	*p++ = (uint8_t)(m->text_len >> 8);
	*p++ = (uint8_t)m->text_len;
	memcpy(p, m->text, m->text_len);
	return (int)total;
}

int pm_msg_decode(const uint8_t *buf, size_t len, struct pm_msg *m,
		  const char **err)
{
	uint32_t plen;
	uint16_t tlen;
	const uint8_t *p;

	/* Check what we have as soon as we have it: garbage is refused
	 * without waiting for a length's worth of it. */
	if (len >= 1 && buf[0] != (uint8_t)(PM_WIRE_MAGIC >> 8))
		goto bad_magic;
	if (len >= 2 && buf[1] != (uint8_t)PM_WIRE_MAGIC)
		goto bad_magic;
	if (len >= 3 && buf[2] != PM_WIRE_VERSION) {
		*err = "unsupported protocol version";
		return -1;
	}
	if (len >= 4 && (buf[3] == 0 || buf[3] >= PM_MSG_TYPE_MAX)) {
		*err = "unknown message type";
		return -1;
	}
	if (len < PM_WIRE_HDR)
		return 0;
	plen = get32(buf + 4);
	if (plen < PM_WIRE_FIXED || plen > PM_WIRE_FIXED + PM_WIRE_TEXT_MAX) {
		*err = "bad frame length";
		return -1;
	}
	if (len < PM_WIRE_HDR + plen)
		return 0;
	p = buf + PM_WIRE_HDR;
	tlen = (uint16_t)(p[20] << 8 | p[21]);
	if ((uint32_t)tlen != plen - PM_WIRE_FIXED) {
		*err = "text length does not match frame length";
		return -1;
	}
	if (memchr(p + PM_WIRE_FIXED, '\0', tlen)) {
		*err = "NUL byte in text";
		return -1;
	}
	memset(m, 0, sizeof(*m));
	m->type = buf[3];
	m->gen = get32(p);
	m->rank = (int32_t)get32(p + 4);
	m->node = (int32_t)get32(p + 8);
	m->status = (int32_t)get32(p + 12);
	m->count = get32(p + 16);
	m->text_len = tlen;
	memcpy(m->text, p + PM_WIRE_FIXED, tlen);
	m->text[tlen] = '\0';
	return (int)(PM_WIRE_HDR + plen);

bad_magic:
	*err = "not a procmgr frame (bad magic)";
	return -1;
}
