// SPDX-License-Identifier: Apache-2.0
/*
 * The control socket's protocol (userspace/daemon/control.c, control/client.c):
 * line framing (custode_control_take_line), error answers, and the server
 * itself — run in-process on a socket in a temporary directory with the
 * daemon's event loop in a thread (no BPF needed): malformed and non-object
 * lines, missing or wrong "cmd", ids echoed, oversized lines, pipelining,
 * NUL bytes, unknown filter keys, the bounds on what a client has not read
 * (backpressure, the hard cap, a replay that resumes, a follower's backlog),
 * the root-only peer check. The client side: answer lines over a
 * socketpair, and custode_control_call against a scripted server.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include <jansson.h>

#include "daemon/control.h"
#include "daemon/loop.h"
#include "daemon/stream.h"
#include "util/reasons.h"

/* From test_daemon_stream.c (the same binary): a stream (without the engine) with a history to replay. */
struct custode_stream *custode_test_stream_history(size_t n);
void custode_test_stream_publish(struct custode_stream *s, unsigned seq, const char *reason, size_t size);

/* ---- framing ---- */

Test(control_line, takes_lines_one_by_one)
{
	char buf[64];
	size_t len;
	char *line = NULL;

	memcpy(buf, "one\ntwo\n\nthree", 14);
	len = 14;
	cr_assert_eq(custode_control_take_line(buf, &len, 100, &line), 1);
	cr_expect_str_eq(line, "one");
	free(line);
	cr_expect_eq(len, 10);
	cr_expect_eq(memcmp(buf, "two\n\nthree", 10), 0, "the rest moved to the front");
	cr_assert_eq(custode_control_take_line(buf, &len, 100, &line), 1);
	cr_expect_str_eq(line, "two");
	free(line);
	cr_assert_eq(custode_control_take_line(buf, &len, 100, &line), 1);
	cr_expect_str_eq(line, "", "an empty line is a line");
	free(line);
	line = NULL;
	cr_expect_eq(custode_control_take_line(buf, &len, 100, &line), 0, "no newline yet");
	cr_expect_null(line);
	cr_expect_eq(len, 5);
	cr_expect_eq(memcmp(buf, "three", 5), 0);
	len = 0;
	cr_expect_eq(custode_control_take_line(buf, &len, 100, &line), 0);
}

Test(control_line, carriage_return_and_nul_kept)
{
	char buf[16] = "a\r\nb\0c\n";
	size_t len = 7;
	char *line;

	cr_assert_eq(custode_control_take_line(buf, &len, 100, &line), 1);
	cr_expect_str_eq(line, "a\r");
	free(line);
	cr_assert_eq(custode_control_take_line(buf, &len, 100, &line), 1);
	cr_expect_eq(memcmp(line, "b\0c", 4), 0);
	free(line);
	cr_expect_eq(len, 0);
}

Test(control_line, max_boundaries)
{
	char buf[32];
	size_t len;
	char *line;

	/* exactly max bytes before the newline: a line; one more: too long */
	memset(buf, 'x', sizeof(buf));
	buf[8] = '\n';
	len = 9;
	cr_assert_eq(custode_control_take_line(buf, &len, 8, &line), 1);
	cr_expect_eq(strlen(line), 8);
	free(line);
	memset(buf, 'x', sizeof(buf));
	buf[9] = '\n';
	len = 10;
	cr_expect_eq(custode_control_take_line(buf, &len, 8, &line), -E2BIG);
	/* without a newline: max bytes may still become a line, max + 1 cannot */
	len = 8;
	cr_expect_eq(custode_control_take_line(buf, &len, 8, &line), 0);
	len = 9;
	cr_expect_eq(custode_control_take_line(buf, &len, 8, &line), -E2BIG);
	/* a short line before an oversized one is still taken */
	memcpy(buf, "ok\nyyyyyyyyyyyy", 15);
	len = 15;
	cr_assert_eq(custode_control_take_line(buf, &len, 8, &line), 1);
	cr_expect_str_eq(line, "ok");
	free(line);
	cr_expect_eq(custode_control_take_line(buf, &len, 8, &line), -E2BIG);
}

Test(control_line, error_answer)
{
	struct custode_refusal why = {0};
	json_t *o;

	custode_refuse(&why, EPERM, CUSTODE_REASON_DAEMON_PEER, "peer uid %d", 1000);
	o = custode_control_error(&why);
	cr_assert_not_null(o);
	cr_expect(json_is_false(json_object_get(o, "ok")));
	cr_expect_str_eq(json_string_value(json_object_get(o, "reason")), "daemon.peer");
	cr_expect_str_eq(json_string_value(json_object_get(o, "detail")), "peer uid 1000");
	cr_expect_eq(json_object_size(o), 3);
	json_decref(o);
	why.reason = 9999;
	o = custode_control_error(&why);
	cr_expect_str_eq(json_string_value(json_object_get(o, "reason")), "unknown");
	json_decref(o);
}

/* ---- the server, in-process ---- */

static volatile sig_atomic_t stop_loop;
/* The server under test and its loop: server_start makes them, server_stop frees them. */
static struct custode_loop *loop;
static struct custode_control_server *server;
/* The stream "events" replays and follows: a test's, or an empty one server_start makes (and server_stop frees). */
static struct custode_stream *stream;
static bool stream_ours;
static pthread_t loop_thread;
static char sdir[64], spath[128];
static atomic_int handled;

static int wake(void *arg)
{
	(void)arg;
	return 0;
}

static void *loop_main(void *arg)
{
	(void)arg;
	custode_loop_run(loop, &stop_loop);
	return NULL;
}

