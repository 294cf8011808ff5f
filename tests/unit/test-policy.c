/* SPDX-License-Identifier: Apache-2.0 */
#include <criterion/criterion.h>

#include <inttypes.h>

#include "policy.h"
#include "util.h"


/* A 256 MiB actor, 16 MiB margin, 3 s window, 10 % memory some; the
 * refault rule's windows as tuned for 256 MiB (20 s, mapped 12 s). */
static const struct mg_policy_params P = {
        .limit_bytes = 256 * MG_MIB,
        .margin_bytes = 16 * MG_MIB,
        .line_bytes = 240 * MG_MIB,
        .stall_window_usec = 3000 * MG_USEC_PER_MSEC,
        .stall_pressure_permyriad = 1000,
        .refault_window_usec = 20000 * MG_USEC_PER_MSEC,
        .refault_mapped_window_usec = 12000 * MG_USEC_PER_MSEC,
};

Test(policy, used_excludes_page_cache) {
        struct mg_memstat st = { .anon = 10, .shmem = 20, .kernel = 30, .sock = 40, .file = 1000,
                                 .file_dirty = 500, .file_writeback = 300 };
        cr_expect_eq(mg_used_bytes(&st), 100);
}

Test(policy, fast_path_boundary) {
        cr_expect(mg_policy_fast(&P, 240 * MG_MIB - 1));
        cr_expect_not(mg_policy_fast(&P, 240 * MG_MIB));
}

Test(policy, overshoot_needs_both) {
        cr_expect(mg_policy_overshoot(&P, 257 * MG_MIB, 256 * MG_MIB + 1));
        cr_expect_not(mg_policy_overshoot(&P, 257 * MG_MIB, 256 * MG_MIB), "used at the limit is not above it");
        /* Stale memory.stat still shows anon the actor has freed, while
         * memory.current (exact) is below the limit: no overshoot. */
        cr_expect_not(mg_policy_overshoot(&P, 250 * MG_MIB, 300 * MG_MIB));
        /* Page cache takes current over the limit; used is below it. */
        cr_expect_not(mg_policy_overshoot(&P, 400 * MG_MIB, 100 * MG_MIB));
}

/* Feeds samples every 250 ms from t0; returns the last verdict and the
 * time it first became kill. */
static enum mg_verdict feed(struct mg_policy_state *s, int n, uint64_t t0, uint64_t used, uint64_t current,
                            uint64_t events_per_tick, uint64_t some_usec_per_tick, uint64_t *ret_kill_t) {
        enum mg_verdict v = MG_VERDICT_NEAR;
        if (ret_kill_t)
                *ret_kill_t = 0;
        for (int i = 0; i < n; i++) {
                struct mg_sample x = {
                        .time_usec = t0 + (uint64_t) i * 250 * MG_USEC_PER_MSEC,
                        .current_bytes = current,
                        .used_bytes = used,
                        .limit_events = (uint64_t) i * events_per_tick,
                        .mem_some_usec = (uint64_t) i * some_usec_per_tick,
                        .restores = (uint64_t) i * 100,
                        .have_events = true,
                        .have_pressure = true,
                };
                v = mg_policy_decide(&P, s, &x, NULL, NULL);
                if (ret_kill_t && !*ret_kill_t && (v == MG_VERDICT_STALL || v == MG_VERDICT_OVERSHOOT))
                        *ret_kill_t = x.time_usec;
        }
        return v;
}

Test(policy, page_cache_at_limit_never_kills) {
        struct mg_policy_state s = {};
        uint64_t t;
        /* current at the limit through page cache, no events, no pressure */
        cr_expect_eq(feed(&s, 400, 1000 * MG_USEC_PER_MSEC, 50 * MG_MIB, 256 * MG_MIB, 0, 0, &t), MG_VERDICT_NEAR);
        cr_expect_eq(t, 0);
        /* even with limit events (reclaim of clean cache) and light pressure */
        mg_policy_reset(&s);
        cr_expect_eq(feed(&s, 400, 1000 * MG_USEC_PER_MSEC, 50 * MG_MIB, 256 * MG_MIB, 3, 5 * MG_USEC_PER_MSEC, &t), MG_VERDICT_NEAR);
        cr_expect_eq(t, 0);
}

Test(policy, stall_after_full_window) {
        struct mg_policy_state s = {};
        uint64_t t0 = 1000 * MG_USEC_PER_MSEC, t;
        /* 40 % of each tick stalled, max events rising: stall once the
         * window (3 s = 12 ticks) is covered. */
        cr_expect_eq(feed(&s, 20, t0, 200 * MG_MIB, 255 * MG_MIB, 2, 100 * MG_USEC_PER_MSEC, &t), MG_VERDICT_STALL);
        cr_expect_eq(t - t0, 3000 * MG_USEC_PER_MSEC);
}

/* Time lost before the actor reached its limit (a `cat` beside it, io
 * bound) fills no part of the window: on 6.12 MGLRU evicts a mapped hot
 * set when the cgroup first reaches its limit, and its restore burst came
 * with io already lost in the first half. */
Test(policy, restores_need_a_whole_window_at_the_limit) {
        struct mg_policy_state s = {};
        uint64_t t0 = 1000 * MG_USEC_PER_MSEC, kill_t = 0;
        for (int i = 0; i < 40 && !kill_t; i++) {
                struct mg_sample x = {
                        .time_usec = t0 + (uint64_t) i * 250 * MG_USEC_PER_MSEC,
                        .current_bytes = 255 * MG_MIB,
                        .used_bytes = 200 * MG_MIB,
                        .limit_events = i < 8 ? 0 : (uint64_t) (i - 7) * 2, /* first at 2 s */
                        .mem_some_usec = (uint64_t) i * 100 * MG_USEC_PER_MSEC,
                        .restores = (uint64_t) i * 100,
                        .have_events = true,
                        .have_pressure = true,
                };
                if (mg_policy_decide(&P, &s, &x, NULL, NULL) == MG_VERDICT_STALL)
                        kill_t = x.time_usec;
        }
        cr_expect_eq(kill_t - t0, (7 * 250 + 3000) * MG_USEC_PER_MSEC,
                     "a stall 3 s after the sample before the first limit event, not at 3 s: %" PRIu64 " ms",
                     (kill_t - t0) / 1000);
}

