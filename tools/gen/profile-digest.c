// SPDX-License-Identifier: Apache-2.0
/*
 * Build step: the content digest of each built-in profile (sha256 of the JCS
 * form of its "content", what contentDigest means: docs/bundles.md), written
 * as a C table, so `custode run --profile` doesn't hash at run time (the
 * hash and OpenSSL's start were half the launcher's instructions).
 *
 *   profile-digest OUT.c policies/a.json policies/b.json ...
 *
 * It uses the launcher's own JCS code (userspace/bundle/jcs.c);
 * selftests/unit/test_profile_digest.c checks the table against it.
 */
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "bundle/jcs.h"

static int digest_of(const char *path, char out[72])
{
	json_error_t e;
	json_t *doc = json_load_file(path, 0, &e) /* as custode_policy_content_digest loads it */;
	char err[256];
	int rc;

	if (!doc) {
		fprintf(stderr, "profile-digest: %s:%d: %s\n", path, e.line, e.text);
		return -1;
	}
	rc = custode_jcs_sha256(json_object_get(doc, "content"), out, err, sizeof(err));
	if (rc < 0)
		fprintf(stderr, "profile-digest: %s: %s\n", path, err);
	json_decref(doc);
	return rc;
}

int main(int argc, char **argv)
{
	char tmp[4096];
	FILE *f;

	if (argc < 2) {
		fprintf(stderr, "usage: profile-digest OUT.c PROFILE.json...\n");
		return 2;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", argv[1]);
	f = fopen(tmp, "w");
	if (!f) {
		perror(tmp);
		return 1;
	}
	fprintf(f, "/* generated from policies/ by tools/gen/profile-digest.c; do not edit */\n"
		   "#include <stddef.h>\n#include \"bundle/source.h\"\n\n"
		   "const struct custode_profile_digest custode_profile_digests[] = {\n");
	for (int i = 2; i < argc; i++) {
		const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		size_t n = strlen(base);
		char d[72];

		if (n > 5 && !strcmp(base + n - 5, ".json"))
			n -= 5;
		if (digest_of(argv[i], d) < 0) {
			fclose(f);
			remove(tmp);
			return 1;
		}
		fprintf(f, "\t{\"%.*s\", \"%s\"},\n", (int)n, base, d);
	}
	fprintf(f, "\t{NULL, NULL},\n};\n");
	if (fclose(f) || rename(tmp, argv[1])) {
		perror(argv[1]);
		return 1;
	}
	return 0;
}
