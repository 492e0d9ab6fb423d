// SPDX-License-Identifier: Apache-2.0
/*
 * ctlsend: a control-socket client that is not custode (it links nothing of
 * custode, so it carries no engine ABI marker): what another root tool would
 * be. Connects to SOCKET, sends LINE and a newline, prints the first answer
 * line. Exit: 0 an answer was printed, 1 no answer, 2 usage.
 *
 *   ctlsend SOCKET LINE
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char buf[65536];
	size_t have = 0;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: ctlsend SOCKET LINE\n");
		return 2;
	}
	memcpy(sa.sun_path, argv[1], strlen(argv[1]) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("ctlsend: connect");
		return 1;
	}
	if (write(fd, argv[2], strlen(argv[2])) < 0 || write(fd, "\n", 1) < 0) {
		perror("ctlsend: write");
		return 1;
	}
	while (have < sizeof(buf) - 1) {
		ssize_t n = read(fd, buf + have, sizeof(buf) - 1 - have);

		if (n <= 0)
			break;
		have += (size_t)n;
		if (memchr(buf, '\n', have))
			break;
	}
	buf[have] = 0;
	if (!have)
		return 1;
	fputs(buf, stdout);
	return 0;
}
