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
        uint64_t line_bytes;            /* the fast path is below it: mg_policy_line() */
        uint64_t stall_window_usec;
        uint32_t stall_pressure_permyriad;
        uint64_t refault_window_usec;   /* the refault rule, pages re-read through read() */
        uint64_t refault_mapped_window_usec; /* ... pages mostly mapped */
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
        uint64_t refault_bytes;         /* workingset_refault_file in bytes, same read */
        uint64_t file_bytes, mapped_bytes; /* file, file_mapped: the cache and how much of it is mapped */
        uint64_t high_events;           /* memory.events.local high */
        uint64_t high_bytes;            /* memory.high, MG_UNLIMITED if none */
        uint64_t cpu_usec;              /* cpu.stat usage_usec */
        bool have_events, have_pressure, have_throttle;
};

/* What the ring keeps of a sample: what the restore and throttle rules look
 * back at.  The refault rule keeps its own marks, and overshoot needs only
 * the newest sample. */
struct mg_ring_sample {
        uint64_t time_usec, current_bytes, limit_events, mem_some_usec, io_some_usec, restores;
        uint64_t high_events, high_bytes, cpu_usec;
        bool have_events, have_pressure, have_throttle;
};

/* Ring of the consecutive slow-path samples; 64 covers a 15 s window at the
 * 250 ms tick (the tuned windows stop at 8 s). */
#define MG_POLICY_RING 64

/* Counter totals at one instant, for the refault rule. */
struct mg_policy_mark {
        uint64_t time_usec, limit_events, refault_bytes, mem_some_usec, io_some_usec;
        bool set;
};

struct mg_policy_state {
        unsigned head, count;           /* ring[head] is the newest */
        uint64_t stalling_since_usec;   /* 0: criteria do not hold */
        /* The refault rule: the segment under way, and where the present
         * streaks of qualifying segments began (any, and mapped only). */
        struct mg_policy_mark seg, streak, streak_mapped;
        uint64_t stall_refault_bytes;   /* re-read over the streak the last verdict names */
        struct mg_ring_sample ring[MG_POLICY_RING];
};

/* used = anon + shmem + kernel + sock: memory the actor cannot give back
 * without swap.  Page cache (file), dirty or not, is not in it. */
uint64_t mg_used_bytes(const struct mg_memstat *st);

/* The fast-path line: limit - margin, or, where a kernel limit (the lower
 * of memory.high and memory.max, MG_UNLIMITED for none) is below the
 * guard's limit, that kernel limit less the same share of it.  An actor
 * pressed against memory.high at 90 % of its limit (kubelet's MemoryQoS)
 * sits below limit - limit/16 and must still be seen at its limit. */
uint64_t mg_policy_line(uint64_t limit_bytes, uint64_t margin_bytes, uint64_t kernel_limit_bytes);

/* The fast path: below the line nothing else is read. */
static inline bool mg_policy_fast(const struct mg_policy_params *p, uint64_t current_bytes) {
        return current_bytes < p->line_bytes;
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
 * The kill decision's last word: a verdict of mg_policy_decide() against
 * the fresh read made just before acting (memory.current, and for an
 * overshoot used from a memory.stat read after it).  An overshoot stands
 * only if both files still say so: a stale memory.stat flushes on a read
 * once enough updates are pending, so two reads that agree are the
 * kernel's current word.  A stall stands while the actor is still at its
 * line.  Returns v if it stands, MG_VERDICT_OK if the fresh read withdrew
 * it, v unchanged for a verdict that is not a kill.
 */
enum mg_verdict mg_policy_confirm(const struct mg_policy_params *p, enum mg_verdict v, uint64_t current_bytes,
                                  uint64_t used_bytes);

/*
 * Adds a slow-path sample and decides.  Returns MG_VERDICT_OVERSHOOT,
 * MG_VERDICT_STALL (criteria held for the whole window), MG_VERDICT_STALLING
 * (they hold for the part of the window seen so far) or MG_VERDICT_NEAR.
 * ret_stall_usec and ret_signals (may be NULL) get how long the stall
 * criteria have held and which share of time lost (enum mg_stall_signal)
 * met the threshold over the whole window; MG_STALL_REFAULT when the
 * refault rule decided, with s->stall_refault_bytes what was re-read.
 *
 * Two stall rules (docs/design.md):
 *  - restores: across the stall window the limit was hit, pages of the
 *    working set were read back (workingset_restore rose), and time was
 *    lost in each half of it;
 *  - refaults: in every segment (half a stall window) of a longer window,
 *    the limit was hit, time was lost, and file pages were read back at a
 *    pace that re-reads the whole cache at least once per window.  The
 *    window is refault_mapped_window_usec when at least half the cache is
 *    mapped (program text, mmapped data) in every segment, else
 *    refault_window_usec, long enough for a finite job that re-reads a file
 *    a few times to finish.  A hot set larger than the cache books no
 *    restores (mm/workingset.c): this rule is what sees it.
 */
enum mg_verdict mg_policy_decide(const struct mg_policy_params *p, struct mg_policy_state *s,
                                 const struct mg_sample *x, uint64_t *ret_stall_usec, unsigned *ret_signals);

/*
 * May a kill be deferred (mg_guard_defer_kill())?  Not once anon + shmem
 * (anon_shmem_bytes: what no reclaim frees without swap) is above limit +
 * limit/8, nor once it is within limit/32 of memory.max (max_bytes,
 * MG_UNLIMITED for none).  An actor that keeps allocating through a
 * deferral meets memory.max, and there the kernel's memcg OOM killer acts
 * instead of the guard: it kills the one task oom_badness() picks (the
 * whole group only with memory.oom.group) and leaves a count in
 * memory.events.local, no record.  Page cache is not counted: the kernel
 * reclaims it before it OOM-kills.
 */
bool mg_policy_may_defer(const struct mg_policy_params *p, uint64_t anon_shmem_bytes, uint64_t max_bytes);