Test(policy, stalling_before_window) {
        struct mg_policy_state s = {};
        uint64_t stall;
        feed(&s, 6, 1000 * MG_USEC_PER_MSEC, 200 * MG_MIB, 255 * MG_MIB, 2, 100 * MG_USEC_PER_MSEC, NULL);
        struct mg_sample x = { .time_usec = 2500 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB, .used_bytes = 200 * MG_MIB,
                               .limit_events = 12, .mem_some_usec = 600 * MG_USEC_PER_MSEC, .restores = 600,
                               .have_events = true, .have_pressure = true };
        cr_expect_eq(mg_policy_decide(&P, &s, &x, &stall, NULL), MG_VERDICT_STALLING);
        cr_expect_eq(stall, 1500 * MG_USEC_PER_MSEC);
}

Test(policy, pressure_without_limit_events_is_not_a_stall) {
        struct mg_policy_state s = {};
        cr_expect_eq(feed(&s, 40, 1000 * MG_USEC_PER_MSEC, 200 * MG_MIB, 255 * MG_MIB, 0, 200 * MG_USEC_PER_MSEC, NULL), MG_VERDICT_NEAR);
}

Test(policy, io_pressure_alone_decides) {
        /* the own-code thrash (docs/field-facts.md F2): memory some low, io some high */
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        unsigned sig = 0;
        for (int i = 0; i < 20 && v != MG_VERDICT_STALL; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 10 * MG_MIB, .limit_events = (uint64_t) i * 40,
                                       .mem_some_usec = (uint64_t) i * 5 * MG_USEC_PER_MSEC, .io_some_usec = (uint64_t) i * 200 * MG_USEC_PER_MSEC,
                                       .restores = (uint64_t) i * 300, .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, &sig);
        }
        cr_expect_eq(v, MG_VERDICT_STALL);
        cr_expect_eq(sig, MG_STALL_IO);
}

Test(policy, no_workingset_loss_is_not_a_stall) {
        /* a dirty writer at its limit, or a reader streaming a file through
         * its cache: limit events, stalls on writeback in reclaim or on
         * reads, but no page that was active is read back */
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        for (int i = 0; i < 40; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 256 * MG_MIB,
                                       .used_bytes = 20 * MG_MIB, .limit_events = (uint64_t) i * 5,
                                       .mem_some_usec = (uint64_t) i * 200 * MG_USEC_PER_MSEC, .restores = 7,
                                       .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
                cr_expect_lt(v, MG_VERDICT_STALLING);
        }
}

/* Under MGLRU a `cat` re-reading a file books restores (7.2): restores,
 * the limit and io stalls, but an unmapped cache and no major faults.  The
 * same with major faults (random touches of a mapped file, which MGLRU
 * leaves mostly unmapped) is a stall. */
Test(policy, restores_of_a_reader_are_not_a_stall) {
        for (int faults = 0; faults < 2; faults++) {
                struct mg_policy_state s = {};
                enum mg_verdict v = MG_VERDICT_NEAR;
                for (int i = 0; i < 40 && v != MG_VERDICT_STALL; i++) {
                        struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC,
                                               .current_bytes = 255 * MG_MIB, .used_bytes = 1 * MG_MIB,
                                               .limit_events = (uint64_t) i * 5, .io_some_usec = (uint64_t) i * 225 * MG_USEC_PER_MSEC,
                                               .restores = (uint64_t) i * 200, .file_bytes = 250 * MG_MIB,
                                               .mapped_bytes = 10 * MG_MIB, .majfaults = (uint64_t) (faults * i * 16),
                                               .have_events = true, .have_pressure = true };
                        v = mg_policy_decide(&P, &s, &x, NULL, NULL);
                }
                cr_expect_eq(v == MG_VERDICT_STALL, faults == 1, "major faults %d: verdict %d", faults, v);
        }
}

/* A burst of restores (6.12 evicting part of a mapped hot set as the
 * cgroup first reaches its limit) is not a thrash: under a 64th of the cache
 * over the window, the rest of the restore rule holding. */
Test(policy, restores_must_weigh_a_64th_of_the_cache) {
        /* 0: 1.4 MiB restored over a 3 s window; 1: 5.6 MiB; 2: 1.4 MiB
         * restored among 24 MiB of file refaults (7.2's own-code thrash
         * books few restores): a stall within the window and a tick, the
         * restore rule's (the refault rule needs 8 s at least) */
        for (int kind = 0; kind < 3; kind++) {
                struct mg_policy_state s = {};
                enum mg_verdict v = MG_VERDICT_NEAR;
                uint64_t per_tick = kind == 1 ? 120 : 30, t0 = 1000 * MG_USEC_PER_MSEC, kill_t = 0;
                for (int i = 0; i < 40 && v != MG_VERDICT_STALL; i++) {
                        struct mg_sample x = { .time_usec = t0 + (uint64_t) i * 250 * MG_USEC_PER_MSEC,
                                               .current_bytes = 255 * MG_MIB, .used_bytes = 1 * MG_MIB,
                                               .limit_events = (uint64_t) i * 5,
                                               .io_some_usec = (uint64_t) i * 225 * MG_USEC_PER_MSEC,
                                               .restores = (uint64_t) i * per_tick, .file_bytes = 250 * MG_MIB,
                                               .refault_bytes = kind == 2 ? (uint64_t) i * 2 * MG_MIB : 0,
                                               .mapped_bytes = 10 * MG_MIB, .majfaults = (uint64_t) i * 16,
                                               .have_events = true, .have_pressure = true };
                        v = mg_policy_decide(&P, &s, &x, NULL, NULL);
                        if (v == MG_VERDICT_STALL)
                                kill_t = x.time_usec;
                }
                cr_expect_eq(v == MG_VERDICT_STALL, kind != 0, "kind %d: verdict %d", kind, v);
                if (kind == 2)
                        cr_expect_leq(kill_t - t0, 3250 * MG_USEC_PER_MSEC, "kind 2 killed %" PRIu64 " ms in",
                                      (kill_t - t0) / 1000);
        }
}

