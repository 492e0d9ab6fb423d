// SPDX-License-Identifier: Apache-2.0
/*
 * Containers that start or restart below an attached cgroup (issue 17 item 5;
 * docs/operations.md "Containers below an attached cgroup"). A pod-like
 * cgroup is attached; a synthetic runtime (eprobe: a parent outside every
 * run that places its child into a new cgroup below the pod, by a
 * cgroup.procs write or by clone3(CLONE_INTO_CGROUP)) sets the container up
 * — a mount namespace, a tmpfs, bind mounts, chroot and pivot_root, host
 * paths the run's policy denies — and then execs the entrypoint, which
 * tries the same and is confined.
 *
 * The set-up window belongs to newcomers only (bpf/lib/newcomer.bpf.h): a
 * process of the run cannot open one for itself (moving itself or a child
 * into a child cgroup of the run, clone3 into one, or being moved there by
 * the host as a service manager would), and cannot trace a newcomer or read
 * its memory. Every attack has its control.
 */
#include <sys/mount.h>

#include "test_daemon_fixture.h"

static const char *run_id_of(json_t *resp)
{
	return json_string_value(json_object_get(json_object_get(resp, "run"), "run_id"));
}

static void detach(char *rid)
{
	if (rid[0])
		json_decref(df_call(json_pack("{s:s, s:s}", "cmd", "detach", "run_id", rid)));
	rid[0] = 0;
}

/*
 * The pod's policy: the system dirs (read, exec), /etc and /proc (read), the
 * cgroup2 mount (so a resident may move itself: what's left to refuse is
 * the mount), the workspace (read); ptrace within the run (so tracing a
 * resident is the control of tracing a newcomer). f.d.outside is not granted.
 */
static bool sign_pod_policy(struct dfix *f, const char *name, const char *out)
{
	char doc[2048];

	if (!df_keygen(f, "key"))
		return false;
	snprintf(doc, sizeof(doc),
		 "{\"schema\":\"custode.policy/v1\",\"name\":\"%s\",\"version\":1,\"content\":{\"filesystem\":["
		 "{\"path\":\"/usr\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/bin\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/lib\",\"allow\":[\"read\",\"exec\"]},{\"path\":\"/lib64\",\"allow\":[\"read\",\"exec\"]},"
		 "{\"path\":\"/etc\",\"allow\":[\"read\"]},{\"path\":\"/proc\",\"allow\":[\"read\"]},"
		 "{\"path\":\"%s\",\"allow\":[\"read\",\"write\",\"create\",\"delete\"]},"
		 "{\"path\":\"${workspace}\",\"allow\":[\"read\"]}],"
		 "\"process\":{\"ptrace\":\"run\",\"signals\":\"run\"}}}",
		 name, f->cgmount);
	return df_sign(f, "key", doc, out);
}

/* The daemon trusting a fresh key, and the pod's policy signed with it. */
struct pod {
	struct dfix f;
	char bundle[400], pub[400], dir[400], name[64];
	char cg[PATH_MAX];
	char rid[17];
};

static bool pod_setup(struct pod *p)
{
	const char *extra[] = {"--bundles", p->dir, "--trust", p->pub, "--bundle-state", p->f.d.root, NULL};

	memset(p, 0, sizeof(*p));
	if (!df_setup(&p->f))
		return false;
	snprintf(p->bundle, sizeof(p->bundle), "%s/pod.dsse.json", p->f.d.root);
	snprintf(p->dir, sizeof(p->dir), "%s/bundles", p->f.d.root);
	snprintf(p->pub, sizeof(p->pub), "%s/key.pub", p->f.d.root);
	snprintf(p->name, sizeof(p->name), "test/pod-%d", (int)getpid());
	snprintf(p->cg, sizeof(p->cg), "%s/ktest-pod-%d", p->f.cgmount, (int)getpid());
	return ASSERT_EQ(mkdir(p->dir, 0755), 0, "bundles dir") &&
	       ASSERT_TRUE(sign_pod_policy(&p->f, p->name, p->bundle), "the pod's signed policy") &&
	       ASSERT_TRUE(df_daemon_start(&p->f, extra), "daemon trusting the key") &&
	       ASSERT_TRUE(df_cg_make(p->cg), "the pod's cgroup");
}