static json_t *handler(void *ctx, const char *cmd, const json_t *req, int peer_pid, struct custode_refusal *why)
{
	(void)ctx;
	atomic_fetch_add(&handled, 1);
	if (!strcmp(cmd, "whoami")) /* the handler learns the peer's pid (the daemon's "admit" relies on it) */
		return json_pack("{s:i}", "peer_pid", peer_pid);
	if (!strcmp(cmd, "echo"))
		return json_pack("{s:O*}", "arg", json_object_get(req, "arg"));
	if (!strcmp(cmd, "big")) { /* an answer of "bytes" bytes */
		size_t n = (size_t)json_integer_value(json_object_get(req, "bytes"));
		char *text = malloc(n + 1);
		json_t *o;

		if (!text)
			return NULL;
		memset(text, 'b', n);
		text[n] = 0;
		o = json_pack("{s:s}", "arg", text);
		free(text);
		return o;
	}
	if (!strcmp(cmd, "privileged")) {
		custode_refuse(why, EPERM, CUSTODE_REASON_PRIVILEGE_REQUIRED, "not today");
		return NULL;
	}
	custode_refuse(why, EINVAL, CUSTODE_REASON_DAEMON_PROTOCOL, "unknown command \"%s\"", cmd);
	return NULL;
}

static void server_start(void)
{
	struct custode_refusal why = {0};

	snprintf(sdir, sizeof(sdir), "/tmp/custode-ctl-XXXXXX");
	cr_assert_not_null(mkdtemp(sdir));
	snprintf(spath, sizeof(spath), "%s/control.sock", sdir);
	signal(SIGPIPE, SIG_IGN); /* as the daemon does */
	cr_assert_eq(custode_loop_init(&loop), 0);
	if (!stream) {
		stream = custode_test_stream_history(0);
		stream_ours = true;
	}
	cr_assert_eq(custode_control_listen(loop, spath, stream, handler, NULL, &server, &why), 0, "%s", why.detail);
	cr_assert_geq(custode_loop_timer(loop, 5, wake, NULL), 0);
	stop_loop = 0;
	cr_assert_eq(pthread_create(&loop_thread, NULL, loop_main, NULL), 0);
}

/* Stop the loop thread (the server's state can be read after this). */
static void server_pause(void)
{
	stop_loop = 1;
	pthread_join(loop_thread, NULL);
}

static void server_resume(void)
{
	stop_loop = 0;
	cr_assert_eq(pthread_create(&loop_thread, NULL, loop_main, NULL), 0);
}

static void server_stop(void)
{
	if (!stop_loop)
		server_pause();
	custode_control_shutdown(server);
	server = NULL;
	custode_loop_fini(loop);
	loop = NULL;
	rmdir(sdir);
	if (stream_ours) {
		custode_stream_close(stream);
		stream = NULL;
		stream_ours = false;
	}
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("the control socket answers root peers only; run as root");
}

static int conn(void)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", spath);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "connect: %s", strerror(errno));
	return fd;
}

static void send_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		cr_assert_gt(w, 0, "send: %s", strerror(errno));
		p += w;
		len -= (size_t)w;
	}
}

static void send_str(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* A reader of answer lines on a raw socket, with a timeout. */
struct reader {
	int fd;
	char buf[1 << 16];
	size_t len;
	bool eof;
};

/* The next line (malloc'd), or NULL at the end of the stream / after 5 s. */
static char *read_line(struct reader *r)
{
	for (;;) {
		char *nl = memchr(r->buf, '\n', r->len), *line;
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		ssize_t n;

		if (nl) {
			size_t k = (size_t)(nl - r->buf);

			line = strndup(r->buf, k);
			memmove(r->buf, nl + 1, r->len - k - 1);
			r->len -= k + 1;
			return line;
		}
		if (r->eof || r->len == sizeof(r->buf))
			return NULL;
		if (poll(&p, 1, 5000) <= 0)
			return NULL;
		n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, 0);
		if (n <= 0) {
			r->eof = true;
			continue;
		}
		r->len += (size_t)n;
	}
}

static json_t *answer(struct reader *r)
{
	char *line = read_line(r);
	json_t *o;

	cr_assert_not_null(line, "no answer line");
	o = json_loads(line, JSON_REJECT_DUPLICATES, NULL);
	cr_assert(json_is_object(o), "answer is not a JSON object: %s", line);
	free(line);
	return o;
}

/* The stream ends (the server closed the connection) with no further line. */
static void expect_closed(struct reader *r)
{
	char *line = read_line(r);

	cr_expect_null(line, "unexpected line: %s", line ? line : "");
	free(line);
	cr_expect(r->eof, "the server closes the connection");
}

static const char *str(const json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));
	return v ? v : "";
}

static void expect_refusal(struct reader *r, const char *reason, const char *detail_part)
{
	json_t *o = answer(r);

	cr_expect(json_is_false(json_object_get(o, "ok")), "refused");
	cr_expect_str_eq(str(o, "reason"), reason);
	if (detail_part)
		cr_expect(strstr(str(o, "detail"), detail_part) != NULL, "detail \"%s\" lacks \"%s\"", str(o, "detail"),
			  detail_part);
	json_decref(o);
}

