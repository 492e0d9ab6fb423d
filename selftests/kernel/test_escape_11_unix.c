// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 11: unix-domain sockets. unix_stream_connect and
 * unix_may_send (datagrams, on connect and on every unconnected send) check
 * the peer: a socket bound to a path needs the write class on that path —
 * the engine builds the path from the socket's own bound dentry, so links,
 * bind mounts and /proc aliases of the socket file lead back to it —, and
 * an abstract socket must have been made inside the run. Unnamed sockets
 * (socketpair) are the run's own.
 *
 * Finding (docs/bypass-catalogue.md, F6): path sockets are refused, but the
 * event and summary say file.write.denied (unix_peer → decide_path →
 * missing_reason); unix.connect.denied, the reason reasons.h has for this,
 * is never produced. The assertions ask for unix.connect.denied.
 */
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "test_escape_common.c"

/* A socket of type bound to name ("@x": abstract), listening if a stream; -1 on failure. */
static int listener(const char *name, int type)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	socklen_t len;
	int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);

	if (name[0] == '@') {
		size_t n = strlen(name);
		memcpy(sa.sun_path + 1, name + 1, n - 1);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", name);
		len = (socklen_t)sizeof(sa);
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, len) < 0 || (type == SOCK_STREAM && listen(fd, 64) < 0)) {
		ktest_log("listener %s: %s", name, strerror(errno));
		return -1;
	}
	if (name[0] != '@')
		chmod(name, 0777); /* connect needs write permission on the socket file: DAC lets nobody */
	return fd;
}

KTEST(escape_11_unix_sockets)
{
	static struct ktest_result r;
	struct esc_fix f;
	char spath[400], dpath[400], sabs[64], dabs[64], own[64], link[400];
	const char *const ro[] = {"--profile", "read", NULL};
	int fds[4];

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f), "fixture"))
		return;
	/* host services the run must not reach: an agent-like stream socket and a datagram socket, by path and abstract */
	snprintf(spath, sizeof(spath), "%s/agent.sock", f.open);
	snprintf(dpath, sizeof(dpath), "%s/dgram.sock", f.open);
	snprintf(sabs, sizeof(sabs), "@custode-ktest-%d-stream", (int)getpid());
	snprintf(dabs, sizeof(dabs), "@custode-ktest-%d-dgram", (int)getpid());
	snprintf(own, sizeof(own), "@custode-ktest-%d-own", (int)getpid());
	snprintf(link, sizeof(link), "%s/agent-link", f.d.ws);
	fds[0] = listener(spath, SOCK_STREAM);
	fds[1] = listener(dpath, SOCK_DGRAM);
	fds[2] = listener(sabs, SOCK_STREAM);
	fds[3] = listener(dabs, SOCK_DGRAM);
	if (!ASSERT_TRUE(fds[0] >= 0 && fds[1] >= 0 && fds[2] >= 0 && fds[3] >= 0, "listeners") ||
	    !ASSERT_EQ(symlink(spath, link), 0, "a symlink to the socket in the workspace"))
		return;
	ktest_events();

	esc_control(ESC_NOBODY, STEPS("unix-connect", spath), "ok\n", "connect to the path socket");
	esc_run(&r, ro, f.d.ws, STEPS("unix-connect", spath));
	esc_denied(&r, "EACCES\n", "unix_stream_connect", "unix.connect.denied", spath, "connect to a path socket");
	esc_control(ESC_NOBODY, STEPS("unix-connect", link), "ok\n", "connect through a symlink");
	esc_run(&r, ro, f.d.ws, STEPS("unix-connect", link));
	esc_denied(&r, "EACCES\n", "unix_stream_connect", "unix.connect.denied", spath, "connect through a workspace symlink");
	esc_control(ESC_NOBODY, STEPS("unix-connect", dpath, "dgram"), "ok\n", "datagram connect to the path socket");
	esc_run(&r, ro, f.d.ws, STEPS("unix-connect", dpath, "dgram"));
	esc_denied(&r, "EACCES\n", "unix_may_send", "unix.connect.denied", dpath, "datagram connect to a path socket");
	esc_control(ESC_NOBODY, STEPS("unix-send", dpath), "ok\n", "datagram to the path socket");
	esc_run(&r, ro, f.d.ws, STEPS("unix-send", dpath));
	esc_denied(&r, "EACCES\n", "unix_may_send", "unix.connect.denied", dpath, "datagram sent to a path socket");

	esc_control(ESC_NOBODY, STEPS("unix-connect", sabs), "ok\n", "connect to the abstract socket");
	esc_run(&r, ro, f.d.ws, STEPS("unix-connect", sabs));
	esc_denied(&r, "EACCES\n", "unix_stream_connect", "unix.abstract.denied", NULL, "connect to an abstract socket");
	esc_control(ESC_NOBODY, STEPS("unix-send", dabs), "ok\n", "datagram to the abstract socket");
	esc_run(&r, ro, f.d.ws, STEPS("unix-send", dabs));
	esc_denied(&r, "EACCES\n", "unix_may_send", "unix.abstract.denied", NULL, "datagram to an abstract socket");

	/* the run's own sockets work: abstract, and a path in its tmp */
	esc_run(&r, ro, f.d.ws, STEPS("unix-self", own));
	esc_clean(&r, "ok\n", "the run's own abstract socket");
	{
		const char *cmd[] = {"/bin/sh", "-c", "exec \"$0\" unix-self \"$TMPDIR/own.sock\"", ktest_helper("eprobe"), NULL};
		esc_run_cmd(&r, ro, f.d.ws, cmd);
		esc_clean(&r, "ok\n", "the run's own path socket in its tmp");
	}
	for (int i = 0; i < 4; i++)
		close(fds[i]);
}
