// SPDX-License-Identifier: Apache-2.0
/*
 * ipcprobe: IPC and scheduling probes for the kernel tests (issue 13,
 * classes 3 and 4). Each operation prints one line, "ok" (with a value for
 * the creating and reading operations: "ok ID", "ok TEXT") or the errno's
 * name (EPERM, EACCES, ...), and exits 0 on success, 1 on failure, 2 on
 * usage errors. umask is 0, so objects made with mode 0666 are.
 *
 * Modes:
 *   ipcprobe target              setsid (own session, process group and autogroup), one extra
 *                                thread, a touched page; print "ready PID TID ADDR"; block
 *                                until stdin closes
 *   ipcprobe wait OP ...         setpgid(0,0), print "ready PID", read a line, do OP, then block
 *                                until stdin closes (holds what OP made, e.g. a namespace's queue)
 *   ipcprobe serve               setpgid(0,0), print "ready PID", then one OP per stdin line
 *                                (words separated by spaces), one answer line each, until EOF
 *
 * SysV (KEY: strtol base 0; ID: the object's id; MODE: octal):
 *   shm-create KEY|private TEXT  shmget(IPC_CREAT|IPC_EXCL|0666), TEXT written  -> ok ID
 *   shm-get KEY                  shmget(KEY, 0, 0)                              -> ok ID
 *   shm-get-create KEY           shmget(KEY, 4096, IPC_CREAT|0666) (an existing key: no EXCL)
 *   shm-read ID                  shmat(SHM_RDONLY)                              -> ok TEXT
 *   shm-write ID TEXT            shmat, write TEXT
 *   shm-stat ID | shm-set ID MODE | shm-rmid ID | shm-lock ID | shm-statany ID
 *                                IPC_STAT; IPC_SET (the caller's uid and gid, MODE; no
 *                                IPC_STAT first); IPC_RMID; SHM_LOCK (then
 *                                SHM_UNLOCK); SHM_STAT_ANY over every index: ok if ID is found
 *   msg-create KEY|private TEXT  msgget(IPC_CREAT|IPC_EXCL|0666), TEXT sent     -> ok ID
 *   msg-get KEY | msg-recv ID (msgrcv, IPC_NOWAIT: ok TEXT) | msg-peek ID (MSG_COPY of message 0)
 *   msg-send ID TEXT | msg-stat ID | msg-set ID MODE | msg-rmid ID | msg-statany ID
 *   sem-create KEY|private       semget(1 semaphore, IPC_CREAT|IPC_EXCL|0666), value 1 -> ok ID
 *   sem-get KEY | sem-op ID N (semop(0, N, IPC_NOWAIT)) | sem-getval ID (ok V) | sem-setval ID V
 *   sem-getall ID | sem-stat ID | sem-set ID MODE | sem-rmid ID | sem-statany ID
 *   nsipc-shm-get PID KEY        setns into PID's IPC namespace (/proc/PID/ns/ipc), then shm-get
 *
 * POSIX message queues (NAME: "/name") and shared memory:
 *   mq-create NAME TEXT          mq_open(O_CREAT|O_EXCL, 0666), TEXT sent
 *   mq-open NAME | mq-recv NAME (O_NONBLOCK: ok TEXT) | mq-send NAME TEXT | mq-unlink NAME
 *   pshm-create NAME TEXT | pshm-read NAME (ok TEXT)    shm_open (/dev/shm)
 *
 * Files (an mqueue mount's queues, /proc/PID/... files):
 *   open PATH (ok FIRST-LINE) | write PATH TEXT | unlink PATH | chmod PATH MODE | ls DIR (ok NAMES)
 *
 * Ordinary workloads inside one process and its child (each prints ok or "FAIL STEP ERRNO"):
 *   shm-share | shm-share-key KEY | msg-share | sem-share | mq-share NAME
 *   sched-own                    renice, affinity, SCHED_BATCH, ioprio, prlimit of its own child
 *                                (read back), its own process group, and itself
 *
 * Scheduling and resource controls of another process (PID may be a thread id):
 *   nice PID N | nice-pgrp PGID N | nice-user UID N       setpriority
 *   affinity PID CPU             sched_setaffinity to that one CPU
 *   sched PID other|batch|idle|fifo|rr [PRIO]              sched_setscheduler
 *   setattr PID POLICY NICE      sched_setattr
 *   ioprio PID CLASS LEVEL | ioprio-pgrp PGID CLASS LEVEL | ioprio-user UID CLASS LEVEL
 *   prlimit PID nofile|cpu|core|nproc|as SOFT [HARD]      (HARD: the current hard limit)
 *   migrate PID                  migrate_pages(node 0 -> node 0)
 *   move-pages PID ADDR          move_pages of ADDR to node 0
 *   madvise PID ADDR             process_madvise(MADV_COLD) through a pidfd
 *   getnice PID (ok N) | getaffinity PID (ok MASK) | getsched PID (ok POLICY) |
 *   getioprio PID (ok VALUE) | getprlimit PID RES (ok SOFT HARD)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/ioprio.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#ifndef MADV_COLD
#define MADV_COLD 20
#endif
#ifndef MPOL_MF_MOVE
#define MPOL_MF_MOVE (1 << 1)
#endif

#define SHM_SIZE 4096
#define TEXT_MAX 128

static char page[4096] __attribute__((aligned(4096)));

/* linux/sched/types.h's, which clashes with glibc's struct sched_param */
struct sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;
	uint64_t sched_deadline;
	uint64_t sched_period;
};

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
};

