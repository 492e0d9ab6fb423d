// SPDX-License-Identifier: Apache-2.0
/*
 * Issue 13, class 3: IPC objects outside the run (docs/process.md "IPC").
 * The host's SysV shared memory, message queues and semaphore sets and its
 * POSIX message queues are made by a host process of the run's own uid
 * (nobody), so the kernel's own checks allow every access (the CONTROL: an
 * unrelated nobody process outside any run reads the secret, receives the
 * message, changes the semaphore, empties the queue). Then:
 *
 *   - a launched run has an IPC namespace of its own: it can't even find them
 *     (ENOENT by key or name, EINVAL by id), and a queue reached through a
 *     host mqueue mount it can see is refused (file_open, process.ipc.denied);
 *   - an attached run (a host process moved into a run's cgroup: no seccomp
 *     filter, the host's IPC namespace) finds them but every access is
 *     refused (ipcperms -> EACCES, the *ctl commands -> EPERM, mq_open ->
 *     EACCES), recorded as process.ipc.denied, and the objects are unchanged;
 *   - another run's objects are refused the same way (two runs, root too);
 *   - a run's own objects work between its processes (launched and attached).
 */
#include <errno.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>

#include "ipcutil.h"

#define PROC_NONE POLICY("ipc-proc", "{\"process\":{}}")
#define NO_PROC POLICY("ipc-noproc", "{\"limits\":{\"pids\":512}}")

/* Keys and names of this test process: nothing another test (or a rerun) made collides. */
static int key_base(void)
{
	return 0x1c000000 | ((getpid() & 0xffff) << 8);
}

/* The host's objects, made by a nobody process outside any run. */
struct hobj {
	int base;
	char shm_key[16], msg_key[16], sem_key[16], mq[64];
	int shm, shm_priv, msg, sem;
};

static bool host_objects(struct hobj *h, int base, const char *tag)
{
	static struct ktest_result r;

	memset(h, 0, sizeof(*h));
	h->base = base;
	snprintf(h->shm_key, sizeof(h->shm_key), "%#x", base + 1);
	snprintf(h->msg_key, sizeof(h->msg_key), "%#x", base + 2);
	snprintf(h->sem_key, sizeof(h->sem_key), "%#x", base + 3);
	snprintf(h->mq, sizeof(h->mq), "/ktest-%s-%d", tag, (int)getpid());
	h->shm = (int)ip_val(ip_host(&r, NOBODY, ARGS("shm-create", h->shm_key, "host-secret")));
	h->shm_priv = (int)ip_val(ip_host(&r, NOBODY, ARGS("shm-create", "private", "host-private-secret")));
	h->msg = (int)ip_val(ip_host(&r, NOBODY, ARGS("msg-create", h->msg_key, "host-message")));
	h->sem = (int)ip_val(ip_host(&r, NOBODY, ARGS("sem-create", h->sem_key)));
	return ASSERT_TRUE(h->shm >= 0 && h->shm_priv >= 0 && h->msg >= 0 && h->sem >= 0, "host SysV objects") &&
	       ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-create", h->mq, "host-mq")), "ok", "host mqueue");
}

static void host_cleanup(struct hobj *h)
{
	if (h->shm > 0 || h->shm_priv > 0 || h->msg > 0 || h->sem > 0 || h->mq[0]) {
		shmctl(h->shm, IPC_RMID, NULL);
		shmctl(h->shm_priv, IPC_RMID, NULL);
		msgctl(h->msg, IPC_RMID, NULL);
		semctl(h->sem, 0, IPC_RMID);
		if (h->mq[0]) {
			static struct ktest_result r;
			ip_host(&r, -1, ARGS("mq-unlink", h->mq));
		}
	}
}

/* The host's objects are as the host left them: read by root, outside any run. */
static void host_unchanged(struct hobj *h, int sem_value, const char *when)
{
	static struct ktest_result r;
	struct shmid_ds ds;

	ASSERT_STREQ(ip_host(&r, -1, ARGS("shm-read", ip_fmt("%d", h->shm))), "ok host-secret", when);
	ASSERT_STREQ(ip_host(&r, -1, ARGS("shm-read", ip_fmt("%d", h->shm_priv))), "ok host-private-secret", when);
	if (ASSERT_EQ(shmctl(h->shm, IPC_STAT, &ds), 0, when))
		ASSERT_EQ(ds.shm_perm.mode & 0777, 0666, "shm mode unchanged");
	ASSERT_STREQ(ip_host(&r, -1, ARGS("msg-peek", ip_fmt("%d", h->msg))), "ok host-message", when);
	ASSERT_EQ(semctl(h->sem, 0, GETVAL), sem_value, "semaphore value unchanged");
	ASSERT_STREQ(ip_host(&r, -1, ARGS("shm-get", h->shm_key)), ip_fmt("ok %d", h->shm), "the key still names it");
}

