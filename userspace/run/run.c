// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/sched.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "bundle/bundle.h"
#include "bundle/source.h"
#include "cgroup/cgroup.h"
#include "util/exit.h"
#include "dns/launch.h"
#include "dns/names.h"
#include "dns/resolver.h"
#include "run/args.h"
#include "run/program.h"
#include "run/run.h"
#include "run/receipt.h"
#include "run/relay.h"
#include "run/env.h"
#include "run/limits.h"
#include "run/pty.h"
#include "engine/hostaddrs.h"
#include "engine/probe.h"
#include "run/seccomp.h"
#include "run/user.h"
#include "util/fsutil.h"
#include "util/reasons.h"
#include "util/time.h"


static int refuse(const struct custode_refusal *why)
{
	fprintf(stderr, "custode: run: refused: %s: %s\n", custode_reason_name(why->reason), why->detail);
	return EXIT_REFUSED;
}


struct launch {
	struct custode_engine e;
	struct custode_policy *policy;
	struct custode_program prog;          /* the policy in the engine: rule sets, registration */
	struct custode_runstate st;
	struct custode_run_user user;
	struct custode_resolved_policy from;  /* where the policy came from (from.p is policy) */
	json_t *bundle_json;
	struct custode_bundle_info bundle_info; /* --bundle: verified, its floor checked */
	bool bundle_pending;                  /* --bundle: not accepted yet (the floor not raised) */
	bool cgroup_made;
	int lock_fd;
	struct custode_limits_applied limits; /* cgroup limits written (setup) */
	struct custode_seccomp filter;        /* compiled in the launcher, installed by the child */
	struct custode_run_env env;           /* the command's environment */
	int out_pipe[2], err_pipe[2];         /* the command's stdout/stderr, when the output is capped */
	struct custode_pty pty;               /* the run's own terminal, when the caller's fds 0..2 include one */
	struct custode_hostaddr_watch hosts;  /* this namespace's own addresses, kept current (egress runs) */
};

/* What the receipt says of a bundle beyond the policy: its payload, window and signers. */
static json_t *bundle_receipt(const struct custode_bundle_info *info)
{
	json_t *signers = json_array(), *o;

	for (size_t i = 0; i < info->n_signers; i++)
		json_array_append_new(signers, json_string(info->signers[i].key_id));
	o = json_pack("{s:s}", "payload_sha256", info->payload_sha256);
	if (o)
		custode_bundle_window_json(o, info->not_before, info->not_after);
	json_object_set_new(o, "signers", signers);
	return o;
}

/* The policy of --bundle, --policy or --profile, resolved as every run's is (bundle/source.h). */
static int load_policy(const struct run_opts *o, struct launch *l, struct custode_refusal *why)
{
	struct custode_resolved_policy *r = &l->from;
	int err;

	if (o->bundle) {
		struct custode_policy_source src = {0};
		struct custode_trust *trust = NULL;

		if ((err = custode_trust_new(&trust)))
			return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "trust: %s", strerror(-err));
		for (size_t i = 0; i < o->n_trust && !err; i++)
			err = custode_trust_add_file(trust, o->trust[i], why) < 0 ? -1 : 0;
		/*
		 * verify and compare with the version floor now; the floor is raised
		 * (accept_bundle) only once nothing else can refuse the run, just
		 * before its first process: a refused run leaves the floor as it was
		 */
		src.trust = trust;
		src.check_floor_only = true;
		if (!err)
			err = custode_source_bundle(o->bundle, NULL, &src, r, &l->bundle_info, why);
		custode_trust_free(trust);
		if (err)
			return err;
		/* the receipt names the bundle as it was given */
		snprintf(r->ref, sizeof(r->ref), "%s", o->bundle);
		l->bundle_json = bundle_receipt(&l->bundle_info);
		l->bundle_pending = true;
	} else if (o->policy_file) {
		err = custode_source_file(o->policy_file, r, why);
	} else {
		err = custode_source_profile(o->profile, r, why);
	}
	if (err)
		return err;
	if (o->n_allows && !r->p->has_network) {
		custode_policy_free(r->p);
		r->p = NULL;
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USAGE,
				      "--allow needs a policy with a network section (e.g. --profile net-only)");
	}
	l->policy = r->p;
	return 0;
}

