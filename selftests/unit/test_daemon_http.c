// SPDX-License-Identifier: Apache-2.0
/*
 * The metrics endpoint's answers (userspace/daemon/metrics_http.c):
 * GET and HEAD of /metrics, /healthz and /readyz, the build_info gauge,
 * and what is refused (404, 405, 400). A service without the engine (no
 * BPF needed), answering request heads as the endpoint reads them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>

#include "custode/abi.h"
#include "daemon/service_impl.h"
#include "daemon/stream.h"

/* From test_daemon_stream.c (the same binary): a stream without the engine. */
struct custode_stream *custode_test_stream_history(size_t n);

static struct custode_service *svc;

static void setup(void)
{
	struct custode_service_opts o = {.started = 1700000000};

	cr_assert_eq(custode_service_new(NULL, NULL, custode_test_stream_history(0), &o, &svc), 0);
}

static void teardown(void)
{
	struct custode_stream *s = svc->stream;

	custode_service_free(svc);
	custode_stream_close(s);
	svc = NULL;
}

/* The answer to req, NUL-terminated; its status code in *code, its body (or "") in *body. */
static char *ask(const char *req, int *code, const char **body)
{
	size_t len = 0;
	char *out = service_http_respond(svc, req, &len), *cp, *sep;

	cr_assert_not_null(out);
	cp = malloc(len + 1);
	cr_assert_not_null(cp);
	memcpy(cp, out, len);
	cp[len] = 0;
	free(out);
	cr_assert_eq(sscanf(cp, "HTTP/1.0 %d ", code), 1, "status line: %s", cp);
	sep = strstr(cp, "\r\n\r\n");
	cr_assert_not_null(sep, "no end of headers: %s", cp);
	*body = sep + 4;
	return cp;
}

static long content_length(const char *resp)
{
	const char *h = strstr(resp, "\r\nContent-Length: ");

	return h ? strtol(h + 18, NULL, 10) : -1;
}

TestSuite(daemon_http, .init = setup, .fini = teardown);

Test(daemon_http, get_metrics_has_build_info)
{
	const char *body;
	char want[128];
	int code;
	char *r = ask("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &code, &body);

	cr_expect_eq(code, 200);
	cr_expect(strstr(r, "Content-Type: text/plain; version=0.0.4") != NULL);
	snprintf(want, sizeof(want), "custode_build_info{version=\"%s\",abi=\"%d\"} 1\n", CUSTODE_VERSION,
		 CUSTODE_ABI_VERSION);
	cr_expect(strstr(body, want) != NULL, "no '%s' in:\n%s", want, body);
	cr_expect(strstr(body, "# TYPE custode_build_info gauge\n") != NULL);
	cr_expect_eq(content_length(r), (long)strlen(body));
	free(r);
}

Test(daemon_http, head_has_the_headers_of_get_and_no_body)
{
	const char *gbody, *hbody;
	int gcode, hcode;
	char *g = ask("GET /healthz HTTP/1.0\r\n\r\n", &gcode, &gbody);
	char *h = ask("HEAD /healthz HTTP/1.0\r\n\r\n", &hcode, &hbody);

	cr_expect_eq(gcode, 200);
	cr_expect_str_eq(gbody, "ok\n");
	cr_expect_eq(hcode, 200);
	cr_expect_str_eq(hbody, "", "HEAD: no body");
	cr_expect_eq(content_length(h), 3, "HEAD: GET's Content-Length");
	free(g);
	free(h);
	h = ask("HEAD /metrics HTTP/1.0\r\n\r\n", &hcode, &hbody);
	cr_expect_eq(hcode, 200);
	cr_expect_str_eq(hbody, "");
	cr_expect_gt(content_length(h), 100);
	free(h);
	h = ask("HEAD /nothing HTTP/1.0\r\n\r\n", &hcode, &hbody);
	cr_expect_eq(hcode, 404);
	cr_expect_str_eq(hbody, "");
	free(h);
}

Test(daemon_http, readyz_once_started_with_a_control_server)
{
	const char *body;
	int code;
	char *r = ask("GET /readyz HTTP/1.0\r\n\r\n", &code, &body);

	cr_expect_eq(code, 503, "not started yet");
	cr_expect_str_eq(body, "starting\n");
	free(r);
	svc->started = true;
	r = ask("GET /readyz HTTP/1.0\r\n\r\n", &code, &body);
	cr_expect_eq(code, 503, "no control server");
	cr_expect(strstr(body, "control socket") != NULL, "%s", body);
	free(r);
	svc->control = (struct custode_control_server *)&svc; /* only compared with NULL here */
	r = ask("GET /readyz HTTP/1.0\r\n\r\n", &code, &body);
	cr_expect_eq(code, 200);
	cr_expect_str_eq(body, "ready\n");
	free(r);
	svc->control = NULL;
	r = ask("GET /healthz HTTP/1.0\r\n\r\n", &code, &body);
	cr_expect_eq(code, 200, "alive whether or not ready");
	free(r);
}

Test(daemon_http, refusals)
{
	const char *body;
	int code;
	char *r = ask("POST /metrics HTTP/1.0\r\n\r\n", &code, &body);

	cr_expect_eq(code, 405);
	cr_expect(strstr(r, "\r\nAllow: GET, HEAD\r\n") != NULL, "%s", r);
	free(r);
	r = ask("GET /metricsx HTTP/1.0\r\n\r\n", &code, &body);
	cr_expect_eq(code, 404);
	free(r);
	r = ask("GET /healthz?x HTTP/1.0\r\n\r\n", &code, &body);
	cr_expect_eq(code, 404, "no query strings");
	free(r);
	r = ask("GARBAGE\r\n\r\n", &code, &body);
	cr_expect_eq(code, 400);
	free(r);
	r = ask("GET /metrics\r\n\r\n", &code, &body);
	cr_expect_eq(code, 400, "HTTP/0.9 request lines are not served");
	free(r);
	r = ask("GETX /metrics HTTP/1.0\r\n\r\n", &code, &body);
	cr_expect_eq(code, 405);
	free(r);
}