/* 6.12: `cat` of a file books restores; then a mapped set is read back,
 * faulting from the window's last second on, and mapping what it reads
 * (7 MiB/s).  Neither the faults in one half nor a set that grows with its
 * re-reads is a stall. */
Test(policy, a_reader_then_a_set_read_back_is_not_a_stall) {
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        for (int i = 0; i < 60 && v != MG_VERDICT_STALL; i++) {
                uint64_t faulting_since = (uint64_t) (i > 20 ? i - 20 : 0);
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC,
                                       .current_bytes = 255 * MG_MIB, .used_bytes = 1 * MG_MIB,
                                       .limit_events = (uint64_t) i * 5, .io_some_usec = (uint64_t) i * 225 * MG_USEC_PER_MSEC,
                                       .restores = (uint64_t) i * 50, .file_bytes = 250 * MG_MIB,
                                       .refault_bytes = faulting_since * 7 * MG_MIB / 4,
                                       .mapped_bytes = faulting_since * 7 * MG_MIB / 4,
                                       .majfaults = faulting_since * 16, .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
        }
        cr_expect_neq(v, MG_VERDICT_STALL);
}

Test(policy, pressure_in_first_half_only_is_not_a_stall) {
        /* one burst of lost time, then only the limit and the losses: the
         * actor is making progress again */
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        for (int i = 0; i < 13; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 200 * MG_MIB, .limit_events = (uint64_t) i * 3,
                                       .mem_some_usec = (i < 5 ? (uint64_t) i : 5) * 200 * MG_USEC_PER_MSEC,
                                       .restores = (uint64_t) i * 50, .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
        }
        cr_expect_neq(v, MG_VERDICT_STALL);
}

Test(policy, restores_in_bursts_still_a_stall) {
        /* MGLRU: restores come a few times a window, pressure all along */
        struct mg_policy_state s = {};
        uint64_t t;
        enum mg_verdict v = MG_VERDICT_NEAR;
        t = 0;
        for (int i = 0; i < 13 && v != MG_VERDICT_STALL; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 2 * MG_MIB, .limit_events = (uint64_t) i * 40,
                                       .io_some_usec = (uint64_t) i * 120 * MG_USEC_PER_MSEC, .restores = i < 2 ? 0 : 80,
                                       .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
                t = x.time_usec;
        }
        cr_expect_eq(v, MG_VERDICT_STALL);
        cr_expect_eq(t, 4000 * MG_USEC_PER_MSEC);
}

Test(policy, no_limit_events_in_window_is_not_a_stall) {
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        for (int i = 0; i < 30; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 200 * MG_MIB, .limit_events = i < 2 ? (uint64_t) i : 1,
                                       .io_some_usec = (uint64_t) i * 200 * MG_USEC_PER_MSEC, .restores = (uint64_t) i * 50,
                                       .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
        }
        cr_expect_lt(v, MG_VERDICT_STALLING);
}

Test(policy, low_pressure_is_not_a_stall) {
        struct mg_policy_state s = {};
        /* 5 % stalled: below the 10 % threshold */
        cr_expect_eq(feed(&s, 40, 1000 * MG_USEC_PER_MSEC, 200 * MG_MIB, 255 * MG_MIB, 5, 12500, NULL), MG_VERDICT_NEAR);
}

Test(policy, missing_psi_never_stalls) {
        struct mg_policy_state s = {};
        for (int i = 0; i < 40; i++) {
                struct mg_sample x = { .time_usec = (uint64_t) (i + 1) * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 200 * MG_MIB, .limit_events = (uint64_t) i * 10,
                                       .have_events = true };
                cr_expect_lt(mg_policy_decide(&P, &s, &x, NULL, NULL), MG_VERDICT_STALLING);
        }
}

Test(policy, reset_restarts_window) {
        struct mg_policy_state s = {};
        feed(&s, 10, 1000 * MG_USEC_PER_MSEC, 200 * MG_MIB, 255 * MG_MIB, 2, 100 * MG_USEC_PER_MSEC, NULL);
        mg_policy_reset(&s);
        uint64_t t;
        feed(&s, 12, 5000 * MG_USEC_PER_MSEC, 200 * MG_MIB, 255 * MG_MIB, 2, 100 * MG_USEC_PER_MSEC, &t);
        cr_expect_eq(t, 0, "11 intervals after a reset do not cover 3 s");
}

Test(policy, counter_going_back_is_not_progress) {
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        for (int i = 0; i < 20; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 200 * MG_MIB, .limit_events = 1000 - (uint64_t) i,
                                       .mem_some_usec = 1000000000 - (uint64_t) i, .have_events = true,
                                       .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
        }
        cr_expect_eq(v, MG_VERDICT_NEAR);
}

Test(policy, overshoot_immediate) {
        struct mg_policy_state s = {};
        struct mg_sample x = { .time_usec = 1, .current_bytes = 300 * MG_MIB, .used_bytes = 290 * MG_MIB };
        cr_expect_eq(mg_policy_decide(&P, &s, &x, NULL, NULL), MG_VERDICT_OVERSHOOT);
}

Test(policy, ring_wraps) {
        struct mg_policy_state s = {};
        uint64_t t;
        /* more samples than the ring holds: still decides on the window */
        cr_expect_eq(feed(&s, 3 * MG_POLICY_RING, 1000 * MG_USEC_PER_MSEC, 200 * MG_MIB, 255 * MG_MIB, 1, 50 * MG_USEC_PER_MSEC, &t), MG_VERDICT_STALL);
        cr_expect_eq(t, 4000 * MG_USEC_PER_MSEC);
}