/*
 * The engine classes a run needs. A policy with only limits or env sections
 * asks for none, but the run still needs the engine's maps (registration,
 * counters, the cancelled flag): the egress class provides them on any host
 * with cgroup BPF, and its hooks govern nothing for a run without a network
 * section.
 */
static unsigned run_classes(const struct custode_policy *p)
{
	unsigned c = custode_policy_classes(p);
	struct custode_probe_result pr = {0};

	c = c ? c : CUSTODE_CLASS_EGRESS;
	if ((c & (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS)) == (CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS))
		return c;
	/*
	 * Where BPF-LSM loads, every run gets the protections that hold for every
	 * run whatever its policy (terminals, socket families, listen, route
	 * options: docs/process.md, docs/egress.md), which live in the file and
	 * process classes. Elsewhere the policy's own classes are all there is
	 * (a net-only run on an egress-only host).
	 */
	custode_probe_lsm_cached(&pr);
	if (pr.lsm_loads)
		c |= CUSTODE_CLASS_FILE | CUSTODE_CLASS_PROCESS;
	return c;
}

static int exit_status(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_REFUSED;
}


/* Undo a partial setup (no process has run in the cgroup yet). */
static void setup_undo(struct launch *l)
{
	custode_program_undo(&l->e, &l->prog);
	if (l->cgroup_made)
		custode_cgroup_remove(l->st.cgroup);
	if (l->st.tmp[0])
		custode_rm_rf(l->st.tmp);
	custode_runstate_remove(l->st.run_id);
	custode_dns_names_remove(l->st.run_id);
}

/* Weakened enforcement is loud: one line per limit the policy asked for and the run goes without. */
static void warn_unenforced_limits(const struct custode_limits_applied *a)
{
	const struct custode_limit_state *each[] = {&a->memory, &a->pids, &a->cpu};

	for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++)
		if (each[i]->why_not)
			fprintf(stderr,
				"custode: run: warning: limits.%s NOT enforced: the run's cgroup has no %s controller "
				"(--require-limits refuses instead)\n",
				each[i]->name, each[i]->controller);
}