struct msgbuf_t {
	long mtype;
	char mtext[TEXT_MAX];
};

static const char *errname(int e)
{
	const char *n = strerrorname_np(e);
	return n ? n : "E?";
}

static int result(long r)
{
	if (r < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int fail(void)
{
	printf("%s\n", errname(errno));
	return 1;
}

static int ok_long(long v)
{
	printf("ok %ld\n", v);
	return 0;
}

static int ok_text(const char *t)
{
	printf("ok %s\n", t);
	return 0;
}

static int step_fail(const char *step)
{
	printf("FAIL %s %s\n", step, errname(errno));
	return 1;
}

static key_t key_of(const char *s)
{
	return strcmp(s, "private") ? (key_t)strtol(s, NULL, 0) : IPC_PRIVATE;
}

static int id_of(const char *s)
{
	return (int)strtol(s, NULL, 10);
}

/* ---- modes ---- */

static int hold_fd[2] = {-1, -1};

static void *idle_thread(void *arg)
{
	char c;

	/* a thread of the target's own, blocked until the process ends */
	if (read(hold_fd[0], &c, 1) < 0) {
		/* nothing */
	}
	return arg;
}

static pid_t thread_tid;
static volatile int thread_ready;

static void *tid_thread(void *arg)
{
	thread_tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&thread_ready, 1, __ATOMIC_SEQ_CST);
	return idle_thread(arg);
}

static int target(void)
{
	pthread_t t;
	char line[64];

	/* in a launched run it already leads its session (custode's setsid): then setsid fails, and that's as good */
	if (setsid() < 0 && getsid(0) != getpid())
		return fail();
	memset(page, 'p', sizeof(page));
	if (pipe(hold_fd) < 0 || pthread_create(&t, NULL, tid_thread, NULL))
		return fail();
	while (!__atomic_load_n(&thread_ready, __ATOMIC_SEQ_CST))
		sched_yield();
	printf("ready %d %d %p\n", (int)getpid(), (int)thread_tid, (void *)page);
	while (fgets(line, sizeof(line), stdin) || errno == EINTR)
		errno = 0;
	return 0;
}

/* ---- SysV ---- */

static int shm_create(const char *key, const char *text)
{
	int id = shmget(key_of(key), SHM_SIZE, IPC_CREAT | IPC_EXCL | 0666);
	char *p;

	if (id < 0)
		return fail();
	p = shmat(id, NULL, 0);
	if (p == (void *)-1)
		return fail();
	snprintf(p, SHM_SIZE, "%s", text);
	shmdt(p);
	return ok_long(id);
}

static int shm_read(int id)
{
	char buf[TEXT_MAX];
	char *p = shmat(id, NULL, SHM_RDONLY);

	if (p == (void *)-1)
		return fail();
	snprintf(buf, sizeof(buf), "%s", p);
	shmdt(p);
	return ok_text(buf);
}

static int shm_write(int id, const char *text)
{
	char *p = shmat(id, NULL, 0);

	if (p == (void *)-1)
		return fail();
	snprintf(p, SHM_SIZE, "%s", text);
	shmdt(p);
	return result(0);
}

static int shm_set(int id, const char *mode)
{
	struct shmid_ds ds;

	/* IPC_SET alone (an IPC_STAT first would be refused on its own): uid, gid and mode are what it sets */
	memset(&ds, 0, sizeof(ds));
	ds.shm_perm.uid = getuid();
	ds.shm_perm.gid = getgid();
	ds.shm_perm.mode = (unsigned short)strtol(mode, NULL, 8);
	return result(shmctl(id, IPC_SET, &ds));
}

static int shm_lock(int id)
{
	if (shmctl(id, SHM_LOCK, NULL) < 0)
		return fail();
	shmctl(id, SHM_UNLOCK, NULL);
	return result(0);
}

/*
 * *_STAT_ANY over every index up to the highest in use (*_INFO's answer):
 * ok if one of them is the object ID, else the last error (ENOENT: none).
 */
static int stat_any(char kind, int id)
{
	int max, last = ENOENT;

	if (kind == 's') {
		struct shm_info si;
		max = shmctl(0, SHM_INFO, (struct shmid_ds *)&si);
	} else if (kind == 'm') {
		struct msginfo mi;
		max = msgctl(0, MSG_INFO, (struct msqid_ds *)&mi);
	} else {
		struct seminfo si;
		union semun u = {.buf = (struct semid_ds *)&si};
		max = semctl(0, 0, SEM_INFO, u);
	}
	if (max < 0)
		return fail();
	for (int idx = 0; idx <= max; idx++) {
		int r;

		if (kind == 's') {
			struct shmid_ds ds;
			r = shmctl(idx, SHM_STAT_ANY, &ds);
		} else if (kind == 'm') {
			struct msqid_ds ds;
			r = msgctl(idx, MSG_STAT_ANY, &ds);
		} else {
			struct semid_ds ds;
			union semun u = {.buf = &ds};
			r = semctl(idx, 0, SEM_STAT_ANY, u);
		}
		if (r == id)
			return result(0);
		if (r < 0 && errno != EINVAL)
			last = errno;
	}
	errno = last;
	return fail();
}

static int msg_create(const char *key, const char *text)
{
	int id = msgget(key_of(key), IPC_CREAT | IPC_EXCL | 0666);
	struct msgbuf_t m = {.mtype = 1};

	if (id < 0)
		return fail();
	snprintf(m.mtext, sizeof(m.mtext), "%s", text);
	if (msgsnd(id, &m, strlen(m.mtext) + 1, IPC_NOWAIT) < 0)
		return fail();
	return ok_long(id);
}

static int msg_recv(int id, int flags)
{
	struct msgbuf_t m;

	memset(&m, 0, sizeof(m));
	if (msgrcv(id, &m, sizeof(m.mtext), 0, IPC_NOWAIT | flags) < 0)
		return fail();
	m.mtext[sizeof(m.mtext) - 1] = 0;
	return ok_text(m.mtext);
}

static int msg_send(int id, const char *text)
{
	struct msgbuf_t m = {.mtype = 1};

	snprintf(m.mtext, sizeof(m.mtext), "%s", text);
	return result(msgsnd(id, &m, strlen(m.mtext) + 1, IPC_NOWAIT));
}

static int msg_set(int id, const char *mode)
{
	struct msqid_ds ds;

	memset(&ds, 0, sizeof(ds));
	ds.msg_perm.uid = getuid();
	ds.msg_perm.gid = getgid();
	ds.msg_perm.mode = (unsigned short)strtol(mode, NULL, 8);
	ds.msg_qbytes = 16384; /* MSGMNB, the default */
	return result(msgctl(id, IPC_SET, &ds));
}

static int sem_create(const char *key)
{
	int id = semget(key_of(key), 1, IPC_CREAT | IPC_EXCL | 0666);
	union semun u = {.val = 1};

	if (id < 0)
		return fail();
	if (semctl(id, 0, SETVAL, u) < 0)
		return fail();
	return ok_long(id);
}

static int sem_op(int id, int n)
{
	struct sembuf op = {.sem_num = 0, .sem_op = (short)n, .sem_flg = IPC_NOWAIT};

	return result(semop(id, &op, 1));
}

static int sem_stat(int id)
{
	struct semid_ds ds;
	union semun u = {.buf = &ds};

	return result(semctl(id, 0, IPC_STAT, u));
}

static int sem_set(int id, const char *mode)
{
	struct semid_ds ds;
	union semun u = {.buf = &ds};

	memset(&ds, 0, sizeof(ds));
	ds.sem_perm.uid = getuid();
	ds.sem_perm.gid = getgid();
	ds.sem_perm.mode = (unsigned short)strtol(mode, NULL, 8);
	return result(semctl(id, 0, IPC_SET, u));
}

static int sem_getall(int id)
{
	unsigned short v[1] = {0};
	union semun u = {.array = v};

	if (semctl(id, 0, GETALL, u) < 0)
		return fail();
	return ok_long(v[0]);
}

static int nsipc_shm_get(const char *pid, const char *key)
{
	char path[64];
	int fd, id;

	snprintf(path, sizeof(path), "/proc/%s/ns/ipc", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fail();
	if (setns(fd, CLONE_NEWIPC) < 0)
		return fail();
	id = shmget(key_of(key), 0, 0);
	if (id < 0)
		return fail();
	return ok_long(id);
}

/* ---- POSIX ---- */

static int mq_create(const char *name, const char *text)
{
	struct mq_attr a = {.mq_maxmsg = 4, .mq_msgsize = 64};
	mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666, &a);

	if (q == (mqd_t)-1)
		return fail();
	if (mq_send(q, text, strlen(text) + 1, 0) < 0)
		return fail();
	mq_close(q);
	return result(0);
}

static int mq_recv(const char *name)
{
	char buf[TEXT_MAX + 64];
	mqd_t q = mq_open(name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	ssize_t n;

	if (q == (mqd_t)-1)
		return fail();
	n = mq_receive(q, buf, sizeof(buf), NULL);
	if (n < 0)
		return fail();
	buf[n < (ssize_t)sizeof(buf) ? n : (ssize_t)sizeof(buf) - 1] = 0;
	mq_close(q);
	return ok_text(buf);
}

static int mq_send_to(const char *name, const char *text)
{
	mqd_t q = mq_open(name, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

	if (q == (mqd_t)-1)
		return fail();
	if (mq_send(q, text, strlen(text) + 1, 0) < 0)
		return fail();
	mq_close(q);
	return result(0);
}

static int pshm_create(const char *name, const char *text)
{
	int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0666);

	if (fd < 0)
		return fail();
	if (write(fd, text, strlen(text) + 1) < 0)
		return fail();
	close(fd);
	return result(0);
}

static int pshm_read(const char *name)
{
	char buf[TEXT_MAX];
	int fd = shm_open(name, O_RDONLY, 0);
	char *p;

	if (fd < 0)
		return fail();
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return fail();
	snprintf(buf, sizeof(buf), "%s", p);
	munmap(p, 4096);
	close(fd);
	return ok_text(buf);
}

/* ---- files ---- */

static int open_read(const char *path)
{
	char buf[256];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return fail();
	n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return fail();
	close(fd);
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return ok_text(buf);
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return fail();
	n = write(fd, text, strlen(text));
	close(fd);
	return result(n < 0 ? -1 : 0);
}

static int ls(const char *dir)
{
	char names[1024] = "";
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return fail();
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && strlen(names) + strlen(de->d_name) + 2 < sizeof(names)) {
			strcat(names, " ");
			strcat(names, de->d_name);
		}
	closedir(d);
	printf("ok%s\n", names);
	return 0;
}

/* ---- ordinary workloads: the process and its own child ---- */

static int reap(pid_t c)
{
	int st;

	if (waitpid(c, &st, 0) < 0)
		return -1;
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		errno = ECHILD;
		return -1;
	}
	return 0;
}

