/* The control tree's handshake: what the munge credentials of a HELLO
 * (child to parent) and of a WELCOME (parent to child) carry. Both name
 * the step, the sending and the receiving node, and the child's nonce, so
 * that a credential seen on one link is useless on any other, and a
 * parent's WELCOME answers exactly one HELLO. Pure. */
#ifndef PM_HANDSHAKE_H
#define PM_HANDSHAKE_H

#include <stddef.h>

/* BUDDY / BUDDY_WELCOME: the state replication link to a node's buddy
 * (procmgrd/state_repl.c), a kind of its own so that neither credential
 * can be replayed as the other link's. */
enum pm_hs_kind { PM_HS_HELLO, PM_HS_WELCOME, PM_HS_BUDDY, PM_HS_BUDDY_WELCOME, PM_HS_KINDS };

#define PM_HS_NONCE_HEX 32 /* 16 random bytes */
#define PM_HS_MAX 192      /* a payload's length, NUL included */

struct pm_hs {
	enum pm_hs_kind kind;
	unsigned job, step;
	int from, to; /* node indices */
	char nonce[PM_HS_NONCE_HEX + 1];
};

/* -1 if it does not fit or a field is out of range. */
int pm_hs_format(const struct pm_hs *h, char *buf, size_t len);
/* Strict: the exact form pm_hs_format writes, nothing before or after;
 * -1 for anything else. */
int pm_hs_parse(const char *s, struct pm_hs *h);
/* 32 hex digits from 16 bytes. */
void pm_hs_nonce_hex(const unsigned char bytes[16], char out[PM_HS_NONCE_HEX + 1]);

#endif