static int setup(struct launch *l, const struct run_opts *o, struct custode_refusal *why)
{
	char ws[PATH_MAX], hex[17];
	struct stat sb;
	int err;

	if (!realpath(o->workspace ? o->workspace : ".", ws) || stat(ws, &sb) < 0 || !S_ISDIR(sb.st_mode))
		return custode_refuse(why, ENOTDIR, CUSTODE_REASON_RUN_WORKSPACE, "workspace '%s': %s",
				      o->workspace ? o->workspace : ".", errno ? strerror(errno) : "not a directory");
	if (getrandom(&l->st.run_id, sizeof(l->st.run_id), 0) != sizeof(l->st.run_id))
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "getrandom: %s", strerror(errno));
	custode_run_id_format(l->st.run_id, hex);
	snprintf(l->st.workspace, sizeof(l->st.workspace), "%s", ws);
	snprintf(l->st.policy, sizeof(l->st.policy), "%s", l->policy->name);
	snprintf(l->st.source, sizeof(l->st.source), "%s", l->from.source);
	/* every grant, whole (args.c takes at most CUSTODE_RUN_MAX_ALLOWS; a parsed grant fits the text) */
	for (size_t i = 0; i < o->n_allows && i < CUSTODE_RUN_MAX_ALLOWS; i++)
		if (snprintf(l->st.allows[l->st.n_allows++], sizeof(l->st.allows[0]), "%s", o->allow_strs[i]) >=
		    (int)sizeof(l->st.allows[0]))
			return custode_refuse(why, ENAMETOOLONG, CUSTODE_REASON_RUN_USAGE, "--allow %s: too long",
					      o->allow_strs[i]);
	l->st.launcher_pid = getpid();
	l->st.started = time(NULL);

	/* The lock comes first: gc treats a run whose lock is free as orphaned. */
	l->lock_fd = custode_runlock_take(l->st.run_id);
	if (l->lock_fd < 0)
		return custode_refuse(why, -l->lock_fd, CUSTODE_REASON_RUN_SETUP_FAILED, "run lock: %s",
				      strerror(-l->lock_fd));
	custode_run_tmp_path(l->st.run_id, l->st.tmp, sizeof(l->st.tmp));
	if (mkdir(l->st.tmp, 0700) < 0) {
		l->st.tmp[0] = 0;
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "mkdir tmp: %s", strerror(errno));
	}
	if (chown(l->st.tmp, l->user.uid, l->user.gid) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "chown tmp: %s", strerror(errno));
	snprintf(l->st.cgroup, sizeof(l->st.cgroup), "%s/run-%s", l->e.cg_root, hex);

	l->prog.policy = l->policy;
	l->prog.bindings.workspace = l->st.workspace;
	l->prog.bindings.tmp = l->st.tmp;
	l->prog.allows = o->allows;
	l->prog.n_allows = o->n_allows;
	l->prog.run_id = l->st.run_id;
	if ((err = custode_program_ruleset(&l->e, &l->prog, why)))
		return err;
	l->st.ruleset = l->prog.ruleset;
	/* Rules (and the resolver's names) before registration, registration before the first process. */
	if ((err = custode_program_rules(&l->e, &l->prog, why)))
		return err;
	/* the run's own addresses are local services, not destinations (net.host_address) */
	if (l->policy->has_network && (err = custode_hostaddrs_watch(&l->hosts, -1, why)))
		return err;
	if (mkdir(l->st.cgroup, 0755) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_CGROUP_FAILED, "mkdir %s: %s", l->st.cgroup,
				      strerror(errno));
	l->cgroup_made = true;
	if ((err = custode_cgroup_id(l->st.cgroup, &l->st.cgroup_id)))
		return custode_refuse(why, -err, CUSTODE_REASON_CGROUP_FAILED, "cgroup id: %s", strerror(-err));
	if ((err = custode_limits_apply(l->st.cgroup, l->policy, o->require_limits, &l->limits, why)))
		return err;
	warn_unenforced_limits(&l->limits);
	if ((err = custode_program_register(&l->e, &l->prog, l->st.cgroup_id, o->audit ? CUSTODE_RUN_AUDIT : 0, NULL,
					    why)))
		return err;
	/*
	 * The state, once, whole: until here a launcher that dies leaves only its
	 * lock, and gc finds the rest from the run id (the tmp directory, the
	 * names file, the run-<id> cgroup and its registration). Rules added
	 * before a registration that never came stay unreferenced, under an id
	 * no run uses, as they did when an earlier write recorded no rule set.
	 */
	if ((err = custode_runstate_write(&l->st)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "state file: %s", strerror(-err));
	return 0;
}

/*
 * In the child, inside the run's cgroup: a session of its own, only the
 * command's stdio survives (the run's pty for what were terminals), then
 * credentials, seccomp, the run's environment, exec — or errno on the pipe.
 * Nothing here allocates: the filter and environment were built by the
 * launcher.
 */