static bool pod_attach(struct pod *p)
{
	json_t *resp = df_call(json_pack("{s:s, s:s, s:s, s:s}", "cmd", "attach", "cgroup", p->cg, "bundle", p->bundle,
					 "workspace", p->f.d.ws));

	if (!ASSERT_TRUE(resp != NULL, "attach the pod"))
		return false;
	snprintf(p->rid, sizeof(p->rid), "%s", run_id_of(resp));
	json_decref(resp);
	return true;
}

static void pod_end(struct pod *p)
{
	detach(p->rid);
	df_cg_remove(p->cg);
	kt_stop(&p->f.pid, SIGTERM);
}

/* A new cgroup below the pod (made from the host, as a runtime makes the container's). */
static const char *pod_child(struct pod *p, const char *name)
{
	static char path[4][PATH_MAX + 64];
	static int next;
	char *c = path[next++ % 4];

	snprintf(c, PATH_MAX + 64, "%s/%s", p->cg, name);
	return df_cg_make(c) ? c : "";
}

#define ARGV(...) ((char *[]){(char *)ktest_helper("eprobe"), __VA_ARGS__, NULL})

/*
 * The runtime, started on the host as root: `place` (fork-into or
 * clone3-into) puts the child into cgroup `ctr`; the child sets the
 * container up in a mount namespace of its own — make / private, a tmpfs,
 * a bind mount of the workspace into it, a recursive bind of / chrooted
 * into, pivot_root into a second one — opens a host file the run's policy
 * denies and another process's /proc entry, then execs the entrypoint
 * (eprobe again), which tries an open, the /proc entry and a mount.
 */
static int runtime(struct pod *p, const char *place, const char *ctr, const char *then, struct ktest_result *r)
{
	char t[400], x[420], rr[400], r2[400];
	char *eprobe = (char *)ktest_helper("eprobe");
	char *argv[80];
	int n = 0;

	snprintf(t, sizeof(t), "%s/rt-%s-%s-t", p->f.d.root, place, then ? then : "-");
	snprintf(x, sizeof(x), "%s/x", t);
	snprintf(rr, sizeof(rr), "%s/rt-%s-%s-r", p->f.d.root, place, then ? then : "-");
	snprintf(r2, sizeof(r2), "%s/rt-%s-%s-r2", p->f.d.root, place, then ? then : "-");
	if (!ASSERT_TRUE((mkdir(t, 0755) == 0 || errno == EEXIST) && (mkdir(rr, 0755) == 0 || errno == EEXIST) &&
			 (mkdir(r2, 0755) == 0 || errno == EEXIST),
			 "the runtime's directories"))
		return -1;
#define A(...)                                                              \
	do {                                                                \
		char *a_[] = {__VA_ARGS__};                                 \
		for (size_t i_ = 0; i_ < sizeof(a_) / sizeof(a_[0]); i_++) \
			argv[n++] = a_[i_];                                 \
	} while (0)
	A(eprobe, (char *)place, (char *)ctr, "+");
	/*
	 * then: "in-thread", a runtime that sets up from a thread other than its
	 * leader (Go's, on a locked OS thread); "fork", one that forks again
	 * after the placement and sets up in the child (runc's nsexec stages)
	 */
	if (then)
		A((char *)then, "+");
	A("unshare-mnt", "+", "make-private", "+", "mount-tmpfs", t, "+", "mkdir", x, "+", "mount-bind", p->f.d.ws, x,
	  "+", "mount-rbind", "/", rr, "+", "chroot", rr, "+", "mount-rbind", "/", r2, "+", "pivot-here", r2, "+",
	  "open", p->f.d.outside, "r", "+", "open", "/proc/1/environ", "r", "+");
	/* the entrypoint */
	A("exec", eprobe, "keep-going", "+", "hello", "+", "open", p->f.d.outside, "r", "+", "open",
	  "/proc/1/environ", "r", "+", "mount-tmpfs", t);
#undef A
	argv[n] = NULL;
	return ktest_run(argv, -1, 120000, r);
}

