#include "tcp.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int pm_tcp_tune(int fd, unsigned user_timeout_ms, char *warn, size_t len)
{
	/* Unacknowledged data fails the connection after the peer timeout, as
	 * the heartbeat would: a dropped node is not left to TCP's minutes. */
	if (user_timeout_ms && setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
					  sizeof(user_timeout_ms))) {
		snprintf(warn, len, "TCP_USER_TIMEOUT: %s", strerror(errno));
		return -1;
	}
	/* Frames are small and each is a whole message: Nagle would hold one
	 * behind the last until its ACK (a delayed ACK: up to 40 ms a hop). */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int))) {
		snprintf(warn, len, "TCP_NODELAY: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int pm_tcp_connect(const struct sockaddr *to, socklen_t tolen, const struct sockaddr *from,
		   socklen_t fromlen, unsigned user_timeout_ms, char *warn, size_t warnlen,
		   char *err, size_t errlen)
{
	int fd = socket(to->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	warn[0] = '\0';
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(errno));
		return -1;
	}
	pm_tcp_tune(fd, user_timeout_ms, warn, warnlen);
	if (fromlen && bind(fd, from, fromlen) && !warn[0])
		snprintf(warn, warnlen, "cannot bind to this node's address: %s", strerror(errno));
	if (connect(fd, to, tolen) && errno != EINPROGRESS) {
		int e = errno;
		snprintf(err, errlen, "%s", strerror(e));
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}