/*
 * CONTROL: a nobody process outside any run (the run's uid) uses every
 * host object — the kernel allows it. Leaves the semaphore at 2 and the
 * queue with its message.
 */
static void control_outside(struct hobj *h)
{
	static struct ktest_result r;
	const char *shm = ip_fmt("%d", h->shm), *msg = ip_fmt("%d", h->msg), *sem = ip_fmt("%d", h->sem);

	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-get", h->shm_key)), ip_fmt("ok %d", h->shm), "control: shmget by key");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-read", shm)), "ok host-secret", "control: shmat reads the secret");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-read", ip_fmt("%d", h->shm_priv))), "ok host-private-secret",
		     "control: shmat of an IPC_PRIVATE segment by id");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-stat", shm)), "ok", "control: IPC_STAT");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-statany", shm)), "ok", "control: SHM_STAT_ANY finds it");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-get", h->msg_key)), ip_fmt("ok %d", h->msg), "control: msgget");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-peek", msg)), "ok host-message", "control: msgrcv(MSG_COPY)");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-recv", msg)), "ok host-message", "control: msgrcv");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-send", msg, "host-message")), "ok", "control: msgsnd (put back)");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-stat", msg)), "ok", "control: msgctl IPC_STAT");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-get", h->sem_key)), ip_fmt("ok %d", h->sem), "control: semget");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-op", sem, "1")), "ok", "control: semop");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-getval", sem)), "ok 2", "control: GETVAL sees it");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-recv", h->mq)), "ok host-mq", "control: mq_receive");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-send", h->mq, "host-mq")), "ok", "control: mq_send (put back)");
	ASSERT_EQ(semctl(h->sem, 0, GETVAL), 2, "control changed the semaphore");
}

/* The destructive controls, on objects of their own: a nobody outside may remove and re-mode the host's. */
static void control_destructive(int base)
{
	static struct ktest_result r;
	const char *k = ip_fmt("%#x", base + 0x60), *q = ip_fmt("/ktest-ipc-sacrifice-%d", (int)getpid());
	int shm = (int)ip_val(ip_host(&r, NOBODY, ARGS("shm-create", k, "x")));
	int msg = (int)ip_val(ip_host(&r, NOBODY, ARGS("msg-create", k, "x")));
	int sem = (int)ip_val(ip_host(&r, NOBODY, ARGS("sem-create", k)));

	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-set", ip_fmt("%d", shm), "0600")), "ok", "control: shm IPC_SET");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-rmid", ip_fmt("%d", shm))), "ok", "control: shm IPC_RMID");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-set", ip_fmt("%d", msg), "0600")), "ok", "control: msg IPC_SET");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-rmid", ip_fmt("%d", msg))), "ok", "control: msg IPC_RMID");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-setval", ip_fmt("%d", sem), "5")), "ok", "control: SETVAL");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-set", ip_fmt("%d", sem), "0600")), "ok", "control: sem IPC_SET");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-rmid", ip_fmt("%d", sem))), "ok", "control: sem IPC_RMID");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-create", q, "x")), "ok", "sacrificial queue");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-unlink", q)), "ok", "control: mq_unlink");
}