Test(control_server, handler_gets_the_peers_pid)
{
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;
	pid_t child;
	int st;

	need_root();
	server_start();
	/* a client in another process: its pid, not the server's */
	child = fork();
	cr_assert_geq(child, 0);
	if (!child) {
		r->fd = conn();
		send_str(r->fd, "{\"cmd\": \"whoami\"}\n");
		o = answer(r);
		_exit(json_integer_value(json_object_get(o, "peer_pid")) == getpid() ? 0 : 1);
	}
	cr_assert_eq(waitpid(child, &st, 0), child);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the handler saw the client's pid");
	r->fd = conn();
	send_str(r->fd, "{\"cmd\": \"whoami\"}\n");
	o = answer(r);
	cr_expect_eq(json_integer_value(json_object_get(o, "peer_pid")), getpid());
	json_decref(o);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, ping_answers_pid_version_and_id)
{
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	send_str(r->fd, "{\"cmd\": \"ping\", \"id\": 7}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	cr_expect_eq(json_integer_value(json_object_get(o, "pid")), getpid());
	cr_expect_str_eq(str(o, "version"), CUSTODE_VERSION);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 7);
	json_decref(o);
	/* ids of any JSON type are echoed as they were; no id, no "id" */
	send_str(r->fd, "{\"id\": {\"k\": [1, \"x\"]}, \"cmd\": \"ping\"}\n{\"cmd\": \"ping\"}\n");
	o = answer(r);
	{
		json_t *want = json_loads("{\"k\": [1, \"x\"]}", 0, NULL);

		cr_expect(json_equal(json_object_get(o, "id"), want));
		json_decref(want);
	}
	json_decref(o);
	o = answer(r);
	cr_expect_null(json_object_get(o, "id"), "the previous request's id is not reused");
	json_decref(o);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, malformed_lines_refused_connection_kept)
{
	static const char *const bad[] = {
		"{\"cmd\": \"ping\"",         /* truncated */
		"cmd=ping",                   /* not JSON */
		"",                           /* empty */
		"[\"ping\"]",                 /* not an object */
		"\"ping\"",
		"null",
		"42",
		"{\"cmd\": \"ping\"} {}",     /* two values */
		"{\"cmd\": \"ping\", \"cmd\": \"ping\"}", /* duplicate member */
	};
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_str(r->fd, bad[i]);
		send_str(r->fd, "\n");
		expect_refusal(r, "daemon.protocol", "one JSON object per line");
	}
	/* still answering */
	send_str(r->fd, "{\"cmd\": \"ping\", \"id\": \"after\"}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	cr_expect_str_eq(str(o, "id"), "after");
	json_decref(o);
	cr_expect_eq(atomic_load(&handled), 0, "nothing malformed reached the handler");
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, missing_or_wrong_cmd)
{
	static const char *const bad[] = {"{}", "{\"id\": 1}", "{\"cmd\": 5}", "{\"cmd\": null}", "{\"cmd\": [\"ping\"]}",
					  "{\"Cmd\": \"ping\"}"};
	struct reader *r = calloc(1, sizeof(*r));

	need_root();
	server_start();
	r->fd = conn();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_str(r->fd, bad[i]);
		send_str(r->fd, "\n");
		expect_refusal(r, "daemon.protocol", "no \"cmd\"");
	}
	cr_expect_eq(atomic_load(&handled), 0);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, other_commands_go_to_the_handler)
{
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	/* an answer: "ok": true and the id added to the handler's fields */
	send_str(r->fd, "{\"cmd\": \"echo\", \"arg\": [1, 2], \"id\": 3}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	cr_expect_eq(json_array_size(json_object_get(o, "arg")), 2);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 3);
	json_decref(o);
	/* a refusal: its reason and detail, and the id */
	send_str(r->fd, "{\"cmd\": \"privileged\", \"id\": 4}\n");
	o = answer(r);
	cr_expect(json_is_false(json_object_get(o, "ok")));
	cr_expect_str_eq(str(o, "reason"), "privilege.required");
	cr_expect_str_eq(str(o, "detail"), "not today");
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 4, "errors carry the id too");
	json_decref(o);
	/* an unknown command: the handler's refusal */
	send_str(r->fd, "{\"cmd\": \"frobnicate\"}\n");
	expect_refusal(r, "daemon.protocol", "unknown command \"frobnicate\"");
	cr_expect_eq(atomic_load(&handled), 3);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, pipelined_and_split_requests)
{
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	/* three requests in one write: three answers, in order */
	send_str(r->fd, "{\"cmd\":\"ping\",\"id\":1}\n{\"cmd\":\"echo\",\"id\":2}\r\n{\"cmd\":\"ping\",\"id\":3}\n");
	for (int i = 1; i <= 3; i++) {
		o = answer(r);
		cr_expect(json_is_true(json_object_get(o, "ok")));
		cr_expect_eq(json_integer_value(json_object_get(o, "id")), i);
		json_decref(o);
	}
	/* one request in pieces */
	send_str(r->fd, "{\"cmd\":");
	usleep(50000);
	send_str(r->fd, "\"ping\",");
	usleep(50000);
	send_str(r->fd, "\"id\":9}\n");
	o = answer(r);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 9);
	json_decref(o);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, line_of_exactly_the_limit_accepted)
{
	struct reader *r = calloc(1, sizeof(*r));
	size_t n = CUSTODE_CONTROL_MAX_LINE;
	char *big = malloc(n + 1);
	json_t *o;

	need_root();
	cr_assert_not_null(big);
	memset(big, ' ', n);
	memcpy(big, "{\"cmd\":\"ping\",\"id\":1}", 21);
	big[n] = '\n';
	server_start();
	r->fd = conn();
	send_all(r->fd, big, n + 1);
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	json_decref(o);
	free(big);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, oversized_line_refused_and_closed)
{
	struct reader *r = calloc(1, sizeof(*r));
	size_t n = CUSTODE_CONTROL_MAX_LINE + 1;
	char *big = malloc(n + 1);
	json_t *o;

	need_root();
	cr_assert_not_null(big);
	memset(big, ' ', n);
	memcpy(big, "{\"cmd\":\"echo\"}", 14);
	big[n] = '\n';
	server_start();
	r->fd = conn();
	/* a good request first, then one byte too many */
	send_str(r->fd, "{\"cmd\":\"ping\",\"id\":1}\n");
	send_all(r->fd, big, n + 1);
	o = answer(r);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 1);
	json_decref(o);
	expect_refusal(r, "daemon.protocol", "longer than");
	expect_closed(r);
	cr_expect_eq(atomic_load(&handled), 0, "the oversized request was not handled");
	free(big);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, endless_line_without_newline_refused)
{
	struct reader *r = calloc(1, sizeof(*r));
	char chunk[4096];
	size_t sent = 0;

	need_root();
	memset(chunk, 'a', sizeof(chunk));
	server_start();
	r->fd = conn();
	/* the server must refuse before it has buffered much more than the limit */
	while (sent < 4 * CUSTODE_CONTROL_MAX_LINE) {
		ssize_t w = send(r->fd, chunk, sizeof(chunk), MSG_NOSIGNAL);

		if (w <= 0)
			break; /* the server closed: fine */
		sent += (size_t)w;
	}
	expect_refusal(r, "daemon.protocol", "longer than");
	expect_closed(r);
	close(r->fd);
	free(r);
	server_stop();
}

