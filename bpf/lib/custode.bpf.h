/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Everything a custode BPF object builds on, by topic:
 *   lsm.bpf.h    declaring LSM programs and returning their verdicts
 *   maps.bpf.h   the pinned maps shared by every object
 *   run.bpf.h    the current task's run, live-run and enforcement decisions
 *   event.bpf.h  denial counters, records and their throttle
 */
#ifndef CUSTODE_BPF_H
#define CUSTODE_BPF_H

#include "lsm.bpf.h"
#include "maps.bpf.h"
#include "run.bpf.h"
#include "event.bpf.h"

#endif