KTEST(attack_ipc_host_objects_launched_run)
{
	static struct ktest_result r;
	const char *pols[2];
	struct ktest_dirs d;
	struct hobj h;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pols[0] = pu_policy(d.root, "proc", PROC_NONE);
	pols[1] = pu_policy(d.root, "noproc", NO_PROC);
	ip_warm(pols[0]);
	if (!host_objects(&h, key_base(), "ipc-launched"))
		goto out;
	control_outside(&h);

	/* every launched run, with a process section or without: the namespace is the launcher's doing */
	for (int i = 0; i < 2; i++) {
		const char *const *run = ARGS("--policy", pols[i]);
		const char *shm = ip_fmt("%d", h.shm), *msg = ip_fmt("%d", h.msg), *sem = ip_fmt("%d", h.sem);
		const char *what = i ? "run without a process section" : "run";

		ktest_log("%s", what);
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-get", h.shm_key)), "ENOENT", "run: shmget by the host's key");
		ASSERT_TRUE(ip_val(ip_run(&r, run, ARGS("shm-get-create", h.shm_key))) >= 0,
			    "run: shmget(IPC_CREAT) of the host's key makes a new segment of its own");
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-read", shm)), "EINVAL", "run: shmat by the host's id");
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-read", ip_fmt("%d", h.shm_priv))), "EINVAL",
			     "run: shmat of the host's IPC_PRIVATE segment");
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-stat", shm)), "EINVAL", "run: IPC_STAT");
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-statany", shm)), "ENOENT", "run: SHM_STAT_ANY finds nothing");
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-set", shm, "0600")), "EINVAL", "run: IPC_SET");
		ASSERT_STREQ(ip_run(&r, run, ARGS("shm-rmid", shm)), "EINVAL", "run: IPC_RMID");
		ASSERT_STREQ(ip_run(&r, run, ARGS("msg-get", h.msg_key)), "ENOENT", "run: msgget");
		ASSERT_STREQ(ip_run(&r, run, ARGS("msg-recv", msg)), "EINVAL", "run: msgrcv");
		ASSERT_STREQ(ip_run(&r, run, ARGS("msg-send", msg, "spoof")), "EINVAL", "run: msgsnd");
		ASSERT_STREQ(ip_run(&r, run, ARGS("msg-statany", msg)), "ENOENT", "run: MSG_STAT_ANY");
		ASSERT_STREQ(ip_run(&r, run, ARGS("msg-rmid", msg)), "EINVAL", "run: msgctl IPC_RMID");
		ASSERT_STREQ(ip_run(&r, run, ARGS("sem-get", h.sem_key)), "ENOENT", "run: semget");
		ASSERT_STREQ(ip_run(&r, run, ARGS("sem-op", sem, "1")), "EINVAL", "run: semop");
		ASSERT_STREQ(ip_run(&r, run, ARGS("sem-getval", sem)), "EINVAL", "run: GETVAL");
		ASSERT_STREQ(ip_run(&r, run, ARGS("sem-statany", sem)), "ENOENT", "run: SEM_STAT_ANY");
		ASSERT_STREQ(ip_run(&r, run, ARGS("sem-rmid", sem)), "EINVAL", "run: semctl IPC_RMID");
		ASSERT_STREQ(ip_run(&r, run, ARGS("mq-recv", h.mq)), "ENOENT", "run: mq_open/mq_receive");
		ASSERT_STREQ(ip_run(&r, run, ARGS("mq-send", h.mq, "spoof")), "ENOENT", "run: mq_send");
		ASSERT_STREQ(ip_run(&r, run, ARGS("mq-unlink", h.mq)), "ENOENT", "run: mq_unlink");
		/* a queue of the host's name, made in the run, is the run's own and leaves the host's alone */
		ASSERT_STREQ(ip_run(&r, run, ARGS("mq-create", h.mq, "run-mq")), "ok", "run: mq_open(O_CREAT|O_EXCL) of that name");
		host_unchanged(&h, 2, what);
	}
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-recv", h.mq)), "ok host-mq", "the host's queue kept its message");
	control_destructive(key_base());
out:
	host_cleanup(&h);
}

/* Mount the host namespace's mqueue filesystem at dir (the guest mounts none at /dev/mqueue). */
static bool mount_mqueue(const char *dir)
{
	if (mkdir(dir, 0755) && errno != EEXIST)
		return false;
	return mount("mqueue", dir, "mqueue", 0, NULL) == 0;
}

