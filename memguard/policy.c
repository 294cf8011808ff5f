/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guard's decisions (policy.h): the line, overshoot, the stall rules
 * (restores, refaults, turnover) and throttling, as pure functions over
 * samples and the state the caller keeps.  No I/O, no clock, no guard: the
 * unit tests drive it with literal samples and timestamps.
 */
#include <string.h>

#include "policy.h"
#include "util.h"

uint64_t mg_used_bytes(const struct mg_memstat *st) {
        return st->anon + st->shmem + st->kernel + st->sock;
}

void mg_policy_reset(struct mg_policy_state *s) {
        s->head = 0;
        s->count = 0;
        s->stalling_since_usec = 0;
        s->limit_since_usec = 0;
        s->seg.set = s->seg_prev.set = s->streak.set = s->streak_faulting.set = false;
        s->stall_refault_bytes = s->stall_reclaimed_bytes = 0;
}

uint64_t mg_policy_line(uint64_t limit_bytes, uint64_t margin_bytes, uint64_t kernel_limit_bytes) {
        if (kernel_limit_bytes >= limit_bytes)
                return limit_bytes - margin_bytes;
        /* margin < limit, so the product fits in 128 bits and the share is
         * below kernel_limit_bytes */
        return kernel_limit_bytes -
               (uint64_t) ((unsigned __int128) kernel_limit_bytes * margin_bytes / limit_bytes);
}

bool mg_policy_overshoot(const struct mg_policy_params *p, uint64_t current_bytes, uint64_t used_bytes) {
        return used_bytes > p->limit_bytes && current_bytes > p->limit_bytes;
}

enum mg_verdict mg_policy_confirm(const struct mg_policy_params *p, enum mg_verdict v, uint64_t current_bytes,
                                  uint64_t used_bytes) {
        switch (v) {
        case MG_VERDICT_OVERSHOOT:
                return mg_policy_overshoot(p, current_bytes, used_bytes) ? v : MG_VERDICT_OK;
        case MG_VERDICT_STALL:
                return mg_policy_fast(p, current_bytes) ? MG_VERDICT_OK : v;
        default:
                return v;
        }
}

bool mg_policy_may_defer(const struct mg_policy_params *p, uint64_t anon_shmem_bytes, uint64_t max_bytes) {
        uint64_t headroom = p->limit_bytes / 32, over = p->limit_bytes / 8;
        uint64_t bound = p->limit_bytes > UINT64_MAX - over ? UINT64_MAX : p->limit_bytes + over;

        if (anon_shmem_bytes > bound)
                return false;
        return max_bytes == MG_UNLIMITED || (max_bytes > headroom && anon_shmem_bytes < max_bytes - headroom);
}

bool mg_policy_park_past_bound(const struct mg_policy_params *p, uint64_t used_bytes, uint64_t used_at_park_bytes,
                               uint64_t max_bytes) {
        uint64_t over = p->limit_bytes / 8, headroom = p->limit_bytes / 32;
        uint64_t bound = p->limit_bytes > UINT64_MAX - over ? UINT64_MAX : p->limit_bytes + over;

        /* Growth while frozen, by more than memory.stat's lag blurs (a
         * 64th): what the actor held at the freeze is the verdict's. */
        if (used_bytes <= used_at_park_bytes || used_bytes - used_at_park_bytes <= p->limit_bytes / 64)
                return false;
        return used_bytes > bound ||
               (max_bytes != MG_UNLIMITED && (max_bytes <= headroom || used_bytes >= max_bytes - headroom));
}

/* The newest sample at least age_usec older than the newest, or NULL. */
static const struct mg_ring_sample *sample_older_than(const struct mg_policy_state *s, uint64_t age_usec) {
        const struct mg_ring_sample *x = &s->ring[s->head];

        for (unsigned i = 1; i < s->count; i++) {
                const struct mg_ring_sample *o = &s->ring[(s->head + MG_POLICY_RING - i) % MG_POLICY_RING];
                if (x->time_usec - o->time_usec >= age_usec)
                        return o;
        }
        return NULL;
}

static const struct mg_ring_sample *sample_oldest(const struct mg_policy_state *s) {
        return &s->ring[(s->head + MG_POLICY_RING - (s->count - 1)) % MG_POLICY_RING];
}

static uint64_t delta(uint64_t newer, uint64_t older) {
        return newer > older ? newer - older : 0; /* a counter that went back says nothing */
}