Test(control_server, answers_delivered_after_half_close)
{
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	send_str(r->fd, "{\"cmd\":\"ping\",\"id\":1}\n{\"cmd\":\"echo\",\"id\":2}\n");
	shutdown(r->fd, SHUT_WR);
	o = answer(r);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 1);
	json_decref(o);
	o = answer(r);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 2);
	json_decref(o);
	expect_closed(r);
	close(r->fd);
	free(r);
	server_stop();
}

static double loop_cpu_seconds(void)
{
	clockid_t cid;
	struct timespec ts;

	cr_assert_eq(pthread_getcpuclockid(loop_thread, &cid), 0);
	cr_assert_eq(clock_gettime(cid, &ts), 0);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * BUG (control.c, client_watch): a client that half-closed while answers
 * were still queued for it (it does not read them yet) kept EPOLLRDHUP in
 * the level-triggered interest set: epoll reported it on every turn and the
 * daemon's loop spun at full CPU until the client read or left.
 */
Test(control_server, half_closed_slow_reader_does_not_spin)
{
	struct reader *r = calloc(1, sizeof(*r));
	size_t n = 60000;
	char *req = malloc(n + 64);
	double cpu0, cpu1;
	json_t *o;
	int got = 0;

	need_root();
	cr_assert_not_null(req);
	/*
	 * an echo of 60 KB, 15 times: 900 KB of answers, far more than the
	 * socket holds (and less than the server queues before it stops reading
	 * a client that does not read: control_server/client_that_never_reads_is_not_read_either)
	 */
	memcpy(req, "{\"cmd\":\"echo\",\"arg\":\"", 21);
	memset(req + 21, 'q', n);
	strcpy(req + 21 + n, "\"}\n");
	server_start();
	r->fd = conn();
	for (int i = 0; i < 15; i++)
		send_str(r->fd, req);
	shutdown(r->fd, SHUT_WR);
	/*
	 * Once the server has read and answered everything (what it could not
	 * send is queued), it has nothing to do: some 200 ms window within 3 s
	 * must be quiet. A spinning loop burns each window whole.
	 */
	for (int w = 0; w < 15; w++) {
		cpu0 = loop_cpu_seconds();
		usleep(200000);
		cpu1 = loop_cpu_seconds();
		if (cpu1 - cpu0 < 0.05)
			break;
	}
	cr_expect_lt(cpu1 - cpu0, 0.05, "the loop used %.2f s of CPU in 0.2 s while waiting for a slow reader", cpu1 - cpu0);
	/* every answer still arrives, then the end */
	while ((o = answer(r)) && got < 15) {
		cr_expect(json_is_true(json_object_get(o, "ok")));
		json_decref(o);
		if (++got == 15)
			break;
	}
	cr_expect_eq(got, 15);
	expect_closed(r);
	free(req);
	close(r->fd);
	free(r);
	server_stop();
}

/* Pause the server once it counts these clients and followers (within 3 s); false if it never does. */
static bool pause_when_counts(size_t want_clients, size_t want_followers)
{
	size_t clients = 0, followers = 0;

	for (int i = 0; i < 60; i++) {
		usleep(50000);
		server_pause();
		custode_control_counts(server, &clients, &followers);
		if (clients == want_clients && followers == want_followers)
			return true;
		stop_loop = 0;
		cr_assert_eq(pthread_create(&loop_thread, NULL, loop_main, NULL), 0);
	}
	server_pause();
	cr_expect_eq(clients, want_clients);
	cr_expect_eq(followers, want_followers);
	return false;
}

/* A client that sends requests as fast as it can and reads nothing (in a thread: it is held back in send). */
struct pipeliner {
	int fd, n;
	size_t size;
	atomic_int sent;
};

static void *pipeline(void *arg)
{
	struct pipeliner *p = arg;
	char *req = malloc(p->size + 64);

	if (!req)
		return NULL;
	for (int i = 0; i < p->n; i++) {
		int k = snprintf(req, 64, "{\"cmd\":\"echo\",\"id\":%d,\"arg\":\"", i);
		size_t len;

		memset(req + k, 'q', p->size);
		len = (size_t)k + p->size;
		memcpy(req + len, "\"}\n", 3);
		len += 3;
		for (size_t off = 0; off < len;) {
			ssize_t w = send(p->fd, req + off, len - off, MSG_NOSIGNAL);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				free(req);
				return NULL;
			}
			off += (size_t)w;
		}
		atomic_fetch_add(&p->sent, 1);
	}
	free(req);
	return NULL;
}

/* Wait until n stops moving (300 ms unchanged, 5 s at most); its value then. */
static int settled(atomic_int *n)
{
	int last = -1, same = 0;

	for (int i = 0; i < 100 && same < 6; i++) {
		int now = atomic_load(n);

		same = now == last ? same + 1 : 0;
		last = now;
		usleep(50000);
	}
	return last;
}

/*
 * BUG (control.c, client_queue): answers for a client were queued without
 * any limit. A client that sent requests and never read made the daemon
 * handle every one and keep every answer: 200 echoes of 60 KB here, 12 MB,
 * and as much more as it cared to send. Now the server stops reading and
 * handling its requests while 1 MiB of answers waits (the client is held
 * back in send), and goes on as it reads: every answer still arrives, in
 * order.
 */
Test(control_server, client_that_never_reads_is_not_read_either)
{
	struct pipeliner p = {.n = 200, .size = 60000};
	struct reader *r = calloc(1, sizeof(*r));
	pthread_t th;
	int h;

	need_root();
	server_start();
	p.fd = r->fd = conn();
	cr_assert_eq(pthread_create(&th, NULL, pipeline, &p), 0);
	h = settled(&handled);
	cr_expect_lt(h, 40, "requests handled for a client that reads nothing: %d (about 1 MiB of answers is 17)", h);
	cr_expect_lt(atomic_load(&p.sent), p.n, "the client is held back");
	/* it reads: everything comes, in order */
	for (int i = 0; i < p.n; i++) {
		json_t *o = answer(r);

		cr_assert_eq(json_integer_value(json_object_get(o, "id")), i);
		cr_expect_eq(strlen(str(o, "arg")), p.size);
		json_decref(o);
	}
	pthread_join(th, NULL);
	cr_expect_eq(atomic_load(&handled), p.n);
	close(r->fd);
	free(r);
	server_stop();
}