KTEST(attack_ipc_host_mqueue_mount_launched_run)
{
	static struct ktest_result r;
	char mnt[400], path[480], fname[80];
	const char *pol, *run_q;
	struct ktest_dirs d;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	snprintf(mnt, sizeof(mnt), "%s/mqueue", d.root);
	if (!ASSERT_TRUE(mount_mqueue(mnt), "mount mqueue"))
		return;
	snprintf(fname, sizeof(fname), "ktest-mqmnt-%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/%s", mnt, fname);
	if (!ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-create", ip_fmt("/%s", fname), "host-mq")), "ok", "host queue"))
		goto out;

	/* CONTROL: through the mount, a nobody outside reads the queue's status and lists the queues */
	ASSERT_CONTAINS(ip_host(&r, NOBODY, ARGS("open", path)), "ok QSIZE:8", "control: open the queue's file");
	ASSERT_CONTAINS(ip_host(&r, NOBODY, ARGS("ls", mnt)), fname, "control: list the host's queues");

	/* a launched run sees the host's mount (not its own namespace's queues): refused */
	ktest_events();
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("open", path)), "EACCES", "run: open a host queue by path");
	ASSERT_CONTAINS(r.err, "process.ipc.denied=1", "counted");
	ev = ktest_events();
	ASSERT_TRUE(ktest_find_event(ev, "file_open", "process.ipc.denied", NULL) != NULL, "file_open event");
	json_decref(ev);
	/* the mount's root was not made by the run either: its listing is refused too */
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("ls", mnt)), "EACCES", "run: list the host's queues");
	ASSERT_CONTAINS(r.err, "process.ipc.denied", "counted");
	/* its own namespace's queue of the same name is a different queue, and works */
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("mq-recv", ip_fmt("/%s", fname))), "ENOENT",
		     "run: the name is not in its namespace");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("mq-share", ip_fmt("/%s", fname))), "ok",
		     "run: a queue of its own, parent and child");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-recv", ip_fmt("/%s", fname))), "ok host-mq",
		     "the host's queue is untouched");

	/* a queue the run creates through the host's mount is its own: it may use it */
	run_q = ip_fmt("%s/run-made-%d", mnt, (int)getpid());
	ktest_run(pu_argv(ARGS("--policy", pol),
			  ARGS("/bin/sh", "-c", ip_fmt(": > %s && %s open %s", run_q, ktest_helper("ipcprobe"), run_q))),
		  -1, 120000, &r);
	ASSERT_CONTAINS(ip_out(&r), "ok QSIZE:0", "run: a queue it made through the mount");
out:
	ip_host(&r, -1, ARGS("mq-unlink", ip_fmt("/%s", fname)));
	ip_host(&r, -1, ARGS("mq-unlink", ip_fmt("/run-made-%d", (int)getpid())));
	umount2(mnt, MNT_DETACH);
}

/* Every access of an attached process to the host's objects: refused, counted, recorded. */
static void attached_refused(struct ip_srv *s, struct hobj *h, const char *who)
{
	const char *shm = ip_fmt("%d", h->shm), *msg = ip_fmt("%d", h->msg), *sem = ip_fmt("%d", h->sem);
	json_t *ev;

	ktest_log("%s", who);
	ktest_events();
	/* shared memory: ipcperms (EACCES) for get, attach and stat; the *ctl hook (EPERM) for the rest */
	ASSERT_STREQ(ip_ask(s, "shm-get %s", h->shm_key), "EACCES", "attached: shmget by key");
	ASSERT_STREQ(ip_ask(s, "shm-get-create %s", h->shm_key), "EACCES", "attached: shmget(IPC_CREAT) of the key");
	ASSERT_STREQ(ip_ask(s, "shm-read %s", shm), "EACCES", "attached: shmat by id (read)");
	ASSERT_STREQ(ip_ask(s, "shm-write %s spoof", shm), "EACCES", "attached: shmat by id (write)");
	ASSERT_STREQ(ip_ask(s, "shm-read %d", h->shm_priv), "EACCES", "attached: shmat of an IPC_PRIVATE segment");
	ASSERT_STREQ(ip_ask(s, "shm-stat %s", shm), "EACCES", "attached: IPC_STAT");
	ASSERT_STREQ(ip_ask(s, "shm-statany %s", shm), "EPERM", "attached: SHM_STAT_ANY");
	ASSERT_STREQ(ip_ask(s, "shm-set %s 0600", shm), "EPERM", "attached: IPC_SET");
	ASSERT_STREQ(ip_ask(s, "shm-lock %s", shm), "EPERM", "attached: SHM_LOCK");
	ASSERT_STREQ(ip_ask(s, "shm-rmid %s", shm), "EPERM", "attached: IPC_RMID");
	/* message queues */
	ASSERT_STREQ(ip_ask(s, "msg-get %s", h->msg_key), "EACCES", "attached: msgget");
	ASSERT_STREQ(ip_ask(s, "msg-recv %s", msg), "EACCES", "attached: msgrcv");
	ASSERT_STREQ(ip_ask(s, "msg-peek %s", msg), "EACCES", "attached: msgrcv(MSG_COPY)");
	ASSERT_STREQ(ip_ask(s, "msg-send %s spoof", msg), "EACCES", "attached: msgsnd");
	ASSERT_STREQ(ip_ask(s, "msg-stat %s", msg), "EACCES", "attached: msgctl IPC_STAT");
	ASSERT_STREQ(ip_ask(s, "msg-statany %s", msg), "EPERM", "attached: MSG_STAT_ANY");
	ASSERT_STREQ(ip_ask(s, "msg-set %s 0600", msg), "EPERM", "attached: msgctl IPC_SET");
	ASSERT_STREQ(ip_ask(s, "msg-rmid %s", msg), "EPERM", "attached: msgctl IPC_RMID");
	/* semaphores */
	ASSERT_STREQ(ip_ask(s, "sem-get %s", h->sem_key), "EACCES", "attached: semget");
	ASSERT_STREQ(ip_ask(s, "sem-op %s 1", sem), "EACCES", "attached: semop +1");
	ASSERT_STREQ(ip_ask(s, "sem-op %s -1", sem), "EACCES", "attached: semop -1");
	ASSERT_STREQ(ip_ask(s, "sem-getval %s", sem), "EACCES", "attached: GETVAL");
	ASSERT_STREQ(ip_ask(s, "sem-getall %s", sem), "EACCES", "attached: GETALL");
	ASSERT_STREQ(ip_ask(s, "sem-setval %s 9", sem), "EACCES", "attached: SETVAL");
	ASSERT_STREQ(ip_ask(s, "sem-stat %s", sem), "EACCES", "attached: semctl IPC_STAT");
	ASSERT_STREQ(ip_ask(s, "sem-statany %s", sem), "EPERM", "attached: SEM_STAT_ANY");
	ASSERT_STREQ(ip_ask(s, "sem-set %s 0600", sem), "EPERM", "attached: semctl IPC_SET");
	ASSERT_STREQ(ip_ask(s, "sem-rmid %s", sem), "EPERM", "attached: semctl IPC_RMID");
	/* POSIX message queues: the open is refused */
	ASSERT_STREQ(ip_ask(s, "mq-open %s", h->mq), "EACCES", "attached: mq_open");
	ASSERT_STREQ(ip_ask(s, "mq-recv %s", h->mq), "EACCES", "attached: mq_receive");
	ASSERT_STREQ(ip_ask(s, "mq-send %s spoof", h->mq), "EACCES", "attached: mq_send");

	ev = ktest_events();
	ASSERT_TRUE(ip_event(ev, "ipc_permission", "process.ipc.denied", s->pid) != NULL, "ipc_permission event");
	ASSERT_TRUE(ip_event(ev, "ipc_ctl", "process.ipc.denied", s->pid) != NULL, "ipc_ctl event");
	ASSERT_TRUE(ip_event(ev, "file_open", "process.ipc.denied", s->pid) != NULL, "file_open event (mqueue)");
	/* one record per refusal at least (the *_STAT_ANY walks meet every object of the host) */
	ASSERT_TRUE(ip_count(ev, "process.ipc.denied", s->pid) >= 31, "every refusal recorded");
	json_decref(ev);
}