/* The actor hit its limit and lost part of its working set between o and x:
 *  - memory.events.local high or max rose (every sample in the ring is a
 *    slow-path one, at the limit);
 *  - pages that were in its working set when reclaim took them were read
 *    back (workingset_restore rose).  A reader streaming a file through its
 *    cache refaults too, but its pages were never part of a working set; a
 *    writer at its limit refaults nothing.
 * Both need only happen somewhere in the window: under an io-bound thrash
 * limit events come a few per second, and under MGLRU restores come in
 * bursts with seconds between them. */
static bool losing_workingset(const struct mg_ring_sample *o, const struct mg_ring_sample *x) {
        return o->have_events && x->have_events && delta(x->limit_events, o->limit_events) > 0 &&
               delta(x->restores, o->restores) > 0;
}

/* What a window re-read must come to before it is a thrash rather than a
 * burst: a 64th of the cache (x's), in restores (counting 4 KiB pages: a
 * larger page only lowers the bar) or in file refaults, whichever is more.
 * When a cgroup first reaches its limit, 6.12's MGLRU evicts part of a
 * mapped hot set it faulted in first, and the actor restores it at once:
 * 1.7 MiB of a 256 MiB actor's 64 MiB set, 6 MiB of a 1 GiB actor's 256 MiB
 * set (disk-healthy-256, -1024), then nothing more.  A thrash of its own
 * code on 7.2 books few restores (0.5 MiB in 2 s) but re-reads tens of
 * MiB a second (thrash-own-code): the refaults weigh it. */
static bool reread_weighs(const struct mg_ring_sample *o, const struct mg_ring_sample *x) {
        uint64_t restored = delta(x->restores, o->restores), refaulted = delta(x->refault_bytes, o->refault_bytes);

        return (unsigned __int128) restored * 4096 >= x->file_bytes / 64 || refaulted >= x->file_bytes / 64;
}

/* At least half of the cache is mapped (the stats lag: mapped may read
 * above file). */
static bool mostly_mapped(uint64_t file, uint64_t mapped) {
        return mapped >= file - (file < mapped ? file : mapped);
}

/* The actor waited on its own memory over span usec: most of its cache
 * (file, mapped at the end) is mapped, or it took majfaults major faults,
 * one every MG_POLICY_FAULT_EVERY_USEC or more often.  A sequential walk of
 * a mapped file maps all it reads, readahead hiding its faults; random
 * touches of a mapped file leave most of the cache unmapped under MGLRU
 * (readaround), but its misses are major faults.  A `cat` has neither: its
 * reads are read() calls, not faults, and its cache is not mapped; yet
 * under MGLRU it books restores for a streaming re-read. */
static bool faulting(uint64_t span, uint64_t majfaults, uint64_t file, uint64_t mapped) {
        return mostly_mapped(file, mapped) ||
               (unsigned __int128) majfaults * MG_POLICY_FAULT_EVERY_USEC >= span;
}

/* faulting() between two ring samples: a reader that books restores
 * beside a program that starts faulting at the window's end (6.12: `cat`
 * of a file, then a mapped set read back) is not faulting in both halves. */
static bool ring_faulting(const struct mg_ring_sample *o, const struct mg_ring_sample *x) {
        return faulting(x->time_usec - o->time_usec, delta(x->majfaults, o->majfaults), x->file_bytes, x->mapped_bytes);
}

/* Less than half of its cache mapped (at x), what the actor has mapped
 * grew, from o to x, by more than half of what it re-read, or, re-reading
 * nothing counted, by more than a 64th of its cache: a working set that
 * fits, read back after a scan pushed it out, maps what it re-reads and
 * keeps it (6.12: 1-2 MiB a second, random 4 KiB faults at 300 IOPS); a
 * thrash loses it again, its mapped share flat or swinging. */
static bool mapping_grows(uint64_t mapped_o, uint64_t mapped_x, uint64_t reread, uint64_t file) {
        /* Once most of the cache is mapped, what it maps swings as reclaim
         * unmaps a batch and the actor faults it back (6.12's hot-file
         * thrash): that is no set being read back. */
        if (mostly_mapped(file, mapped_x))
                return false;
        return delta(mapped_x, mapped_o) > (reread > 0 ? reread / 2 : file / 64);
}

/* It lost time between o and x: memory or io pressure "some" grew by the
 * threshold share of the span.  Returns the signals that did.  Without swap
 * memory pressure under-reports a thrash (a refault is a memory stall only
 * for some pages, anon is outside the judgement), while the re-reads
 * themselves show as io pressure. */