Test(policy, line_follows_the_lower_kernel_limit) {
        /* no kernel limit below the guard's: limit - margin */
        cr_expect_eq(mg_policy_line(256 * MG_MIB, 16 * MG_MIB, MG_UNLIMITED), 240 * MG_MIB);
        cr_expect_eq(mg_policy_line(256 * MG_MIB, 16 * MG_MIB, 300 * MG_MIB), 240 * MG_MIB);
        cr_expect_eq(mg_policy_line(256 * MG_MIB, 16 * MG_MIB, 256 * MG_MIB), 240 * MG_MIB);
        /* memory.high at 90 % (kubelet MemoryQoS): 230.4 MiB less a sixteenth */
        cr_expect_eq(mg_policy_line(256 * MG_MIB, 16 * MG_MIB, 256 * MG_MIB * 9 / 10), 256 * MG_MIB * 9 / 10 - 256 * MG_MIB * 9 / 160);
        cr_expect_eq(mg_policy_line(64 * MG_MIB, 4 * MG_MIB, 48 * MG_MIB), 45 * MG_MIB);
        cr_expect_eq(mg_policy_line(64 * MG_MIB, 4 * MG_MIB, 0), 0, "memory.max 0: always at the limit");
        /* no overflow at the top of the range */
        cr_expect_eq(mg_policy_line(UINT64_MAX - 1, (UINT64_MAX - 1) / 2, UINT64_MAX - 2), (UINT64_C(1) << 63) - 1);
}

/*
 * The refault rule.  A sample every 250 ms at the limit: limit events +5,
 * io some 30 % of each tick, no restores (the hot set is larger than the
 * cache), a 200 MiB cache re-read at refault_mib_per_s, mapped_mib of it
 * mapped.  Returns the verdict of the last of n samples, the time of the
 * first kill in *ret_kill_t (0 if none) and its signals.
 */
struct refault_feed {
        int n;
        uint64_t refault_mib_per_s, mapped_mib, events_per_tick, io_per_tick;
        uint64_t steal_mib_per_s; /* what reclaim takes; 0: as much as is re-read */
        uint64_t majfaults_per_s, dirty_mib;
        uint64_t mapped_grows_mib_per_s; /* mapped_mib grows by this (capped at 190 MiB) */
        uint64_t file_mib;              /* the cache; 0: 200 MiB */
        int stop_after; /* refaults stop after this many ticks (0: never) */
        uint64_t kill_t, stall_usec, refault_bytes;
        unsigned signals;
};

static enum mg_verdict feed_refaults(struct mg_policy_state *s, struct refault_feed *f) {
        enum mg_verdict v = MG_VERDICT_NEAR;
        uint64_t refault = 0, steal = 0;
        for (int i = 0; i < f->n; i++) {
                if (!f->stop_after || i < f->stop_after)
                        refault += f->refault_mib_per_s * MG_MIB / 4;
                steal += (f->steal_mib_per_s ? f->steal_mib_per_s : f->refault_mib_per_s) * MG_MIB / 4;
                uint64_t grown = (uint64_t) (f->stop_after && i >= f->stop_after ? f->stop_after : i);
                uint64_t mapped = f->mapped_mib + f->mapped_grows_mib_per_s * grown / 4;
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 50 * MG_MIB, .limit_events = (uint64_t) i * f->events_per_tick,
                                       .io_some_usec = (uint64_t) i * f->io_per_tick, .refault_bytes = refault,
                                       .file_bytes = (f->file_mib ? f->file_mib : 200) * MG_MIB,
                                       .mapped_bytes = (mapped < 190 ? mapped : 190) * MG_MIB,
                                       .majfaults = f->majfaults_per_s * (uint64_t) i / 4,
                                       .dirty_bytes = f->dirty_mib * MG_MIB, .steal_bytes = steal,
                                       .have_events = true, .have_pressure = true };
                uint64_t stall;
                unsigned sig;
                v = mg_policy_decide(&P, s, &x, &stall, &sig);
                if (v == MG_VERDICT_STALL && !f->kill_t) {
                        f->kill_t = x.time_usec - 1000 * MG_USEC_PER_MSEC;
                        f->signals = sig;
                        f->stall_usec = stall;
                        f->refault_bytes = s->stall_refault_bytes;
                }
        }
        return v;
}

Test(refault, mapped_hot_set_larger_than_the_cache) {
        /* the sequential file-hot (docs/field-facts.md F3): all of the cache mapped, re-read at
         * 40 MiB/s, memory and restores silent, io some 30 % */
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 80, .refault_mib_per_s = 40, .mapped_mib = 190, .events_per_tick = 5,
                                  .io_per_tick = 75 * MG_USEC_PER_MSEC };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        /* the first segment ends at 1.5 s; the streak begins at its start
         * (0 s) and the mapped window is 12 s */
        cr_expect_eq(f.kill_t, 12000 * MG_USEC_PER_MSEC);
        cr_expect_eq(f.signals, MG_STALL_REFAULT | MG_STALL_IO);
        cr_expect_eq(f.stall_usec, 12000 * MG_USEC_PER_MSEC);
        cr_expect_eq(f.refault_bytes, UINT64_C(12) * 40 * MG_MIB);
}

Test(refault, unmapped_rereads_need_the_long_window) {
        /* a table scanned with read() that never fits: 20 s, not 12 (and
         * three times the cache re-read, here after 15 s) */
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 49, .refault_mib_per_s = 40, .mapped_mib = 2, .events_per_tick = 5,
                                  .io_per_tick = 75 * MG_USEC_PER_MSEC };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALLING, "12 s in: still stalling");
        cr_expect_eq(f.kill_t, 0);
        mg_policy_reset(&s);
        f.n = 100;
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        cr_expect_eq(f.kill_t, 20000 * MG_USEC_PER_MSEC, "20 s after the start of the first qualifying segment");
        cr_expect_eq(f.signals, MG_STALL_REFAULT | MG_STALL_IO);
}

