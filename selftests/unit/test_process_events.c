// SPDX-License-Identifier: Apache-2.0
/* Process-class records (obj.task) as `custode events --json` prints them. */
#include <string.h>
#include <criterion/criterion.h>

#include "custode/event.h"
#include "custode/reasons.h"
#include "events/events.h"

static struct custode_event task_event(__u16 hook, __u16 reason)
{
	struct custode_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.version = CUSTODE_EVENT_VERSION;
	ev.size = sizeof(ev);
	ev.hook = hook;
	ev.reason = reason;
	ev.flags = CUSTODE_EVENT_ENFORCED;
	ev.run_id = 0x1234;
	ev.object = CUSTODE_OBJECT_TASK;
	memcpy(ev.comm, "pprobe", 7);
	return ev;
}

Test(process_events, kill_names_target_and_signal)
{
	struct custode_event ev = task_event(CUSTODE_HOOK_TASK_KILL, CUSTODE_REASON_PROCESS_SIGNAL_DENIED);
	json_t *o, *t;

	ev.obj.task.target_pid = 4242;
	ev.obj.task.target_tgid = 4242;
	ev.obj.task.target_cgroup = 77;
	ev.obj.task.signal = 9;
	o = custode_event_to_json(&ev, sizeof(ev), 0);
	cr_assert_not_null(o);
	cr_expect_str_eq(json_string_value(json_object_get(o, "hook")), "task_kill");
	cr_expect_str_eq(json_string_value(json_object_get(o, "reason")), "process.signal.denied");
	t = json_object_get(o, "task");
	cr_assert_not_null(t);
	cr_expect_eq(json_integer_value(json_object_get(t, "target_tgid")), 4242);
	cr_expect_eq(json_integer_value(json_object_get(t, "target_cgroup")), 77);
	cr_expect_eq(json_integer_value(json_object_get(t, "signal")), 9);
	cr_expect_null(json_object_get(t, "mode"));
	cr_expect_null(json_object_get(o, "file"));
	json_decref(o);
}

Test(process_events, ptrace_mode_and_bpf_ids)
{
	struct custode_event ev = task_event(CUSTODE_HOOK_PTRACE_ACCESS_CHECK, CUSTODE_REASON_PROCESS_PTRACE_DENIED);
	json_t *o;

	ev.obj.task.target_tgid = 10;
	ev.obj.task.signal = 0x11; /* PTRACE_MODE_READ | PTRACE_MODE_FSCREDS */
	o = custode_event_to_json(&ev, sizeof(ev), 0);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "task"), "mode")), 0x11);
	json_decref(o);

	ev = task_event(CUSTODE_HOOK_BPF_MAP, CUSTODE_REASON_ENGINE_PROTECTED);
	ev.obj.task.command = 321;
	o = custode_event_to_json(&ev, sizeof(ev), 0);
	cr_expect_str_eq(json_string_value(json_object_get(o, "hook")), "bpf_map");
	cr_expect_str_eq(json_string_value(json_object_get(o, "reason")), "engine.protected");
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "task"), "id")), 321);
	cr_expect_null(json_object_get(json_object_get(o, "task"), "target_tgid"), "no other task");
	json_decref(o);

	ev = task_event(CUSTODE_HOOK_FILE_FCNTL, CUSTODE_REASON_PROCESS_SIGNAL_DENIED);
	ev.obj.task.target_tgid = (__u32)-1; /* F_SETOWN -1: process group 1 */
	ev.obj.task.command = 8;
	o = custode_event_to_json(&ev, sizeof(ev), 0);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "task"), "target_tgid")), -1);
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(o, "task"), "command")), 8);
	json_decref(o);
}

Test(process_events, new_hook_names)
{
	static const struct {
		int hook;
		const char *name;
	} hooks[] = {
		{CUSTODE_HOOK_KEY_PERMISSION, "key_permission"},
		{CUSTODE_HOOK_FILE_FCNTL, "file_fcntl"},
		{CUSTODE_HOOK_FILE_IOCTL, "file_ioctl"},
		{CUSTODE_HOOK_INODE_INIT_SECURITY_ANON, "inode_init_security_anon"},
		{CUSTODE_HOOK_KERNEL_READ_FILE, "kernel_read_file"},
		{CUSTODE_HOOK_KERNEL_LOAD_DATA, "kernel_load_data"},
	};
	for (size_t i = 0; i < sizeof(hooks) / sizeof(hooks[0]); i++) {
		struct custode_event ev = task_event((__u16)hooks[i].hook, CUSTODE_REASON_PROCESS_KERNEL_DENIED);
		json_t *o = custode_event_to_json(&ev, sizeof(ev), 0);

		cr_expect_str_eq(json_string_value(json_object_get(o, "hook")), hooks[i].name);
		json_decref(o);
	}
}
