// SPDX-License-Identifier: Apache-2.0
/*
 * The engine's build digest (engine_build_digest, made at build time by
 * cmake/BpfDigest.cmake) is the first 8 bytes of SHA-256 over the BPF
 * objects this binary embeds — the bytes the engine loads — so a stale
 * digest (the objects rebuilt, the header not) can't tell two engines apart
 * wrongly.
 */
#include <string.h>
#include <criterion/criterion.h>
#include <openssl/evp.h>

#include "engine/engine_int.h"

#include "file.skel.h"
#include "net.skel.h"
#include "proc.skel.h"

Test(engine_digest, is_sha256_of_the_embedded_objects)
{
	const void *(*parts[])(size_t *) = {file_bpf__elf_bytes, net_bpf__elf_bytes, proc_bpf__elf_bytes};
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	unsigned char md[32];
	unsigned int mdlen = 0;
	__u64 want;

	cr_assert_not_null(ctx);
	cr_assert_eq(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL), 1);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t sz = 0;
		const void *b = parts[i](&sz);

		cr_assert(sz > 0);
		cr_assert_eq(EVP_DigestUpdate(ctx, b, sz), 1);
	}
	cr_assert_eq(EVP_DigestFinal_ex(ctx, md, &mdlen), 1);
	EVP_MD_CTX_free(ctx);
	memcpy(&want, md, sizeof(want));
	cr_assert_neq(want, 0);
	cr_assert_eq(engine_build_digest(), want, "build digest %#llx, embedded objects hash to %#llx",
		     (unsigned long long)engine_build_digest(), (unsigned long long)want);
}