static __attribute__((noreturn)) void child_exec(const struct run_opts *o, const struct launch *l, const sigset_t *old,
						 int errfd)
{
	int e;

	sigprocmask(SIG_SETMASK, old, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* never the caller's session: no controlling terminal to push input into (TIOCSTI) or signal through */
	if (setsid() < 0)
		goto fail;
	if (l->out_pipe[1] >= 0 && (dup2(l->out_pipe[1], 1) < 0 || dup2(l->err_pipe[1], 2) < 0))
		goto fail;
	if ((e = custode_pty_child(&l->pty)) < 0) {
		errno = -e;
		goto fail;
	}
	/* fds above 2 are closed: nothing the launcher (or its caller) had open reaches the run */
	if ((errfd > 3 && close_range(3, (unsigned)errfd - 1, 0) < 0) || close_range((unsigned)errfd + 1, ~0U, 0) < 0)
		goto fail;
	if (chdir(l->st.workspace) < 0)
		goto fail;
	if ((e = custode_run_user_enter(&l->user)) < 0) {
		errno = -e;
		goto fail;
	}
	if ((e = custode_seccomp_apply(&l->filter)) < 0) {
		errno = -e;
		goto fail;
	}
	environ = l->env.envp; /* execvp searches the run's PATH */
	execvp(o->argv[0], o->argv);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* nothing left to report with */
	}
	_exit(e == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__)
/*
 * The child of spawn_into shares the launcher's memory until its exec
 * (CLONE_VM | CLONE_VFORK: the launcher is stopped meanwhile) and runs on a
 * stack of its own: no page tables are copied and neither side takes
 * copy-on-write faults (together ≈1 ms of CPU a run on a host whose faults
 * are slow: docs/benchmarks.md). child_exec allocates nothing and writes
 * nothing of the launcher's but `environ` (put back by spawn_into) and errno;
 * its credential calls are raw syscalls of the calling task (run/user.c).
 * ASan builds clone as fork does (ASan can't follow a stack it didn't make):
 * the native kernel tests run both.
 */
#define CUSTODE_SPAWN_VM 1
struct spawn_arg {
	const struct run_opts *o;
	const struct launch *l;
	const sigset_t *old;
	int errfd, unused;
};

static int spawn_child(void *p)
{
	const struct spawn_arg *a = p;

	child_exec(a->o, a->l, a->old, a->errfd);
}

/* clone3 whose child calls fn(arg) on args->stack and exits with its value; the parent gets the pid or -1/errno. */
static long clone3_call(struct clone_args *args, int (*fn)(void *), void *arg)
{
	register long rax __asm__("rax") = SYS_clone3;
	register struct clone_args *rdi __asm__("rdi") = args;
	register long rsi __asm__("rsi") = (long)sizeof(*args);
	register int (*r12)(void *) __asm__("r12") = fn;
	register void *r13 __asm__("r13") = arg;

	__asm__ volatile("syscall\n\t"
			 "test %%rax, %%rax\n\t"
			 "jnz 1f\n\t"
			 /* the child: rsp is the top of its stack (16-aligned) */
			 "xor %%ebp, %%ebp\n\t"
			 "mov %%r13, %%rdi\n\t"
			 "call *%%r12\n\t"
			 "mov %%eax, %%edi\n\t"
			 "mov $60, %%eax\n\t" /* SYS_exit */
			 "syscall\n\t"
			 "ud2\n"
			 "1:"
			 : "+r"(rax)
			 : "r"(rdi), "r"(rsi), "r"(r12), "r"(r13)
			 : "rcx", "r11", "memory", "cc");
	if (rax < 0) {
		errno = (int)-rax;
		return -1;
	}
	return rax;
}

/* Never touched by the launcher itself; one child at a time (CLONE_VFORK). */
static _Alignas(64) char spawn_stack[256 * 1024];
#endif

static pid_t spawn_into(int cgfd, const struct run_opts *o, const struct launch *l, const sigset_t *old, int *errpipe)
{
	struct clone_args args;
	long pid;

	memset(&args, 0, sizeof(args));
	/*
	 * An IPC namespace of its own: the run sees no SysV object or POSIX
	 * message queue of the host's, and the host none of its (the process
	 * class also scopes IPC by owner, for attached runs: docs/process.md).
	 */
	args.flags = CLONE_INTO_CGROUP | CLONE_NEWIPC;
	args.exit_signal = SIGCHLD;
	args.cgroup = (__u64)cgfd;
#ifdef CUSTODE_SPAWN_VM
	{
		/* errpipe[0] is closed in the child by child_exec (close_range) */
		struct spawn_arg a = {.o = o, .l = l, .old = old, .errfd = errpipe[1]};
		char **env = environ;

		args.flags |= CLONE_VM | CLONE_VFORK;
		args.stack = (__u64)(uintptr_t)spawn_stack;
		args.stack_size = sizeof(spawn_stack);
		pid = clone3_call(&args, spawn_child, &a);
		environ = env; /* the child set the run's (child_exec) */
		return (pid_t)pid;
	}
#else
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		close(errpipe[0]);
		child_exec(o, l, old, errpipe[1]);
	}
	return (pid_t)pid;
#endif
}

/*
 * Cancel the run: first the cancelled flag, so every hook denies from this
 * instant (a process racing to fork or exec is refused), then cgroup.kill.
 * CUSTODE_TEST_KILL_DELAY_MS (tests only, at most 5000) widens the gap
 * between the two so the kernel tests can observe the denials.
 */