static unsigned lost_time(const struct mg_policy_params *p, const struct mg_ring_sample *o,
                          const struct mg_ring_sample *x) {
        uint64_t span = x->time_usec - o->time_usec, need;
        unsigned sig = 0;

        if (span == 0 || !o->have_pressure || !x->have_pressure)
                return 0;
        need = span * p->stall_pressure_permyriad;
        if (delta(x->mem_some_usec, o->mem_some_usec) * 10000 >= need)
                sig |= MG_STALL_MEMORY;
        if (delta(x->io_some_usec, o->io_some_usec) * 10000 >= need)
                sig |= MG_STALL_IO;
        return sig;
}

static struct mg_policy_mark mark_of(const struct mg_sample *x) {
        return (struct mg_policy_mark) {
                .time_usec = x->time_usec,
                .limit_events = x->limit_events,
                .refault_bytes = x->refault_bytes,
                .mem_some_usec = x->mem_some_usec,
                .io_some_usec = x->io_some_usec,
                .mapped_bytes = x->mapped_bytes,
                .majfaults = x->majfaults,
                .steal_bytes = x->steal_bytes,
                .set = true,
        };
}

/* lost_time() from a mark to a sample. */
static unsigned lost_time_since(const struct mg_policy_params *p, const struct mg_policy_mark *o,
                                const struct mg_sample *x) {
        struct mg_ring_sample a = { .time_usec = o->time_usec, .mem_some_usec = o->mem_some_usec,
                                    .io_some_usec = o->io_some_usec, .have_pressure = true };
        struct mg_ring_sample b = { .time_usec = x->time_usec, .mem_some_usec = x->mem_some_usec,
                                    .io_some_usec = x->io_some_usec, .have_pressure = x->have_pressure };
        return lost_time(p, &a, &b);
}

/* A streak begun at o has re-read something since, and at least an
 * eighth of what reclaim took from the actor (a few pages of program text
 * read back while a writer beside them turns the cache over is not a
 * thrash; in a thrash nearly all it reads it had before). */
static bool rereads_share(const struct mg_policy_mark *o, const struct mg_sample *x) {
        uint64_t re = delta(x->refault_bytes, o->refault_bytes);
        return o->set && re > 0 && re >= delta(x->steal_bytes, o->steal_bytes) / MG_POLICY_REREAD_OF_STEAL;
}

/* What reclaim must take of a cache of `file` bytes for the faulting path's
 * turnover: MG_POLICY_TURNOVER_QUARTERS quarters of it, the last no more
 * than MG_POLICY_TURNOVER_EXTRA_MAX; and for the half window, three times it. */
static uint64_t turnover_bytes(uint64_t file) {
        uint64_t extra = file / 4 * (MG_POLICY_TURNOVER_QUARTERS - 4);
        return file + (extra < MG_POLICY_TURNOVER_EXTRA_MAX ? extra : MG_POLICY_TURNOVER_EXTRA_MAX);
}

static uint64_t churn_bytes(uint64_t file) {
        return file > UINT64_MAX / 4 ? UINT64_MAX : file / 4 * MG_POLICY_CHURN_QUARTERS;
}

/* Reclaim took `need` bytes of the clean cache since o, and the actor took
 * a major fault every MG_POLICY_TURNOVER_FAULT_USEC. */
static bool turned_over(const struct mg_policy_state *s, const struct mg_policy_mark *o, const struct mg_sample *x,
                        uint64_t (*need)(uint64_t file)) {
        uint64_t steal = delta(x->steal_bytes, o->steal_bytes);
        return o->set && !s->faulting_dirty && x->file_bytes > 0 && steal > 0 && steal >= need(x->file_bytes) &&
               (unsigned __int128) delta(x->majfaults, o->majfaults) * MG_POLICY_TURNOVER_FAULT_USEC >=
                       x->time_usec - o->time_usec;
}

/* mapping_grows() over the last two segments. */
static bool mapping_what_it_rereads(const struct mg_policy_state *s, const struct mg_sample *x) {
        const struct mg_policy_mark *o = s->seg_prev.set ? &s->seg_prev : &s->seg;
        return o->set && mapping_grows(o->mapped_bytes, x->mapped_bytes, delta(x->refault_bytes, o->refault_bytes),
                                       x->file_bytes);
}

