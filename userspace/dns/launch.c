// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <string.h>

#include "custode/resolver.h"
#include "dns/launch.h"
#include "dns/names.h"
#include "dns/resolver.h"

int custode_dns_run_prepare(__u64 run_id, const struct custode_net_ruleset *net, struct custode_refusal *why)
{
	int err;

	if (!net->n_hosts)
		return 0;
	err = custode_resolver_running(why);
	if (err < 0)
		return err;
	if (err == 0)
		return -ENOENT; /* why says which: not running, stale, another namespace */
	err = custode_dns_names_write(run_id, net->hosts, net->n_hosts);
	if (err)
		return custode_refuse(why, -err, CUSTODE_REASON_RUN_SETUP_FAILED, "names for the resolver: %s",
				      strerror(-err));
	return 0;
}

void custode_dns_run_summary(__u64 run_cgid, char *out, size_t len)
{
	struct custode_dns_counters c;

	if (len)
		out[0] = 0;
	if (custode_resolver_counters(run_cgid, &c, true) == 0)
		custode_resolver_counters_format(&c, out, len);
}