Test(refault, finite_rereader_survives) {
        /* cat of a file four times the cache, three times: 14 s of re-reads,
         * then it is done and the refaults stop */
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 160, .refault_mib_per_s = 40, .mapped_mib = 0, .events_per_tick = 5,
                                  .io_per_tick = 75 * MG_USEC_PER_MSEC, .stop_after = 56 };
        cr_expect_lt(feed_refaults(&s, &f), MG_VERDICT_STALLING);
        cr_expect_eq(f.kill_t, 0);
}

Test(refault, a_trickle_is_not_a_thrash) {
        /* at its limit, io busy (a writer beside it turns the cache over at
         * 20 MiB/s), a few pages of text read back at 1 MiB/s: less than an
         * eighth of what reclaim takes */
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 400, .refault_mib_per_s = 1, .mapped_mib = 190, .events_per_tick = 5,
                                  .io_per_tick = 200 * MG_USEC_PER_MSEC, .steal_mib_per_s = 20 };
        cr_expect_lt(feed_refaults(&s, &f), MG_VERDICT_STALLING);
        cr_expect_eq(f.kill_t, 0);
}

/* The disk sets the pace, not the rule: the same sequential walk at 7 MiB/s
 * (a 256 MiB actor's share of a slow disk, classic LRU counting every
 * re-read) is killed when the mapped window is up, as at 40 MiB/s. */
Test(refault, slow_disk_does_not_slow_the_verdict) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 80, .refault_mib_per_s = 7, .mapped_mib = 190, .events_per_tick = 5,
                                  .io_per_tick = 225 * MG_USEC_PER_MSEC };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        cr_expect_eq(f.kill_t, 12000 * MG_USEC_PER_MSEC);
        cr_expect_eq(f.signals, MG_STALL_REFAULT | MG_STALL_IO);
}

/* MGLRU counts none of a sequential walk's re-reads (7.2, docs/design.md):
 * a mapped, clean cache turned over at 8 MiB/s, a major fault every 2 s,
 * stalled on io.  Killed once reclaim took 1.25 times the cache (250 MiB,
 * 31.25 s); a single pass over a file twice the cache (reclaim takes the
 * cache once, then it is done) is not. */
Test(refault, turnover_decides_where_no_reread_is_counted) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 200, .mapped_mib = 190, .events_per_tick = 5,
                                  .io_per_tick = 225 * MG_USEC_PER_MSEC, .steal_mib_per_s = 8, .majfaults_per_s = 1 };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        cr_expect_geq(f.kill_t, 31250 * MG_USEC_PER_MSEC);
        cr_expect_leq(f.kill_t, 33000 * MG_USEC_PER_MSEC, "killed at %" PRIu64 " ms", f.kill_t / 1000);
        cr_expect_eq(f.signals, MG_STALL_REFAULT | MG_STALL_IO);
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 100, .mapped_mib = 190, .events_per_tick = 5,
                                    .io_per_tick = 225 * MG_USEC_PER_MSEC, .steal_mib_per_s = 8, .majfaults_per_s = 1 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 0, "a single pass: 200 MiB taken in 25 s");
}

/* A 1 GiB actor on the same 8 MiB/s disk: the first turnover (128 s) is
 * what a single pass over twice the cache also does; past it, 192 MiB more
 * (24 s), not a quarter of the cache (32 s), decides.  A single pass over a
 * file 2.1 times the cache is spared. */
Test(refault, turnover_past_the_first_is_bounded_in_bytes) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 800, .mapped_mib = 190, .file_mib = 1024, .events_per_tick = 5,
                                  .io_per_tick = 225 * MG_USEC_PER_MSEC, .steal_mib_per_s = 8, .majfaults_per_s = 1 };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        cr_expect_geq(f.kill_t, 152 * MG_USEC_PER_SEC, "killed at %" PRIu64 " ms", f.kill_t / 1000);
        cr_expect_leq(f.kill_t, 155 * MG_USEC_PER_SEC, "killed at %" PRIu64 " ms", f.kill_t / 1000);
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 560, .mapped_mib = 190, .file_mib = 1024, .events_per_tick = 5,
                                    .io_per_tick = 225 * MG_USEC_PER_MSEC, .steal_mib_per_s = 8, .majfaults_per_s = 1 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 0, "a single pass: 1,120 MiB taken in 140 s");
}

/* An unthrottled disk: the same walk turns the cache over at 160 MiB/s.
 * Three caches (600 MiB) are gone after 3.75 s; it is killed at half the
 * 12 s window.  At 40 MiB/s three caches take 15 s: the whole window, as
 * for 1.25 caches.  A single pass over a file four times the cache (800
 * MiB, 5 s) is done before half the window. */
Test(refault, turnover_of_three_caches_halves_the_window) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 80, .mapped_mib = 190, .events_per_tick = 5,
                                  .io_per_tick = 25 * MG_USEC_PER_MSEC, .steal_mib_per_s = 160, .majfaults_per_s = 4 };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        cr_expect_eq(f.kill_t, 6000 * MG_USEC_PER_MSEC, "killed at %" PRIu64 " ms", f.kill_t / 1000);
        cr_expect_eq(f.signals, MG_STALL_REFAULT | MG_STALL_IO);
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 80, .mapped_mib = 190, .events_per_tick = 5,
                                    .io_per_tick = 25 * MG_USEC_PER_MSEC, .steal_mib_per_s = 40, .majfaults_per_s = 4 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 12000 * MG_USEC_PER_MSEC, "killed at %" PRIu64 " ms", f.kill_t / 1000);
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 21, .mapped_mib = 190, .events_per_tick = 5,
                                    .io_per_tick = 25 * MG_USEC_PER_MSEC, .steal_mib_per_s = 160, .majfaults_per_s = 4 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 0, "a single pass over four caches");
}

