// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "run/user.h"

static int parse_id(const char *s, unsigned long *out)
{
	char *end;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out >= 0xffffffffUL ? -EINVAL : 0;
}

/*
 * Does nsswitch.conf name "files" first for passwd? Then an entry of
 * /etc/passwd is the answer NSS would give, and it is read without NSS
 * (whose set-up — the config, nscd probes, its allocations — was a quarter
 * of `custode run`'s own start-up work). Anything else, or no entry there:
 * getpwnam/getpwuid as before.
 */
static bool passwd_files_first(void)
{
	char line[512];
	bool yes = false;
	FILE *f = fopen("/etc/nsswitch.conf", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		const char *p = line;

		if (strncmp(p, "passwd:", 7))
			continue;
		for (p += 7; *p == ' ' || *p == '\t'; p++)
			;
		yes = !strncmp(p, "files", 5) && (p[5] == 0 || p[5] == ' ' || p[5] == '\t' || p[5] == '\n');
		break;
	}
	fclose(f);
	return yes;
}

/* The /etc/passwd entry of `name` (or of `uid` when name is NULL) into u; false when there is none. */
static bool passwd_file_lookup(const char *name, uid_t uid, struct custode_run_user *u)
{
	struct passwd pw, *hit = NULL;
	char buf[1024];
	FILE *f;

	if (!passwd_files_first() || !(f = fopen("/etc/passwd", "re")))
		return false;
	while (fgetpwent_r(f, &pw, buf, sizeof(buf), &hit) == 0 && hit) {
		if (name ? !strcmp(pw.pw_name, name) : pw.pw_uid == uid)
			break;
		hit = NULL;
	}
	fclose(f);
	if (!hit || strlen(pw.pw_name) >= sizeof(u->name))
		return false;
	u->uid = pw.pw_uid;
	u->gid = pw.pw_gid;
	snprintf(u->name, sizeof(u->name), "%s", pw.pw_name);
	return true;
}

int custode_run_user_resolve(const char *spec, struct custode_run_user *out, struct custode_refusal *why)
{
	struct custode_run_user u = {0};
	char buf[256], *colon, *grp = NULL;
	const char *who;
	unsigned long id;
	struct passwd *pw;

	if (spec) {
		if (strlen(spec) >= sizeof(buf))
			return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USER, "--user %.64s...: too long", spec);
		snprintf(buf, sizeof(buf), "%s", spec);
		colon = strchr(buf, ':');
		if (colon) {
			*colon = 0;
			grp = colon + 1;
		}
		who = buf;
	} else if (getenv("SUDO_UID") && getenv("SUDO_GID")) {
		snprintf(buf, sizeof(buf), "%s", getenv("SUDO_UID"));
		grp = getenv("SUDO_GID");
		who = buf;
	} else {
		snprintf(buf, sizeof(buf), "%u", (unsigned)getuid());
		who = getuid() == 0 ? "nobody" : buf;
	}

	if (parse_id(who, &id) == 0) {
		if (!passwd_file_lookup(NULL, (uid_t)id, &u)) {
			u.uid = (uid_t)id;
			pw = getpwuid(u.uid);
			u.gid = pw ? pw->pw_gid : (gid_t)id;
			snprintf(u.name, sizeof(u.name), "%s", pw ? pw->pw_name : who);
		}
	} else if (!passwd_file_lookup(who, 0, &u)) {
		pw = getpwnam(who);
		if (!pw)
			return custode_refuse(why, ENOENT, CUSTODE_REASON_RUN_USER, "no user '%s'", who);
		u.uid = pw->pw_uid;
		u.gid = pw->pw_gid;
		snprintf(u.name, sizeof(u.name), "%s", pw->pw_name);
	}
	if (grp && *grp) {
		struct group *gr;

		if (parse_id(grp, &id) == 0) {
			u.gid = (gid_t)id;
		} else if ((gr = getgrnam(grp))) {
			u.gid = gr->gr_gid;
		} else {
			return custode_refuse(why, ENOENT, CUSTODE_REASON_RUN_USER, "no group '%s'", grp);
		}
	} else if (grp) {
		return custode_refuse(why, EINVAL, CUSTODE_REASON_RUN_USER, "--user %s: empty group", spec);
	}
	if (u.uid == 0)
		return custode_refuse(why, EPERM, CUSTODE_REASON_RUN_ROOT_UNPROTECTED,
				      "custode does not run commands as root: even without capabilities a root "
				      "process owns the engine's pins and could remove them; give --user USER");
	if (u.gid == 0)
		return custode_refuse(why, EPERM, CUSTODE_REASON_RUN_USER,
				      "custode does not run commands with group root; give --user USER:GROUP");
	*out = u;
	return 0;
}

int custode_run_user_enter(const struct custode_run_user *u)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[2];

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	/* the bounding set needs CAP_SETPCAP: empty it while still root */
	for (int cap = 0; cap <= 63; cap++)
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	/*
	 * Raw syscalls: they change the calling task only. glibc's wrappers would
	 * signal every other thread of the process to do the same, which in the
	 * launcher's CLONE_VM child (run.c spawn_into) are the launcher's.
	 */
	if (syscall(SYS_setgroups, 1, &u->gid) < 0 || syscall(SYS_setresgid, u->gid, u->gid, u->gid) < 0 ||
	    syscall(SYS_setresuid, u->uid, u->uid, u->uid) < 0)
		return -errno;
	/* setresuid to non-root clears permitted/effective; make it explicit and checked */
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capset, &hdr, data) < 0)
		return -errno;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -errno;
	if (data[0].effective | data[0].permitted | data[0].inheritable | data[1].effective | data[1].permitted |
	    data[1].inheritable)
		return -EPERM;
	return 0;
}