/*
 * The refault rule, one sample at a time.  A segment ends at the first
 * sample half a stall window after it began.  It qualifies for the read
 * path if the limit was hit, time was lost and something was re-read; for
 * the faulting path if time was lost, the actor was faulting and the limit
 * was hit in it or in the segment before (under MGLRU a walk gets pages
 * without reclaim for a second or two).  A streak is the run of qualifying
 * segments up to now; any segment that does not qualify ends it.  Returns
 * the verdict and, for STALL and STALLING, the streak it is about in *ret.
 */
static enum mg_verdict refault_decide(const struct mg_policy_params *p, struct mg_policy_state *s,
                                      const struct mg_sample *x, const struct mg_policy_mark **ret) {
        const struct mg_policy_mark *o = &s->seg;
        uint64_t seg_usec = p->stall_window_usec / 2;

        if (!x->have_events || !x->have_pressure || p->refault_window_usec == 0) {
                s->seg.set = s->seg_prev.set = s->streak.set = s->streak_faulting.set = false;
                return MG_VERDICT_NEAR;
        }
        if (!o->set) {
                s->seg = mark_of(x);
                return MG_VERDICT_NEAR;
        }
        if (x->time_usec - o->time_usec >= seg_usec) {
                uint64_t span = x->time_usec - o->time_usec, re = delta(x->refault_bytes, o->refault_bytes);
                const struct mg_policy_mark *since = s->seg_prev.set ? &s->seg_prev : o;
                bool lost = lost_time_since(p, o, x) != 0;
                bool rd = lost && delta(x->limit_events, o->limit_events) > 0 && re > 0;
                bool fl = lost && delta(x->limit_events, since->limit_events) > 0 &&
                          faulting(span, delta(x->majfaults, o->majfaults), x->file_bytes, x->mapped_bytes);
                if (!rd)
                        s->streak.set = false;
                else if (!s->streak.set)
                        s->streak = *o;
                if (!fl)
                        s->streak_faulting.set = false;
                else if (!s->streak_faulting.set) {
                        s->streak_faulting = *o;
                        s->faulting_dirty = false;
                }
                if (fl && x->dirty_bytes > x->file_bytes / 16)
                        s->faulting_dirty = true;
                s->seg_prev = s->seg;
                s->seg = mark_of(x);
        }
        const struct mg_policy_mark *f = &s->streak_faulting, *r = &s->streak;
        bool r_on = rereads_share(r, x), f_reread = rereads_share(f, x);
        bool f_turned = turned_over(s, f, x, turnover_bytes), f_on = f_reread || f_turned;
        uint64_t f_held = f->set ? x->time_usec - f->time_usec : 0;
        uint64_t f_re = delta(x->refault_bytes, f->refault_bytes);
        bool f_enough = f_turned || (f_reread && (unsigned __int128) f_re * 64 >=
                                                         (unsigned __int128) x->file_bytes *
                                                                 MG_POLICY_FAULTING_REREAD_64THS);
        if (((f_held >= p->refault_mapped_window_usec && f_enough) ||
             (f_held >= p->refault_mapped_window_usec / 2 && turned_over(s, f, x, churn_bytes))) &&
            !mapping_what_it_rereads(s, x)) {
                *ret = f;
                return MG_VERDICT_STALL;
        }
        if (r_on && x->time_usec - r->time_usec >= p->refault_window_usec &&
            delta(x->refault_bytes, r->refault_bytes) / MG_POLICY_REREAD_CACHES >= x->file_bytes) {
                *ret = r;
                return MG_VERDICT_STALL;
        }
        /* the longer-running of the two, for how long it has held */
        if (!f_on && !r_on)
                return MG_VERDICT_NEAR;
        *ret = f_on && (!r_on || f->time_usec < r->time_usec) ? f : r;
        return MG_VERDICT_STALLING;
}