KTEST(attack_ipc_host_objects_attached_run)
{
	static struct ktest_result r;
	struct ip_target run = {0};
	struct ip_srv a = {0}, b = {0}, root = {0};
	char receipt[400];
	struct ktest_dirs d;
	struct hobj h;
	const char *pol, *k, *q;
	int own, late;
	json_t *rc;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	snprintf(receipt, sizeof(receipt), "%s/receipt.json", d.root);
	if (!host_objects(&h, key_base(), "ipc-attached"))
		goto out;
	control_outside(&h);
	/* the same serve process, outside any run: every operation works (its control) */
	if (!ASSERT_TRUE(ip_serve(&a, NOBODY), "serve"))
		goto out;
	ASSERT_STREQ(ip_ask(&a, "shm-read %d", h.shm), "ok host-secret", "control: before the move");
	ASSERT_STREQ(ip_ask(&a, "mq-open %s", h.mq), "ok", "control: mq_open before the move");

	if (!ASSERT_TRUE(ip_run_target(&run, ARGS("--policy", pol, "--receipt", receipt), ARGS("target")), "a run"))
		goto out;
	if (!ASSERT_TRUE(ip_attach(&a, run.pid), "attach the serve process"))
		goto out;
	attached_refused(&a, &h, "nobody moved into the run");
	/* root with every capability (CAP_IPC_OWNER, CAP_SYS_ADMIN) moved in: the same */
	if (ASSERT_TRUE(ip_serve_in(&root, -1, run.pid), "root in the run")) {
		ASSERT_STREQ(ip_ask(&root, "shm-read %d", h.shm), "EACCES", "root attached: shmat");
		ASSERT_STREQ(ip_ask(&root, "shm-rmid %d", h.shm), "EPERM", "root attached: IPC_RMID");
		ASSERT_STREQ(ip_ask(&root, "msg-recv %d", h.msg), "EACCES", "root attached: msgrcv");
		ASSERT_STREQ(ip_ask(&root, "sem-rmid %d", h.sem), "EPERM", "root attached: semctl IPC_RMID");
		ASSERT_STREQ(ip_ask(&root, "mq-recv %s", h.mq), "EACCES", "root attached: mq_receive");
	}
	host_unchanged(&h, 2, "after the attached attempts");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-recv", h.mq)), "ok host-mq", "the host's queue kept its message");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-send", h.mq, "host-mq")), "ok", "(put back)");

	/* objects the host makes after the run started: the host's too */
	k = ip_fmt("%#x", key_base() + 0x10);
	late = (int)ip_val(ip_host(&r, NOBODY, ARGS("shm-create", k, "late-secret")));
	ASSERT_TRUE(late >= 0, "a later host segment");
	ASSERT_STREQ(ip_ask(&a, "shm-get %s", k), "EACCES", "attached: a segment the host made later");
	ASSERT_STREQ(ip_ask(&a, "shm-read %d", late), "EACCES", "attached: shmat of it");

	/* ordinary workload: objects the run makes are its own, across its processes */
	ASSERT_STREQ(ip_ask(&a, "shm-share"), "ok", "attached: shm shared with its child");
	ASSERT_STREQ(ip_ask(&a, "shm-share-key %#x", key_base() + 0x11), "ok", "attached: shm by key in its child");
	ASSERT_STREQ(ip_ask(&a, "msg-share"), "ok", "attached: msg queue with its child");
	ASSERT_STREQ(ip_ask(&a, "sem-share"), "ok", "attached: semaphore with its child");
	ASSERT_STREQ(ip_ask(&a, "mq-share /ktest-ipc-own-%d", (int)getpid()), "ok", "attached: mqueue with its child");
	k = ip_fmt("%#x", key_base() + 0x12);
	q = ip_fmt("/ktest-ipc-run-%d", (int)getpid());
	own = (int)ip_val(ip_ask(&a, "shm-create %s run-data", k));
	ASSERT_TRUE(own >= 0, "attached: a segment of the run's");
	ASSERT_STREQ(ip_ask(&a, "mq-create %s run-mq", q), "ok", "attached: a queue of the run's");
	/* another process of the same run (moved in separately) uses them */
	if (ASSERT_TRUE(ip_serve_in(&b, NOBODY, run.pid), "a second process in the run")) {
		ASSERT_STREQ(ip_ask(&b, "shm-get %s", k), ip_fmt("ok %d", own), "same run: shmget");
		ASSERT_STREQ(ip_ask(&b, "shm-read %d", own), "ok run-data", "same run: shmat");
		ASSERT_STREQ(ip_ask(&b, "shm-stat %d", own), "ok", "same run: IPC_STAT");
		ASSERT_STREQ(ip_ask(&b, "mq-recv %s", q), "ok run-mq", "same run: mq_receive");
		/* the host is trusted: it may use the run's objects */
		ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-read", ip_fmt("%d", own))), "ok run-data",
			     "the host reads the run's segment");
		ASSERT_STREQ(ip_ask(&b, "shm-rmid %d", own), "ok", "same run: IPC_RMID of its own");
		ASSERT_STREQ(ip_ask(&b, "mq-unlink %s", q), "ok", "same run: mq_unlink of its own");
	}
	ip_serve_end(&a);
	ip_serve_end(&b);
	ip_serve_end(&root);
	ASSERT_EQ(ip_target_stop(&run), 0, "the run ends");
	rc = pu_load_json(receipt);
	ASSERT_TRUE(pu_denials(rc, "process.ipc.denied") >= 38, "counted in the run's receipt");
	json_decref(rc);
	if (late >= 0)
		shmctl(late, IPC_RMID, NULL);