/* What turnover must not take for a thrash: a stream read beside a mapped
 * set that stays resident (no major faults), and a writer's dirty pages
 * turned over beside a mapped set. */
Test(refault, turnover_needs_faults_and_a_clean_cache) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 400, .mapped_mib = 190, .events_per_tick = 5,
                                  .io_per_tick = 225 * MG_USEC_PER_MSEC, .steal_mib_per_s = 8 };
        cr_expect_lt(feed_refaults(&s, &f), MG_VERDICT_STALLING, "no major faults");
        cr_expect_eq(f.kill_t, 0);
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 400, .mapped_mib = 190, .events_per_tick = 5,
                                    .io_per_tick = 225 * MG_USEC_PER_MSEC, .steal_mib_per_s = 8, .majfaults_per_s = 1,
                                    .dirty_mib = 20 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 0, "a dirty cache: reclaim took what was written");
}

/* A working set that fits, read back after a scan pushed it out: what it
 * re-reads it maps and keeps (mapped grows 7 MiB/s with the re-reads, from
 * 10 to 80 MiB of a 200 MiB cache, then it is in). */
Test(refault, reading_back_a_set_that_fits_is_not_a_thrash) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 100, .refault_mib_per_s = 7, .mapped_mib = 10, .mapped_grows_mib_per_s = 7,
                                  .events_per_tick = 5, .io_per_tick = 225 * MG_USEC_PER_MSEC, .stop_after = 40 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 0);
}

/* `cat` of a file twice the cache, twice, through read() on a slow disk:
 * 400 MiB re-read at 8 MiB/s over 50 s, and done.  A reader that goes on
 * is killed once it re-read three times the cache (600 MiB, 75 s). */
Test(refault, read_path_waits_for_three_caches) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 360, .refault_mib_per_s = 8, .events_per_tick = 5,
                                  .io_per_tick = 225 * MG_USEC_PER_MSEC, .stop_after = 200 };
        feed_refaults(&s, &f);
        cr_expect_eq(f.kill_t, 0, "the finite re-reader");
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 360, .refault_mib_per_s = 8, .events_per_tick = 5,
                                    .io_per_tick = 225 * MG_USEC_PER_MSEC };
        cr_expect_eq(feed_refaults(&s, &f), MG_VERDICT_STALL);
        cr_expect_geq(f.kill_t, 75000 * MG_USEC_PER_MSEC);
        cr_expect_leq(f.kill_t, 77000 * MG_USEC_PER_MSEC, "killed at %" PRIu64 " ms", f.kill_t / 1000);
}

Test(refault, needs_the_limit_and_lost_time) {
        struct mg_policy_state s = {};
        struct refault_feed f = { .n = 200, .refault_mib_per_s = 40, .mapped_mib = 190, .events_per_tick = 0,
                                  .io_per_tick = 75 * MG_USEC_PER_MSEC };
        cr_expect_lt(feed_refaults(&s, &f), MG_VERDICT_STALLING, "no limit events: the cache is not squeezed");
        mg_policy_reset(&s);
        f = (struct refault_feed) { .n = 200, .refault_mib_per_s = 40, .mapped_mib = 190, .events_per_tick = 5,
                                    .io_per_tick = 12500 };
        cr_expect_lt(feed_refaults(&s, &f), MG_VERDICT_STALLING, "5 % io: re-reading, but not stalled by it");
        cr_expect_eq(f.kill_t, 0);
}

Test(refault, a_quiet_segment_ends_a_read_streak) {
        struct mg_policy_state s = {};
        enum mg_verdict v = MG_VERDICT_NEAR;
        uint64_t refault = 0, kill_t = 0;
        /* re-reads through read() for 10 s, 3 s without, then again: the
         * window counts from the segment in which they resume (12 s) */
        for (int i = 0; i < 200 && !kill_t; i++) {
                if (i < 40 || i >= 52)
                        refault += 10 * MG_MIB;
                struct mg_sample x = { .time_usec = (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 255 * MG_MIB,
                                       .used_bytes = 50 * MG_MIB, .limit_events = (uint64_t) i * 5,
                                       .io_some_usec = (uint64_t) i * 75 * MG_USEC_PER_MSEC, .refault_bytes = refault,
                                       .file_bytes = 200 * MG_MIB, .have_events = true, .have_pressure = true };
                v = mg_policy_decide(&P, &s, &x, NULL, NULL);
                if (v == MG_VERDICT_STALL)
                        kill_t = x.time_usec;
        }
        cr_expect_eq(v, MG_VERDICT_STALL);
        cr_expect_geq(kill_t, 12000 * MG_USEC_PER_MSEC + 20000 * MG_USEC_PER_MSEC, "killed at %" PRIu64 " ms", kill_t / 1000);
}

/* docs/tuning.md prints this table; these rows pin it. */
Test(tuning, table_rows) {
        static const struct {
                uint64_t limit, window_ms, deadline_s, kill_wait_s, refault_s, mapped_s;
        } rows[] = {
                { 64 * MG_MIB, 2000, 11, 2, 20, 8 },     { 256 * MG_MIB, 3000, 15, 2, 20, 12 },
                { 1024 * MG_MIB, 4000, 30, 3, 24, 16 },  { 4096 * MG_MIB, 5000, 91, 6, 28, 20 },
                { 65536 * MG_MIB, 7000, 1320, 30, 30, 20 },
        };
        for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
                struct mg_guard_options o;
                cr_assert_eq(mg_guard_options_init(&o, rows[i].limit), 0);
                cr_expect_eq(o.margin_bytes, rows[i].limit / 16);
                cr_expect_eq(o.tick_usec, 250 * MG_USEC_PER_MSEC);
                cr_expect_eq(o.stall_window_usec, rows[i].window_ms * MG_USEC_PER_MSEC, "row %zu", i);
                cr_expect_eq(o.stall_pressure_permyriad, 1000);
                cr_expect_eq(o.lend_deadline_usec / 1000000, rows[i].deadline_s, "row %zu", i);
                cr_expect_eq(o.kill_wait_usec / 1000000, rows[i].kill_wait_s, "row %zu", i);
                cr_expect_eq(o.post_kill_holdoff_usec, 2250 * MG_USEC_PER_MSEC);
                cr_expect_eq(o.refault_window_usec / 1000000, rows[i].refault_s, "row %zu", i);
                cr_expect_eq(o.refault_mapped_window_usec / 1000000, rows[i].mapped_s, "row %zu", i);
        }
}