enum mg_verdict mg_policy_decide(const struct mg_policy_params *p, struct mg_policy_state *s,
                                 const struct mg_sample *x, uint64_t *ret_stall_usec, unsigned *ret_signals) {
        const struct mg_ring_sample *o, *m, *xr;
        enum mg_verdict v = MG_VERDICT_NEAR;
        unsigned sig = 0;

        /* Samples must be consecutive slow ticks in time order; anything else
         * (a clock that went back) starts the window over. */
        if (s->count > 0 && x->time_usec < s->ring[s->head].time_usec)
                mg_policy_reset(s);
        s->head = s->count == 0 ? 0 : (s->head + 1) % MG_POLICY_RING;
        s->ring[s->head] = (struct mg_ring_sample) {
                .time_usec = x->time_usec,
                .current_bytes = x->current_bytes,
                .limit_events = x->limit_events,
                .mem_some_usec = x->mem_some_usec,
                .io_some_usec = x->io_some_usec,
                .restores = x->restores,
                .high_events = x->high_events,
                .high_bytes = x->high_bytes,
                .cpu_usec = x->cpu_usec,
                .file_bytes = x->file_bytes,
                .mapped_bytes = x->mapped_bytes,
                .majfaults = x->majfaults,
                .refault_bytes = x->refault_bytes,
                .have_events = x->have_events,
                .have_pressure = x->have_pressure,
                .have_throttle = x->have_throttle,
        };
        xr = &s->ring[s->head];
        if (s->count < MG_POLICY_RING)
                s->count++;
        if (s->count > 1 && s->limit_since_usec == 0) {
                const struct mg_ring_sample *prev = &s->ring[(s->head + MG_POLICY_RING - 1) % MG_POLICY_RING];
                if (prev->have_events && xr->have_events && delta(xr->limit_events, prev->limit_events) > 0)
                        s->limit_since_usec = prev->time_usec;
        }

        if (mg_policy_overshoot(p, x->current_bytes, x->used_bytes)) {
                v = MG_VERDICT_OVERSHOOT;
        } else if (x->have_events && x->have_pressure && s->count > 1) {
                o = sample_older_than(s, p->stall_window_usec);
                const struct mg_ring_sample *b = o ? o : sample_oldest(s);
                if (losing_workingset(b, xr) && reread_weighs(b, xr) && lost_time(p, b, xr) && ring_faulting(b, xr) &&
                    !mapping_grows(b->mapped_bytes, xr->mapped_bytes, delta(xr->refault_bytes, b->refault_bytes),
                                   xr->file_bytes)) {
                        v = MG_VERDICT_STALLING;
                        /* "Across the whole window": time is lost in each half
                         * of it, not in one burst. */
                        m = sample_older_than(s, p->stall_window_usec / 2);
                        /* And only once it has been at its limit for a
                         * whole window: when a cgroup first reaches its
                         * limit, MGLRU (6.12) evicts what was faulted in
                         * first, a mapped hot set included (its young bits
                         * not yet scanned), which the actor restores in a
                         * burst of a second or two; io lost before the limit
                         * (a `cat` beside it) would fill the first half. */
                        if (o && m && s->limit_since_usec && xr->time_usec - s->limit_since_usec >= p->stall_window_usec &&
                            lost_time(p, o, m) && lost_time(p, m, xr) && ring_faulting(o, m) &&
                            ring_faulting(m, xr)) {
                                v = MG_VERDICT_STALL;
                                sig = lost_time(p, o, xr);
                        }
                }
        }

        if (v == MG_VERDICT_STALL || v == MG_VERDICT_STALLING) {
                if (s->stalling_since_usec == 0)
                        s->stalling_since_usec = sample_oldest(s)->time_usec;
        } else {
                s->stalling_since_usec = 0;
        }
        uint64_t stall_usec = s->stalling_since_usec ? x->time_usec - s->stalling_since_usec : 0;

        /* The refault rule runs on every sample (its segments must see them
         * all); it decides only where the restore rule did not. */
        const struct mg_policy_mark *streak = NULL;
        enum mg_verdict rv = refault_decide(p, s, x, &streak);
        s->stall_refault_bytes = s->stall_reclaimed_bytes = 0;
        if (v != MG_VERDICT_OVERSHOOT && v != MG_VERDICT_STALL && rv != MG_VERDICT_NEAR) {
                if (rv == MG_VERDICT_STALL) {
                        v = MG_VERDICT_STALL;
                        sig = MG_STALL_REFAULT | lost_time_since(p, streak, x);
                        stall_usec = x->time_usec - streak->time_usec;
                        s->stall_refault_bytes = delta(x->refault_bytes, streak->refault_bytes);
                        s->stall_reclaimed_bytes = delta(x->steal_bytes, streak->steal_bytes);
                } else if (x->time_usec - streak->time_usec > stall_usec) {
                        v = MG_VERDICT_STALLING;
                        stall_usec = x->time_usec - streak->time_usec;
                }
        }
        if (ret_stall_usec)
                *ret_stall_usec = stall_usec;
        if (ret_signals)
                *ret_signals = sig;
        return v;
}