/*
 * The hard cap: an answer that would take a client's queue past 8 MiB (the
 * CLI reads lines of 4 MiB at most) is not queued; the client is closed and
 * counted. Smaller answers, even of megabytes, go as usual.
 */
Test(control_server, answer_past_the_hard_cap_disconnects_and_counts)
{
	struct custode_control_client c;
	struct custode_control_stats st;
	json_t *o;
	int err;

	need_root();
	server_start();
	memset(&c, 0, sizeof(c));
	c.fd = conn();
	send_str(c.fd, "{\"cmd\":\"big\",\"bytes\":3000000,\"id\":1}\n");
	o = custode_control_recv(&c, 5000, &err);
	cr_assert_not_null(o, "err %d", err);
	cr_expect_eq(strlen(str(o, "arg")), 3000000);
	json_decref(o);
	send_str(c.fd, "{\"cmd\":\"big\",\"bytes\":9000000,\"id\":2}\n");
	o = custode_control_recv(&c, 5000, &err);
	cr_expect_null(o);
	cr_expect_eq(err, -EPIPE, "closed without the answer (err %d)", err);
	custode_control_close(&c);
	cr_assert(pause_when_counts(0, 0));
	custode_control_stats(server, &st);
	cr_expect_eq(st.overflow_disconnects, 1);
	server_stop();
}

/*
 * BUG (control.c, handle_line): a request line was parsed only up to an
 * embedded NUL byte: "{...}\0anything" was taken for the object before it.
 */
Test(control_server, nul_in_a_request_refused)
{
	static const char l0[] = "{\"cmd\":\"ping\"}\0junk\n", l1[] = "\0\n", l2[] = "{\"cmd\":\"echo\",\"arg\":\"a\0b\"}\n";
	static const char *const lines[] = {l0, l1, l2};
	static const size_t lens[] = {sizeof(l0) - 1, sizeof(l1) - 1, sizeof(l2) - 1};
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		cr_assert_eq(lines[i][lens[i] - 1], '\n');
		send_all(r->fd, lines[i], lens[i]);
		expect_refusal(r, "daemon.protocol", "NUL");
	}
	cr_expect_eq(atomic_load(&handled), 0);
	send_str(r->fd, "{\"cmd\":\"ping\",\"id\":3}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")), "the connection goes on");
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 3);
	json_decref(o);
	close(r->fd);
	free(r);
	server_stop();
}

/*
 * BUG (control.c, cmd_events): keys of "filter" other than run, reason and
 * since_ns were ignored: {"rn": ID} (a typo) meant every record. The filter
 * the CLI sends (custode_event_filter_to_json) is accepted.
 */
Test(control_server, events_filter_unknown_keys_refused)
{
	static const char *const bad[] = {
		"{\"cmd\":\"events\",\"filter\":{\"rn\":\"0000000000000001\"}}\n",
		"{\"cmd\":\"events\",\"filter\":{\"reason\":\"file.*\",\"since\":5}}\n",
		"{\"cmd\":\"events\",\"filter\":{\"Run\":\"0000000000000001\"}}\n",
		"{\"cmd\":\"events\",\"filter\":{\"run_id\":\"0000000000000001\"}}\n",
	};
	struct custode_event_filter f;
	struct reader *r = calloc(1, sizeof(*r));
	json_t *o, *req;
	char *text;

	need_root();
	server_start();
	r->fd = conn();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		send_str(r->fd, bad[i]);
		expect_refusal(r, "daemon.protocol", "unknown key");
	}
	/* what custode events --run --reason --since sends */
	memset(&f, 0, sizeof(f));
	f.has_run = true;
	f.run_id = 0x1234;
	snprintf(f.reason, sizeof(f.reason), "net.*");
	f.has_since = true;
	f.since_wall_ns = 1;
	req = json_pack("{s:s, s:b, s:o, s:i}", "cmd", "events", "follow", 0, "filter", custode_event_filter_to_json(&f),
			"id", 9);
	cr_assert_eq(json_object_size(json_object_get(req, "filter")), 3);
	text = json_dumps(req, JSON_COMPACT);
	send_str(r->fd, text);
	send_str(r->fd, "\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "end")), "the CLI's filter is accepted");
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 9);
	json_decref(o);
	free(text);
	json_decref(req);
	/* an empty filter is no filter */
	send_str(r->fd, "{\"cmd\":\"events\",\"filter\":{}}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "end")));
	json_decref(o);
	close(r->fd);
	free(r);
	server_stop();
}

/* Read an events answer to its end: records (their seqs in order), {"lost": N} lines, then the "ok" line. */
static json_t *read_events(struct reader *r, int *events, int *last_seq, long long *lost, bool *in_order)
{
	for (;;) {
		json_t *o = answer(r), *ev;

		if ((ev = json_object_get(o, "event"))) {
			int seq = (int)json_integer_value(json_object_get(ev, "seq"));

			if (seq <= *last_seq)
				*in_order = false;
			*last_seq = seq;
			(*events)++;
		} else if (json_object_get(o, "lost")) {
			*lost += json_integer_value(json_object_get(o, "lost"));
		} else {
			return o;
		}
		json_decref(o);
	}
}

/*
 * BUG (control.c, cmd_events): the whole history was copied into the
 * client's queue at once — 4 MB here, and as much for each client that
 * asked and did not read. The replay now goes as far as the queue allows
 * and resumes as the client reads; records that left the history before it
 * got to them are counted ({"lost": N}), as for a follower.
 */