static void cancel_run(struct launch *l)
{
	struct custode_run run;
	const char *delay = getenv("CUSTODE_TEST_KILL_DELAY_MS");

	if (custode_engine_get_run(&l->e, l->st.cgroup_id, &run) == 0) {
		run.flags |= CUSTODE_RUN_CANCELLED;
		custode_engine_set_run(&l->e, l->st.cgroup_id, &run);
	}
	if (delay) {
		long ms = strtol(delay, NULL, 10);
		if (ms > 0)
			usleep((useconds_t)(ms > 5000 ? 5000 : ms) * 1000);
	}
	custode_cgroup_kill(l->st.cgroup);
}

static void launch_free(struct launch *l)
{
	json_decref(l->bundle_json);
	if (l->lock_fd >= 0)
		close(l->lock_fd);
	for (int i = 0; i < 2; i++) {
		if (l->out_pipe[i] >= 0)
			close(l->out_pipe[i]);
		if (l->err_pipe[i] >= 0)
			close(l->err_pipe[i]);
	}
	custode_pty_close(&l->pty); /* the caller's terminal restored on every path */
	custode_hostaddrs_unwatch(&l->hosts);
	custode_program_free(&l->prog);
	custode_seccomp_free(&l->filter);
	custode_run_env_free(&l->env);
	custode_policy_free(l->policy);
	custode_engine_close(&l->e);
}

/* The launcher while the command runs. */
struct supervision {
	int sfd;                       /* signalfd: SIGCHLD, termination signals, the pty's */
	pid_t child;
	int status;                    /* the command's wait status */
	int cancel_code;               /* the exit code the cancellation decided, -1: none */
	const char *cancelled;         /* "timeout", "output", "signal"; NULL */
	long long timeout_sec;         /* 0: none */
	const char *timeout_source;    /* "--timeout", "policy" */
	struct timespec t_start;
};

/* How the run ended (for the summary and the receipt). */
struct run_end {
	int code;
	int reap_err;
	struct custode_counters counters;
	struct custode_run_peaks peaks;
	struct custode_dns_counters dns;
	bool have_dns;
	__u64 final_version;
	bool ptrace_allowed;
	struct timespec t_end;
	char hex[17];
};

/* The wall clock: --timeout or limits.wallSeconds, whichever is shorter. */
static void run_timeout(const struct run_opts *o, const struct custode_policy *p, struct supervision *sv)
{
	if (o->timeout_sec) {
		sv->timeout_sec = o->timeout_sec;
		sv->timeout_source = "--timeout";
	}
	if (custode_limit_is_set(p, p->limits.wall_seconds) && (!sv->timeout_sec || p->limits.wall_seconds < sv->timeout_sec)) {
		sv->timeout_sec = p->limits.wall_seconds;
		sv->timeout_source = "policy";
	}
}

/* What the child is given (seccomp filter, environment) and where its output goes (pipes, the run's terminal). */
static int launch_io(struct launch *l, struct custode_seccomp_opts *sopts, struct custode_relay *relay,
		     struct custode_refusal *why)
{
	int err;

	sopts->allow_ptrace = l->policy->has_process && l->policy->ptrace_run;
	if ((err = custode_seccomp_build(sopts, &l->filter)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "seccomp filter: %s", strerror(-err));
	if ((err = custode_run_env_build(environ, l->policy, l->user.name, l->st.tmp, &l->env)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "environment: %s", strerror(-err));
	if (custode_limit_is_set(l->policy, l->policy->limits.output_bytes)) {
		/* the output cap needs the bytes to pass through us */
		if (pipe2(l->out_pipe, O_CLOEXEC) < 0 || pipe2(l->err_pipe, O_CLOEXEC) < 0)
			return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "output pipes: %s",
					      strerror(errno));
		relay->cap = l->policy->limits.output_bytes;
		signal(SIGPIPE, SIG_IGN); /* a reader that leaves must not kill the launcher (and orphan the run) */
	}
	if ((err = custode_pty_open(&l->pty)))
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "the run's terminal: %s",
				      strerror(-err));
	l->pty.cap = relay->cap; /* what the run's terminal shows counts against outputBytes too */
	l->pty.written = &relay->written;
	return 0;
}

/*
 * --bundle: raise the version floor, the last thing that can refuse the run
 * (bundle.rollback if another acceptor raised it since the check), so a run
 * refused earlier leaves it where it was (docs/bundles.md).
 */
