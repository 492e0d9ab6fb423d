// SPDX-License-Identifier: Apache-2.0
/* libcrypto opened on first use (bundle/crypto.h). */
#define CUSTODE_CRYPTO_IMPL
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "bundle/crypto.h"

/* The library's functions, typed by OpenSSL's own declarations. */
#define CRYPTO_SLOT_F(ret, name, params, args, failure) __typeof__(&name) name;
#define CRYPTO_SLOT_V(name, params, args) __typeof__(&name) name;
static struct {
	CUSTODE_CRYPTO_FUNCS(CRYPTO_SLOT_F, CRYPTO_SLOT_V)
	__typeof__(&EVP_PKEY_Q_keygen) EVP_PKEY_Q_keygen;
} lib;

/* Each wrapper has exactly the type of the function it stands for. */
#define CRYPTO_SAME_F(ret, name, params, args, failure)                                                           \
	_Static_assert(__builtin_types_compatible_p(__typeof__(&custode_ossl_##name), __typeof__(&name)),          \
		       "custode_ossl_" #name " differs from OpenSSL's " #name);
#define CRYPTO_SAME_V(name, params, args) CRYPTO_SAME_F(void, name, params, args, )
CUSTODE_CRYPTO_FUNCS(CRYPTO_SAME_F, CRYPTO_SAME_V)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool opened;
static char error[256];

static void crypto_open_once(void)
{
	void *h = dlopen(CUSTODE_LIBCRYPTO, RTLD_NOW | RTLD_LOCAL);
	const char *missing = NULL;

	if (!h) {
		const char *e = dlerror();
		snprintf(error, sizeof(error), "%s", e ? e : CUSTODE_LIBCRYPTO ": cannot be opened");
		return;
	}
#define CRYPTO_SYM_F(ret, name, params, args, failure)                                                            \
	if (!(*(void **)&lib.name = dlsym(h, #name)) && !missing)                                                   \
		missing = #name;
#define CRYPTO_SYM_V(name, params, args) CRYPTO_SYM_F(void, name, params, args, )
	CUSTODE_CRYPTO_FUNCS(CRYPTO_SYM_F, CRYPTO_SYM_V)
	CRYPTO_SYM_F(EVP_PKEY *, EVP_PKEY_Q_keygen, , , )
	if (missing) {
		snprintf(error, sizeof(error), "%s has no %s", CUSTODE_LIBCRYPTO, missing);
		memset(&lib, 0, sizeof(lib));
		dlclose(h);
		return;
	}
	opened = true; /* the handle stays open for the life of the process */
}

bool custode_crypto_open(void)
{
	pthread_once(&once, crypto_open_once);
	return opened;
}

const char *custode_crypto_error(void)
{
	return opened ? "" : error;
}

#define CRYPTO_WRAP_F(ret, name, params, args, failure)                                                           \
	ret custode_ossl_##name params                                                                              \
	{                                                                                                           \
		if (!custode_crypto_open())                                                                          \
			return failure;                                                                              \
		return lib.name args;                                                                                \
	}
#define CRYPTO_WRAP_V(name, params, args)                                                                         \
	void custode_ossl_##name params                                                                             \
	{                                                                                                           \
		if (custode_crypto_open())                                                                           \
			lib.name args;                                                                               \
	}
CUSTODE_CRYPTO_FUNCS(CRYPTO_WRAP_F, CRYPTO_WRAP_V)

EVP_PKEY *custode_ossl_keygen(const char *type, const char *group)
{
	if (!custode_crypto_open())
		return NULL;
	return group ? lib.EVP_PKEY_Q_keygen(NULL, NULL, type, group) : lib.EVP_PKEY_Q_keygen(NULL, NULL, type);
}

void custode_ossl_cleanse(void *p, size_t len)
{
	explicit_bzero(p, len);
}
