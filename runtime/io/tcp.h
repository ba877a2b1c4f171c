/* The TCP links between procmgrd processes, set up in one place: a link
 * made at the first attach, one re-made after a lost parent (spares) and
 * one accepted from a child all carry the same socket options. */
#ifndef PM_TCP_H
#define PM_TCP_H

#include <stddef.h>
#include <sys/socket.h>

/* TCP_NODELAY, and TCP_USER_TIMEOUT of user_timeout_ms (0: the kernel's).
 * -1 if one could not be set (warn says which); the link still works. */
int pm_tcp_tune(int fd, unsigned user_timeout_ms, char *warn, size_t len);

/* A non-blocking connect to `to`, from `from` if fromlen (this node's own
 * address, as its name says: the link is then this node's, whatever the
 * routing table prefers), tuned as above. The socket, connecting (wait for
 * EPOLLOUT, then SO_ERROR), or -1 (err says why, errno is kept). warn: what could not be
 * set, "" if all was (the socket is returned anyway). */
int pm_tcp_connect(const struct sockaddr *to, socklen_t tolen, const struct sockaddr *from,
		   socklen_t fromlen, unsigned user_timeout_ms, char *warn, size_t warnlen,
		   char *err, size_t errlen);

#endif