Test(control_server, events_replay_goes_as_the_client_reads)
{
	struct reader *r = calloc(1, sizeof(*r));
	int events = 0, last = -1;
	long long lost = 0;
	bool in_order = true;
	json_t *o;

	need_root();
	stream = custode_test_stream_history(2000);
	for (unsigned i = 0; i < 2000; i++)
		custode_test_stream_publish(stream, i, NULL, 2000);
	server_start();
	r->fd = conn();
	send_str(r->fd, "{\"cmd\":\"events\",\"id\":5}\n");
	usleep(300000);
	/* the history turns over before the client reads */
	server_pause();
	for (unsigned i = 2000; i < 4000; i++)
		custode_test_stream_publish(stream, i, NULL, 2000);
	server_resume();
	o = read_events(r, &events, &last, &lost, &in_order);
	cr_expect(json_is_true(json_object_get(o, "end")));
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 5);
	cr_expect_eq(json_integer_value(json_object_get(o, "count")), events);
	json_decref(o);
	cr_expect(in_order, "oldest first, none twice");
	cr_expect_eq(last, 3999, "up to the newest");
	cr_expect_gt(lost, 0, "the records it had no room for were not copied for it");
	cr_expect_lt(events, 4000 - 1000);
	cr_expect_eq(events + lost, 4000, "%d records + %lld lost", events, lost);
	close(r->fd);
	free(r);
	server_stop();
	custode_stream_close(stream);
}

Test(control_server, events_replay_and_follow)
{
	struct reader *r = calloc(1, sizeof(*r));
	size_t clients, followers;
	json_t *o;

	need_root();
	server_start();
	r->fd = conn();
	/* the history is empty here: the end of the replay, nothing before it */
	send_str(r->fd, "{\"cmd\":\"events\",\"id\":1,\"filter\":{\"reason\":\"file.*\",\"since_ns\":0}}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	cr_expect(json_is_true(json_object_get(o, "end")));
	cr_expect_eq(json_integer_value(json_object_get(o, "count")), 0);
	cr_expect_eq(json_integer_value(json_object_get(o, "id")), 1);
	json_decref(o);
	/* filters that are not filters */
	send_str(r->fd, "{\"cmd\":\"events\",\"filter\":5}\n");
	expect_refusal(r, "daemon.protocol", "\"filter\"");
	send_str(r->fd, "{\"cmd\":\"events\",\"filter\":{\"reason\":\"no.such.*\"}}\n");
	expect_refusal(r, "daemon.protocol", "\"filter\"");
	send_str(r->fd, "{\"cmd\":\"events\",\"filter\":{\"run\":\"xyz\"}}\n");
	expect_refusal(r, "daemon.protocol", "\"filter\"");
	/* following: the connection is the stream's now */
	send_str(r->fd, "{\"cmd\":\"events\",\"follow\":true}\n");
	usleep(50000);
	send_str(r->fd, "{\"cmd\":\"ping\"}\n");
	expect_refusal(r, "daemon.protocol", "follows the stream");
	server_pause();
	custode_control_counts(server, &clients, &followers);
	cr_expect_eq(clients, 1);
	cr_expect_eq(followers, 1);
	/* a follower that leaves is forgotten */
	stop_loop = 0;
	cr_assert_eq(pthread_create(&loop_thread, NULL, loop_main, NULL), 0);
	close(r->fd);
	cr_expect(pause_when_counts(0, 0), "the follower's connection is closed and unfollowed");
	free(r);
	server_stop();
}

/*
 * A follower that reads nothing: its backlog stops at 8 MiB, what comes
 * after is skipped for it and counted, and publishing never waits for it.
 * When it reads, it is told how many it lost, before the next record.
 */
Test(control_server, follower_that_never_reads_is_bounded_and_never_blocks)
{
	struct custode_control_stats st;
	struct reader *r = calloc(1, sizeof(*r));
	struct timespec t0, t1;
	int events = 0, last = -1;
	long long lost = 0;
	bool in_order = true;

	need_root();
	stream = custode_test_stream_history(16);
	server_start();
	r->fd = conn();
	send_str(r->fd, "{\"cmd\":\"events\",\"follow\":true}\n");
	cr_assert(pause_when_counts(1, 1));
	alarm(60); /* publishing that waits for the follower would hang here */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0; i < 6000; i++) /* 12 MB */
		custode_test_stream_publish(stream, i, NULL, 2000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_expect_lt((double)(t1.tv_sec - t0.tv_sec), 20.0);
	custode_control_stats(server, &st);
	cr_expect_gt(st.follower_lost, 0);
	server_resume();
	/* it reads what was kept for it, until nothing more comes */
	for (;;) {
		struct pollfd pf = {.fd = r->fd, .events = POLLIN};
		json_t *o, *ev;

		if (!memchr(r->buf, '\n', r->len) && poll(&pf, 1, 300) == 0)
			break;
		o = answer(r);
		if ((ev = json_object_get(o, "event"))) {
			int seq = (int)json_integer_value(json_object_get(ev, "seq"));

			in_order &= seq > last;
			last = seq;
			events++;
		} else {
			lost += json_integer_value(json_object_get(o, "lost"));
		}
		json_decref(o);
	}
	/* the next record brings the count of what it lost, first */
	server_pause();
	custode_test_stream_publish(stream, 6000, NULL, 100);
	server_resume();
	for (;;) {
		json_t *o = answer(r), *ev = json_object_get(o, "event");
		int seq = (int)json_integer_value(json_object_get(ev, "seq"));

		if (!ev) {
			cr_expect_gt(json_integer_value(json_object_get(o, "lost")), 0);
			lost += json_integer_value(json_object_get(o, "lost"));
		}
		json_decref(o);
		if (ev && seq == 6000)
			break;
		if (ev) {
			in_order &= seq > last;
			last = seq;
			events++;
		}
	}
	cr_expect(in_order);
	cr_expect_lt(events, 6000);
	cr_expect_eq(events + lost, 6000, "%d records + %lld lost", events, lost);
	server_pause();
	custode_control_stats(server, &st);
	cr_expect_eq(st.follower_lost, (uint64_t)lost);
	close(r->fd);
	free(r);
	server_stop();
	custode_stream_close(stream);
}

Test(control_server, too_many_clients)
{
	struct reader *r = calloc(1, sizeof(*r));
	int fds[64];
	json_t *o;

	need_root();
	server_start();
	for (int i = 0; i < 64; i++)
		fds[i] = conn();
	/* all 64 are served */
	send_str(fds[63], "{\"cmd\":\"ping\"}\n");
	r->fd = fds[63];
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	json_decref(o);
	memset(r, 0, sizeof(*r));
	/* the 65th is told and closed */
	r->fd = conn();
	expect_refusal(r, "daemon.protocol", "too many clients");
	expect_closed(r);
	close(r->fd);
	/* room again once one leaves */
	close(fds[0]);
	cr_assert(pause_when_counts(63, 0));
	stop_loop = 0;
	cr_assert_eq(pthread_create(&loop_thread, NULL, loop_main, NULL), 0);
	memset(r, 0, sizeof(*r));
	r->fd = conn();
	send_str(r->fd, "{\"cmd\":\"ping\"}\n");
	o = answer(r);
	cr_expect(json_is_true(json_object_get(o, "ok")));
	json_decref(o);
	close(r->fd);
	for (int i = 1; i < 64; i++)
		close(fds[i]);
	free(r);
	server_stop();
}

/*
 * The peer check: a peer whose SO_PEERCRED uid is not 0 is told so and
 * closed, and what it sent is never handled — even if the socket's mode let
 * it connect. As root, a child that dropped to nobody is that peer; as
 * anyone else, this process is.
 */
Test(control_server, non_root_peer_refused)
{
	struct reader *r = calloc(1, sizeof(*r));
	int status;
	pid_t pid;

	server_start();
	if (geteuid() != 0) {
		r->fd = conn();
		(void)!send(r->fd, "{\"cmd\":\"echo\"}\n", 15, MSG_NOSIGNAL); /* may be refused before it is sent */
		expect_refusal(r, "daemon.peer", "root only");
		expect_closed(r);
		close(r->fd);
	} else {
		/* the directory (0700) and the socket (0600) keep others out; open both to test the check behind them */
		cr_assert_eq(chmod(sdir, 0755), 0);
		cr_assert_eq(chmod(spath, 0666), 0);
		pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0) {
			struct sockaddr_un sa = {.sun_family = AF_UNIX};
			char buf[4096];
			size_t len = 0;
			ssize_t n;
			int fd;

			if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
				_exit(10);
			fd = socket(AF_UNIX, SOCK_STREAM, 0);
			snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", spath);
			if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
				_exit(11);
			/* may fail: the server can have refused and closed already, which is right too */
			(void)!write(fd, "{\"cmd\":\"echo\"}\n{\"cmd\":\"ping\"}\n", 30);
			alarm(10);
			while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
				len += (size_t)n;
			buf[len] = 0;
			/* one line, the refusal, then the end */
			if (!strstr(buf, "\"reason\":\"daemon.peer\"") || strchr(buf, '\n') != buf + len - 1)
				_exit(13);
			_exit(0);
		}
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
	}
	cr_expect_eq(atomic_load(&handled), 0, "a refused peer's request is never handled");
	free(r);
	server_stop();
}

