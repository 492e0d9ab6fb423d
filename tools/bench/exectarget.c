// SPDX-License-Identifier: Apache-2.0
/* exectarget: exits 0. exec-bench's program: dynamically linked, so an exec maps libc with PROT_EXEC. */
int main(void)
{
	return 0;
}
