#include "handshake.h"

#include <stdio.h>
#include <string.h>

static const char *const kinds[] = { "hello", "welcome", "buddy", "buddy-welcome" };

static int nonce_ok(const char *n)
{
	size_t i;

	for (i = 0; i < PM_HS_NONCE_HEX; i++)
		if (!((n[i] >= '0' && n[i] <= '9') || (n[i] >= 'a' && n[i] <= 'f')))
			return 0;
	return n[i] == '\0';
}

int pm_hs_format(const struct pm_hs *h, char *buf, size_t len)
{
	int n;

	if ((unsigned)h->kind >= PM_HS_KINDS || h->from < 0 || h->to < 0 || !nonce_ok(h->nonce))
		return -1;
	n = snprintf(buf, len, "procmgr-tree v2 %s job=%u step=%u from=%d to=%d nonce=%s",
		     kinds[h->kind], h->job, h->step, h->from, h->to, h->nonce);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int pm_hs_parse(const char *s, struct pm_hs *h)
{
	char kind[16], again[PM_HS_MAX];
	unsigned k;
	int end = -1;

	memset(h, 0, sizeof(*h));
	if (strlen(s) >= PM_HS_MAX ||
	    sscanf(s, "procmgr-tree v2 %15s job=%u step=%u from=%d to=%d nonce=%32s%n", kind,
		   &h->job, &h->step, &h->from, &h->to, h->nonce, &end) != 6 ||
	    end < 0 || s[end] != '\0')
		return -1;
	for (k = 0; k < PM_HS_KINDS && strcmp(kind, kinds[k]); k++)
		;
	if (k == PM_HS_KINDS)
		return -1;
	h->kind = (enum pm_hs_kind)k;
	/* What sscanf let through (signs, spaces, leading zeros) is refused by
	 * asking for the same text back. */
	if (pm_hs_format(h, again, sizeof(again)) || strcmp(again, s))
		return -1;
	return 0;
}

void pm_hs_nonce_hex(const unsigned char bytes[16], char out[PM_HS_NONCE_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i;

	for (i = 0; i < 16; i++) {
		out[2 * i] = hex[bytes[i] >> 4];
		out[2 * i + 1] = hex[bytes[i] & 15];
	}
	out[PM_HS_NONCE_HEX] = '\0';
}
