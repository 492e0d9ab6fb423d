// SPDX-License-Identifier: Apache-2.0
/* The totals of runs that ended (ended.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>

#include "state/ended.h"
#include "util/fsutil.h"
#include "util/reasons.h"

#define ENDED_FILE_MAX (16u << 20)

/* obj[key] += n (an integer; created at 0). */
static int add_to(json_t *obj, const char *key, __u64 n)
{
	json_t *v = json_object_get(obj, key);

	if (!n)
		return 0;
	if (json_is_integer(v))
		return json_integer_set(v, json_integer_value(v) + (json_int_t)n);
	return json_object_set_new(obj, key, json_integer((json_int_t)n));
}

/* obj[key], an object (created). */
static json_t *child(json_t *obj, const char *key)
{
	json_t *c = json_object_get(obj, key);

	if (json_is_object(c))
		return c;
	c = json_object();
	if (!c || json_object_set_new(obj, key, c) < 0)
		return NULL;
	return c;
}

static bool all_zero(const __u64 *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (v[i])
			return false;
	return true;
}

int custode_ended_fold(json_t *totals, const char *policy, const struct custode_counters *c,
		       const struct custode_dns_counters *dns)
{
	json_t *den = child(totals, "denials"), *res = child(totals, "resolver"), *pol, *ref;
	int err = 0;

	if (!den || !res || !(ref = child(res, "refusals")))
		return -ENOMEM;
	if (!policy || !*policy)
		policy = "unknown";
	if (c && !all_zero(c->denials, CUSTODE_REASON_KERNEL_MAX)) {
		if (!json_object_get(den, policy) && json_object_size(den) >= CUSTODE_ENDED_MAX_POLICIES)
			policy = CUSTODE_ENDED_OTHER;
		if (!(pol = child(den, policy)))
			return -ENOMEM;
		for (int k = 0; k < CUSTODE_REASON_KERNEL_MAX && !err; k++)
			if (c->denials[k] && custode_reason_name(k))
				err = add_to(pol, custode_reason_name(k), c->denials[k]);
	}
	if (dns) {
		err = err ?: add_to(res, "queries", dns->queries);
		err = err ?: add_to(res, "answered", dns->answered);
		err = err ?: add_to(res, "pins", dns->pins);
		for (int k = 0; k < CUSTODE_DNS_REASONS && !err; k++) {
			const char *name = custode_reason_name(CUSTODE_REASON_DNS_NAME_DENIED + k);

			if (name)
				err = add_to(ref, name, dns->denials[k]);
		}
	}
	return err ? -ENOMEM : 0;
}

int custode_ended_load(const char *path, json_t **out)
{
	char *text = NULL;
	json_t *o;
	int err = custode_read_file(path, ENDED_FILE_MAX, &text, NULL);

	if (err == -ENOENT)
		o = json_pack("{s:i}", "version", 1);
	else if (err < 0)
		return err;
	else
		o = json_loads(text, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (!json_is_object(o)) {
		json_decref(o);
		return o ? -EINVAL : -EBADMSG;
	}
	*out = o;
	return 0;
}

int custode_ended_add(const char *path, const char *policy, const struct custode_counters *c,
		      const struct custode_dns_counters *dns)
{
	char lock[4096], *text = NULL;
	json_t *t = NULL;
	int fd, err;

	if ((!c || all_zero(c->denials, CUSTODE_REASON_KERNEL_MAX)) &&
	    (!dns || all_zero(&dns->queries, sizeof(*dns) / sizeof(__u64))))
		return 0;
	if ((size_t)snprintf(lock, sizeof(lock), "%s.lock", path) >= sizeof(lock))
		return -ENAMETOOLONG;
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			err = -errno;
			goto out;
		}
	if ((err = custode_ended_load(path, &t)) < 0 || (err = custode_ended_fold(t, policy, c, dns)) < 0)
		goto out;
	text = json_dumps(t, JSON_COMPACT | JSON_SORT_KEYS);
	err = text ? custode_write_file_volatile(path, text, strlen(text), 0644) : -ENOMEM;
out:
	free(text);
	json_decref(t);
	close(fd);
	return err;
}