static int shm_share(const char *key)
{
	int id = shmget(key ? key_of(key) : IPC_PRIVATE, SHM_SIZE, IPC_CREAT | IPC_EXCL | 0600);
	char *p;
	pid_t c;
	int ok;

	if (id < 0)
		return step_fail("shmget");
	c = fork();
	if (c == 0) {
		int cid = key ? shmget(key_of(key), 0, 0) : id;
		char *q = cid < 0 ? (void *)-1 : shmat(cid, NULL, 0);

		if (q == (void *)-1)
			_exit(1);
		strcpy(q, "from-child");
		_exit(shmdt(q) ? 1 : 0);
	}
	if (c < 0 || reap(c))
		return step_fail("child");
	p = shmat(id, NULL, SHM_RDONLY);
	if (p == (void *)-1)
		return step_fail("shmat");
	ok = !strcmp(p, "from-child");
	shmdt(p);
	if (shmctl(id, IPC_RMID, NULL) < 0)
		return step_fail("rmid");
	if (!ok) {
		errno = EBADMSG;
		return step_fail("content");
	}
	return result(0);
}

static int msg_share(void)
{
	int id = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	struct msgbuf_t m = {.mtype = 1};
	pid_t c;

	if (id < 0)
		return step_fail("msgget");
	c = fork();
	if (c == 0) {
		strcpy(m.mtext, "from-child");
		_exit(msgsnd(id, &m, strlen(m.mtext) + 1, 0) ? 1 : 0);
	}
	if (c < 0 || reap(c))
		return step_fail("child");
	memset(&m, 0, sizeof(m));
	if (msgrcv(id, &m, sizeof(m.mtext), 1, IPC_NOWAIT) < 0)
		return step_fail("msgrcv");
	if (msgctl(id, IPC_RMID, NULL) < 0)
		return step_fail("rmid");
	if (strcmp(m.mtext, "from-child")) {
		errno = EBADMSG;
		return step_fail("content");
	}
	return result(0);
}

