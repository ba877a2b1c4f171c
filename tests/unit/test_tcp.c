/* The tree's TCP links (runtime/io/tcp.c), over a real loopback pair: a
 * link made by pm_tcp_connect (the first attach in main.c and a re-attach
 * in attach.c alike) carries TCP_NODELAY and the peer timeout as
 * TCP_USER_TIMEOUT, and so does an accepted one once tuned. Before this
 * helper, attach.c's re-made link had neither. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/tcp.h"

static int listener(struct sockaddr_in *sa)
{
	socklen_t len = sizeof(*sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(listen(fd, 4), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)sa, &len), 0);
	return fd;
}

static int opt(int fd, int name)
{
	int v = -1;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, name, &v, &len), 0);
	return v;
}

static void test_connect_sets_options(void **state)
{
	struct sockaddr_in sa, self = { .sin_family = AF_INET,
					.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct pollfd p;
	char warn[128], err[128];
	int l = listener(&sa), fd, e = -1, a;
	socklen_t len = sizeof(e);
	(void)state;

	fd = pm_tcp_connect((struct sockaddr *)&sa, sizeof(sa), (struct sockaddr *)&self,
			    sizeof(self), 4000, warn, sizeof(warn), err, sizeof(err));
	assert_true(fd >= 0);
	assert_string_equal(warn, "");
	assert_int_equal(opt(fd, TCP_NODELAY), 1);
	assert_int_equal(opt(fd, TCP_USER_TIMEOUT), 4000);
	assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	/* It connects, as the callers wait for: writable, no SO_ERROR. */
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	assert_int_equal(poll(&p, 1, 5000), 1);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len), 0);
	assert_int_equal(e, 0);
	a = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	assert_true(a >= 0);
	/* The accepting side, tuned the same way. */
	assert_int_equal(pm_tcp_tune(a, 4000, warn, sizeof(warn)), 0);
	assert_int_equal(opt(a, TCP_NODELAY), 1);
	assert_int_equal(opt(a, TCP_USER_TIMEOUT), 4000);
	close(a);
	close(fd);
	close(l);
}

/* No peer timeout: the kernel's user timeout stays, Nagle is still off. */
static void test_no_user_timeout(void **state)
{
	struct sockaddr_in sa;
	char warn[128], err[128];
	int l = listener(&sa), fd;
	(void)state;

	fd = pm_tcp_connect((struct sockaddr *)&sa, sizeof(sa), NULL, 0, 0, warn, sizeof(warn),
			    err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(opt(fd, TCP_NODELAY), 1);
	assert_int_equal(opt(fd, TCP_USER_TIMEOUT), 0);
	close(fd);
	close(l);
}

/* A bad address is an error that says why, errno kept, nothing left open. */
static void test_connect_error(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(1),
				  .sin_addr.s_addr = htonl(INADDR_BROADCAST) };
	char warn[128], err[128] = "";
	int fd;
	(void)state;

	fd = pm_tcp_connect((struct sockaddr *)&sa, sizeof(sa), NULL, 0, 1000, warn,
			    sizeof(warn), err, sizeof(err));
	assert_int_equal(fd, -1);
	assert_true(errno != 0);
	assert_string_equal(err, strerror(errno));
}

/* A source address this host does not have: said in warn, the link is
 * still attempted (as before: the routing table then picks). */
static void test_bind_warns(void **state)
{
	struct sockaddr_in sa, self = { .sin_family = AF_INET,
					.sin_addr.s_addr = inet_addr("192.0.2.1") };
	char warn[128], err[128];
	int l = listener(&sa), fd;
	(void)state;

	fd = pm_tcp_connect((struct sockaddr *)&sa, sizeof(sa), (struct sockaddr *)&self,
			    sizeof(self), 1000, warn, sizeof(warn), err, sizeof(err));
	assert_true(fd >= 0);
	assert_non_null(strstr(warn, "cannot bind to this node's address"));
	close(fd);
	close(l);
}

/* Not a TCP socket: each option refused, named in the warning. */
static void test_tune_refused(void **state)
{
	char warn[256];
	int sv[2];
	(void)state;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(pm_tcp_tune(sv[0], 4000, warn, sizeof(warn)), -1);
	assert_non_null(strstr(warn, "TCP_USER_TIMEOUT: "));
	assert_int_equal(pm_tcp_tune(sv[0], 0, warn, sizeof(warn)), -1);
	assert_non_null(strstr(warn, "TCP_NODELAY: "));
	close(sv[0]);
	close(sv[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_connect_sets_options),
		cmocka_unit_test(test_no_user_timeout),
		cmocka_unit_test(test_connect_error),
		cmocka_unit_test(test_bind_warns),
		cmocka_unit_test(test_tune_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
