// SPDX-License-Identifier: Apache-2.0
/*
 * wxprobe: memory that is both writable and executable, for the W^X tests
 * (process.wx). One step per run; prints "ok" or the errno name, exit 0/1.
 *
 *   wxprobe anon-rwx          mmap(RWX, anonymous)
 *   wxprobe anon-rw-then-x    mmap(RW, anonymous), mprotect(RX)
 *   wxprobe anon-rw-then-rwx  mmap(RW, anonymous), mprotect(RWX)
 *   wxprobe file-wx FILE      mmap(FILE, RWX, private)
 *   wxprobe file-cow-then-x FILE  mmap(FILE, RW, private), write, mprotect(RX)
 *   wxprobe memfd-double      memfd: one RW shared view, then an RX shared view
 *   wxprobe anon-rw           mmap(RW, anonymous) (ordinary)
 *   wxprobe file-rx FILE      mmap(FILE, RX, private) (ordinary: how ld.so loads code)
 *   wxprobe jit               RW anonymous, copy a `ret`, mprotect(RX), call it
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int result(int ok)
{
	if (ok) {
		puts("ok");
		return 0;
	}
	puts(errno == EPERM ? "EPERM" : errno == EACCES ? "EACCES" : strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	long pg = sysconf(_SC_PAGESIZE);
	void *p;
	int fd;

	if (!strcmp(s, "anon-rwx"))
		return result(mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
			      MAP_FAILED);
	if (!strcmp(s, "anon-rw"))
		return result(mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) != MAP_FAILED);
	if (!strcmp(s, "anon-rw-then-x") || !strcmp(s, "anon-rw-then-rwx") || !strcmp(s, "jit")) {
		p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return result(0);
		memset(p, 0xc3, 16); /* ret */
		if (!strcmp(s, "anon-rw-then-rwx"))
			return result(mprotect(p, pg, PROT_READ | PROT_WRITE | PROT_EXEC) == 0);
		if (mprotect(p, pg, PROT_READ | PROT_EXEC) < 0)
			return result(0);
		if (!strcmp(s, "jit"))
			((void (*)(void))p)();
		return result(1);
	}
	if (!strcmp(s, "memfd-double")) {
		void *w, *x;
		fd = memfd_create("wx", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, pg) < 0)
			return result(0);
		w = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (w == MAP_FAILED)
			return result(0);
		memset(w, 0xc3, 16);
		x = mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_SHARED, fd, 0);
		return result(x != MAP_FAILED);
	}
	if (argc < 3) {
		fprintf(stderr, "usage: wxprobe STEP [FILE]\n");
		return 2;
	}
	fd = open(argv[2], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return result(0);
	if (!strcmp(s, "file-wx"))
		return result(mmap(NULL, pg, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE, fd, 0) != MAP_FAILED);
	if (!strcmp(s, "file-rx"))
		return result(mmap(NULL, pg, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) != MAP_FAILED);
	if (!strcmp(s, "file-cow-then-x")) {
		p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			return result(0);
		((volatile char *)p)[0] = ((volatile char *)p)[0];
		return result(mprotect(p, pg, PROT_READ | PROT_EXEC) == 0);
	}
	fprintf(stderr, "wxprobe: unknown step %s\n", s);
	return 2;
}