uint64_t mg_high_delay_usec(uint64_t current_bytes, uint64_t high_bytes) {
        if (high_bytes == MG_UNLIMITED || current_bytes <= high_bytes || high_bytes == 0)
                return 0;
        /* 64 s x o^2 with o = overage / high, in usec, without overflow:
         * o is at most 2^64 / high, so compute in long double. */
        long double o = (long double) (current_bytes - high_bytes) / (long double) high_bytes;
        long double usec = 64e6L * o * o;
        if (usec <= 10000.0L)
                return 0;
        return usec >= 2e6L ? 2000000 : (uint64_t) usec;
}

bool mg_policy_throttled(const struct mg_policy_params *p, const struct mg_policy_state *s,
                         struct mg_throttle_info *ret) {
        const struct mg_ring_sample *x, *o;
        uint64_t span;

        if (s->count < 2)
                return false;
        x = &s->ring[s->head];
        o = sample_older_than(s, p->stall_window_usec);
        if (!o || !o->have_throttle || !x->have_throttle || !o->have_pressure || !x->have_pressure)
                return false;
        span = x->time_usec - o->time_usec;
        /* two samples of one instant (an injected clock, or a tick and a
         * wake-up in the same microsecond) give no rates, and a division by 0 */
        if (span == 0 || delta(x->high_events, o->high_events) == 0 || x->high_bytes == MG_UNLIMITED ||
            x->current_bytes <= x->high_bytes)
                return false;
        uint64_t some = delta(x->mem_some_usec, o->mem_some_usec), cpu = delta(x->cpu_usec, o->cpu_usec);
        if (some * 2 < span || cpu * 4 > span)
                return false;
        if (ret)
                *ret = (struct mg_throttle_info) {
                        .high_bytes = x->high_bytes,
                        .current_bytes = x->current_bytes,
                        .overage_permyriad = (uint32_t) ((x->current_bytes - x->high_bytes) * 10000 / x->high_bytes),
                        .est_delay_usec = mg_high_delay_usec(x->current_bytes, x->high_bytes),
                        .high_events_per_sec = delta(x->high_events, o->high_events) * 1000000 / span,
                        .memory_some_permyriad = (uint32_t) (some * 10000 / span),
                        .cpu_permyriad = (uint32_t) (cpu * 10000 / span),
                };
        return true;
}

bool mg_policy_reclaim_window(const struct mg_reclaim_rule *r, struct mg_reclaim_windows *w, uint64_t some_total,
                              uint64_t full_total, bool has_full, bool ready) {
        uint64_t some, full;
        bool counted;
        unsigned n = r->windows < 1 ? 1 : r->windows > MG_RECLAIM_WINDOWS_MAX ? MG_RECLAIM_WINDOWS_MAX : r->windows;

        if (!w->have_totals || some_total < w->some_total || (has_full && full_total < w->full_total)) {
                *w = (struct mg_reclaim_windows) { .some_total = some_total, .full_total = full_total,
                                                   .have_totals = true };
                return false;
        }
        some = some_total - w->some_total;
        full = has_full ? full_total - w->full_total : 0;
        w->some_total = some_total;
        w->full_total = full_total;
        counted = some >= r->some_usec && (r->full_usec == 0 || (has_full && full >= r->full_usec));
        if (!counted) {
                w->streak = 0;
                w->fired = false;
                return false;
        }
        memmove(w->some_usec, w->some_usec + 1, (n - 1) * sizeof(w->some_usec[0]));
        memmove(w->full_usec, w->full_usec + 1, (n - 1) * sizeof(w->full_usec[0]));
        w->some_usec[n - 1] = some;
        w->full_usec[n - 1] = full;
        if (w->streak < n)
                w->streak++;
        if (w->streak < n || w->fired || !ready)
                return false;
        w->fired = true;
        return true;
}

uint64_t mg_policy_reclaim_headroom(uint64_t limit_bytes, uint64_t headroom_bytes, uint64_t current_bytes,
                                    uint64_t file_bytes, uint64_t dose_max) {
        uint64_t line = limit_bytes > headroom_bytes ? limit_bytes - headroom_bytes : 0, dose;

        if (current_bytes <= line)
                return 0;
        dose = current_bytes - line;
        if (dose > dose_max)
                dose = dose_max;
        if (dose > file_bytes)
                dose = file_bytes;
        return dose < MG_MIB ? 0 : dose;
}
