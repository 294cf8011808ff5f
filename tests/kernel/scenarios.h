/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

#include <stdint.h>

/*
 * The kernel scenarios, one function each, returning KT_PASS, KT_FAIL or
 * KT_SKIP (ktest.h).  The table that runs them is in scenarios.c; a file of
 * scenarios declares its functions here.
 */

/* scenarios.c: the guard's core behaviour */
int t_anon_overshoot(void);
int t_page_cache_at_limit(void);
int t_dirty_after_lend(void);
int t_stale_stat(void);
int t_thrash_hot_file(void);
int t_thrash_own_code(void);
int t_throttled_at_high(void);
int t_lifecycle(void);
int t_kernel_facts(void);

/* stall.c: how stalls are noticed, and who is not a stall */
int t_kernel_oom_attributed(void);
int t_psi_trigger_wakes(void);
int t_healthy_neighbours(void);
int t_pressure_hidden(void);

/* field.c: the field's thrashes at their sizes (docs/field-facts.md), and
 * who must survive */
int t_thrash_sequential(void);
int t_thrash_under_high(void);
int t_thrash_below_line(void);
int t_reread_finite(void);
int t_dirty_writer(void);
int t_throttled_below_line(void);
/* The same at any disk speed, run only when named: "disk-KIND-MIB" (KIND
 * seq, skew, cat, pass, dirty or healthy; an actor of MIB MiB). */
int t_disk_parse(const char *name, unsigned *ret_kind, uint64_t *ret_mib);
int t_disk_case(const char *name);

/* snapshot.c: the snapshot module's writes and restores */
int t_snapshot_write(void);
int t_snapshot_baseline(void);
int t_snapshot_faults(void);
int t_snapshot_cycles(void);

/* harden.c: crash-safe lends, least privilege, restores off the set's thread */
int t_lend_crash(void);
int t_lend_resize(void);
int t_confined_guard(void);
int t_restore_beside_overshoot(void);

/* kill.c: what a kill cannot reach */
int t_empty_over_limit(void);

/* reclaim.c: the reclaim actuator */
int t_reclaim_dose(void);
int t_reclaim_lend(void);
int t_reclaim_pressure(void);
int t_reclaim_vanish(void);
int t_reclaim_zram(void);

/* park.c: park instead of kill */
int t_park_guest_thrash(void);
int t_park_thaw(void);
int t_park_deadline(void);
int t_park_neighbours(void);
int t_park_crash(void);