/* ---- the client side ---- */

static void client_on(struct custode_control_client *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->fd = fd;
}

Test(control_client, recv_lines)
{
	struct custode_control_client c;
	int sv[2], err;
	json_t *o;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	client_on(&c, sv[0]);
	send_str(sv[1], "{\"a\":1}\n{\"b\":2}\n{\"c\":");
	o = custode_control_recv(&c, 1000, &err);
	cr_assert_not_null(o, "err %d", err);
	cr_expect_eq(json_integer_value(json_object_get(o, "a")), 1);
	json_decref(o);
	o = custode_control_recv(&c, 1000, &err);
	cr_assert_not_null(o);
	cr_expect_eq(json_integer_value(json_object_get(o, "b")), 2);
	json_decref(o);
	/* half a line: a timeout, and the half is kept */
	o = custode_control_recv(&c, 50, &err);
	cr_expect_null(o);
	cr_expect_eq(err, -ETIMEDOUT);
	send_str(sv[1], "3}\n");
	o = custode_control_recv(&c, 1000, &err);
	cr_assert_not_null(o);
	cr_expect_eq(json_integer_value(json_object_get(o, "c")), 3);
	json_decref(o);
	/* lines that are not objects */
	send_str(sv[1], "[1]\n{\n\n{\"d\":4}\n");
	for (int i = 0; i < 3; i++) {
		o = custode_control_recv(&c, 1000, &err);
		cr_expect_null(o);
		cr_expect_eq(err, -EPROTO);
	}
	o = custode_control_recv(&c, 1000, &err);
	cr_assert_not_null(o, "the stream goes on after a bad line");
	json_decref(o);
	/* the end */
	close(sv[1]);
	o = custode_control_recv(&c, 1000, &err);
	cr_expect_null(o);
	cr_expect_eq(err, -EPIPE);
	custode_control_close(&c);
	cr_expect_eq(c.fd, -1);
	cr_expect_null(c.buf);
}

struct flood {
	int fd;
	size_t n;
};