out:
	ip_serve_end(&a);
	ip_serve_end(&b);
	ip_serve_end(&root);
	ip_target_stop(&run);
	host_cleanup(&h);
}

KTEST(attack_ipc_other_run_objects)
{
	static struct ktest_result r;
	struct ip_target ra = {0}, rb = {0}, rc_ns = {0};
	struct ip_srv a = {0}, b = {0}, broot = {0};
	const char *pol, *k, *mk, *sk, *q, *nk;
	struct ktest_dirs d;
	int shm, msg, sem, nsid;
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	k = ip_fmt("%#x", key_base() + 0x21);
	mk = ip_fmt("%#x", key_base() + 0x22);
	sk = ip_fmt("%#x", key_base() + 0x23);
	nk = ip_fmt("%#x", key_base() + 0x24);
	q = ip_fmt("/ktest-ipc-runa-%d", (int)getpid());
	if (!ASSERT_TRUE(ip_run_target(&ra, ARGS("--policy", pol), ARGS("target")), "run A") ||
	    !ASSERT_TRUE(ip_run_target(&rb, ARGS("--policy", pol), ARGS("target")), "run B") ||
	    !ASSERT_TRUE(ip_serve_in(&a, NOBODY, ra.pid), "a process attached to A") ||
	    !ASSERT_TRUE(ip_serve_in(&b, NOBODY, rb.pid), "a process attached to B") ||
	    !ASSERT_TRUE(ip_serve_in(&broot, -1, rb.pid), "root attached to B"))
		goto out;
	/* run A's objects, in the host's namespace */
	shm = (int)ip_val(ip_ask(&a, "shm-create %s run-a-secret", k));
	msg = (int)ip_val(ip_ask(&a, "msg-create %s run-a-message", mk));
	sem = (int)ip_val(ip_ask(&a, "sem-create %s", sk));
	if (!ASSERT_TRUE(shm >= 0 && msg >= 0 && sem >= 0, "run A's SysV objects") ||
	    !ASSERT_STREQ(ip_ask(&a, "mq-create %s run-a-mq", q), "ok", "run A's queue"))
		goto out;
	/* CONTROL: they exist and the kernel lets the uid in (a nobody outside any run) */
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("shm-read", ip_fmt("%d", shm))), "ok run-a-secret", "control: shmat");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("msg-peek", ip_fmt("%d", msg))), "ok run-a-message", "control: msgrcv");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("sem-getval", ip_fmt("%d", sem))), "ok 1", "control: GETVAL");
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("mq-open", q)), "ok", "control: mq_open");

	ktest_events();
	ASSERT_STREQ(ip_ask(&b, "shm-get %s", k), "EACCES", "run B: shmget of A's key");
	ASSERT_STREQ(ip_ask(&b, "shm-read %d", shm), "EACCES", "run B: shmat of A's segment");
	ASSERT_STREQ(ip_ask(&b, "shm-rmid %d", shm), "EPERM", "run B: IPC_RMID of A's segment");
	ASSERT_STREQ(ip_ask(&b, "msg-recv %d", msg), "EACCES", "run B: msgrcv");
	ASSERT_STREQ(ip_ask(&b, "msg-send %d spoof", msg), "EACCES", "run B: msgsnd");
	ASSERT_STREQ(ip_ask(&b, "sem-op %d -1", sem), "EACCES", "run B: semop");
	ASSERT_STREQ(ip_ask(&b, "sem-rmid %d", sem), "EPERM", "run B: semctl IPC_RMID");
	ASSERT_STREQ(ip_ask(&b, "mq-recv %s", q), "EACCES", "run B: mq_receive");
	ASSERT_STREQ(ip_ask(&broot, "shm-read %d", shm), "EACCES", "root in run B: shmat");
	ASSERT_STREQ(ip_ask(&broot, "msg-rmid %d", msg), "EPERM", "root in run B: msgctl IPC_RMID");
	ASSERT_STREQ(ip_ask(&broot, "mq-recv %s", q), "EACCES", "root in run B: mq_receive");
	ev = ktest_events();
	ASSERT_TRUE(ip_event(ev, "ipc_permission", "process.ipc.denied", b.pid) != NULL, "ipc_permission event");
	ASSERT_TRUE(ip_event(ev, "ipc_ctl", "process.ipc.denied", broot.pid) != NULL, "ipc_ctl event");
	ASSERT_TRUE(ip_event(ev, "file_open", "process.ipc.denied", b.pid) != NULL, "file_open event");
	json_decref(ev);
	/* a launched run: another namespace altogether */
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("shm-get", k)), "ENOENT", "a launched run: shmget");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("mq-open", q)), "ENOENT", "a launched run: mq_open");
	/* run A still owns them */
	ASSERT_STREQ(ip_ask(&a, "shm-read %d", shm), "ok run-a-secret", "run A: its segment");
	ASSERT_STREQ(ip_ask(&a, "msg-recv %d", msg), "ok run-a-message", "run A: its message");
	ASSERT_STREQ(ip_ask(&a, "sem-op %d -1", sem), "ok", "run A: its semaphore");
	ASSERT_STREQ(ip_ask(&a, "mq-recv %s", q), "ok run-a-mq", "run A: its queue");
	ASSERT_STREQ(ip_ask(&a, "shm-rmid %d", shm), "ok", "run A: IPC_RMID");
	ASSERT_STREQ(ip_ask(&a, "msg-rmid %d", msg), "ok", "run A: msgctl IPC_RMID");
	ASSERT_STREQ(ip_ask(&a, "sem-rmid %d", sem), "ok", "run A: semctl IPC_RMID");
	ASSERT_STREQ(ip_ask(&a, "mq-unlink %s", q), "ok", "run A: mq_unlink");

	/* a launched run's own namespace: a root process of another run can't enter it */
	if (ASSERT_TRUE(ip_run_target(&rc_ns, ARGS("--policy", pol), ARGS("wait", "shm-create", nk, "run-c-secret")),
			"run C")) {
		nsid = (int)ip_val(ip_go(&rc_ns));
		ASSERT_TRUE(nsid >= 0, "run C's segment, in its namespace");
		ASSERT_STREQ(ip_host(&r, -1, ARGS("nsipc-shm-get", ip_fmt("%d", rc_ns.pid), nk)), ip_fmt("ok %d", nsid),
			     "control: root outside enters run C's IPC namespace and finds it");
		ktest_events();
		ASSERT_STREQ(ip_ask(&broot, "nsipc-shm-get %d %s", rc_ns.pid, nk), "EACCES",
			     "root in run B: /proc/PID/ns/ipc of run C");
		ev = ktest_events();
		ASSERT_TRUE(ip_event(ev, "ptrace_access_check", "process.ptrace.denied", broot.pid) != NULL,
			    "refused as access to another run's process");
		json_decref(ev);
		ASSERT_EQ(ip_target_stop(&rc_ns), 0, "run C ends");
	}