/* The runtime's set-up: eleven steps, all done */
#define SETUP_OK "ok\nok\nok\nok\nok\nok\nok\nok\nok\nok\nok\n"

KTEST(attach_mounts_runtime_sets_up_entrypoint_confined)
{
	static struct ktest_result r;
	struct pod p;
	json_t *run;

	ktest_need_lsm();
	if (!pod_setup(&p))
		goto out;

	/* controls: before attach, the runtime and the entrypoint do all of it, both placements */
	runtime(&p, "fork-into", pod_child(&p, "ctr-0"), NULL, &r);
	ASSERT_EQ(r.code, 0, "before attach (cgroup.procs): exit");
	ASSERT_STREQ(r.out, SETUP_OK "ok\nok\nok\nok\n", "before attach (cgroup.procs): set-up and entrypoint");
	runtime(&p, "clone3-into", pod_child(&p, "ctr-1"), NULL, &r);
	ASSERT_EQ(r.code, 0, "before attach (clone3): exit");
	ASSERT_STREQ(r.out, SETUP_OK "ok\nok\nok\nok\n", "before attach (clone3): set-up and entrypoint");

	if (!pod_attach(&p))
		goto out;
	/* a container (re)started below the attached pod: its set-up works, its entrypoint is confined */
	runtime(&p, "fork-into", pod_child(&p, "ctr-2"), NULL, &r);
	ASSERT_EQ(r.code, 1, "attached (cgroup.procs): the entrypoint failed a step");
	ASSERT_STREQ(r.out, SETUP_OK "ok\nEACCES\nEACCES\nEPERM\n",
		     "attached (cgroup.procs): set-up done, entrypoint denied the file, /proc and the mount");
	runtime(&p, "clone3-into", pod_child(&p, "ctr-3"), NULL, &r);
	ASSERT_EQ(r.code, 1, "attached (clone3): the entrypoint failed a step");
	ASSERT_STREQ(r.out, SETUP_OK "ok\nEACCES\nEACCES\nEPERM\n",
		     "attached (clone3): set-up done, entrypoint denied the file, /proc and the mount");
	/* the whole thread group is the newcomer: a second thread sets up, and execs the entrypoint */
	runtime(&p, "fork-into", pod_child(&p, "ctr-4"), "in-thread", &r);
	ASSERT_EQ(r.code, 1, "attached (set-up in a second thread): the entrypoint failed a step");
	ASSERT_STREQ(r.out, SETUP_OK "ok\nEACCES\nEACCES\nEPERM\n",
		     "attached (set-up in a second thread): set-up done, entrypoint confined");
	/* a runtime that forks again after the placement: the newcomer's child inherits the window */
	runtime(&p, "fork-into", pod_child(&p, "ctr-5"), "fork", &r);
	ASSERT_EQ(r.code, 1, "attached (set-up in a fork child of the newcomer): the entrypoint failed a step");
	ASSERT_STREQ(r.out, SETUP_OK "ok\nEACCES\nEACCES\nEPERM\n",
		     "attached (set-up in a fork child of the newcomer): set-up done, entrypoint confined");

	/* the set-up was never the run's: exactly the entrypoints' mounts are counted */
	run = df_run(p.rid);
	if (ASSERT_TRUE(run != NULL, "the pod's run")) {
		ASSERT_EQ(df_denials(run, "file.mount.denied"), 4, "mount denials: the four entrypoints'");
		ASSERT_EQ(df_denials(run, "file.read.denied"), 4, "read denials: the four entrypoints' opens");
	}
	json_decref(run);
out:
	pod_end(&p);
}

