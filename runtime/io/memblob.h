/* A rank's state handed to procmgrd without a copy: the rank writes it
 * into a memory file (memfd_create with MFD_ALLOW_SEALING), unmaps it and
 * passes the descriptor over a Unix socket (SCM_RIGHTS); procmgrd seals it
 * (no write, shrink or grow, and no more seals) so the version it keeps
 * cannot change under it, and hands it back the same way to the next
 * generation, which maps it. A descriptor that is not a sealable memory
 * file (a regular file, a pipe, a socket: something procmgrd could block
 * on or that lives on a disk) is refused, and so is one still mapped
 * writable by the rank. */
#ifndef PM_MEMBLOB_H
#define PM_MEMBLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Send len bytes of buf with fd attached (fd < 0: none). 0, or -1 and
 * errno. The bytes go in one sendmsg: keep them short (a header line). */
int pm_fd_send(int sock, const void *buf, size_t len, int fd);
/* Receive up to cap bytes and at most one descriptor (*fd = -1 if none;
 * close-on-exec). Extra descriptors are closed, never leaked. Returns the
 * bytes read (0: the peer closed), or -1 and errno. */
long pm_fd_recv(int sock, void *buf, size_t cap, int *fd);

/* Seal a rank's memory file of the announced size: 0, or -1 with err
 * saying what is wrong with it (not a memory file, created without
 * MFD_ALLOW_SEALING, still mapped writable, not the size announced). */
int pm_memblob_seal(int fd, uint64_t expect, uint64_t *size, char *err, size_t errlen);

/* swap's way (common/stateproto.h): the file's size is fixed (no shrink
 * or grow, so that nothing procmgrd reads can end short under it), its
 * bytes stay writable by the rank, which writes its next version into it
 * once procmgrd hands it back. 0, or -1 with err as pm_memblob_seal. */
int pm_memblob_fix(int fd, uint64_t expect, uint64_t *size, char *err, size_t errlen);
/* A memory file procmgrd may hand back for writing: not write-sealed. */
bool pm_memblob_writable(int fd);

/* A new sealed memory file holding len bytes of buf (for a replica that
 * came over the network, and for tests). -1 and errno on failure. */
int pm_memblob_from(const char *name, const void *buf, size_t len);

#endif