Test(throttle, kernel_formula) {
        /* 64 s x o^2: o = 10 % gives 640 ms, 5 % 160 ms */
        cr_expect_eq(mg_high_delay_usec(110 * MG_MIB, 100 * MG_MIB), 640000);
        cr_expect_eq(mg_high_delay_usec(105 * MG_MIB, 100 * MG_MIB), 160000);
        cr_expect_eq(mg_high_delay_usec(101 * MG_MIB, 100 * MG_MIB), 0, "6.4 ms: not worth a sleep");
        cr_expect_eq(mg_high_delay_usec(130 * MG_MIB, 100 * MG_MIB), 2000000, "capped at 2 s");
        cr_expect_eq(mg_high_delay_usec(90 * MG_MIB, 100 * MG_MIB), 0);
        cr_expect_eq(mg_high_delay_usec(110 * MG_MIB, MG_UNLIMITED), 0);
}

static void feed_throttle(struct mg_policy_state *s, int n, uint64_t some_per_tick, uint64_t cpu_per_tick,
                          uint64_t high_per_tick) {
        for (int i = 0; i < n; i++) {
                struct mg_sample x = { .time_usec = 1000 * MG_USEC_PER_MSEC + (uint64_t) i * 250 * MG_USEC_PER_MSEC, .current_bytes = 246 * MG_MIB,
                                       .used_bytes = 240 * MG_MIB, .limit_events = (uint64_t) i * high_per_tick,
                                       .high_events = (uint64_t) i * high_per_tick, .high_bytes = 230 * MG_MIB,
                                       .mem_some_usec = (uint64_t) i * some_per_tick,
                                       .cpu_usec = (uint64_t) i * cpu_per_tick, .have_events = true,
                                       .have_pressure = true, .have_throttle = true };
                mg_policy_decide(&P, s, &x, NULL, NULL);
        }
}

Test(throttle, field_case_239_of_256_at_high) {
        /* 239 of 256 MiB wanted, memory.high at 90 %: asleep almost all the
         * time, high events +17 per sleep, no CPU to speak of */
        struct mg_policy_state s = {};
        struct mg_throttle_info t;
        feed_throttle(&s, 20, 240 * MG_USEC_PER_MSEC, 2 * MG_USEC_PER_MSEC, 17);
        cr_assert(mg_policy_throttled(&P, &s, &t));
        cr_expect_eq(t.high_bytes, 230 * MG_MIB);
        cr_expect_eq(t.overage_permyriad, 695); /* 16 MiB over 230 MiB */
        cr_expect_eq(t.est_delay_usec, mg_high_delay_usec(246 * MG_MIB, 230 * MG_MIB));
        cr_expect_eq(t.high_events_per_sec, 68);
        cr_expect_eq(t.memory_some_permyriad, 9600);
        cr_expect_eq(t.cpu_permyriad, 80);
}

Test(throttle, busy_or_unstalled_is_not_throttled) {
        struct mg_policy_state s = {};
        feed_throttle(&s, 20, 240 * MG_USEC_PER_MSEC, 200 * MG_USEC_PER_MSEC, 17);
        cr_expect_not(mg_policy_throttled(&P, &s, NULL), "using 80 % of a CPU");
        mg_policy_reset(&s);
        feed_throttle(&s, 20, 50 * MG_USEC_PER_MSEC, 2 * MG_USEC_PER_MSEC, 17);
        cr_expect_not(mg_policy_throttled(&P, &s, NULL), "20 % stalled");
        mg_policy_reset(&s);
        feed_throttle(&s, 20, 240 * MG_USEC_PER_MSEC, 2 * MG_USEC_PER_MSEC, 0);
        cr_expect_not(mg_policy_throttled(&P, &s, NULL), "no high events");
        mg_policy_reset(&s);
        feed_throttle(&s, 5, 240 * MG_USEC_PER_MSEC, 2 * MG_USEC_PER_MSEC, 17);
        cr_expect_not(mg_policy_throttled(&P, &s, NULL), "window not covered yet");
}

/* A deferral never covers anon + shmem past limit + limit/8, nor within
 * limit/32 of memory.max (the kernel's OOM killer would act first). */
Test(policy, may_defer_up_to_the_hard_bound) {
        const uint64_t l = P.limit_bytes;

        cr_expect(mg_policy_may_defer(&P, l, MG_UNLIMITED));
        cr_expect(mg_policy_may_defer(&P, l + l / 8, MG_UNLIMITED), "the bound itself");
        cr_expect_not(mg_policy_may_defer(&P, l + l / 8 + 1, MG_UNLIMITED));
        cr_expect(mg_policy_may_defer(&P, l, 2 * l));
        cr_expect(mg_policy_may_defer(&P, l - l / 32 - 1, l), "below memory.max less its headroom");
        cr_expect_not(mg_policy_may_defer(&P, l - l / 32, l));
        cr_expect_not(mg_policy_may_defer(&P, 0, l / 64), "a memory.max within the headroom itself");
        struct mg_policy_params huge = P;
        huge.limit_bytes = UINT64_MAX - 1;
        cr_expect(mg_policy_may_defer(&huge, UINT64_MAX - 1, MG_UNLIMITED), "no overflow near UINT64_MAX");
}

/* A park's bound: grown while frozen (by more than a 64th) past limit +
 * limit/8, or to within limit/32 of memory.max; an actor frozen past it,
 * or at memory.max, that grows nothing stays parked. */