static void *flood(void *arg)
{
	struct flood *f = arg;
	char chunk[65536];

	memset(chunk, 'z', sizeof(chunk));
	for (size_t sent = 0; sent < f->n;) {
		ssize_t w = send(f->fd, chunk, sizeof(chunk) < f->n - sent ? sizeof(chunk) : f->n - sent, MSG_NOSIGNAL);

		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	return NULL;
}

Test(control_client, recv_oversized_answer_refused)
{
	struct custode_control_client c;
	struct flood f;
	pthread_t th;
	int sv[2], err;
	json_t *o;

	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	client_on(&c, sv[0]);
	f.fd = sv[1];
	f.n = (size_t)CUSTODE_CONTROL_MAX_LINE * 64 + 65536 * 4;
	cr_assert_eq(pthread_create(&th, NULL, flood, &f), 0);
	o = custode_control_recv(&c, 10000, &err);
	cr_expect_null(o);
	cr_expect_eq(err, -E2BIG);
	cr_expect_lt(c.cap, (size_t)CUSTODE_CONTROL_MAX_LINE * 64 * 4, "bounded buffer (%zu)", c.cap);
	custode_control_close(&c); /* the writer sees the end */
	pthread_join(th, NULL);
	close(sv[1]);
}

Test(control_client, send_one_line)
{
	struct custode_control_client c;
	json_t *req = json_pack("{s:s, s:i}", "cmd", "ping", "id", 5);
	char buf[128];
	ssize_t n;
	int sv[2];

	signal(SIGPIPE, SIG_DFL); /* send must not raise it */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	client_on(&c, sv[0]);
	cr_assert_eq(custode_control_send(&c, req), 0);
	n = read(sv[1], buf, sizeof(buf) - 1);
	cr_assert_gt(n, 0);
	buf[n] = 0;
	cr_expect_str_eq(buf, "{\"cmd\":\"ping\",\"id\":5}\n");
	close(sv[1]);
	cr_expect_eq(custode_control_send(&c, req), -EPIPE, "a closed peer: an error, not SIGPIPE");
	json_decref(req);
	custode_control_close(&c);
}

Test(control_client, connect_without_daemon)
{
	struct custode_control_client c;
	struct custode_refusal why = {0};
	char longp[200];

	setenv("CUSTODE_CONTROL_SOCKET", "/nonexistent-custode/control.sock", 1);
	cr_expect_eq(custode_control_connect(&c, &why), -ENOENT);
	cr_expect_eq(why.reason, CUSTODE_REASON_DAEMON_NOT_RUNNING);
	cr_expect_eq(c.fd, -1);
	memset(longp, 'a', sizeof(longp) - 1);
	longp[0] = '/';
	longp[sizeof(longp) - 1] = 0;
	setenv("CUSTODE_CONTROL_SOCKET", longp, 1);
	cr_expect_eq(custode_control_connect(&c, &why), -ENAMETOOLONG);
}

/* A scripted daemon: accepts one connection, reads one line, writes `reply` (NULL: close; "": stay silent). */
struct script {
	int lfd;
	const char *reply;
	char got[512];
};

static void *script_main(void *arg)
{
	struct script *s = arg;
	int fd = accept(s->lfd, NULL, NULL);
	size_t len = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	while (len < sizeof(s->got) - 1 && (n = read(fd, s->got + len, 1)) == 1 && s->got[len] != '\n')
		len++;
	s->got[len] = 0;
	if (s->reply && *s->reply)
		(void)!write(fd, s->reply, strlen(s->reply));
	if (s->reply && !*s->reply)
		usleep(300000);
	close(fd);
	return NULL;
}

static int call_scripted(const char *reply, json_t **resp, struct custode_refusal *why, int timeout_ms, char *got)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	char dir[] = "/tmp/custode-cli-XXXXXX";
	struct script s = {.reply = reply};
	json_t *req = json_pack("{s:s}", "cmd", "runs");
	pthread_t th;
	int r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/s", dir);
	s.lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	cr_assert_eq(bind(s.lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(listen(s.lfd, 1), 0);
	setenv("CUSTODE_CONTROL_SOCKET", sa.sun_path, 1);
	cr_assert_eq(pthread_create(&th, NULL, script_main, &s), 0);
	*resp = NULL;
	r = custode_control_call(req, resp, timeout_ms, why);
	pthread_join(th, NULL);
	if (got)
		snprintf(got, 512, "%s", s.got);
	close(s.lfd);
	unlink(sa.sun_path);
	rmdir(dir);
	json_decref(req);
	return r;
}

Test(control_client, call_answers_and_refusals)
{
	struct custode_refusal why;
	json_t *resp;
	char got[512];

	signal(SIGPIPE, SIG_IGN);
	memset(&why, 0, sizeof(why));
	cr_assert_eq(call_scripted("{\"ok\":true,\"runs\":[]}\n", &resp, &why, 2000, got), 0, "%s", why.detail);
	cr_expect_str_eq(got, "{\"cmd\":\"runs\"}", "the request went as one line");
	cr_assert_not_null(resp);
	cr_expect(json_is_array(json_object_get(resp, "runs")));
	json_decref(resp);

	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted("{\"ok\":false,\"reason\":\"privilege.required\",\"detail\":\"d\"}\n", &resp, &why, 2000,
				   NULL),
		     -EPERM);
	cr_expect_null(resp);
	cr_expect_eq(why.reason, CUSTODE_REASON_PRIVILEGE_REQUIRED);
	cr_expect_str_eq(why.detail, "d");

	/* a reason this client does not know, no detail */
	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted("{\"ok\":false,\"reason\":\"new.reason\"}\n", &resp, &why, 2000, NULL), -EPERM);
	cr_expect_eq(why.reason, CUSTODE_REASON_DAEMON_PROTOCOL);
	cr_expect(why.detail[0] != 0);

	/* "ok" must be true itself */
	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted("{\"ok\":1}\n", &resp, &why, 2000, NULL), -EPERM);
	cr_expect_null(resp);
}

Test(control_client, call_broken_daemons)
{
	struct custode_refusal why;
	json_t *resp;

	signal(SIGPIPE, SIG_IGN);
	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted("not json\n", &resp, &why, 2000, NULL), -EPROTO);
	cr_expect_eq(why.reason, CUSTODE_REASON_DAEMON_PROTOCOL);
	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted(NULL, &resp, &why, 2000, NULL), -EPIPE, "closed without an answer");
	cr_expect_eq(why.reason, CUSTODE_REASON_DAEMON_PROTOCOL);
	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted("", &resp, &why, 100, NULL), -ETIMEDOUT, "no answer in time");
	cr_expect_eq(why.reason, CUSTODE_REASON_DAEMON_PROTOCOL);
	memset(&why, 0, sizeof(why));
	cr_expect_eq(call_scripted("{\"ok\":true}", &resp, &why, 2000, NULL), -EPIPE, "an answer without its newline");
	cr_expect_null(resp);
}
