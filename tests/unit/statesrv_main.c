/* procmgrd's state socket served by its own code (io/statesrv.c and
 * common/statestore.c) in a process of its own, for the Python module's
 * tests (tests/python/test_state.py's swap cases): every connection is
 * rank 0 of one node; no replication. Ends when its stdin closes (the
 * test that started it is gone), leaving no socket behind.
 *
 *   pm-statesrv SOCKET [MAX_RANK_BYTES [MAX_NODE_BYTES]] */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "io/statesrv.h"

#define MAXC 16

static void release(int h, void *arg)
{
	(void)arg;
	close(h);
}

int main(int argc, char **argv)
{
	struct pm_state_cfg cfg = { .max_rank = 1ull << 34, .max_node = 1ull << 35,
				    .max_names = 64 };
	struct pm_state_store st;
	struct pm_state_peer peer[MAXC];
	struct pollfd pf[MAXC + 2];
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int ls, n = 0;

	if (argc < 2 || strlen(argv[1]) >= sizeof(a.sun_path)) {
		fprintf(stderr, "usage: pm-statesrv SOCKET [MAX_RANK_BYTES [MAX_NODE_BYTES]]\n");
		return 2;
	}
	if (argc > 2)
		cfg.max_rank = strtoull(argv[2], NULL, 10);
	if (argc > 3)
		cfg.max_node = strtoull(argv[3], NULL, 10);
	strcpy(a.sun_path, argv[1]);
	ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 8)) {
		fprintf(stderr, "pm-statesrv: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	pm_state_init(&st, &cfg, 0);
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		pf[0] = (struct pollfd){ .fd = STDIN_FILENO, .events = POLLIN };
		pf[1] = (struct pollfd){ .fd = ls, .events = POLLIN };
		if (poll(pf, (nfds_t)(n + 2), -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents) {
			char c;
			if (read(STDIN_FILENO, &c, 1) <= 0)
				break;
		}
		for (int i = 0; i < n; i++) {
			struct pm_state_note note;
			char err[256];
			if (!pf[i + 2].revents)
				continue;
			if (pm_statesrv_serve(&st, pf[i + 2].fd, &peer[i], 0, NULL, &note, err,
					      sizeof(err)) <= 0) {
				pm_statesrv_closed(&st, &peer[i]);
				close(pf[i + 2].fd);
				pf[i + 2] = pf[n + 1];
				peer[i] = peer[n - 1];
				n--;
				i--;
			}
		}
		if (pf[1].revents) {
			int c = accept4(ls, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			if (c >= 0 && n < MAXC) {
				pf[n + 2] = (struct pollfd){ .fd = c, .events = POLLIN };
				peer[n] = (struct pm_state_peer){ .grank = 0 };
				n++;
			} else if (c >= 0) {
				close(c);
			}
		}
	}
	pm_state_clear(&st, release, NULL);
	unlink(argv[1]);
	return 0;
}
