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
        uint64_t majfaults;             /* pgmajfault, same read */
        uint64_t steal_bytes;           /* pgsteal in bytes, same read: the cache's turnover at the limit */
        uint64_t dirty_bytes;           /* file_dirty + file_writeback, same read */
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
        uint64_t file_bytes, mapped_bytes, majfaults, refault_bytes; /* is it faulting, mapping what it re-reads */
        bool have_events, have_pressure, have_throttle;
};

/* An actor is "faulting" (see mg_policy_decide()) if it takes a major
 * fault at least this often: a sequential walk of a mapped file, readahead
 * hiding most of its faults, takes about 4 a second at 60 MB/s
 * (docs/field-facts.md F3); random touches of a mapped file at 8 MB/s take
 * 1-3 a second on 7.2, whose readaround brings megabytes a fault. */
#define MG_POLICY_FAULT_EVERY_USEC UINT64_C(2000000)
/* A finite job re-reads a file it reads again through read(): `cat` of a
 * file twice the cache, twice, re-reads it at most twice over.  The read
 * path of the refault rule waits for three times the cache. */
#define MG_POLICY_REREAD_CACHES 3
/* What the refault rule must see re-read over a streak before it decides:
 * an eighth of what reclaim took from the actor over it (a few pages of
 * program text read back while a writer beside them turns the cache over
 * is not a thrash), and on the faulting path a 64th of the cache (a single
 * pass over a mapped file re-reads nothing it had). */
#define MG_POLICY_REREAD_OF_STEAL 8
#define MG_POLICY_FAULTING_REREAD_64THS 1
/* Where the kernel counts no re-read at all (MGLRU books no refault for a
 * page evicted more than a few generations ago, so a sequential walk of
 * twice its cache shows none on 7.2), the faulting path decides on
 * turnover: reclaim took this many quarters of the cache over the streak,
 * a clean cache (at most a 16th dirty or under writeback at each segment's
 * end: what reclaim took, the actor had read, not written), and a major
 * fault every MG_POLICY_TURNOVER_FAULT_USEC at least (what it touched was
 * gone: a stream read beside a mapped set that stays resident takes none).
 * A single mapped pass over a file twice the cache turns it over once
 * (1.0 measured on 6.12, 1.03 at 1 GiB on 7.2); a pass over a file more
 * than 2.25 times the cache, stalled at the limit all along, is taken for
 * a thrash.  The quarter past the first turnover is at most
 * MG_POLICY_TURNOVER_EXTRA_MAX: the evidence after onset is what the disk
 * delivers in that time, and 8 MB/s delivers a 1 GiB actor's quarter in
 * 32 s, past the 30 s a thrash is promised; 192 MiB takes 24 s. */
#define MG_POLICY_TURNOVER_QUARTERS 5
#define MG_POLICY_TURNOVER_EXTRA_MAX (UINT64_C(192) << 20)
#define MG_POLICY_TURNOVER_FAULT_USEC UINT64_C(4000000)
/* A fast disk lets a thrash turn its cache over many times in the faulting
 * window (a 256 MiB actor's sequential walk, unthrottled: 125-160 MB/s,
 * 1.3 GiB in 10 s): once the same turnover covers three caches, half the
 * window is enough.  A single mapped pass that long is a pass over a file
 * more than four times the cache, stalled at the limit all along. */
#define MG_POLICY_CHURN_QUARTERS 12

/* Ring of the consecutive slow-path samples; 64 covers a 15 s window at the
 * 250 ms tick (the tuned windows stop at 8 s). */
#define MG_POLICY_RING 64

/* Counter totals at one instant, for the refault rule. */
struct mg_policy_mark {
        uint64_t time_usec, limit_events, refault_bytes, mem_some_usec, io_some_usec, mapped_bytes, majfaults;
        uint64_t steal_bytes;
        bool set;
};