static int sem_share(void)
{
	int id = semget(IPC_PRIVATE, 1, IPC_CREAT | 0600);
	struct sembuf up = {.sem_num = 0, .sem_op = 1}, down = {.sem_num = 0, .sem_op = -1, .sem_flg = IPC_NOWAIT};
	union semun u = {.val = 0};
	pid_t c;

	if (id < 0)
		return step_fail("semget");
	if (semctl(id, 0, SETVAL, u) < 0)
		return step_fail("setval");
	c = fork();
	if (c == 0)
		_exit(semop(id, &up, 1) ? 1 : 0);
	if (c < 0 || reap(c))
		return step_fail("child");
	if (semop(id, &down, 1) < 0)
		return step_fail("semop");
	if (semctl(id, 0, IPC_RMID) < 0)
		return step_fail("rmid");
	return result(0);
}

static int mq_share(const char *name)
{
	struct mq_attr a = {.mq_maxmsg = 4, .mq_msgsize = 64};
	char buf[128];
	mqd_t q = mq_open(name, O_CREAT | O_EXCL | O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0600, &a);
	pid_t c;
	ssize_t n;

	if (q == (mqd_t)-1)
		return step_fail("mq_open");
	c = fork();
	if (c == 0) {
		/* a second open of the queue by name, in the child */
		mqd_t w = mq_open(name, O_WRONLY | O_CLOEXEC);
		_exit(w == (mqd_t)-1 || mq_send(w, "from-child", 11, 0) ? 1 : 0);
	}
	if (c < 0 || reap(c))
		return step_fail("child");
	n = mq_receive(q, buf, sizeof(buf), NULL);
	if (n < 0)
		return step_fail("mq_receive");
	mq_close(q);
	if (mq_unlink(name) < 0)
		return step_fail("mq_unlink");
	if (strcmp(buf, "from-child")) {
		errno = EBADMSG;
		return step_fail("content");
	}
	return result(0);
}