/* Start eprobe STEPS as a root resident of cg (it enters the cgroup, then execs); its output and status. */
static int resident(const char *cg, char *const argv[], char *out, size_t len, struct ktest_proc *keep)
{
	struct ktest_proc pr = {0};
	char line[256];
	size_t n = 0;
	int code;

	out[0] = 0;
	if (df_spawn_in(cg, -1, argv, &pr) != 0)
		return -1;
	while (ktest_read_line(pr.out, line, sizeof(line), ktest_slack(60000))) {
		n += (size_t)snprintf(out + n, n < len ? len - n : 0, "%s\n", line);
		if (keep && !strncmp(line, "ready ", 6)) {
			*keep = pr; /* the caller talks to it, then ends it */
			return 0;
		}
	}
	code = ktest_wait(&pr, ktest_slack(60000));
	ktest_proc_close(&pr);
	return code;
}

KTEST(attach_mounts_resident_cannot_open_the_window)
{
	struct pod p;
	struct ktest_proc w = {0};
	char out[1024], line[64];
	int pid = 0, code;

	ktest_need_lsm();
	if (!pod_setup(&p))
		goto out;

	/* controls, before attach: each of these moves then mounts */
	code = resident(p.cg, ARGV("fork-into", (char *)pod_child(&p, "c0"), "+", "unshare-mnt", "+", "make-private"), out,
			sizeof(out), NULL);
	ASSERT_TRUE(code == 0 && !strcmp(out, "ok\nok\n"), "before attach: fork, move the child, mount");
	code = resident(p.cg, ARGV("clone3-into", (char *)pod_child(&p, "c1"), "+", "unshare-mnt", "+", "make-private"),
			out, sizeof(out), NULL);
	ASSERT_TRUE(code == 0 && !strcmp(out, "ok\nok\n"), "before attach: clone3 into a child cgroup, mount");
	code = resident(p.cg, ARGV("move-self", (char *)pod_child(&p, "c2"), "+", "unshare-mnt", "+", "make-private"), out,
			sizeof(out), NULL);
	ASSERT_TRUE(code == 0 && !strcmp(out, "ok\nok\n"), "before attach: move itself, mount");

	if (!pod_attach(&p))
		goto out;
	/* a resident places its child into a new child cgroup of the run: the child is a resident too */
	code = resident(p.cg, ARGV("fork-into", (char *)pod_child(&p, "c3"), "+", "unshare-mnt", "+", "make-private"), out,
			sizeof(out), NULL);
	ASSERT_EQ(code, 1, "fork-into from inside: a step failed");
	ASSERT_STREQ(out, "ok\nEPERM\n", "fork-into from inside: moved, but the mount is denied");
	/* clone3 into a child cgroup from inside: refused before anything is born */
	code = resident(p.cg, ARGV("clone3-into", (char *)pod_child(&p, "c4"), "+", "unshare-mnt", "+", "make-private"),
			out, sizeof(out), NULL);
	ASSERT_EQ(code, 1, "clone3-into from inside: refused");
	ASSERT_STREQ(out, "clone3-into:EPERM\n", "clone3-into from inside: EPERM");
	/* moving itself */
	code = resident(p.cg, ARGV("move-self", (char *)pod_child(&p, "c5"), "+", "unshare-mnt", "+", "make-private"), out,
			sizeof(out), NULL);
	ASSERT_EQ(code, 1, "move-self from inside: a step failed");
	ASSERT_STREQ(out, "ok\nEPERM\n", "move-self from inside: moved, but the mount is denied");
	/*
	 * Moved by the host into a new child cgroup of the run (what systemd does
	 * for a resident that asks it over D-Bus for a new scope): the mover is
	 * outside every run, but the process was already in the run.
	 */
	code = resident(p.cg, ARGV("wait", "+", "unshare-mnt", "+", "make-private"), out, sizeof(out), &w);
	if (ASSERT_EQ(code, 0, "a waiting resident") && sscanf(out, "ready %d", &pid) == 1) {
		{
			char procs[PATH_MAX + 96], s[32];

			snprintf(procs, sizeof(procs), "%s/cgroup.procs", pod_child(&p, "c6"));
			snprintf(s, sizeof(s), "%d", pid);
			ASSERT_TRUE(ktest_write_file(procs, s, 0644), "the host moves the resident into a new child cgroup");
		}
		ASSERT_TRUE(write(w.in, "go\n", 3) == 3, "let it go on");
		out[0] = 0;
		while (ktest_read_line(w.out, line, sizeof(line), ktest_slack(60000)))
			strncat(out, line, sizeof(out) - strlen(out) - 2), strcat(out, "\n");
		ASSERT_EQ(ktest_wait(&w, ktest_slack(60000)), 1, "moved by the host: a step failed");
		ASSERT_STREQ(out, "ok\nEPERM\n", "moved by the host: still a resident, the mount is denied");
	}
	ktest_proc_close(&w);

	/*
	 * A root resident pulls a host process into a child cgroup of the run
	 * (the kernel lets root do it; the file policy grants the cgroup2
	 * mount): the mover is in a run, so the process arrives a resident.
	 */
	{
		struct ktest_proc a = {0}, h = {0};
		char *argv[] = {(char *)df_aprobe(), "repl", NULL};

		pid = 0;
		if (ASSERT_EQ(df_spawn_in(p.cg, -1, argv, &a), 0, "a root resident") &&
		    ASSERT_TRUE(ktest_read_line(a.out, line, sizeof(line), ktest_slack(60000)) && !strncmp(line, "ready ", 6),
				"the resident is ready") &&
		    ASSERT_EQ(ktest_spawn(ARGV("wait", "+", "unshare-mnt", "+", "make-private"), -1, &h), 0,
			      "a host process") &&
		    ASSERT_TRUE(ktest_read_line(h.out, line, sizeof(line), ktest_slack(60000)) &&
					sscanf(line, "ready %d", &pid) == 1,
				"the host process waits")) {
			ASSERT_STREQ(df_ask(&a, "write %s/cgroup.procs %d", pod_child(&p, "c7"), pid), "ok",
				     "the resident moves the host process into the run");
			ASSERT_TRUE(write(h.in, "go\n", 3) == 3, "let it go on");
			out[0] = 0;
			while (ktest_read_line(h.out, line, sizeof(line), ktest_slack(60000)))
				strncat(out, line, sizeof(out) - strlen(out) - 2), strcat(out, "\n");
			ASSERT_EQ(ktest_wait(&h, ktest_slack(60000)), 1, "pulled in by a resident: a step failed");
			ASSERT_STREQ(out, "ok\nEPERM\n", "pulled in by a resident: a resident, the mount is denied");
		}
		ktest_proc_close(&h);
		df_probe_end(&a);
	}
out:
	pod_end(&p);
}

