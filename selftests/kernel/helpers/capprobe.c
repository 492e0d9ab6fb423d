// SPDX-License-Identifier: Apache-2.0
/*
 * capprobe: one privileged operation that a root process attached to a run
 * might try, printing "ok" or the errno name. Each is harmless when it
 * succeeds (the probe undoes it, or the arguments are such that the kernel
 * refuses them right after the capability check).
 *
 *   capprobe reboot        reboot(2) with a bad magic: EPERM without CAP_SYS_BOOT, EINVAL with it
 *   capprobe kexec         kexec_load with bad flags: EPERM without CAP_SYS_BOOT, EINVAL with it
 *   capprobe settz         settimeofday(NULL, the current timezone): CAP_SYS_TIME
 *   capprobe iopl          iopl(3), then back to 0: CAP_SYS_RAWIO
 *   capprobe ioperm        ioperm(0x80, 1, 1), then off: CAP_SYS_RAWIO
 *   capprobe acct          acct(a bad pointer): EPERM without CAP_SYS_PACCT, EFAULT with it
 *   capprobe handle PATH   name_to_handle_at + open_by_handle_at: CAP_DAC_READ_SEARCH
 *   capprobe kallsyms      "zero" or "addr": is the first address in /proc/kallsyms shown (CAP_SYSLOG)
 *   capprobe wait OP ...   print "ready PID", read a line, then OP
 * Exit: 0 ok, 1 the operation failed, 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/io.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

static const char *errname(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EINVAL: return "EINVAL";
	case EFAULT: return "EFAULT";
	case ENOSYS: return "ENOSYS";
	case EBADF: return "EBADF";
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EBUSY: return "EBUSY";
	case ESTALE: return "ESTALE";
	default: {
		static char b[32];
		snprintf(b, sizeof(b), "errno%d", e);
		return b;
	}
	}
}

static int report(long r)
{
	if (r < 0) {
		printf("%s\n", errname(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

static int handle(const char *path)
{
	struct {
		struct file_handle fh;
		unsigned char buf[128];
	} h;
	int mnt_id, mfd, fd;

	h.fh.handle_bytes = sizeof(h.buf);
	if (name_to_handle_at(AT_FDCWD, path, &h.fh, &mnt_id, 0) < 0) {
		printf("name_to_handle_at %s\n", errname(errno));
		return 1;
	}
	mfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && errno == ESTALE) {
		/* the path is on another mount than /: use its directory */
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = 0;
		close(mfd);
		mfd = open(dir[0] ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		fd = open_by_handle_at(mfd, &h.fh, O_RDONLY | O_CLOEXEC);
	}
	return report(fd);
}

static int kallsyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	char line[256];
	int zero = 1;

	if (!f) {
		printf("%s\n", errname(errno));
		return 1;
	}
	/* a few lines: a kernel's first symbols may sit at address 0 on some configs */
	for (int i = 0; i < 32 && fgets(line, sizeof(line), f); i++)
		if (strtoull(line, NULL, 16) != 0)
			zero = 0;
	fclose(f);
	printf("%s\n", zero ? "zero" : "addr");
	return 0;
}

static int op(int argc, char **argv)
{
	const char *o = argv[0];

	if (!strcmp(o, "reboot"))
		return report(syscall(SYS_reboot, 0, 0, 0, NULL));
	if (!strcmp(o, "kexec"))
		return report(syscall(SYS_kexec_load, 0UL, 0UL, NULL, ~0UL));
	if (!strcmp(o, "settz")) {
		struct timeval tv;
		struct timezone tz;
		if (gettimeofday(&tv, &tz) < 0)
			return report(-1);
		return report(syscall(SYS_settimeofday, NULL, &tz));
	}
	if (!strcmp(o, "iopl")) {
		long r = syscall(SYS_iopl, 3);
		if (r == 0)
			syscall(SYS_iopl, 0);
		return report(r);
	}
	if (!strcmp(o, "ioperm")) {
		long r = ioperm(0x80, 1, 1);
		if (r == 0)
			ioperm(0x80, 1, 0);
		return report(r);
	}
	if (!strcmp(o, "acct"))
		return report(syscall(SYS_acct, (const char *)1));
	if (!strcmp(o, "handle") && argc >= 2)
		return handle(argv[1]);
	if (!strcmp(o, "kallsyms"))
		return kallsyms();
	fprintf(stderr, "capprobe: unknown op %s\n", o);
	return 2;
}

int main(int argc, char **argv)
{
	char line[64];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "wait")) {
		if (argc < 3)
			return 2;
		printf("ready %d\n", (int)getpid());
		if (!fgets(line, sizeof(line), stdin))
			return 2;
		return op(argc - 2, argv + 2);
	}
	return op(argc - 1, argv + 1);
}
