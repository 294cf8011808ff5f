/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reclaim actuator on a real kernel (memguard/reclaim.c): a dose is
 * bounded and verified, takes clean cache alone from a swapless actor,
 * fires on seed 002's pressure predicate, waits for a lend to end, and
 * stops when its target vanishes mid-dose, and with swap (zram before a
 * swapfile) takes the background's anon.  memory.reclaim is 5.19's:
 * every kernel the suite runs has it.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ktest.h"
#include "scenarios.h"
#include "swap.h"

static char last_log[4][256];
static int logs;

static void log_fn(int level, const char *msg, void *ud) {
        (void) ud;
        kt_note("log %d: %s", level, msg);
        snprintf(last_log[logs % 4], sizeof(last_log[0]), "%s", msg);
        logs++;
}

static bool logged(const char *what) {
        for (int i = 0; i < 4 && i < logs; i++)
                if (strstr(last_log[i], what))
                        return true;
        return false;
}

static void note_reclaim(const char *who, const struct mg_reclaim_info *in) {
        kt_note("%s: reclaim why=%s asked_mib=%.1f achieved_mib=%.1f duration_ms=%.1f error=%d counted=%d "
                "some_us=%" PRIu64 ",%" PRIu64 ",%" PRIu64 " current_mib=%.1f file_mib=%.1f",
                who, in->why == MG_RECLAIM_PRESSURE ? "pressure" : "headroom", (double) in->asked_bytes / MG_MIB,
                (double) in->achieved_bytes / MG_MIB, (double) in->duration_usec / 1000, in->error, in->counted,
                in->some_usec[0], in->some_usec[1], in->some_usec[2], (double) in->current_bytes / MG_MIB,
                (double) in->file_bytes / MG_MIB);
}

static bool reclaim_told(void *ud) {
        return ((struct mgt_events *) ud)->n[MG_EVENT_RECLAIM] > 0;
}

/* An actor of 256 MiB, swapless, that read a 160 MiB file through read()
 * (clean cache it is done with) and then holds 32 MiB of anon: about
 * 195 MiB.  Started, and waited for until it holds both. */
static int cached_actor(const char *cg, char *file, size_t size, pid_t *ret) {
        char cmd[1200];
        uint64_t cur = 0;
        snprintf(file, size, "%s/reclaim-cache", kt_disk);
        KT_CHECK(mgt_make_file(file, 160) == 0, "make %s", file);
        KT_CHECK(mgt_cg_writef(cg, "memory.max", "%" PRIu64, 256 * MG_MIB) == 0, "memory.max");
        snprintf(cmd, sizeof(cmd), "cat %s >/dev/null && exec %s anon 32 1024 120", file, kt_workload);
        *ret = kt_spawn_exe(cg, "/bin/sh", (const char *const[]) { "-c", cmd, NULL });
        KT_CHECK(*ret > 0, "spawn");
        for (int i = 0; i < 600; i++) { /* bounded: 60 s */
                struct mg_memstat ms;
                if (mgt_cg_read_memstat(cg, &ms) == 0 && ms.anon >= 31 * MG_MIB && ms.file >= 150 * MG_MIB)
                        break;
                (void) poll(NULL, 0, 100);
        }
        KT_CHECK(mgt_cg_read_u64(cg, "memory.current", &cur) == 0 && cur >= 180 * MG_MIB,
                 "the actor holds %" PRIu64 " MiB, not its cache and anon", cur / MG_MIB);
        return KT_PASS;
}

/* The guard of reclaim-dose and reclaim-lend: the headroom rule, 128 MiB
 * below a 256 MiB limit (the line at 128 MiB), doses of 64 MiB. */
static int headroom_guard(mg_set *s, const char *cg, struct mgt_events *ev, mg_guard **ret) {
        struct mg_guard_options o;
        mg_guard_options_init(&o, 256 * MG_MIB);
        o.reclaim_dose_bytes = 64 * MG_MIB;
        o.reclaim_headroom_bytes = 128 * MG_MIB;
        o.log = log_fn;
        return kt_guard_opts(s, cg, &o, ev, ret);
}

