/* Descriptor passing and sealed memory files: see memblob.h. */
#include "memblob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define PM_SEALS (F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int pm_fd_send(int sock, const void *buf, size_t len, int fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.space;
		m.msg_controllen = sizeof(ctl.space);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(int));
	}
	do
		n = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if ((size_t)n != len) {
		errno = EMSGSIZE; /* a datagram or seqpacket socket cut it */
		return -1;
	}
	return 0;
}

long pm_fd_recv(int sock, void *buf, size_t cap, int *fd)
{
	union {
		struct cmsghdr h;
		char space[CMSG_SPACE(4 * sizeof(int))]; /* room to close extras */
	} ctl;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.space,
			    .msg_controllen = sizeof(ctl.space) };
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		size_t k;
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
	if (m.msg_flags & MSG_CTRUNC) {
		/* More descriptors than room: the kernel closed what did not
		 * fit; refuse the message rather than guess which was meant. */
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		errno = EPROTO;
		return -1;
	}
	return n;
}

#define PM_SIZE_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

/* A memory file of the size announced: its seals, or -1 with err. */
static int check_file(int fd, uint64_t expect, uint64_t *size, char *err, size_t errlen)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0) {
		snprintf(err, errlen, "not a memory file (memfd_create): %s",
			 errno == EINVAL ? "it cannot be sealed" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		snprintf(err, errlen, "fstat: %s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "not a memory file");
		return -1;
	}
	if ((uint64_t)st.st_size != expect) {
		snprintf(err, errlen, "%llu bytes, not the %llu announced",
			 (unsigned long long)st.st_size, (unsigned long long)expect);
		return -1;
	}
	*size = (uint64_t)st.st_size;
	return seals;
}

/* want added to fd's seals (a memory file of expect bytes); made, names
 * what procmgr would have made of it ("make it read-only"), needs the
 * seals' names for the message. */
static int add_seals(int fd, uint64_t expect, uint64_t *size, int want, const char *made,
		     const char *needs, char *err, size_t errlen)
{
	int seals = check_file(fd, expect, size, err, errlen);

	if (seals < 0)
		return -1;
	if ((seals & want) == want)
		return 0;
	if (seals & F_SEAL_SEAL) {
		if (seals == F_SEAL_SEAL)
			snprintf(err, errlen, "created without MFD_ALLOW_SEALING: procmgr cannot %s",
				 made);
		else
			snprintf(err, errlen, "sealed without %s: leave the sealing to procmgr", needs);
		return -1;
	}
	if (fcntl(fd, F_ADD_SEALS, want) < 0) {
		snprintf(err, errlen, "%s",
			 errno == EBUSY ? "still mapped writable: unmap it before saving"
					: strerror(errno));
		return -1;
	}
	return 0;
}

int pm_memblob_fix(int fd, uint64_t expect, uint64_t *size, char *err, size_t errlen)
{
	return add_seals(fd, expect, size, PM_SIZE_SEALS, "fix its size",
			 "F_SEAL_SHRINK and F_SEAL_GROW", err, errlen);
}

bool pm_memblob_writable(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	return seals >= 0 && !(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE));
}

int pm_memblob_seal(int fd, uint64_t expect, uint64_t *size, char *err, size_t errlen)
{
	return add_seals(fd, expect, size, PM_SEALS, "make it read-only",
			 "F_SEAL_WRITE, F_SEAL_SHRINK and F_SEAL_GROW", err, errlen);
}

int pm_memblob_from(const char *name, const void *buf, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	const char *p = buf;
	size_t off = 0;
	char err[128];
	uint64_t size;

	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)len) < 0)
		goto fail;
	while (off < len) {
		ssize_t n = write(fd, p + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto fail;
		off += (size_t)n;
	}
	if (pm_memblob_seal(fd, len, &size, err, sizeof(err)) < 0) {
		errno = EINVAL;
		goto fail;
	}
	return fd;
fail: {
	int e = errno;
	close(fd);
	errno = e;
	return -1;
}
}