static int accept_bundle(struct launch *l, struct custode_refusal *why)
{
	if (!l->bundle_pending)
		return 0;
	if (custode_bundle_accept(CUSTODE_BUNDLE_STATE_DIR, &l->bundle_info, NULL, why))
		return -1;
	l->bundle_pending = false;
	return 0;
}

/* Signals to a signalfd, then the command cloned into the run's cgroup; *exec_errno: why exec failed (0: it ran). */
static int launch_start(struct launch *l, const struct run_opts *o, struct custode_relay *relay, struct supervision *sv,
			int *exec_errno, struct custode_refusal *why)
{
	int errpipe[2] = {-1, -1}, cgfd;
	sigset_t mask, old;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	custode_pty_sigmask(&mask);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sv->sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	cgfd = open(l->st.cgroup, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (sv->sfd < 0 || cgfd < 0 || pipe2(errpipe, O_CLOEXEC) < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_RUN_SETUP_FAILED, "launcher setup: %s", strerror(errno));
	if (accept_bundle(l, why))
		return -1;
	fflush(NULL);
	clock_gettime(CLOCK_REALTIME, &sv->t_start);
	sv->child = spawn_into(cgfd, o, l, &old, errpipe);
	if (sv->child < 0)
		return custode_refuse(why, errno, CUSTODE_REASON_CGROUP_FAILED, "clone3 into %s: %s", l->st.cgroup,
				      strerror(errno));
	close(errpipe[1]);
	close(cgfd);
	custode_pty_start(&l->pty);
	if (l->out_pipe[1] >= 0) {
		close(l->out_pipe[1]);
		close(l->err_pipe[1]);
		l->out_pipe[1] = l->err_pipe[1] = -1;
		relay->fd[0] = l->out_pipe[0];
		relay->fd[1] = l->err_pipe[0];
		l->out_pipe[0] = l->err_pipe[0] = -1; /* owned by the relay now */
		fcntl(relay->fd[0], F_SETFL, O_NONBLOCK);
		fcntl(relay->fd[1], F_SETFL, O_NONBLOCK);
	}
	if (read(errpipe[0], exec_errno, sizeof(*exec_errno)) != sizeof(*exec_errno))
		*exec_errno = 0;
	close(errpipe[0]);
	return 0;
}

/* Cancel the run once, for the first of: timeout, output over its cap, a signal. */
static void supervise_cancel(struct launch *l, struct supervision *sv, int code, const char *why)
{
	sv->cancel_code = code;
	sv->cancelled = why;
	cancel_run(l);
}

/*
 * Until the command exits: relay its output, keep the namespace's own
 * addresses current, forward terminal signals, and cancel the run on
 * timeout, output over its cap or a signal to the launcher.
 */
static void supervise(struct launch *l, struct custode_relay *relay, struct supervision *sv)
{
	long long deadline = sv->timeout_sec ? custode_mono_ms() + sv->timeout_sec * 1000LL : 0;
	bool child_done = false;

	while (!child_done) {
		struct pollfd pfd[7] = {{.fd = sv->sfd, .events = POLLIN},
					{.fd = relay->fd[0], .events = POLLIN},
					{.fd = relay->fd[1], .events = POLLIN},
					[6] = {.fd = l->hosts.nl_fd, .events = POLLIN}};
		struct signalfd_siginfo si;
		int wait_ms = -1;
		bool over = false;

		if (deadline) {
			long long now = custode_mono_ms();
			if (now >= deadline && sv->cancel_code < 0) {
				fprintf(stderr, "custode: run: timeout after %lld s: killing the run\n", sv->timeout_sec);
				supervise_cancel(l, sv, EXIT_TIMEOUT, "timeout");
				deadline = 0;
			} else if (deadline) {
				wait_ms = (int)(deadline - now);
			}
		}
		custode_pty_pollfds(&l->pty, pfd + 3);
		if (poll(pfd, 7, wait_ms) <= 0)
			continue;
		if (pfd[6].revents & (POLLIN | POLLERR)) {
			struct custode_refusal hw = {0};

			/* a failed re-read leaves the old entries: they only deny */
			if (custode_hostaddrs_refresh(&l->hosts, &hw))
				fprintf(stderr, "custode: run: %s: %s\n", custode_reason_name(hw.reason), hw.detail);
		}
		for (int i = 0; i < 2; i++)
			if (pfd[1 + i].revents & (POLLIN | POLLHUP | POLLERR))
				over |= custode_relay_drain(relay, i);
		over |= custode_pty_io(&l->pty, pfd + 3);
		if (over && sv->cancel_code < 0) {
			fprintf(stderr, "custode: run: %s: the run wrote more than %lld bytes: killing the run\n",
				custode_reason_name(CUSTODE_REASON_LIMIT_OUTPUT), (long long)relay->cap);
			supervise_cancel(l, sv, EXIT_REFUSED, "output");
		}
		if (!(pfd[0].revents & POLLIN) || read(sv->sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			pid_t w;
			while ((w = waitpid(-1, &sv->status, WNOHANG)) > 0)
				if (w == sv->child)
					child_done = true;
			continue;
		}
		if (custode_pty_signal(&l->pty, (int)si.ssi_signo))
			continue;
		if (sv->cancel_code < 0) {
			fprintf(stderr, "custode: run: %s: killing the run\n", strsignal((int)si.ssi_signo));
			supervise_cancel(l, sv, 128 + (int)si.ssi_signo, "signal");
		}
	}
	/* what the command left in the pipes and its terminal, then (after the kill) what the rest of the run wrote */
	{
		bool over = custode_pty_drain(&l->pty);

		for (int i = 0; i < 2; i++)
			over |= custode_relay_drain(relay, i);
		if (over && sv->cancel_code < 0) {
			sv->cancel_code = EXIT_REFUSED;
			sv->cancelled = "output";
		}
	}
}

/* The receipt (--receipt): what ran, under what, and how it ended. */
static void write_receipt(const struct launch *l, const struct run_opts *o, const struct custode_relay *relay,
			  const struct supervision *sv, const struct run_end *end)
{
	struct custode_receipt rc = {
		.st = &l->st,
		.policy = l->policy,
		.policy_source = l->from.source,
		.policy_ref = l->from.ref,
		.policy_digest = l->from.digest[0] ? l->from.digest : NULL,
		.bundle = l->bundle_json,
		.user = &l->user,
		.argv = o->argv,
		.audit = o->audit || l->policy->audit,
		.egress_keys = l->prog.net.n,
		.private_grants = l->prog.net.n_priv,
		.counters = &end->counters,
		.exit_code = end->code,
		.wait_status = sv->status,
		.cancelled = sv->cancelled,
		.reaped = end->reap_err == 0,
		.started_ns = sv->t_start.tv_sec * 1000000000LL + sv->t_start.tv_nsec,
		.ended_ns = end->t_end.tv_sec * 1000000000LL + end->t_end.tv_nsec,
		.memory_peak = end->peaks.memory,
		.pids_peak = end->peaks.pids,
		.dns = end->have_dns ? &end->dns : NULL,
		.policy_version_at_end = end->final_version,
		.limits = &l->limits,
		.env = &l->env,
		.ptrace_allowed = end->ptrace_allowed,
		.timeout_sec = sv->timeout_sec,
		.timeout_source = sv->timeout_source,
		.output_cap = relay->cap,
		.output_written = relay->written,
	};
	json_t *j = custode_receipt_json(&rc);
	int werr = j ? custode_receipt_write(&o->receipt_dest, j) : -ENOMEM;

	if (werr)
		fprintf(stderr, "custode: run %s: cannot write the receipt to %s: %s\n", end->hex, o->receipt,
			strerror(-werr));
	json_decref(j);
}

/* The command has exited: reap the run, say what it was denied, write the receipt. Returns the exit code. */
static int launch_end(struct launch *l, const struct run_opts *o, struct custode_relay *relay,
		      const struct supervision *sv, bool ptrace_allowed, int exec_errno)
{
	struct run_end end = {.peaks = {-1, -1}, .ptrace_allowed = ptrace_allowed};
	struct custode_run now;
	char summary[1024];

	end.code = sv->cancel_code >= 0 ? sv->cancel_code : exit_status(sv->status);
	if (custode_engine_get_run(&l->e, l->st.cgroup_id, &now) == 0)
		end.final_version = now.policy_version;
	end.reap_err = custode_run_reap(&l->e, &l->st, &l->prog.fs, &l->prog.net, &end.counters, &end.peaks);
	for (int i = 0; i < 2; i++) {
		/* still non-blocking: a writer that escaped the run (an fd passed out) can't hold us here */
		custode_relay_drain(relay, i);
		if (relay->fd[i] >= 0)
			close(relay->fd[i]);
	}
	custode_pty_finish(&l->pty, 2000); /* and the caller's terminal back as it was, before we print */
	clock_gettime(CLOCK_REALTIME, &end.t_end);
	custode_run_id_format(l->st.run_id, end.hex);
	if (end.reap_err)
		fprintf(stderr,
			"custode: run %s: could not empty the run's cgroup (%s); it stays confined and cancelled, "
			"`custode gc` retries\n",
			end.hex, strerror(-end.reap_err));
	if (exec_errno)
		fprintf(stderr, "custode: run: cannot execute '%s': %s\n", o->argv[0], strerror(exec_errno));
	custode_denial_summary(&end.counters, summary, sizeof(summary));
	if (strncmp(summary, "0 denials", 9) != 0)
		fprintf(stderr, "custode: run %s: %s%s\n", end.hex, summary,
			(o->audit || l->policy->audit) ? " (audit: nothing was denied)" : "");
	/* the resolver's counts, for the receipt, before the summary consumes them */
	end.have_dns = custode_resolver_counters(l->st.cgroup_id, &end.dns, false) == 0;
	custode_dns_run_summary(l->st.cgroup_id, summary, sizeof(summary));
	if (summary[0])
		fprintf(stderr, "custode: run %s: resolver: %s%s\n", end.hex, summary,
			(o->audit || l->policy->audit) ? " (audit: nothing was denied)" : "");
	if (o->receipt)
		write_receipt(l, o, relay, sv, &end);
	return end.code;
}

int custode_cmd_run(int argc, char **argv)
{
	struct custode_refusal why = {0};
	/*
	 * Both zeroed by calloc: fresh heap pages stay untouched until used
	 * (a memset of their 180 KB on the stack faulted in 44 pages).
	 */
	struct run_opts *o = calloc(1, sizeof(*o));
	struct launch *l = calloc(1, sizeof(*l));
	struct custode_seccomp_opts sopts = {0};
	struct custode_relay relay = {.fd = {-1, -1}, .cap = -1};
	struct supervision sv = {.sfd = -1, .child = -1, .cancel_code = -1};
	int code, err, exec_errno = 0;

	if (!o || !l) {
		fprintf(stderr, "custode: run: out of memory\n");
		code = EXIT_REFUSED;
		goto out;
	}
	err = custode_run_args_parse(argc, argv, o);
	if (err) {
		code = err > 0 ? 0 : EXIT_REFUSED;
		goto out;
	}
	l->lock_fd = -1;
	l->out_pipe[0] = l->out_pipe[1] = l->err_pipe[0] = l->err_pipe[1] = -1;
	custode_pty_init(&l->pty);
	l->hosts = (struct custode_hostaddr_watch)CUSTODE_HOSTADDR_WATCH_INIT;
	if ((err = custode_run_user_resolve(o->user, &l->user, &why)) || (err = load_policy(o, l, &why))) {
		code = refuse(&why);
		custode_receipt_close(&o->receipt_dest);
		goto out;
	}
	if ((err = custode_host_prepare(&l->e, &why)))
		goto refused;
	if ((err = custode_engine_open(&l->e, run_classes(l->policy), CUSTODE_ENGINE_LOAD, &why)))
		goto refused;
	if ((err = setup(l, o, &why))) {
		setup_undo(l);
		goto refused;
	}
	run_timeout(o, l->policy, &sv);
	if ((err = launch_io(l, &sopts, &relay, &why)) || (err = launch_start(l, o, &relay, &sv, &exec_errno, &why))) {
		setup_undo(l);
		goto refused;
	}
	supervise(l, &relay, &sv);
	code = launch_end(l, o, &relay, &sv, sopts.allow_ptrace, exec_errno);
	close(sv.sfd);
	launch_free(l);
	custode_receipt_close(&o->receipt_dest);
	goto out;

refused:
	launch_free(l);
	custode_receipt_close(&o->receipt_dest);
	code = refuse(&why);
out:
	free(l);
	free(o);
	return code;
}