/*
 * "reclaim-dose": the cached actor above, a guard with the headroom rule
 * (128 MiB below its 256 MiB limit: the line at 128 MiB) and doses of
 * 64 MiB.  Expect: a dose of 64 MiB, achieved 80-110 % of it (pgsteal,
 * and memory.stat's file falling by as much) within a second; anon
 * untouched (no swap: clean cache alone goes); the actor alive.
 */
int t_reclaim_dose(void) {
        char file[512];
        struct mgt_events ev = {};
        struct mg_memstat before, after;
        pid_t pid;
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("reclaim-dose");
        KT_CHECK(s && cg, "setup");
        int r = cached_actor(cg, file, sizeof(file), &pid);
        if (r != KT_PASS)
                return r;
        KT_CHECK(mgt_cg_read_memstat(cg, &before) == 0, "memory.stat");
        KT_CHECK(headroom_guard(s, cg, &ev, NULL) == 0, "guard");
        mgt_run(s, 10 * MG_USEC_PER_SEC, reclaim_told, NULL, &ev);
        KT_CHECK(mgt_cg_read_memstat(cg, &after) == 0, "memory.stat");
        mg_set_free(s);
        KT_CHECK(ev.n[MG_EVENT_RECLAIM] >= 1, "no dose in 10 s");
        note_reclaim("reclaim-dose", &ev.reclaim);
        kt_note("anon_mib %.1f -> %.1f, file_mib %.1f -> %.1f", (double) before.anon / MG_MIB,
                (double) after.anon / MG_MIB, (double) before.file / MG_MIB, (double) after.file / MG_MIB);
        KT_CHECK(ev.reclaim.why == MG_RECLAIM_HEADROOM && ev.reclaim.asked_bytes == 64 * MG_MIB, "asked %" PRIu64,
                 ev.reclaim.asked_bytes);
        KT_CHECK(ev.reclaim.error == 0, "error %d", ev.reclaim.error);
        KT_CHECK(ev.reclaim.achieved_bytes >= ev.reclaim.asked_bytes / 5 * 4 &&
                         ev.reclaim.achieved_bytes <= ev.reclaim.asked_bytes / 10 * 11,
                 "achieved %" PRIu64 " of %" PRIu64, ev.reclaim.achieved_bytes, ev.reclaim.asked_bytes);
        KT_CHECK(before.file - after.file >= ev.reclaim.asked_bytes / 5 * 4, "memory.stat file fell only %" PRIu64,
                 before.file - after.file);
        KT_CHECK(after.anon + MG_MIB >= before.anon, "anon fell %" PRIu64 " -> %" PRIu64 " without swap", before.anon,
                 after.anon);
        KT_CHECK(kt_wait(pid, 0) == -ETIMEDOUT, "the actor ended");
        unlink(file);
        return KT_PASS;
}

/*
 * "reclaim-lend": the same actor and guard, a lend begun before the guard
 * first ticks.  Expect: no dose for 4 s while it is open, memory.reclaim
 * untouched (memory.stat file as it was), one within 3 s of its end.
 */
int t_reclaim_lend(void) {
        char file[512];
        struct mgt_events ev = {};
        struct mg_memstat before, during;
        mg_guard *g;
        uint64_t lend;
        pid_t pid;
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("reclaim-lend");
        KT_CHECK(s && cg, "setup");
        int r = cached_actor(cg, file, sizeof(file), &pid);
        if (r != KT_PASS)
                return r;
        KT_CHECK(headroom_guard(s, cg, &ev, &g) == 0, "guard");
        KT_CHECK(mg_guard_lend_begin(g, 64 * MG_MIB, 0, &lend) == 0, "lend");
        KT_CHECK(mgt_cg_read_memstat(cg, &before) == 0, "memory.stat");
        mgt_run(s, 4 * MG_USEC_PER_SEC, reclaim_told, NULL, &ev);
        KT_CHECK(mgt_cg_read_memstat(cg, &during) == 0, "memory.stat");
        KT_CHECK(ev.n[MG_EVENT_RECLAIM] == 0, "a dose under a lend");
        KT_CHECK(during.file + 4 * MG_MIB >= before.file, "the cache fell %" PRIu64 " MiB under the lend",
                 (before.file - during.file) / MG_MIB);
        uint64_t t0 = mg_mono_usec();
        KT_CHECK(kt_lend_end(s, g, lend, &ev, 10 * MG_USEC_PER_SEC) == 0, "lend end");
        mgt_run(s, 3 * MG_USEC_PER_SEC, reclaim_told, NULL, &ev);
        mg_set_free(s);
        KT_CHECK(ev.n[MG_EVENT_RECLAIM] >= 1, "no dose within 3 s of the lend's end");
        note_reclaim("reclaim-lend", &ev.reclaim);
        kt_note("dose %" PRIu64 " ms after the lend ended", (ev.reclaim_time - t0) / 1000);
        unlink(file);
        return KT_PASS;
}

