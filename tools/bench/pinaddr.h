/* SPDX-License-Identifier: Apache-2.0 */
/* The i-th pin a bench fills (pinfill) and targets (udpbench): 2a00:cafe:: + i + 1 (ordinary space: the classifier lets pins decide). */
#ifndef CUSTODE_BENCH_PINADDR_H
#define CUSTODE_BENCH_PINADDR_H
#include <string.h>

static inline void bench_pin_addr(long i, unsigned char a[16])
{
	unsigned long long v = (unsigned long long)i + 1;

	memset(a, 0, 16);
	a[0] = 0x2a, a[1] = 0x00, a[2] = 0xca, a[3] = 0xfe;
	for (int b = 15; b >= 8; b--, v >>= 8)
		a[b] = (unsigned char)v;
}
#endif