struct mg_policy_state {
        unsigned head, count;           /* ring[head] is the newest */
        uint64_t stalling_since_usec;   /* 0: criteria do not hold */
        uint64_t limit_since_usec;      /* the sample before limit events first rose in the ring; 0: not yet */
        /* The refault rule: the segment under way, and where the present
         * streaks of qualifying segments began (read through read(), and
         * faulting: see mg_policy_decide()). */
        struct mg_policy_mark seg, seg_prev, streak, streak_faulting;
        bool faulting_dirty;            /* a segment of streak_faulting ended with a dirty cache */
        uint64_t stall_refault_bytes;   /* re-read over the streak the last verdict names */
        uint64_t stall_reclaimed_bytes; /* and what reclaim took over it */
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
 * refault rule decided, with s->stall_refault_bytes what was re-read and
 * s->stall_reclaimed_bytes what reclaim took.
 *
 * Two stall rules (docs/design.md), both for an actor that is faulting:
 * waiting on its own memory (most of its cache mapped, or a major fault
 * every MG_POLICY_FAULT_EVERY_USEC) rather than reading files through
 * read(), which a finite job (a backup, a checksum) does as a thrash would:
 *  - restores: across the stall window the limit was hit, pages of the
 *    working set were read back (workingset_restore rose), a 64th of the
 *    cache was re-read (restores or file refaults) and what it has mapped
 *    did not grow with what it re-read (see the faulting path below); in
 *    each half of it the actor was faulting and lost time; and the whole
 *    window lies after the limit was first hit;
 *  - refaults: time is cut into segments of half a stall window; a streak
 *    is the run of qualifying segments up to now.  Two paths:
 *     - faulting: a segment qualifies if the actor lost time, was faulting
 *       and hit the limit in it or the segment before (under MGLRU a walk
 *       gets some pages without reclaim for a second or two).  After
 *       refault_mapped_window_usec of them, it is a stall if over the
 *       streak a 64th of the cache and an eighth of what reclaim took was
 *       re-read, or, the kernel counting no re-read (MGLRU, see
 *       MG_POLICY_TURNOVER_QUARTERS), a clean cache was turned over; after
 *       half of it, if that cache was turned over three times
 *       (MG_POLICY_CHURN_QUARTERS); and
 *       what it has mapped did not grow over the last two segments by more
 *       than half of what it re-read in them (nothing counted: a 64th of
 *       the cache): a working set that fits, read back after a scan pushed
 *       it out, maps what it re-reads and keeps it; a thrash loses it
 *       again.  No pace is asked for: a 256 MiB actor walking twice its
 *       cache at 8 MB/s is a thrash as one at 2 GB/s is;
 *     - read(): a segment qualifies if the limit was hit, time was lost
 *       and something was re-read.  After refault_window_usec of them, it
 *       is a stall once MG_POLICY_REREAD_CACHES times the cache, and an
 *       eighth of what reclaim took, was re-read over the streak.
 *    A hot set larger than the cache books no restores (mm/workingset.c):
 *    this rule is what sees it.
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

/*
 * A park's hard bound: a frozen actor charges nothing of its own, but the
 * kernel charges it for what arrives meanwhile (a socket's receive queue,
 * kernel memory of its open files).  Past the bound when used has grown
 * since the freeze (used_at_park, by more than limit/64) to above limit +
 * limit/8, or to within limit/32 of memory.max, where the next charge
 * meets the kernel's OOM killer, which kills frozen tasks too and leaves
 * no record.  What the actor held at the freeze is the verdict's: an
 * actor frozen far past its limit, or at memory.max, that grows nothing
 * stays parked.
 */
bool mg_policy_park_past_bound(const struct mg_policy_params *p, uint64_t used_bytes, uint64_t used_at_park_bytes,
                               uint64_t max_bytes);

/*
 * The reclaim actuator's decisions (reclaim.c acts on them).
 *
 * Pressure (seed 002): the target's memory.pressure totals are read at the
 * end of each one-second window; a window counts when "some" rose by at
 * least some_usec and, if full_usec is set, "full" by at least full_usec.
 * The predicate holds after `windows` counted windows in a row; it fires
 * once per episode (a run of counted windows) and only when ready (no
 * lend, no dose in flight, the cool-down over): a predicate that holds
 * while not ready fires at the first window it is.
 */
struct mg_reclaim_rule {
        uint64_t some_usec, full_usec;
        unsigned windows;               /* 1 to MG_RECLAIM_WINDOWS_MAX */
};

struct mg_reclaim_windows {
        uint64_t some_total, full_total;        /* at the last window's end */
        bool have_totals;
        bool fired;                     /* this episode's dose was written */
        unsigned streak;                /* counted windows in a row */
        /* the last `windows` windows' stall, oldest first, for the event */
        uint64_t some_usec[MG_RECLAIM_WINDOWS_MAX], full_usec[MG_RECLAIM_WINDOWS_MAX];
};

/* A window ends with these totals (has_full: the file had a full line).
 * Returns true when the dose is to be written now.  A total that went
 * backwards (a counter the kernel reset: a cgroup made again) starts over. */
bool mg_policy_reclaim_window(const struct mg_reclaim_rule *r, struct mg_reclaim_windows *w, uint64_t some_total,
                              uint64_t full_total, bool has_full, bool ready);

/*
 * Headroom (seed 003: no kswapd works per memory cgroup, so an actor at its
 * limit reclaims inside its own allocations, tens to hundreds of ms each):
 * the dose that brings memory.current back to limit - headroom, at most
 * dose_max and at most the file cache (file_bytes: memory.stat file, less
 * what is dirty or under writeback, which reclaim does not take from a
 * cgroup's own reclaim).  0 while current is below that line, or when less
 * than a MiB would go (not worth a write).
 */
uint64_t mg_policy_reclaim_headroom(uint64_t limit_bytes, uint64_t headroom_bytes, uint64_t current_bytes,
                                    uint64_t file_bytes, uint64_t dose_max);