/* A thrash that keeps the memory stall rising: a 256 MiB file touched at
 * random over 192 MiB of it in a 128 MiB cgroup. */
static int thrasher(const char *cg, char *file, size_t size, pid_t *ret) {
        snprintf(file, size, "%s/reclaim-thrash", kt_disk);
        KT_CHECK(mgt_make_file(file, 256) == 0, "make %s", file);
        KT_CHECK(mgt_cg_writef(cg, "memory.max", "%" PRIu64, 128 * MG_MIB) == 0, "memory.max");
        *ret = kt_spawn(cg, (const char *const[]) { "filehot", file, "120", "skew", "192", "100", NULL });
        KT_CHECK(*ret > 0, "spawn");
        return KT_PASS;
}

/*
 * "reclaim-pressure": seed 002's predicate on a thrashing actor of 128 MiB
 * (the guard in dry run: it decides, kills nothing), doses of 32 MiB.
 * Expect: a dose within 30 s, fired by three windows of at least 1 ms of
 * some stall each, achieving something; no second dose while the episode
 * lasts unless a window broke it (noted).
 */
int t_reclaim_pressure(void) {
        char file[512];
        struct mgt_events ev = {};
        struct mg_guard_options o;
        pid_t pid;
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("reclaim-pressure");
        KT_CHECK(s && cg, "setup");
        int r = thrasher(cg, file, sizeof(file), &pid);
        if (r != KT_PASS)
                return r;
        mg_guard_options_init(&o, 128 * MG_MIB);
        o.flags = MG_GUARD_DRY_RUN;
        o.reclaim_dose_bytes = 32 * MG_MIB;
        o.log = log_fn;
        KT_CHECK(kt_guard_opts(s, cg, &o, &ev, NULL) == 0, "guard");
        uint64_t t0 = mg_mono_usec();
        mgt_run(s, 30 * MG_USEC_PER_SEC, reclaim_told, NULL, &ev);
        KT_CHECK(ev.n[MG_EVENT_RECLAIM] >= 1, "no dose in 30 s of a thrash");
        note_reclaim("reclaim-pressure", &ev.reclaim);
        kt_note("first dose %" PRIu64 " ms after the guard began", (ev.reclaim_time - t0) / 1000);
        mgt_run(s, 8 * MG_USEC_PER_SEC, NULL, NULL, &ev);
        mg_set_free(s);
        kt_note("doses in the 8 s after the first: %d (cool-down 10 s)", ev.n[MG_EVENT_RECLAIM] - 1);
        KT_CHECK(ev.reclaim.why == MG_RECLAIM_PRESSURE && ev.reclaim.windows == 3, "why %d windows %u",
                 ev.reclaim.why, ev.reclaim.windows);
        for (int i = 0; i < 3; i++)
                KT_CHECK(ev.reclaim.some_usec[i] >= 1000, "window %d: %" PRIu64 " usec", i, ev.reclaim.some_usec[i]);
        KT_CHECK(ev.reclaim.asked_bytes == 32 * MG_MIB, "asked %" PRIu64, ev.reclaim.asked_bytes);
        KT_CHECK(ev.reclaim.error == 0 || ev.reclaim.error == -EAGAIN, "error %d", ev.reclaim.error);
        KT_CHECK(ev.reclaim.achieved_bytes > 0, "nothing reclaimed");
        KT_CHECK(ev.n[MG_EVENT_RECLAIM] == 1, "a second dose within the cool-down");
        unlink(file);
        return KT_PASS;
}

struct vanish {
        struct mgt_events ev;
        const char *bg;
        bool removed;
        int rm;
        uint64_t removed_at;
};

