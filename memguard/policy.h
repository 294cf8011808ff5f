/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The guard's decisions as pure functions over samples: no I/O, no clock.
 * Unit tests drive them with literal samples and timestamps.
 */

#include <stdbool.h>
#include <stdint.h>

#include "memguard/memguard.h"

struct mg_policy_params {
        uint64_t limit_bytes;
        uint64_t margin_bytes;
        uint64_t stall_window_usec;
        uint32_t stall_pressure_permyriad;
};

/* What one slow-path tick read. */
struct mg_sample {
        uint64_t time_usec;
        uint64_t current_bytes;         /* memory.current */
        uint64_t used_bytes;            /* anon + shmem + kernel + sock, one memory.stat read */
        uint64_t limit_events;          /* memory.events.local high + max */
        uint64_t mem_some_usec;         /* memory.pressure some total */
        uint64_t io_some_usec;          /* io.pressure some total */
        uint64_t restores;              /* workingset_restore_anon + _file, same memory.stat read */
        uint64_t high_events;           /* memory.events.local high */
        uint64_t high_bytes;            /* memory.high, MG_UNLIMITED if none */
        uint64_t cpu_usec;              /* cpu.stat usage_usec */
        bool have_events, have_pressure, have_throttle;
};

/* Ring of the consecutive slow-path samples; 64 covers a 15 s window at the
 * 250 ms tick (the tuned windows stop at 8 s). */
#define MG_POLICY_RING 64

struct mg_policy_state {
        unsigned head, count;           /* ring[head] is the newest */
        uint64_t stalling_since_usec;   /* 0: criteria do not hold */
        struct mg_sample ring[MG_POLICY_RING];
};

/* used = anon + shmem + kernel + sock: memory the actor cannot give back
 * without swap.  Page cache (file), dirty or not, is not in it. */
uint64_t mg_used_bytes(const struct mg_memstat *st);

/* The fast path: below limit - margin nothing else is read. */
static inline bool mg_policy_fast(const struct mg_policy_params *p, uint64_t current_bytes) {
        return current_bytes < p->limit_bytes - p->margin_bytes;
}

/* The kernel's sleep for one 64-page charge batch over memory.high
 * (mm/memcontrol.c calculate_high_delay: 64 s x overage^2, nothing at or
 * under 10 ms, at most 2 s). */
uint64_t mg_high_delay_usec(uint64_t current_bytes, uint64_t high_bytes);

/*
 * Is the actor held over memory.high across the stall window: high events
 * rising, memory.current above memory.high, at least half the time stalled
 * on memory, and at most a quarter of a CPU used?  Returns true and fills
 * *ret (may be NULL).
 */
bool mg_policy_throttled(const struct mg_policy_params *p, const struct mg_policy_state *s,
                         struct mg_throttle_info *ret);

/* Forgets all samples (a fast tick, a lend, a kill). */
void mg_policy_reset(struct mg_policy_state *s);

/* Overshoot needs both used > limit and memory.current > limit.  memory.stat
 * is flushed lazily and may still show memory the actor has already freed,
 * but memory.current is exact (up to the per-CPU charge stock, which only
 * adds): true used can never exceed it, so a stale used above a current at
 * or below the limit is never an overshoot. */
bool mg_policy_overshoot(const struct mg_policy_params *p, uint64_t current_bytes, uint64_t used_bytes);

/*
 * Adds a slow-path sample and decides.  Returns MG_VERDICT_OVERSHOOT,
 * MG_VERDICT_STALL (criteria held for the whole window), MG_VERDICT_STALLING
 * (they hold for the part of the window seen so far) or MG_VERDICT_NEAR.
 * ret_stall_usec and ret_signals (may be NULL) get how long the stall
 * criteria have held and which share of time lost (enum mg_stall_signal)
 * met the threshold over the whole window.
 */
enum mg_verdict mg_policy_decide(const struct mg_policy_params *p, struct mg_policy_state *s,
                                 const struct mg_sample *x, uint64_t *ret_stall_usec, unsigned *ret_signals);
