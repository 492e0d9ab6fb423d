// SPDX-License-Identifier: Apache-2.0
/*
 * pinfill PID COUNT [tcp|udp]: insert COUNT live pins (ordinary
 * IPv6 addresses 2a00:cafe:: + 1 .. COUNT, pinaddr.h, so a bench knows which
 * addresses are pinned; port 443, tcp unless udp is said; one hour) for the run that PID belongs to,
 * straight into the pinned custode_pins map — the state a busy resolver
 * would leave. Benchmark helper only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/bpf.h>

#include "custode/abi.h"
#include "cgroup/cgroup.h"
#include "pinaddr.h"

int main(int argc, char **argv)
{
	char path[64], line[4096], mount[512], cg[4600], root[600];
	struct timespec ts;
	__u64 cgid;
	long count;
	FILE *f;
	int fd, level;

	if (argc < 3 || argc > 4 || (count = atol(argv[2])) < 0 ||
	    (argc == 4 && strcmp(argv[3], "tcp") != 0 && strcmp(argv[3], "udp") != 0)) {
		fprintf(stderr, "usage: pinfill PID COUNT [tcp|udp]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/proc/%s/cgroup", argv[1]);
	f = fopen(path, "r");
	if (!f || !fgets(line, sizeof(line), f) || strncmp(line, "0::", 3) != 0) {
		/* hybrid hosts list v1 hierarchies first */
		if (f)
			while (fgets(line, sizeof(line), f) && strncmp(line, "0::", 3) != 0)
				;
		if (!f || strncmp(line, "0::", 3) != 0) {
			fprintf(stderr, "pinfill: no cgroup v2 line for %s\n", argv[1]);
			return 1;
		}
	}
	fclose(f);
	line[strcspn(line, "\n")] = 0;
	if (custode_cgroup2_mount(mount, sizeof(mount)) < 0 || custode_cgroup_root(mount, root, sizeof(root)) < 0)
		return 1;
	/* the run is the ancestor one level below custode's root */
	snprintf(cg, sizeof(cg), "%s%s", mount, line + 3);
	level = custode_cgroup_level(mount, root);
	for (char *p = cg + strlen(mount), *slash = p; (slash = strchr(slash + 1, '/'));) {
		if (custode_cgroup_level(mount, cg) <= level + 1)
			break;
		*strrchr(cg, '/') = 0;
		slash = p;
	}
	if (custode_cgroup_id(cg, &cgid) < 0) {
		fprintf(stderr, "pinfill: cgroup id of %s: %s\n", cg, strerror(errno));
		return 1;
	}
	fd = bpf_obj_get(CUSTODE_PIN_MAPS "/custode_pins");
	if (fd < 0) {
		perror("pinfill: custode_pins");
		return 1;
	}
	clock_gettime(CLOCK_BOOTTIME, &ts);
	for (long i = 0; i < count; i++) {
		struct custode_pin_key k = {.run_cgid = cgid, .proto = argc == 4 && argv[3][0] == 'u' ? 17 : 6, .port = 443};
		struct custode_pin v = {.expires_ns = (__u64)ts.tv_sec * 1000000000ull + 3600ull * 1000000000ull};

		bench_pin_addr(i, k.addr);
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY) < 0) {
			fprintf(stderr, "pinfill: insert %ld: %s\n", i, strerror(errno));
			return 1;
		}
	}
	printf("%ld pins for cgroup %llu\n", count, (unsigned long long)cgid);
	return 0;
}