Test(policy, park_bound_is_growth_near_memory_max_or_far_past_the_limit) {
        const uint64_t l = P.limit_bytes;

        cr_expect_not(mg_policy_park_past_bound(&P, l + l / 8, l, MG_UNLIMITED), "the bound itself");
        cr_expect(mg_policy_park_past_bound(&P, l + l / 8 + 1, l, MG_UNLIMITED));
        cr_expect_not(mg_policy_park_past_bound(&P, 2 * l, 2 * l, MG_UNLIMITED), "frozen past it, grown nothing");
        cr_expect_not(mg_policy_park_past_bound(&P, 2 * l + l / 64, 2 * l, MG_UNLIMITED), "grown a 64th");
        cr_expect(mg_policy_park_past_bound(&P, 2 * l + l / 64 + 1, 2 * l, MG_UNLIMITED), "grown past it");
        cr_expect_not(mg_policy_park_past_bound(&P, l - l / 64, l - l / 64, l), "at memory.max, grown nothing");
        cr_expect_not(mg_policy_park_past_bound(&P, l - l / 64, l - l / 32, l), "grown a 64th: stat lag");
        cr_expect(mg_policy_park_past_bound(&P, l - l / 64, l - l / 32 - 1, l), "grown past it, near memory.max");
        cr_expect_not(mg_policy_park_past_bound(&P, l - l / 32 - 1, l / 2, l), "grown, but not near memory.max");
        struct mg_policy_params huge = P;
        huge.limit_bytes = UINT64_MAX - 1;
        cr_expect_not(mg_policy_park_past_bound(&huge, UINT64_MAX - 1, 0, MG_UNLIMITED), "no overflow");
}

/* Seed 002's predicate: the some total rising by at least 1 ms in each of
 * three one-second windows. */
Test(reclaim_policy, three_counted_windows_fire_once_per_episode) {
        const struct mg_reclaim_rule r = { .some_usec = 1000, .windows = 3 };
        struct mg_reclaim_windows w = {};
        uint64_t t = 1000000;

        cr_expect_not(mg_policy_reclaim_window(&r, &w, t, 0, true, true), "the first read is the baseline");
        cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 1000, 0, true, true));
        cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 5000, 0, true, true));
        cr_expect(mg_policy_reclaim_window(&r, &w, t += 1000, 0, true, true));
        cr_expect_eq(w.some_usec[0], 1000);
        cr_expect_eq(w.some_usec[1], 5000);
        cr_expect_eq(w.some_usec[2], 1000);
        for (int i = 0; i < 10; i++)
                cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 9000, 0, true, true), "the same episode");
        cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 999, 0, true, true), "999 usec: the episode ends");
        cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 1000, 0, true, true));
        cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 1000, 0, true, true));
        cr_expect(mg_policy_reclaim_window(&r, &w, t += 1000, 0, true, true), "a new episode");
}

Test(reclaim_policy, held_while_not_ready_it_fires_when_ready) {
        const struct mg_reclaim_rule r = { .some_usec = 1000, .windows = 3 };
        struct mg_reclaim_windows w = {};
        uint64_t t = 0;

        mg_policy_reclaim_window(&r, &w, t, 0, true, true);
        for (int i = 0; i < 5; i++)
                cr_expect_not(mg_policy_reclaim_window(&r, &w, t += 2000, 0, true, false));
        cr_expect(mg_policy_reclaim_window(&r, &w, t += 2000, 0, true, true));
}

Test(reclaim_policy, full_asked_needs_full_and_a_reset_counter_starts_over) {
        const struct mg_reclaim_rule r = { .some_usec = 1000, .full_usec = 500, .windows = 2 };
        struct mg_reclaim_windows w = {};

        mg_policy_reclaim_window(&r, &w, 0, 0, true, true);
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 2000, 400, true, true));
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 4000, 900, true, true));
        cr_expect(mg_policy_reclaim_window(&r, &w, 6000, 1400, true, true));
        /* a file without a full line never meets a full threshold */
        w = (struct mg_reclaim_windows) {};
        mg_policy_reclaim_window(&r, &w, 0, 0, false, true);
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 5000, 0, false, true));
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 10000, 0, false, true));
        /* totals that went back (the cgroup made again): a new baseline */
        w = (struct mg_reclaim_windows) {};
        mg_policy_reclaim_window(&r, &w, 100000, 50000, true, true);
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 101000, 50500, true, true));
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 10, 5, true, true));
        cr_expect_eq(w.streak, 0);
        cr_expect_not(mg_policy_reclaim_window(&r, &w, 2010, 1005, true, true));
        cr_expect(mg_policy_reclaim_window(&r, &w, 4010, 2005, true, true));
}

Test(reclaim_policy, headroom_dose_is_bounded) {
        const uint64_t L = 256 * MG_MIB, H = 32 * MG_MIB;

        cr_expect_eq(mg_policy_reclaim_headroom(L, H, 224 * MG_MIB, 100 * MG_MIB, 64 * MG_MIB), 0, "at the line");
        cr_expect_eq(mg_policy_reclaim_headroom(L, H, 240 * MG_MIB, 100 * MG_MIB, 64 * MG_MIB), 16 * MG_MIB);
        cr_expect_eq(mg_policy_reclaim_headroom(L, H, 256 * MG_MIB, 100 * MG_MIB, 8 * MG_MIB), 8 * MG_MIB);
        cr_expect_eq(mg_policy_reclaim_headroom(L, H, 256 * MG_MIB, 5 * MG_MIB, 64 * MG_MIB), 5 * MG_MIB);
        cr_expect_eq(mg_policy_reclaim_headroom(L, H, 224 * MG_MIB + 4096, 100 * MG_MIB, 64 * MG_MIB), 0,
                     "a page is not worth a write");
        cr_expect_eq(mg_policy_reclaim_headroom(L, H, 256 * MG_MIB, MG_MIB / 2, 64 * MG_MIB), 0);
}
