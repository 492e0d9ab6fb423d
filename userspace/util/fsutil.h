/* SPDX-License-Identifier: Apache-2.0 */
#ifndef CUSTODE_UTIL_FSUTIL_H
#define CUSTODE_UTIL_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Write data to path atomically: temp file in the same directory, fsync, rename, fsync dir. */
int custode_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);
/*
 * The same replace-by-rename, without fsync: for state under /run (tmpfs,
 * gone at reboot with the runs it describes), where a reader must never see
 * a partial file but a crash needs nothing durable. Two fsyncs per write
 * were most of `custode run`'s wall time where /run is a disk.
 */
int custode_write_file_volatile(const char *path, const void *data, size_t len, mode_t mode);
/*
 * Read a whole file (at most max bytes; -EFBIG if larger). *out is
 * NUL-terminated and must be freed. Out-params untouched on failure.
 */
int custode_read_file(const char *path, size_t max, char **out, size_t *len);
/* Write a string to an existing file (cgroupfs, procfs): one write(2). */
int custode_write_str(const char *path, const char *s);
/* mkdir -p with mode for each created component. */
int custode_mkdir_p(const char *path, mode_t mode);
/* Remove a directory tree (no symlink following); -errno of the first failure. */
int custode_rm_rf(const char *path);

#endif
