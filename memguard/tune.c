/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The options a guard runs with: the defaults tuned to the actor's limit
 * (docs/tuning.md has their table), and the check of what a caller gave.
 * Pure: no I/O.
 */
#include <errno.h>
#include <string.h>

#include "policy.h"
#include "sized.h"
#include "tune.h"
#include "util.h"


/* A guard that looks less often than this guards nothing (an actor can
 * fill its limit within seconds).  The bound also keeps the times built
 * from a tick (the set's next tick, the pressure reads' hold, the ring's
 * span) far from the end of the clock. */
#define MG_TICK_MAX_USEC (3600 * MG_USEC_PER_SEC)

/* How many times limit doubles past 256 MiB (negative below it). */
static int doublings_past_256m(uint64_t limit) {
        int d = 0;
        for (uint64_t l = 256 * MG_MIB; l < limit && d < 40; l *= 2)
                d++;
        for (uint64_t l = 256 * MG_MIB; l / 2 >= limit && l > MG_MIB && d > -8; l /= 2)
                d--;
        return d;
}

uint64_t mg_lend_deadline_usec(uint64_t bytes) {
        uint64_t secs = bytes / (50 * MG_MIB);

        return secs > UINT64_MAX / MG_USEC_PER_SEC - 10 ? UINT64_MAX : (10 + secs) * MG_USEC_PER_SEC;
}

/* The table in docs/tuning.md is computed from this function; change both. */
static void tuned_defaults(uint64_t limit, struct mg_guard_options *d) {
        int dbl = doublings_past_256m(limit);
        int64_t window_ms = 3000 + 500 * (int64_t) dbl;

        d->tick_usec = 250 * MG_USEC_PER_MSEC;
        d->margin_bytes = limit / 16;
        /* A bigger actor re-reads a bigger working set before it is stuck for
         * good: half a second more patience per doubling, 2 s to 8 s. */
        d->stall_window_usec = mg_clamp_u64((uint64_t) (window_ms < 0 ? 0 : window_ms), 2000, 8000) * MG_USEC_PER_MSEC;
        /* Without swap, memory pressure under-reports a thrash (docs/field-facts.md F2: 8 %
         * some while io pressure was 85 %); 10 % of the window stalled on
         * memory while the limit keeps being hit is already a stuck actor. */
        d->stall_pressure_permyriad = 1000;
        /* A hot set larger than the cache books no restores; the refault
         * rule needs the re-reading to last.  Read through read(), 20 s at
         * 256 MiB and below (a finite job re-reading a file a few times,
         * `cat` of 256 MiB thrice at 48 MiB, took 9-14 s in the kernel
         * suite), +2 s per doubling, at most 30 s.  Faulting (program text,
         * mmapped data, the sequential file-hot, F3): 4 stall windows, 8 s
         * to 20 s. */
        d->refault_window_usec = mg_clamp_u64(20 + 2 * (uint64_t) (dbl < 0 ? 0 : dbl), 20, 30) * MG_USEC_PER_SEC;
        d->refault_mapped_window_usec = mg_clamp_u64(4 * d->stall_window_usec, 8 * MG_USEC_PER_SEC, 20 * MG_USEC_PER_SEC);
        /* A snapshot of the whole limit fits; a forgotten lend still ends. */
        d->lend_deadline_usec = mg_lend_deadline_usec(limit);
        /* Tearing down gigabytes of anon memory takes time: 2 s + 1 s/GiB. */
        d->kill_wait_usec = mg_clamp_u64(2 + limit / (1024 * MG_MIB), 2, 30) * MG_USEC_PER_SEC;
        /* PSI averages and the periodic memory.stat flush both run every 2 s. */
        d->post_kill_holdoff_usec = 2 * MG_USEC_PER_SEC + d->tick_usec;
}

int mg_guard_options_init(struct mg_guard_options *o, uint64_t limit_bytes) {
        if (!o || limit_bytes == 0 || limit_bytes == MG_UNLIMITED)
                return -EINVAL;
        *o = (struct mg_guard_options) { .size = sizeof(*o), .limit_bytes = limit_bytes };
        tuned_defaults(limit_bytes, o);
        return 0;
}

/* The reclaim actuator's options: all zero when it is off (no dose); the
 * pressure predicate seed 002's unless asked otherwise, or headroom alone
 * was asked. */
static int reclaim_resolve(struct mg_guard_options *r) {
        bool pressure = r->reclaim_some_usec || r->reclaim_full_usec;

        if (r->reclaim_dose_bytes == 0)
                return pressure || r->reclaim_cgroup || r->reclaim_windows || r->reclaim_cooldown_usec ||
                                       r->reclaim_headroom_bytes
                               ? -EINVAL
                               : 0;
        if (!pressure && r->reclaim_headroom_bytes == 0) {
                r->reclaim_some_usec = 1000;
                pressure = true;
        }
        if (pressure && r->reclaim_windows == 0)
                r->reclaim_windows = 3;
        if (pressure && r->reclaim_cooldown_usec == 0)
                r->reclaim_cooldown_usec = 10 * MG_USEC_PER_SEC;
        if (r->reclaim_windows > MG_RECLAIM_WINDOWS_MAX || (!pressure && (r->reclaim_windows || r->reclaim_cooldown_usec)) ||
            r->reclaim_headroom_bytes >= r->limit_bytes || (r->reclaim_headroom_bytes && r->reclaim_cgroup) ||
            (r->reclaim_cgroup && !r->reclaim_cgroup[0]))
                return -EINVAL;
        return 0;
}

int mg_options_resolve(const struct mg_guard_options *o, struct mg_guard_options *ret) {
        struct mg_guard_options r, d = {};
        int e;

        if (!o)
                return -EINVAL;
        /* the first version's fields: everything before the callbacks */
        e = mg_sized_copy_in(&r, sizeof(r), o, offsetof(struct mg_guard_options, on_event));
        if (e < 0)
                return e;
        if (r.limit_bytes == 0 || r.limit_bytes == MG_UNLIMITED)
                return -EINVAL;

        tuned_defaults(r.limit_bytes, &d);
#define DEFAULT(f) if (r.f == 0) r.f = d.f
        DEFAULT(tick_usec);
        DEFAULT(margin_bytes);
        DEFAULT(stall_window_usec);
        DEFAULT(stall_pressure_permyriad);
        DEFAULT(lend_deadline_usec);
        DEFAULT(kill_wait_usec);
        DEFAULT(post_kill_holdoff_usec);
        DEFAULT(refault_window_usec);
        DEFAULT(refault_mapped_window_usec);
#undef DEFAULT

        if (r.margin_bytes >= r.limit_bytes || r.tick_usec < 10 * MG_USEC_PER_MSEC || r.tick_usec > MG_TICK_MAX_USEC ||
            r.stall_pressure_permyriad > 10000 ||
            /* the ring must span the window (see MG_POLICY_RING) */
            r.stall_window_usec / r.tick_usec >= MG_POLICY_RING - 1 ||
            (r.flags & ~(uint32_t) MG_GUARD_DRY_RUN) || r.pre_kill_max_defer_usec > MG_PRE_KILL_MAX_DEFER_USEC ||
            r.park_deadline_usec > MG_PARK_MAX_USEC)
                return -EINVAL;
        e = reclaim_resolve(&r);
        if (e < 0)
                return e;
        *ret = r;
        return 0;
}