out:
	ip_serve_end(&a);
	ip_serve_end(&b);
	ip_serve_end(&broot);
	ip_target_stop(&ra);
	ip_target_stop(&rb);
	ip_target_stop(&rc_ns);
}

KTEST(attack_ipc_run_own_objects_workload)
{
	static struct ktest_result r;
	const char *pol, *sh;
	struct ktest_dirs d;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("shm-share")), "ok", "run: shm with its child");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("shm-share-key", "0x1234")), "ok", "run: shm by key");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("msg-share")), "ok", "run: msg queue");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("sem-share")), "ok", "run: semaphore");
	ASSERT_STREQ(ip_run(&r, ARGS("--policy", pol), ARGS("mq-share", "/ktest-own")), "ok", "run: mqueue");
	/* separate programs of one run, by key and name (a shell running them one after the other) */
	sh = ip_fmt("p=%s; id=$($p shm-create 0x4242 shared | cut -d' ' -f2) && $p shm-read $id && "
		    "m=$($p msg-create 0x4243 note | cut -d' ' -f2) && $p msg-recv $m && "
		    "s=$($p sem-create 0x4244 | cut -d' ' -f2) && $p sem-op $s -1 && "
		    "$p mq-create /q note2 && $p mq-recv /q && $p mq-unlink /q && $p shm-rmid $id",
		    ktest_helper("ipcprobe"));
	ktest_run(pu_argv(ARGS("--policy", pol), ARGS("/bin/sh", "-c", sh)), -1, 120000, &r);
	ASSERT_STREQ(r.out, "ok shared\nok note\nok\nok\nok note2\nok\nok\n", "run: programs share objects by key and name");
	ASSERT_TRUE(strstr(r.err, "process.ipc.denied") == NULL, "nothing refused");
}

/* POSIX shared memory is files in /dev/shm: the file policy's business (the read profile has no /dev/shm). */
KTEST(attack_ipc_posix_shm_file_policy)
{
	static struct ktest_result r;
	const char *name = ip_fmt("/ktest-pshm-%d", (int)getpid()), *pol;
	struct ktest_dirs d;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "proc", PROC_NONE);
	ip_warm(pol);
	if (!ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("pshm-create", name, "host-pshm")), "ok", "host shm_open"))
		return;
	ASSERT_STREQ(ip_host(&r, NOBODY, ARGS("pshm-read", name)), "ok host-pshm", "control: shm_open outside");
	ASSERT_STREQ(ip_run(&r, ARGS("--profile", "read"), ARGS("pshm-read", name)), "EACCES", "read profile: shm_open");
	ASSERT_CONTAINS(r.err, "file.", "a file reason");
	/* a process-only policy has no file rules: /dev/shm is as open to it as /tmp (logged, not asserted) */
	ktest_log("process-only policy, shm_open of the host's: %s", ip_run(&r, ARGS("--policy", pol), ARGS("pshm-read", name)));
	unlink(ip_fmt("/dev/shm%s", name));
}
