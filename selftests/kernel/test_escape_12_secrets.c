// SPDX-License-Identifier: Apache-2.0
/*
 * Escape matrix, case 12: host secrets — /etc/shadow, the invoking user's
 * ~/.ssh/id_*, /root/.bash_history — in every built-in profile.
 *
 * DAC already keeps nobody out of the real ones, which would hide custode
 * (the kernel refuses before file_open). So in a private mount namespace of
 * this test (nothing reaches the host) world-readable stand-ins lie over
 * /etc/shadow, /root and /home, and the user's key is read by that user:
 * the run goes as `--user custode-test` (the guest's uid 1000, whose own key
 * DAC lets it read), or as nobody where that user doesn't exist.
 */
#include <pwd.h>
#include <sys/stat.h>

#include "test_escape_common.c"

KTEST(escape_12_host_secrets)
{
	static struct ktest_result r;
	struct esc_fix f;
	struct passwd *pw = getpwnam("custode-test");
	const char *user = pw ? "custode-test" : "nobody";
	int uid = pw ? (int)pw->pw_uid : ESC_NOBODY, gid = pw ? (int)pw->pw_gid : ESC_NOBODY;
	char fake[400], home[300], ssh[320], key[340], hist[64] = "/root/.bash_history", rootkey[64] = "/root/.ssh/id_rsa";
	const char *profiles[] = {"read", "workspace-write", "external"};

	ktest_need_lsm();
	if (!ASSERT_TRUE(esc_fixture(&f) && esc_private_mounts(), "fixture"))
		return;
	snprintf(fake, sizeof(fake), "%s/shadow", f.d.root);
	snprintf(home, sizeof(home), "/home/%s", pw ? "custode-test" : "ktest-nobody");
	snprintf(ssh, sizeof(ssh), "%s/.ssh", home);
	snprintf(key, sizeof(key), "%s/id_ed25519", ssh);
	if (!ASSERT_TRUE(ktest_write_file(fake, "root:$6$stand-in:19000:0:99999:7:::\n", 0644) && chmod(fake, 0644) == 0 &&
			 esc_bind(fake, "/etc/shadow") && esc_tmpfs("/root") && mkdir("/root/.ssh", 0755) == 0 &&
			 ktest_write_file(hist, "curl -H 'Authorization: token ghp_stand-in'\n", 0644) &&
			 ktest_write_file(rootkey, "ROOT PRIVATE KEY\n", 0644) && esc_tmpfs("/home") && mkdir(home, 0700) == 0 &&
			 mkdir(ssh, 0700) == 0 && ktest_write_file(key, "USER PRIVATE KEY\n", 0600) &&
			 esc_sh("chmod 644 %s %s && chown -R %d:%d %s", hist, rootkey, uid, gid, home),
			 "stand-in secrets"))
		return;
	/* a workspace the user owns */
	if (!ASSERT_TRUE(chown(f.d.ws, (uid_t)uid, (gid_t)gid) == 0, "workspace owner"))
		return;

	esc_control(ESC_NOBODY, STEPS("cat", "/etc/shadow"), "ok root:$6$stand-in:19000:0:99999:7:::\n", "/etc/shadow");
	esc_control(ESC_NOBODY, STEPS("cat", hist), "ok curl -H 'Authorization: token ghp_stand-in'\n", hist);
	esc_control(ESC_NOBODY, STEPS("cat", rootkey), "ok ROOT PRIVATE KEY\n", rootkey);
	esc_control(uid, STEPS("cat", key), "ok USER PRIVATE KEY\n", "the user's own key");
	ktest_events();
	for (int i = 0; i < 3; i++) {
		const char *const args[] = {"--profile", profiles[i], "--user", user, NULL};
		const char *paths[] = {"/etc/shadow", hist, rootkey, key};

		for (int k = 0; k < 4; k++) {
			char what[400];

			snprintf(what, sizeof(what), "%s: %s", profiles[i], paths[k]);
			esc_run(&r, args, f.d.ws, STEPS("cat", paths[k]));
			esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", paths[k], what);
		}
		/* the listing of the user's ~/.ssh too */
		esc_run(&r, args, f.d.ws, STEPS("open", ssh, "d"));
		esc_denied(&r, "EACCES\n", "file_open", "file.read.denied", ssh, "listing ~/.ssh");
	}
}