/* The set's round after the dose was queued: the target goes while the
 * worker writes it (a dose of 2 GiB from a thrashing 128 MiB cgroup lasts
 * while the thrash refills what it takes). */
static void vanish_sample(void *ud) {
        struct vanish *v = ud;
        if (v->removed || !logged("reclaim: a dose of"))
                return;
        v->removed = true;
        v->rm = mgt_cg_destroy(v->bg, 10 * MG_USEC_PER_SEC);
        v->removed_at = mg_mono_usec();
}

static bool vanish_stop(void *ud) {
        struct vanish *v = ud;
        return v->removed && v->ev.n[MG_EVENT_RECLAIM] > 0 && mg_mono_usec() - v->removed_at > 3 * MG_USEC_PER_SEC;
}

/*
 * "reclaim-vanish": seed 002's shape, the guard on a quiet foreground actor
 * dosing its thrashing background sibling (reclaim_cgroup), 2 GiB at a
 * time; the test kills and removes the sibling as soon as the dose is
 * queued.  Expect: the dose told, with -ENODEV if the sibling went before
 * the worker read its pgsteal again (else what it achieved), the actuator
 * stopped ("is gone: no more doses"), no other dose, the foreground
 * neither killed nor touched.
 */
int t_reclaim_vanish(void) {
        static struct vanish v;
        char file[512];
        struct mg_guard_options o;
        pid_t bgpid, fgpid;
        mg_set *s = kt_set_new();
        const char *fg = kt_cg_new("reclaim-fg");
        KT_CHECK(s && fg, "setup");
        memset(&v, 0, sizeof(v));
        logs = 0;
        v.bg = kt_cg_new("reclaim-bg");
        KT_CHECK(v.bg, "setup");
        int r = thrasher(v.bg, file, sizeof(file), &bgpid);
        if (r != KT_PASS)
                return r;
        fgpid = kt_spawn(fg, (const char *const[]) { "anon", "16", "1024", "120", NULL });
        KT_CHECK(fgpid > 0, "spawn");
        mg_guard_options_init(&o, 256 * MG_MIB);
        o.reclaim_dose_bytes = 2048 * MG_MIB;
        o.reclaim_cgroup = v.bg;
        o.log = log_fn;
        KT_CHECK(kt_guard_opts(s, fg, &o, &v.ev, NULL) == 0, "guard");
        mgt_run(s, 40 * MG_USEC_PER_SEC, vanish_stop, vanish_sample, &v);
        mg_set_free(s);
        KT_CHECK(v.removed, "no dose in 40 s");
        KT_CHECK(v.rm == 0, "removing the sibling: %d", v.rm);
        KT_CHECK(v.ev.n[MG_EVENT_RECLAIM] >= 1, "the dose was never told");
        note_reclaim("reclaim-vanish", &v.ev.reclaim);
        KT_CHECK(v.ev.n[MG_EVENT_RECLAIM] == 1, "%d doses: the actuator went on", v.ev.n[MG_EVENT_RECLAIM]);
        KT_CHECK(v.ev.reclaim.error == -ENODEV || logged("is gone: no more doses"),
                 "the target's end not reported (error %d)", v.ev.reclaim.error);
        KT_CHECK(v.ev.n[MG_EVENT_KILL] == 0 && kt_wait(fgpid, 0) == -ETIMEDOUT, "the foreground was touched");
        KT_CHECK(v.ev.gone == 0, "the foreground's guard stopped");
        unlink(file);
        return KT_PASS;
}

/* The swap of reclaim-zram: zram0 (MIB MiB) first, a swapfile of 64 MiB on
 * the disk after it, at seed 002's priorities.  Needs root and the zram
 * module (tests/kernel/run loads it in the VM). */