KTEST(attach_mounts_newcomer_not_traceable)
{
	struct pod p;
	struct ktest_proc nc = {0}, target = {0};
	char line[128], addr[64], out[512];
	char *pp = (char *)ktest_helper("pprobe");
	int ncpid = 0, tpid = 0, code;

	ktest_need_lsm();
	if (!pod_setup(&p) || !pod_attach(&p))
		goto out;
	/* a newcomer waiting in its set-up window, placed by a runtime outside every run */
	if (!ASSERT_EQ(ktest_spawn(ARGV("fork-into", (char *)pod_child(&p, "ctr"), "+", "wait"), -1, &nc), 0,
		       "the runtime") ||
	    !ASSERT_TRUE(ktest_read_line(nc.out, line, sizeof(line), ktest_slack(60000)) &&
				 sscanf(line, "ready %d", &ncpid) == 1,
			 "the newcomer waits"))
		goto out;
	/* a resident target for the controls */
	{
		char *argv[] = {pp, "target", NULL};

		if (!ASSERT_EQ(df_spawn_in(p.cg, -1, argv, &target), 0, "a resident target") ||
		    !ASSERT_TRUE(ktest_read_line(target.out, line, sizeof(line), ktest_slack(60000)) &&
					 sscanf(line, "ready %d %63s", &tpid, addr) == 2,
				 "the target is ready"))
			goto out;
	}
	/* controls: the run's policy lets a resident trace and read a resident */
	{
		char spid[16], sncpid[16], env[64], ncenv[64];

		snprintf(spid, sizeof(spid), "%d", tpid);
		snprintf(sncpid, sizeof(sncpid), "%d", ncpid);
		snprintf(env, sizeof(env), "/proc/%d/environ", tpid);
		snprintf(ncenv, sizeof(ncenv), "/proc/%d/environ", ncpid);
		code = resident(p.cg, (char *[]){pp, "attach", spid, NULL}, out, sizeof(out), NULL);
		ASSERT_TRUE(code == 0 && !strcmp(out, "ok\n"), "control: a resident attaches to a resident");
		code = resident(p.cg, (char *[]){pp, "vmread", spid, addr, NULL}, out, sizeof(out), NULL);
		ASSERT_TRUE(code == 0 && !strncmp(out, "ok", 2), "control: process_vm_readv of a resident");
		code = resident(p.cg, (char *[]){pp, "read", env, NULL}, out, sizeof(out), NULL);
		ASSERT_TRUE(code == 0 && !strcmp(out, "ok\n"), "control: a resident's /proc/PID/environ");
		/* the newcomer: none of it */
		code = resident(p.cg, (char *[]){pp, "attach", sncpid, NULL}, out, sizeof(out), NULL);
		ASSERT_STREQ(out, "EPERM\n", "a resident may not attach to a newcomer");
		code = resident(p.cg, (char *[]){pp, "vmread", sncpid, addr, NULL}, out, sizeof(out), NULL);
		ASSERT_STREQ(out, "EPERM\n", "nor read its memory");
		code = resident(p.cg, (char *[]){pp, "read", ncenv, NULL}, out, sizeof(out), NULL);
		ASSERT_STREQ(out, "EACCES\n", "nor its /proc/PID/environ");
	}
	ASSERT_TRUE(ktest_proc_cgroup(ncpid, line, sizeof(line)) && strstr(line, "/ctr") != NULL,
		    "the newcomer is in the container's cgroup");
out:
	if (nc.pid > 0) {
		kill(nc.pid, SIGKILL);
		ktest_wait(&nc, 5000);
	}
	if (ncpid > 0)
		kill(ncpid, SIGKILL);
	ktest_proc_close(&nc);
	df_probe_end(&target);
	pod_end(&p);
}

