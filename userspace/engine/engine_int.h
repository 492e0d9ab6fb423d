/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the parts of the engine (engine.c, load.c, pins.c, rules.c, runs.c)
 * share and nobody else uses. Call with the engine lock held.
 */
#ifndef CUSTODE_ENGINE_INT_H
#define CUSTODE_ENGINE_INT_H

#include "engine/engine.h"

/* First 8 bytes of SHA-256 over the engine's BPF objects (meta's build_digest). */
__u64 engine_build_digest(void);

/*
 * Load, attach and pin each class of `missing` (CUSTODE_CLASS_*), recording
 * each in meta as soon as it is pinned.
 */
int engine_load_missing(struct custode_engine *e, unsigned missing, struct custode_refusal *why);

/* Read/write meta's one element (fd from custode_meta_open or custode_meta_create). */
int engine_meta_read(int fd, struct custode_meta *m);
int engine_meta_write(int fd, const struct custode_meta *m);

/* Unpin everything: links first, and wait until their programs are gone; then meta and the maps. */
int engine_unpin_all(void);

/*
 * Remove what a failed first load left under CUSTODE_PIN_ROOT, whose meta
 * was never written (nothing there is in use: the engine lock is held and
 * no class was recorded): any pins, then the directories.
 */
void engine_clear_unrecorded(void);
/* Unmap custode_identity_filter if this process mapped it (engine/rules.c). */
void custode_engine_unmap_filter(struct custode_engine *e);
/* rmdir root/links, root/maps and root, each only if it is empty. */
void engine_rmdir_empty_pins(const char *root);

#endif
