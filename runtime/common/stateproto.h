/* The state socket's protocol (procmgrd's PROCMGR_STATE_SOCK): one
 * request per SOCK_SEQPACKET message, a line of ASCII text with at most one
 * descriptor attached; one reply per request, the same way. Pure: parsing
 * and formatting only (procmgrd/state_link.c does the I/O, the Python
 * module speaks it from the other side; docs/user-guide.md for users).
 *
 *   begin NAME SIZE        -> ok TICKET | err TEXT
 *   commit TICKET STEP +fd -> ok VERSION | err TEXT   (fd: the memfd)
 *   swap TICKET STEP +fd   -> ok VERSION [+fd] | err TEXT
 *   abort TICKET           -> ok
 *   load NAME              -> ok VERSION SIZE STEP AGE_MS +fd | none | err TEXT
 *   list                   -> ok N, then N lines NAME VERSION SIZE STEP AGE_MS SAFE
 *
 * A save is begin (the limits judged before a byte is written) and commit
 * (the descriptor, sealed by procmgrd); only a commit replaces the version
 * a load gets.
 *
 * swap is a commit whose file stays writable (procmgrd fixes its size
 * only), and whose reply hands back the version it replaced, when that one
 * was swapped in too and is not being copied to the buddy: the rank writes
 * its next version into memory that is already there and mapped, so that a
 * save every step costs a copy and no page faults (bench/state). The rank
 * must not write a file after swapping it in until it comes back. */
#ifndef PM_STATEPROTO_H
#define PM_STATEPROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "statestore.h"

#define PM_SP_LINE_MAX 256              /* a request, newline included */
#define PM_SP_REPLY_MAX 16384           /* a reply (list: 64 names of 64 characters) */
#define PM_SP_SIZE_MAX (1ull << 50)     /* one blob: 1 PiB, far above any limit */

enum pm_sp_kind { PM_SP_BEGIN, PM_SP_COMMIT, PM_SP_SWAP, PM_SP_ABORT, PM_SP_LOAD, PM_SP_LIST };

struct pm_sp_req {
	enum pm_sp_kind kind;
	char name[PM_STATE_NAME_MAX + 1]; /* begin, load */
	uint64_t size;                    /* begin */
	uint64_t ticket;                  /* commit, swap, abort */
	uint64_t step;                    /* commit, swap: the rank's step, 0: none */
};

/* One request of len bytes (a trailing newline allowed), has_fd if a
 * descriptor came with it. 0, or -1 with err saying what is wrong and what
 * is allowed (the reply's text). */
int pm_sp_parse(const char *buf, size_t len, bool has_fd, struct pm_sp_req *r, char *err,
		size_t errlen);
/* The request's line, without newline: the bytes' length, -1 if too long. */
int pm_sp_format(const struct pm_sp_req *r, char *buf, size_t len);

/* A blob as a load's reply ("ok VERSION SIZE STEP AGE_MS") or as a list's
 * line ("NAME VERSION SIZE STEP AGE_MS SAFE"); the length, -1 if it does
 * not fit. */
int pm_sp_format_load(const struct pm_state_blob *b, uint64_t now_ms, char *buf, size_t len);
int pm_sp_format_entry(const struct pm_state_blob *b, uint64_t now_ms, char *buf, size_t len);

#endif
