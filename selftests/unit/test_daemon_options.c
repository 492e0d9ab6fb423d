// SPDX-License-Identifier: Apache-2.0
/*
 * `custode daemon`'s command line (userspace/daemon/options.c): every flag is
 * refused with daemon.usage before the daemon opens anything, so a typo in
 * a unit with Restart=always stops at exit 2 instead of looping.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <criterion/criterion.h>

#include "daemon/options.h"
#include "util/reasons.h"

#define ARGV(...) ((char *[]){"daemon", __VA_ARGS__, NULL})
#define ARGC(...) ((int)(sizeof((char *[]){"daemon", __VA_ARGS__}) / sizeof(char *)))

static struct daemon_opts o;
static struct custode_refusal why;
static char dir[] = "/tmp/custode-daemon-opts.XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

#define PARSE(...) custode_daemon_options(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), &o, &why)

/* a usage error: -EINVAL, reason daemon.usage, the detail naming the flag */
#define REFUSED(what, ...)                                                                                             \
	do {                                                                                                           \
		memset(&why, 0, sizeof(why));                                                                          \
		cr_assert_eq(PARSE(__VA_ARGS__), -EINVAL, "%s", what);                                                \
		cr_assert_eq(why.reason, CUSTODE_REASON_DAEMON_USAGE, "%s: reason %d", what, why.reason);           \
		cr_assert(strstr(why.detail, what), "'%s' not in '%s'", what, why.detail);                            \
	} while (0)

TestSuite(daemon_options, .init = setup, .fini = teardown);

Test(daemon_options, good_command_line)
{
	char ev[128], mf[128];

	snprintf(ev, sizeof(ev), "%s/events.jsonl", dir);
	snprintf(mf, sizeof(mf), "%s/custode.prom", dir);
	cr_assert_eq(PARSE("--no-resolver", "--metrics-listen", "127.0.0.1:9464", "--metrics-file", mf, "--events-file",
			   ev, "--history", "5", "--throttle", "10/2"),
		     0, "%s", why.detail);
	cr_assert_str_eq(o.svc.metrics_listen, "127.0.0.1:9464");
	cr_assert_eq(o.so.history, 5);
	cr_assert_eq(o.so.throttle_burst, 10);
	cr_assert_eq(access(ev, W_OK), 0, "the events file is created as the stream would");
	cr_assert_eq(access(mf, F_OK), -1, "the metrics file is written by the daemon, not by the check");
	cr_assert_eq(PARSE("--help"), 1);
}

Test(daemon_options, metrics_listen_is_an_address_and_port)
{
	REFUSED("--metrics-listen garbage", "--no-resolver", "--metrics-listen", "garbage");
	REFUSED("--metrics-listen 127.0.0.1", "--no-resolver", "--metrics-listen", "127.0.0.1");
	REFUSED("--metrics-listen 127.0.0.1:0", "--no-resolver", "--metrics-listen", "127.0.0.1:0");
	REFUSED("--metrics-listen localhost:9464", "--no-resolver", "--metrics-listen", "localhost:9464");
	cr_assert_eq(PARSE("--no-resolver", "--metrics-listen", "[::1]:9464"), 0, "%s", why.detail);
}

Test(daemon_options, files_must_be_writable)
{
	char sub[160], ro[160];

	REFUSED("--metrics-file /nonexistent/x.prom: No such file or directory", "--no-resolver", "--metrics-file",
		"/nonexistent/x.prom");
	REFUSED("--events-file /nonexistent/e.jsonl: No such file or directory", "--no-resolver", "--events-file",
		"/nonexistent/e.jsonl");
	/* a directory where the file should be */
	REFUSED("not a regular file", "--no-resolver", "--metrics-file", dir);
	REFUSED("--events-file", "--no-resolver", "--events-file", dir);
	/* a read-only file system: /proc refuses new files even to root */
	REFUSED("--metrics-file /proc/custode.prom", "--no-resolver", "--metrics-file", "/proc/custode.prom");
	snprintf(sub, sizeof(sub), "%s/d", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	snprintf(ro, sizeof(ro), "%s/d/nested/x.prom", dir);
	REFUSED("No such file or directory", "--no-resolver", "--metrics-file", ro);
}

Test(daemon_options, bundles_and_keys_are_read_first)
{
	char key[160];

	snprintf(key, sizeof(key), "%s/missing.pub", dir);
	REFUSED("--trust", "--no-resolver", "--bundles", dir, "--trust", key);
	REFUSED("--bundles /nonexistent/bundles", "--no-resolver", "--bundles", "/nonexistent/bundles", "--trust", key);
	/* a key file that is no key */
	snprintf(key, sizeof(key), "%s/bad.pub", dir);
	cr_assert_eq(close(creat(key, 0600)), 0);
	REFUSED("bundle.key", "--no-resolver", "--bundles", dir, "--trust", key);
	REFUSED("--bundles needs --trust", "--no-resolver", "--bundles", dir);
}

Test(daemon_options, numbers_in_range_and_combinations)
{
	REFUSED("--ttl-min", "--no-resolver", "--ttl-min", "99999999");
	REFUSED("--history", "--no-resolver", "--history", "-1");
	REFUSED("--throttle 0/10", "--no-resolver", "--throttle", "0/10");
	REFUSED("--events-file-max 12", "--no-resolver", "--events-file-max", "12");
	REFUSED("--stream xml", "--no-resolver", "--stream", "xml");
	REFUSED("--deny drop", "--no-resolver", "--deny", "drop");
	REFUSED("--upstream 127.0.0.1:54", "--upstream", "127.0.0.1:54");
	REFUSED("--ttl-min 100 is above --ttl-max 50", "--no-resolver", "--ttl-min", "100", "--ttl-max", "50");
	REFUSED("exclude each other", "--no-resolver", "--upstream", "9.9.9.9");
	REFUSED("unexpected argument 'now'", "--no-resolver", "now");
}

Test(daemon_options, getopt_errors_in_gnu_words)
{
	cr_assert_eq(PARSE("--bogus"), -EINVAL);
	cr_assert_eq(why.reason, CUSTODE_REASON_NONE);
	cr_assert_str_eq(why.detail, "unrecognized option '--bogus'");
	cr_assert_eq(PARSE("--metrics-file"), -EINVAL);
	cr_assert_str_eq(why.detail, "option '--metrics-file' requires an argument");
}

Test(daemon_options, default_upstreams_from_resolv_conf)
{
	char rc[160];
	FILE *f;

	cr_assert_eq(PARSE("--metrics-listen", "127.0.0.1:9464"), 0, "%s", why.detail);
	snprintf(rc, sizeof(rc), "%s/resolv.conf", dir);
	f = fopen(rc, "w");
	cr_assert_not_null(f);
	fputs("search example.org\n", f);
	fclose(f);
	cr_assert_eq(custode_daemon_default_upstreams(&o, rc, &why), -ENOENT);
	cr_assert_eq(why.reason, CUSTODE_REASON_DNS_UPSTREAM);
	f = fopen(rc, "a");
	fputs("nameserver 192.0.2.53\n", f);
	fclose(f);
	cr_assert_eq(custode_daemon_default_upstreams(&o, rc, &why), 0);
	cr_assert_eq(o.cfg.n_upstream, 1);
}