static long sys_ioprio_set(int which, int who, int prio)
{
	return syscall(SYS_ioprio_set, which, who, prio);
}

static long sys_ioprio_get(int which, int who)
{
	return syscall(SYS_ioprio_get, which, who);
}

/* The run on its own: its child (read back each change), its own process group, and itself. */
static int sched_own(void)
{
	int p[2];
	pid_t c;
	cpu_set_t set;
	struct rlimit rl;
	int rc = 1;

	if (pipe(p) < 0)
		return step_fail("pipe");
	c = fork();
	if (c == 0) {
		char x;
		close(p[1]);
		_exit(read(p[0], &x, 1) < 0);
	}
	close(p[0]);
	if (c < 0)
		return step_fail("fork");
	errno = 0;
	if (setpriority(PRIO_PROCESS, (id_t)c, 5) < 0) {
		step_fail("setpriority-child");
		goto out;
	}
	if (getpriority(PRIO_PROCESS, (id_t)c) != 5) {
		step_fail("getpriority-child");
		goto out;
	}
	CPU_ZERO(&set);
	CPU_SET(0, &set);
	if (sched_setaffinity(c, sizeof(set), &set) < 0) {
		step_fail("setaffinity-child");
		goto out;
	}
	CPU_ZERO(&set);
	if (sched_getaffinity(c, sizeof(set), &set) < 0 || CPU_COUNT(&set) != 1 || !CPU_ISSET(0, &set)) {
		step_fail("getaffinity-child");
		goto out;
	}
	struct sched_param sp = {.sched_priority = 0};
	if (sched_setscheduler(c, SCHED_BATCH, &sp) < 0) {
		step_fail("setscheduler-child");
		goto out;
	}
	if (sched_getscheduler(c) != SCHED_BATCH) {
		step_fail("getscheduler-child");
		goto out;
	}
	if (sys_ioprio_set(IOPRIO_WHO_PROCESS, c, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7)) < 0) {
		step_fail("ioprio-child");
		goto out;
	}
	if (sys_ioprio_get(IOPRIO_WHO_PROCESS, c) != IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 7)) {
		step_fail("getioprio-child");
		goto out;
	}
	if (prlimit(c, RLIMIT_NOFILE, NULL, &rl) < 0) {
		step_fail("getrlimit-child");
		goto out;
	}
	rl.rlim_cur = 64;
	if (prlimit(c, RLIMIT_NOFILE, &rl, NULL) < 0) {
		step_fail("prlimit-child");
		goto out;
	}
	if (prlimit(c, RLIMIT_NOFILE, NULL, &rl) < 0 || rl.rlim_cur != 64) {
		step_fail("prlimit-readback");
		goto out;
	}
	/* its own process group: itself and the child */
	if (setpriority(PRIO_PGRP, 0, 6) < 0) {
		step_fail("setpriority-pgrp");
		goto out;
	}
	errno = 0;
	if (getpriority(PRIO_PROCESS, (id_t)c) != 6 || getpriority(PRIO_PROCESS, 0) != 6) {
		step_fail("getpriority-pgrp");
		goto out;
	}
	if (sys_ioprio_set(IOPRIO_WHO_PGRP, 0, IOPRIO_PRIO_VALUE(IOPRIO_CLASS_BE, 6)) < 0) {
		step_fail("ioprio-pgrp");
		goto out;
	}
	/* itself */
	if (setpriority(PRIO_PROCESS, 0, 7) < 0) {
		step_fail("setpriority-self");
		goto out;
	}
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		step_fail("setaffinity-self");
		goto out;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0) {
		step_fail("getrlimit-self");
		goto out;
	}
	rl.rlim_cur = rl.rlim_cur > 128 ? 128 : rl.rlim_cur;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0 || prlimit(0, RLIMIT_CORE, NULL, &rl) < 0) {
		step_fail("setrlimit-self");
		goto out;
	}
	rl.rlim_cur = 0;
	if (prlimit(getpid(), RLIMIT_CORE, &rl, NULL) < 0) {
		step_fail("prlimit-self");
		goto out;
	}
	if (sched_setscheduler(0, SCHED_BATCH, &sp) < 0) {
		step_fail("setscheduler-self");
		goto out;
	}
	rc = result(0);