/* custode_newcomers_live, as `custode engine status --json` reports it (the engine's maps are custode's alone); -1 unknown. */
static long long newcomers_live(void)
{
	return ktest_engine_status_int("newcomers");
}

/* The count once it is `want`, or the last one seen when it never got there (a loaded host may lag a little). */
static long long newcomers_settle(long long want)
{
	struct timespec t0, now;
	long long seen;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		seen = newcomers_live();
		if (seen == want)
			return seen;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > ktest_slack(15000))
			return seen;
		usleep(20000);
	}
}

/* Wait for p's exit; its status. The pid is forgotten (never signalled again). */
static int reap(struct ktest_proc *p)
{
	int code = ktest_wait(p, 30000);

	if (code >= 0)
		p->pid = 0;
	return code;
}

/* A runtime whose newcomer waits (eprobe STEPS... wait); the "ready PID" line read. */
static bool waiting_newcomer(char *const argv[], struct ktest_proc *nc, int *pid)
{
	char line[128];

	return ktest_spawn(argv, -1, nc) == 0 && ktest_read_line(nc->out, line, sizeof(line), ktest_slack(60000)) &&
	       sscanf(line, "ready %d", pid) == 1;
}

/*
 * The hooks look a task's newcomer mark up only while the host-wide count
 * of marks is not 0 (bpf/lib/newcomer.bpf.h): the count must cover every
 * live mark, and come back to 0 once no container is in set-up — after an
 * exec, after an exit without one (a runtime's intermediate fork, a failed
 * set-up), after a kill, for a fork child's inherited mark and for a
 * newcomer whose set-up runs in a second thread. A count left high only
 * costs lookups; this test is what keeps it from staying high.
 */
