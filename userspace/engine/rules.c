// SPDX-License-Identifier: Apache-2.0
/*
 * Rule sets in the engine's maps (engine.h): the id a run's rules are keyed
 * by, the file and egress rules of a rule set, and their deletion — by the
 * rules when they are known, by a scan when only the id is (gc).
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <bpf/bpf.h>

#include "engine/engine.h"
#include "engine/engine_int.h"

int custode_engine_alloc_ruleset(struct custode_engine *e, __u32 *out)
{
	/* Another launcher may have allocated since we opened the engine: re-read under the lock. */
	int err = engine_meta_read(e->meta_fd, &e->meta);

	if (err)
		return err;
	for (int tries = 0; tries < 1 << 20; tries++) {
		__u32 id = e->meta.next_ruleset++;
		__u64 key, next;
		void *prev = NULL;
		bool used = false;
		struct custode_run run;

		if (e->meta.next_ruleset == 0)
			e->meta.next_ruleset = 1;
		if (id == 0)
			continue;
		while (!used && bpf_map_get_next_key(e->runs_fd, prev, &next) == 0) {
			key = next;
			prev = &key;
			if (bpf_map_lookup_elem(e->runs_fd, &key, &run) == 0 && run.ruleset == id)
				used = true;
		}
		if (used)
			continue;
		*out = id;
		return engine_meta_write(e->meta_fd, &e->meta);
	}
	return -ENOSPC;
}

int custode_engine_add_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs)
{
	for (size_t i = 0; i < rs->n_ids; i++)
		if (bpf_map_update_elem(e->identities_fd, &rs->ids[i].key, &rs->ids[i].val, BPF_ANY) < 0)
			return -errno;
	for (size_t i = 0; i < rs->n; i++) {
		struct custode_path_key keys[2];
		struct custode_path_rule val = {.allow = rs->rules[i].allow, .flags = rs->rules[i].flags};
		int n = custode_rule_keys(&rs->rules[i], ruleset, keys);

		for (int k = 0; k < n; k++) {
			/* rename protection is about the path itself (keys[0], "D\0"), never what's below it */
			if (k == 1)
				val.flags &= ~CUSTODE_PATH_RULE_PROTECTS_BELOW;
			if (bpf_map_update_elem(e->rules_fd, &keys[k], &val, BPF_ANY) < 0)
				return -errno;
		}
	}
	return 0;
}

int custode_engine_delete_rules(struct custode_engine *e, __u32 ruleset, const struct custode_fs_ruleset *rs)
{
	int err = 0;

	for (size_t i = 0; i < rs->n_ids; i++)
		if (bpf_map_delete_elem(e->identities_fd, &rs->ids[i].key) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n; i++) {
		struct custode_path_key keys[2];
		int n = custode_rule_keys(&rs->rules[i], ruleset, keys);

		for (int k = 0; k < n; k++)
			if (bpf_map_delete_elem(e->rules_fd, &keys[k]) < 0 && errno != ENOENT && !err)
				err = -errno;
	}
	return err;
}

/*
 * Delete the keys of a map that match(key). Deleting while iterating restarts
 * the walk; repeat until a pass deletes nothing.
 */
static int delete_matching(int fd, size_t key_size, bool (*match)(const void *key, const void *arg), const void *arg)
{
	unsigned char key[sizeof(struct custode_path_key)], next[sizeof(struct custode_path_key)]; /* the largest key */
	int err = 0, deleted;

	if (fd < 0 || key_size > sizeof(key))
		return fd < 0 ? 0 : -EINVAL;
	do {
		void *prev = NULL;
		deleted = 0;
		while (bpf_map_get_next_key(fd, prev, next) == 0) {
			memcpy(key, next, key_size);
			prev = key;
			if (!match(key, arg))
				continue;
			if (bpf_map_delete_elem(fd, key) == 0)
				deleted++;
			else if (errno != ENOENT && !err)
				err = -errno;
			prev = NULL;
		}
	} while (deleted && !err);
	return err;
}

static bool identity_key_of(const void *key, const void *arg)
{
	return ((const struct custode_identity_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool net_key_of(const void *key, const void *arg)
{
	return ((const struct custode_net_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool private_key_of(const void *key, const void *arg)
{
	return ((const struct custode_private_key *)key)->ruleset == *(const __u32 *)arg;
}

static bool pin_key_of(const void *key, const void *arg)
{
	return ((const struct custode_pin_key *)key)->run_cgid == *(const __u64 *)arg;
}

static bool path_key_of(const void *key, const void *arg)
{
	return ((const struct custode_path_key *)key)->ruleset == *(const __u32 *)arg;
}

int custode_engine_delete_ruleset(struct custode_engine *e, __u32 ruleset)
{
	delete_matching(e->identities_fd, sizeof(struct custode_identity_key), identity_key_of, &ruleset);
	return delete_matching(e->rules_fd, sizeof(struct custode_path_key), path_key_of, &ruleset);
}

int custode_engine_add_net(struct custode_engine *e, const struct custode_net_ruleset *rs)
{
	__u32 one = 1;

	if ((rs->n || rs->n_priv) && e->net_rules_fd < 0)
		return -ENOENT;
	for (size_t i = 0; i < rs->n; i++)
		if (bpf_map_update_elem(e->net_rules_fd, &rs->keys[i], &rs->vals[i], BPF_ANY) < 0)
			return -errno;
	for (size_t i = 0; i < rs->n_priv; i++)
		if (bpf_map_update_elem(e->net_private_fd, &rs->priv[i], &one, BPF_ANY) < 0)
			return -errno;
	if (rs->n_inbound && e->net_inbound_fd < 0)
		return -ENOENT;
	for (size_t i = 0; i < rs->n_inbound; i++)
		if (bpf_map_update_elem(e->net_inbound_fd, &rs->inbound[i], &one, BPF_ANY) < 0)
			return -errno;
	return 0;
}

int custode_engine_delete_net(struct custode_engine *e, const struct custode_net_ruleset *rs)
{
	int err = 0;

	if (e->net_rules_fd < 0)
		return 0;
	for (size_t i = 0; i < rs->n; i++)
		if (bpf_map_delete_elem(e->net_rules_fd, &rs->keys[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n_priv; i++)
		if (bpf_map_delete_elem(e->net_private_fd, &rs->priv[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	for (size_t i = 0; i < rs->n_inbound && e->net_inbound_fd >= 0; i++)
		if (bpf_map_delete_elem(e->net_inbound_fd, &rs->inbound[i]) < 0 && errno != ENOENT && !err)
			err = -errno;
	return err;
}

int custode_engine_delete_net_ruleset(struct custode_engine *e, __u32 ruleset)
{
	int err = delete_matching(e->net_rules_fd, sizeof(struct custode_net_key), net_key_of, &ruleset);
	int r = delete_matching(e->net_private_fd, sizeof(struct custode_private_key), private_key_of, &ruleset);
	int q = delete_matching(e->net_inbound_fd, sizeof(struct custode_private_key), private_key_of, &ruleset);

	return err ? err : r ? r : q;
}

int custode_engine_delete_pins(struct custode_engine *e, __u64 run_cgid)
{
	return delete_matching(e->pins_fd, sizeof(struct custode_pin_key), pin_key_of, &run_cgid);
}