static int swap_on(char *swapfile, size_t size, uint64_t mib) {
        int r;
        if (access("/sys/block/zram0/disksize", W_OK) != 0) {
                snprintf(kt_skip_reason, sizeof(kt_skip_reason), "no zram0 to write (the zram module, root)");
                return KT_SKIP;
        }
        snprintf(swapfile, size, "%s/reclaim-swapfile", kt_disk);
        KT_CHECK((r = mgt_zram_reset("/dev/zram0", "/sys/block/zram0", mib)) == 0, "zram0: %d", r);
        KT_CHECK((r = mgt_swapfile_make(swapfile, 64)) == 0, "swapfile %s: %d", swapfile, r);
        KT_CHECK((r = mgt_swapon("/dev/zram0", 100)) == 0, "swapon zram0: %d", r);
        KT_CHECK((r = mgt_swapon(swapfile, 10)) == 0, "swapon %s: %d", swapfile, r);
        return KT_PASS;
}

static void swap_off(const char *swapfile) {
        (void) mgt_swapoff(swapfile);
        (void) mgt_swapoff("/dev/zram0");
        (void) unlink(swapfile);
        (void) mgt_cg_write("/sys/block/zram0", "reset", "1");
}

/*
 * "reclaim-zram": seed 002's backend, zram0 (256 MiB) at a higher priority
 * than a 64 MiB swapfile; a background of 128 MiB allocates 160 MiB of
 * random bytes and keeps touching 140 MiB of it; the guard doses it 32 MiB
 * on the pressure predicate (dry run: no kill).  Expect: the dose told,
 * achieving something; the background's anon in swap (memory.swap.current,
 * at least 16 MiB), on zram (at least 16 MiB used), the swapfile unused.
 */
int t_reclaim_zram(void) {
        char swapfile[512];
        struct mgt_events ev = {};
        struct mg_guard_options o;
        uint64_t swapped = 0, anon_before = 0;
        struct mg_memstat ms;
        pid_t pid;
        int r = swap_on(swapfile, sizeof(swapfile), 256);
        if (r != KT_PASS)
                return r;
        mg_set *s = kt_set_new();
        const char *cg = kt_cg_new("reclaim-zram");
        if (!s || !cg || mgt_cg_writef(cg, "memory.max", "%" PRIu64, 128 * MG_MIB) < 0) {
                swap_off(swapfile);
                KT_CHECK(false, "setup");
        }
        pid = kt_spawn(cg, (const char *const[]) { "anontouch", "160", "140", "60", NULL });
        mg_guard_options_init(&o, 128 * MG_MIB);
        o.flags = MG_GUARD_DRY_RUN;
        o.reclaim_dose_bytes = 32 * MG_MIB;
        o.log = log_fn;
        r = pid > 0 ? kt_guard_opts(s, cg, &o, &ev, NULL) : -ECHILD;
        if (r == 0) {
                mgt_run(s, 45 * MG_USEC_PER_SEC, reclaim_told, NULL, &ev);
                if (mgt_cg_read_memstat(cg, &ms) == 0)
                        anon_before = ms.anon;
                (void) mgt_cg_read_u64(cg, "memory.swap.current", &swapped);
        }
        mg_set_free(s);
        uint64_t zram_kib = mgt_swap_used_kib("/dev/zram0"), file_kib = mgt_swap_used_kib(swapfile);
        swap_off(swapfile);
        KT_CHECK(r == 0, "guard: %d", r);
        KT_CHECK(ev.n[MG_EVENT_RECLAIM] >= 1, "no dose in 45 s");
        note_reclaim("reclaim-zram", &ev.reclaim);
        kt_note("anon_mib=%.1f swap_current_mib=%.1f zram_used_mib=%.1f swapfile_used_mib=%.1f",
                (double) anon_before / MG_MIB, (double) swapped / MG_MIB, (double) zram_kib / 1024,
                (double) file_kib / 1024);
        KT_CHECK(ev.reclaim.error == 0 || ev.reclaim.error == -EAGAIN, "error %d", ev.reclaim.error);
        KT_CHECK(ev.reclaim.achieved_bytes > 0, "nothing reclaimed");
        KT_CHECK(swapped >= 16 * MG_MIB, "the background's anon is not in swap: %" PRIu64 " MiB", swapped / MG_MIB);
        KT_CHECK(zram_kib >= UINT64_C(16) * 1024, "zram holds %" PRIu64 " KiB of %" PRIu64 " swapped", zram_kib, swapped / 1024);
        KT_CHECK(file_kib == 0, "the swapfile took %" PRIu64 " KiB before zram was full", file_kib);
        return KT_PASS;
}