KTEST(attach_mounts_newcomer_count)
{
	static struct ktest_result r;
	struct ktest_proc nc = {0};
	struct pod p;
	int pid = 0;

	ktest_need_lsm();
	if (!pod_setup(&p) || !pod_attach(&p))
		goto out;
	/* the process class marks newcomers: it is loaded once a run has been attached */
	ASSERT_EQ(newcomers_settle(0), 0, "no container in set-up: the count is 0");

	/* a newcomer waiting in its set-up window counts; its exit without an exec uncounts it */
	if (ASSERT_TRUE(waiting_newcomer(ARGV("fork-into", (char *)pod_child(&p, "c1"), "+", "wait"), &nc, &pid),
			"a newcomer waits")) {
		ASSERT_EQ(newcomers_settle(1), 1, "one newcomer: 1");
		ASSERT_EQ(write(nc.in, "\n", 1), 1, "let it go");
		ASSERT_EQ(reap(&nc), 0, "it exits, never having exec'd");
		ASSERT_EQ(newcomers_settle(0), 0, "after its exit: 0");
	}
	ktest_proc_close(&nc);

	/* its fork child inherits a mark of its own: 2; both exit without an exec: 0 */
	if (ASSERT_TRUE(waiting_newcomer(ARGV("fork-into", (char *)pod_child(&p, "c2"), "+", "fork", "+", "wait"), &nc,
					 &pid),
			"a newcomer's fork child waits")) {
		ASSERT_EQ(newcomers_settle(2), 2, "a newcomer and its child: 2");
		ASSERT_EQ(write(nc.in, "\n", 1), 1, "let them go");
		reap(&nc);
		ASSERT_EQ(newcomers_settle(0), 0, "after both exits: 0");
	}
	ktest_proc_close(&nc);

	/* set-up in a second thread: the mark is the process's, gone when its last thread is */
	if (ASSERT_TRUE(waiting_newcomer(ARGV("clone3-into", (char *)pod_child(&p, "c3"), "+", "in-thread", "+", "wait"),
					 &nc, &pid),
			"a newcomer's second thread waits")) {
		ASSERT_EQ(newcomers_settle(1), 1, "a newcomer (two threads): 1");
		ASSERT_EQ(kill(pid, SIGKILL), 0, "kill it");
		reap(&nc);
		ASSERT_EQ(newcomers_settle(0), 0, "after a kill: 0");
	}
	ktest_proc_close(&nc);

	/* the entrypoint's exec ends the window: 0 while the entrypoint still runs */
	if (ASSERT_TRUE(waiting_newcomer(ARGV("fork-into", (char *)pod_child(&p, "c4"), "+", "exec",
					      (char *)ktest_helper("eprobe"), "wait"),
					 &nc, &pid),
			"an entrypoint waits")) {
		ASSERT_EQ(newcomers_settle(0), 0, "the entrypoint is a resident: 0");
		ASSERT_TRUE(ktest_pid_alive(pid), "and it still runs");
		ASSERT_EQ(write(nc.in, "\n", 1), 1, "let it go");
		reap(&nc);
	}
	ktest_proc_close(&nc);

	/* and a newcomer made after all of that is still one: the set-up of a whole runtime, then its entrypoint */
	runtime(&p, "fork-into", pod_child(&p, "c5"), "fork", &r);
	ASSERT_STREQ(r.out, SETUP_OK "ok\nEACCES\nEACCES\nEPERM\n", "a later container: set-up done, entrypoint confined");
	ASSERT_EQ(newcomers_settle(0), 0, "and the count is 0 again");
out:
	if (nc.pid > 0) {
		kill(nc.pid, SIGKILL);
		ktest_wait(&nc, 5000);
	}
	ktest_proc_close(&nc);
	pod_end(&p);
}