out:
	close(p[1]);
	waitpid(c, NULL, 0);
	return rc;
}

/* ---- another process ---- */

static int res_of(const char *s)
{
	if (!strcmp(s, "nofile"))
		return RLIMIT_NOFILE;
	if (!strcmp(s, "cpu"))
		return RLIMIT_CPU;
	if (!strcmp(s, "core"))
		return RLIMIT_CORE;
	if (!strcmp(s, "nproc"))
		return RLIMIT_NPROC;
	if (!strcmp(s, "as"))
		return RLIMIT_AS;
	return -1;
}

static rlim_t lim_of(const char *s)
{
	return strcmp(s, "inf") ? (rlim_t)strtoull(s, NULL, 0) : RLIM_INFINITY;
}

static int policy_of(const char *s)
{
	if (!strcmp(s, "other"))
		return SCHED_OTHER;
	if (!strcmp(s, "batch"))
		return SCHED_BATCH;
	if (!strcmp(s, "idle"))
		return SCHED_IDLE;
	if (!strcmp(s, "fifo"))
		return SCHED_FIFO;
	if (!strcmp(s, "rr"))
		return SCHED_RR;
	return -1;
}

static int do_prlimit(int pid, const char *res, const char *soft, const char *hard)
{
	struct rlimit rl;
	int r = res_of(res);

	if (r < 0 || prlimit(pid, r, NULL, &rl) < 0)
		return r < 0 ? 2 : fail();
	rl.rlim_cur = lim_of(soft);
	if (hard)
		rl.rlim_max = lim_of(hard);
	return result(prlimit(pid, r, &rl, NULL));
}

static int migrate(int pid)
{
	unsigned long nodes = 1; /* node 0 */

	return result(syscall(SYS_migrate_pages, pid, 8 * sizeof(nodes), &nodes, &nodes));
}

static int move_pages_of(int pid, const char *addr)
{
	void *pages[1] = {(void *)strtoul(addr, NULL, 0)};
	int nodes[1] = {0}, status[1] = {-1};

	return result(syscall(SYS_move_pages, pid, 1UL, pages, nodes, status, MPOL_MF_MOVE));
}

static int madvise_of(int pid, const char *addr)
{
	struct iovec iov = {.iov_base = (void *)strtoul(addr, NULL, 0), .iov_len = 4096};
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return fail();
	return result(syscall(SYS_process_madvise, fd, &iov, 1UL, MADV_COLD, 0U));
}

