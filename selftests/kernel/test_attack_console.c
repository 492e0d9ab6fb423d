// SPDX-License-Identifier: Apache-2.0
/*
 * The host's own terminals (issue 13, class 2 beyond ptys): a virtual
 * console, a serial line, /dev/console and the consoles' screen memory
 * (/dev/vcs*) are where someone types at the machine. A root process moved
 * into a run (no seccomp filter, every capability: only the LSM stands) with
 * a policy that says nothing about files could read what is typed there, or
 * write a fake prompt. custode's file_open refuses these devices by number
 * for every live run (EACCES, file.tty.denied, bpf/lib/tty.bpf.h), also through a
 * node the run makes itself with mknod. A fresh pty (/dev/ptmx) and /dev/null
 * stay usable.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "procutil.h"

#define NET_ONLY POLICY("console-net", "{\"network\":{\"egress\":[]}}")

static const char *open_outside(const char *path, const char *mode)
{
	static struct ktest_result r;
	char *argv[] = {(char *)ktest_tprobe(), "open", (char *)path, (char *)mode, NULL};

	ktest_run(argv, -1, 30000, &r);
	r.out[strcspn(r.out, "\n")] = 0;
	return r.out;
}

KTEST(attack_host_terminals_denied_to_attached_root)
{
	struct ktest_dirs d;
	struct ktest_proc t;
	unsigned long addr;
	const char *pol;
	int pid = 0;
	char node[400], what[512], devdir[320];
	/* every node is made here, so the test doesn't depend on the guest's /dev */
	static const struct {
		const char *name;
		unsigned major, minor;
	} devs[] = {
		{"console", 5, 1}, {"tty0", 4, 0}, {"tty1", 4, 1}, {"ttyS0", 4, 64}, {"vcs1", 7, 1}, {"vcsa1", 7, 129},
	};
	json_t *ev;

	ktest_need_lsm();
	if (!ASSERT_TRUE(ktest_make_dirs(&d), "dirs"))
		return;
	pol = pu_policy(d.root, "net", NET_ONLY);
	/* device nodes open only on a mount without nodev (the test's /tmp has it): a tmpfs of our own */
	snprintf(devdir, sizeof(devdir), "%s/dev", d.root);
	if (!ASSERT_EQ(mkdir(devdir, 0755), 0, "mkdir") ||
	    !ASSERT_EQ(mount("ktest-dev", devdir, "tmpfs", MS_NOSUID, "mode=0755"), 0, "a tmpfs that allows devices"))
		return;
	if (!ASSERT_TRUE(pu_run_target(pol, &t, &pid, &addr), "a run to move into"))
		return;
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		const char *out;

		snprintf(node, sizeof(node), "%s/%s", devdir, devs[i].name);
		if (!ASSERT_EQ(mknod(node, S_IFCHR | 0600, makedev(devs[i].major, devs[i].minor)), 0, "mknod"))
			continue;
		/* control: root outside any run opens it (or the device is absent on this kernel: ENXIO/ENODEV) */
		out = open_outside(node, "w");
		snprintf(what, sizeof(what), "control: %s (%u:%u) outside any run", devs[i].name, devs[i].major, devs[i].minor);
		if (strcmp(out, "ok") && strcmp(out, "ENXIO") && strcmp(out, "ENODEV") && strcmp(out, "EIO"))
			ASSERT_STREQ(out, "ok", what);
		ktest_events();
		snprintf(what, sizeof(what), "%s (%u:%u) from a root process in the run", devs[i].name, devs[i].major,
			 devs[i].minor);
		ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", node, "r")), "EACCES", what);
		ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", node, "w")), "EACCES", what);
		ev = ktest_events();
		ASSERT_TRUE(ktest_find_event(ev, "file_open", "file.tty.denied", node) != NULL, what);
		json_decref(ev);
	}
	/* the real nodes too, where the guest has them */
	if (access("/dev/console", F_OK) == 0)
		ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", "/dev/console", "w")), "EACCES", "/dev/console");
	/* ordinary: a fresh pty and /dev/null */
	ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", "/dev/ptmx", "rw")), "ok", "/dev/ptmx in the run");
	ASSERT_STREQ(pu_moved_in(ktest_tprobe(), pid, ARGS("open", "/dev/null", "w")), "ok", "/dev/null in the run");
	ASSERT_EQ(pu_stop(&t), 0, "the run ends");
	umount2(devdir, MNT_DETACH);
}