static int dispatch(int argc, char **argv)
{
	const char *op = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : NULL, *b = argc > 3 ? argv[3] : NULL, *c = argc > 4 ? argv[4] : NULL;

#define OP(name, n) (!strcmp(op, name) && argc >= (n) + 2)
	if (OP("target", 0))
		return target();
	/* SysV shared memory */
	if (OP("shm-create", 2))
		return shm_create(a, b);
	if (OP("shm-get", 1)) {
		int id = shmget(key_of(a), 0, 0);
		return id < 0 ? fail() : ok_long(id);
	}
	if (OP("shm-get-create", 1)) {
		int id = shmget(key_of(a), SHM_SIZE, IPC_CREAT | 0666);
		return id < 0 ? fail() : ok_long(id);
	}
	if (OP("shm-read", 1))
		return shm_read(id_of(a));
	if (OP("shm-write", 2))
		return shm_write(id_of(a), b);
	if (OP("shm-stat", 1)) {
		struct shmid_ds ds;
		return result(shmctl(id_of(a), IPC_STAT, &ds));
	}
	if (OP("shm-set", 2))
		return shm_set(id_of(a), b);
	if (OP("shm-rmid", 1))
		return result(shmctl(id_of(a), IPC_RMID, NULL));
	if (OP("shm-lock", 1))
		return shm_lock(id_of(a));
	if (OP("shm-statany", 1))
		return stat_any('s', id_of(a));
	/* message queues */
	if (OP("msg-create", 2))
		return msg_create(a, b);
	if (OP("msg-get", 1)) {
		int id = msgget(key_of(a), 0);
		return id < 0 ? fail() : ok_long(id);
	}
	if (OP("msg-recv", 1))
		return msg_recv(id_of(a), 0);
	if (OP("msg-peek", 1))
		return msg_recv(id_of(a), MSG_COPY);
	if (OP("msg-send", 2))
		return msg_send(id_of(a), b);
	if (OP("msg-stat", 1)) {
		struct msqid_ds ds;
		return result(msgctl(id_of(a), IPC_STAT, &ds));
	}
	if (OP("msg-set", 2))
		return msg_set(id_of(a), b);
	if (OP("msg-rmid", 1))
		return result(msgctl(id_of(a), IPC_RMID, NULL));
	if (OP("msg-statany", 1))
		return stat_any('m', id_of(a));
	/* semaphores */
	if (OP("sem-create", 1))
		return sem_create(a);
	if (OP("sem-get", 1)) {
		int id = semget(key_of(a), 0, 0);
		return id < 0 ? fail() : ok_long(id);
	}
	if (OP("sem-op", 2))
		return sem_op(id_of(a), atoi(b));
	if (OP("sem-getval", 1)) {
		int v = semctl(id_of(a), 0, GETVAL);
		return v < 0 ? fail() : ok_long(v);
	}
	if (OP("sem-setval", 2)) {
		union semun u = {.val = atoi(b)};
		return result(semctl(id_of(a), 0, SETVAL, u));
	}
	if (OP("sem-getall", 1))
		return sem_getall(id_of(a));
	if (OP("sem-stat", 1))
		return sem_stat(id_of(a));
	if (OP("sem-set", 2))
		return sem_set(id_of(a), b);
	if (OP("sem-rmid", 1))
		return result(semctl(id_of(a), 0, IPC_RMID));
	if (OP("sem-statany", 1))
		return stat_any('S', id_of(a));
	if (OP("nsipc-shm-get", 2))
		return nsipc_shm_get(a, b);
	/* POSIX */
	if (OP("mq-create", 2))
		return mq_create(a, b);
	if (OP("mq-open", 1)) {
		mqd_t q = mq_open(a, O_RDONLY | O_CLOEXEC);
		if (q == (mqd_t)-1)
			return fail();
		mq_close(q);
		return result(0);
	}
	if (OP("mq-recv", 1))
		return mq_recv(a);
	if (OP("mq-send", 2))
		return mq_send_to(a, b);
	if (OP("mq-unlink", 1))
		return result(mq_unlink(a));
	if (OP("pshm-create", 2))
		return pshm_create(a, b);
	if (OP("pshm-read", 1))
		return pshm_read(a);
	/* files */
	if (OP("open", 1))
		return open_read(a);
	if (OP("write", 2))
		return write_file(a, b);
	if (OP("unlink", 1))
		return result(unlink(a));
	if (OP("chmod", 2))
		return result(chmod(a, (mode_t)strtol(b, NULL, 8)));
	if (OP("ls", 1))
		return ls(a);
	/* workloads */
	if (OP("shm-share", 0))
		return shm_share(NULL);
	if (OP("shm-share-key", 1))
		return shm_share(a);
	if (OP("msg-share", 0))
		return msg_share();
	if (OP("sem-share", 0))
		return sem_share();
	if (OP("mq-share", 1))
		return mq_share(a);
	if (OP("sched-own", 0))
		return sched_own();
	/* another process */
	if (OP("nice", 2))
		return result(setpriority(PRIO_PROCESS, (id_t)atoi(a), atoi(b)));
	if (OP("nice-pgrp", 2))
		return result(setpriority(PRIO_PGRP, (id_t)atoi(a), atoi(b)));
	if (OP("nice-user", 2))
		return result(setpriority(PRIO_USER, (id_t)atoi(a), atoi(b)));
	if (OP("affinity", 2)) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(b), &set);
		return result(sched_setaffinity(atoi(a), sizeof(set), &set));
	}
	if (OP("sched", 2)) {
		struct sched_param sp = {.sched_priority = c ? atoi(c) : 0};
		int pol = policy_of(b);
		if (pol < 0)
			return 2;
		return result(sched_setscheduler(atoi(a), pol, &sp));
	}
	if (OP("setattr", 3)) {
		struct sched_attr at;
		int pol = policy_of(b);
		if (pol < 0)
			return 2;
		memset(&at, 0, sizeof(at));
		at.size = sizeof(at);
		at.sched_policy = (unsigned)pol;
		at.sched_nice = atoi(c);
		return result(syscall(SYS_sched_setattr, atoi(a), &at, 0U));
	}
	if (OP("ioprio", 3))
		return result(sys_ioprio_set(IOPRIO_WHO_PROCESS, atoi(a), IOPRIO_PRIO_VALUE(atoi(b), atoi(c))));
	if (OP("ioprio-pgrp", 3))
		return result(sys_ioprio_set(IOPRIO_WHO_PGRP, atoi(a), IOPRIO_PRIO_VALUE(atoi(b), atoi(c))));
	if (OP("ioprio-user", 3))
		return result(sys_ioprio_set(IOPRIO_WHO_USER, atoi(a), IOPRIO_PRIO_VALUE(atoi(b), atoi(c))));
	if (OP("prlimit", 3))
		return do_prlimit(atoi(a), b, c, argc > 5 ? argv[5] : NULL);
	if (OP("migrate", 1))
		return migrate(atoi(a));
	if (OP("move-pages", 2))
		return move_pages_of(atoi(a), b);
	if (OP("madvise", 2))
		return madvise_of(atoi(a), b);
	if (OP("getnice", 1)) {
		int n;
		errno = 0;
		n = getpriority(PRIO_PROCESS, (id_t)atoi(a));
		return errno ? fail() : ok_long(n);
	}
	if (OP("getaffinity", 1)) {
		cpu_set_t set;
		unsigned long mask = 0;
		CPU_ZERO(&set);
		if (sched_getaffinity(atoi(a), sizeof(set), &set) < 0)
			return fail();
		for (int i = 0; i < 64; i++)
			if (CPU_ISSET(i, &set))
				mask |= 1UL << i;
		return ok_long((long)mask);
	}
	if (OP("getsched", 1)) {
		int p = sched_getscheduler(atoi(a));
		return p < 0 ? fail() : ok_long(p);
	}
	if (OP("getioprio", 1)) {
		long v = sys_ioprio_get(IOPRIO_WHO_PROCESS, atoi(a));
		return v < 0 ? fail() : ok_long(v);
	}
	if (OP("getprlimit", 2)) {
		struct rlimit rl;
		int r = res_of(b);
		if (r < 0)
			return 2;
		if (prlimit(atoi(a), r, NULL, &rl) < 0)
			return fail();
		printf("ok %lld %lld\n", rl.rlim_cur == RLIM_INFINITY ? -1LL : (long long)rl.rlim_cur,
		       rl.rlim_max == RLIM_INFINITY ? -1LL : (long long)rl.rlim_max);
		return 0;
	}
#undef OP
	fprintf(stderr, "ipcprobe: unknown or incomplete operation: %s\n", op);
	printf("usage\n");
	return 2;
}

/* One operation per line of stdin (split on spaces), one answer each. */
static int serve(void)
{
	char line[512];

	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		char *args[16], *save = NULL;
		int n = 0;

		args[n++] = "ipcprobe";
		for (char *t = strtok_r(line, " \n", &save); t && n < 15; t = strtok_r(NULL, " \n", &save))
			args[n++] = t;
		args[n] = NULL;
		if (n > 1)
			dispatch(n, args);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	umask(0);
	if (argc >= 2 && !strcmp(argv[1], "serve")) {
		setpgid(0, 0);
		return serve();
	}
	if (argc >= 3 && !strcmp(argv[1], "wait")) {
		char line[64];
		int r;

		setpgid(0, 0);
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		r = dispatch(argc - 1, argv + 1);
		while (fgets(line, sizeof(line), stdin))
			;
		return r;
	}
	return dispatch(argc, argv);
}
