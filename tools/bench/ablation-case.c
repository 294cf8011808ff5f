/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One case of the ablation (ablation.h): one arm, one regime, one repeat.
 *
 * Swap ablation.  Sibling cgroups bg and fg under the bench's parent; bg
 * has memory.max, fg none.  zram (higher priority) and the swapfile
 * (lower, on from set-up to the end) are the backends.  The canaries start
 * in fg and warm up; at the pressure phase the generator starts in bg and
 * runs until the recovery phase, when it is stopped.  Every second the
 * bench reads bg's memory.pressure and runs seed 002's predicate on it
 * (mg_policy_reclaim_window(): "some" up by >= 1 ms in each of 3
 * consecutive one-second windows), in every arm, as an observer: its first
 * firing is the case's trigger.  The arms:
 *   static   zram swapped on before the case; nothing else
 *   delayed  zram off at the start, swapped on at the trigger
 *   reclaim  zram on; a guard on fg in a set (reclaim_cgroup = bg, the
 *            library's own predicate, the defaults) writes one dose to bg's
 *            memory.reclaim when it fires (a cool-down longer than the case
 *            keeps it to one); the set is run from its fd
 * Swapless pair.  No swap at all (memory.swap.max 0 on the actor besides).
 * The actor is fg, with memory.max: the canaries and, in the pressure
 * phase, a reader that streams a file into fg's page cache while its anon
 * grows and is dropped again, so that fg sits at its limit with clean
 * cache and every allocation in it (a canary's too) reclaims first:
 *   none      nothing
 *   headroom  a guard on fg with reclaim_headroom_bytes and
 *             reclaim_dose_bytes: doses of what brings memory.current back
 *             below the line, from clean cache, on the set's worker
 * Guards run under MG_GUARD_DRY_RUN: the ablation compares actuators, and a
 * kill would end the case (the kills they would have made are counted).
 *
 * With --fixture the cgroups are fake directories (tests/unit/fixture.c)
 * and a fake kernel raises the pressured cgroup's counters during the
 * pressure phase: the predicate, the guard's doses, the swap steps and the
 * CSV run without a kernel; no figure of such a run means anything.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ablation.h"
#include "swap.h"
#include "cgdir.h"
#include "cgroup.h"
#include "fixture.h"
#include "memguard/memguard.h"
#include "parse.h"
#include "policy.h"
#include "scenario.h"
#include "set.h"
#include "util.h"

#define SAMPLE_USEC (100 * MG_USEC_PER_MSEC)
#define WINDOW_USEC MG_USEC_PER_SEC
#define STAT_BUF 16384

const char *const abl_arm_names[ABL_ARM_N] = { "static", "delayed", "reclaim", "none", "headroom" };

/* Counters at a phase boundary. */
struct counters {
        uint64_t some, full, fg_some, fg_full;
        uint64_t refault_anon, refault_file, pgscan_direct, pgsteal_direct;
        uint64_t pgscan_proactive, pgsteal_proactive;
        uint64_t pswpout;
};

struct run {
        const struct abl_cfg *c;
        enum abl_arm arm;
        const struct abl_regime *g;
        struct abl_result *res;
        char bg[PATH_MAX], fg[PATH_MAX];
        const char *pressured;          /* bg, or fg in the swapless pair */
        struct mgt_proc canary[ABL_CANARY_N], load;
        mg_set *set;
        bool zram_on;
        /* the guard's doses */
        uint64_t first_dose_usec;
        /* seed 002's predicate, observed */
        struct mg_reclaim_rule rule;
        struct mg_reclaim_windows win;
        uint64_t trigger_usec;
        uint64_t tw, tp;                /* the pressure phase */
        uint64_t swap_peak, zram_orig_peak, zram_compr_peak;
        /* the fixture's fake kernel */
        uint64_t fake_some, fake_scan, fake_refault, fake_pswpout, fake_zram;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "bench-ablation: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
}

static void set_status(struct run *x, const char *what, int err) {
        if (strcmp(x->res->status, "ok") != 0)
                return; /* the first failure says why */
        if (err)
                snprintf(x->res->status, sizeof(x->res->status), "%s:%s", what, strerror(-err));
        else
                snprintf(x->res->status, sizeof(x->res->status), "%s", what);
        /* a CSV field: no commas */
        for (char *p = x->res->status; *p; p++)
                if (*p == ',' || *p == ' ')
                        *p = '-';
        say("%s %s: %s", abl_arm_names[x->arm], x->g->name, x->res->status);
}

/* ---- the guard ---------------------------------------------------------- */

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        struct run *x = ud;
        struct abl_result *r = x->res;
        (void) g;

        if (ev->type == MG_EVENT_KILL_DRY_RUN)
                r->dry_kills++;
        if (ev->type != MG_EVENT_RECLAIM || !ev->reclaim)
                return;
        const struct mg_reclaim_info *in = ev->reclaim;
        uint64_t now = mg_mono_usec();
        r->doses++;
        r->doses_counted += in->counted;
        r->dose_asked_kib += in->asked_bytes / 1024;
        r->dose_achieved_kib += in->achieved_bytes / 1024;
        if (in->duration_usec > r->dose_max_us)
                r->dose_max_us = in->duration_usec;
        if (in->error && !r->dose_error)
                r->dose_error = in->error;
        if (!x->first_dose_usec)
                x->first_dose_usec = now > in->duration_usec ? now - in->duration_usec : now; /* when it was written */
        say("dose %u to %s: asked %" PRIu64 " KiB, achieved %" PRIu64 " KiB in %" PRIu64 " us, error %d%s", r->doses,
            in->target, in->asked_bytes / 1024, in->achieved_bytes / 1024, in->duration_usec, in->error,
            in->counted ? ", counted" : "");
}

/* Warnings and errors: each dose is told by on_event() already. */
static void on_log(int level, const char *msg, void *ud) {
        (void) ud;
        if (level <= MG_LOG_WARNING)
                say("library: %s", msg);
}

static int guard_start(struct run *x) {
        const struct abl_cfg *c = x->c;
        struct mg_set_options so = { .size = sizeof(so), .log = on_log };
        struct mg_guard_options o;
        const char *on;
        uint64_t limit;
        mg_guard *g;
        int r;

        if (x->arm == ABL_RECLAIM) {
                on = c->guard_on_bg ? x->bg : x->fg;
                limit = (c->guard_on_bg ? c->bg_limit_mib : c->fg_guard_limit_mib) * MG_MIB;
        } else {
                on = x->fg;
                limit = c->fg_limit_mib * MG_MIB;
        }
        if ((r = mg_set_new(&so, &x->set)) < 0)
                return r;
        if ((r = mg_guard_options_init(&o, limit)) < 0)
                return r;
        o.flags = MG_GUARD_DRY_RUN;
        o.on_event = on_event;
        o.userdata = x;
        o.log = on_log;
        if (x->arm == ABL_RECLAIM) {
                /* seed 002: one dose, the default predicate (1 ms of some
                 * in each of 3 one-second windows); the cool-down outlasts
                 * the case so that the dose is written once */
                o.reclaim_dose_bytes = c->dose_mib * MG_MIB;
                o.reclaim_cgroup = c->guard_on_bg ? NULL : x->bg;
                o.reclaim_cooldown_usec =
                        ((uint64_t) c->warmup_s + c->pressure_s + c->recovery_s + 3600) * MG_USEC_PER_SEC;
        } else {
                o.reclaim_dose_bytes = c->headroom_dose_mib * MG_MIB;
                o.reclaim_headroom_bytes = c->headroom_mib * MG_MIB;
        }
        if (c->fixture)
                r = mg_set_add_internal(x->set, on, &o, MG_CGROUP_ANY_FS, NULL, &g);
        else
                r = mg_set_add(x->set, on, &o, &g);
        return r;
}

/* ---- cgroups ------------------------------------------------------------- */

static int fake_write(const char *dir, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fake_write(const char *dir, const char *name, const char *fmt, ...) {
        char buf[STAT_BUF];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        return fixture_tree_write(dir, name, buf);
}

/* memory.stat as the kernel prints it, with the keys the case reads. */
static int fake_stat(const char *dir, uint64_t anon, uint64_t file, uint64_t refault, uint64_t scan) {
        return fake_write(dir, "memory.stat",
                          "anon %" PRIu64 "\nfile %" PRIu64 "\nkernel 1048576\nkernel_stack 16384\npagetables 40960\n"
                          "sock 0\nshmem 0\nfile_mapped 0\nfile_dirty 0\nfile_writeback 0\ninactive_anon %" PRIu64
                          "\nactive_anon 0\ninactive_file %" PRIu64 "\nactive_file 0\nunevictable 0\n"
                          "slab_reclaimable 0\nslab_unreclaimable 0\nslab 0\n"
                          "workingset_refault_anon %" PRIu64 "\nworkingset_refault_file %" PRIu64 "\n"
                          "workingset_restore_file 0\npgscan %" PRIu64 "\npgsteal %" PRIu64 "\n"
                          "pgscan_direct %" PRIu64 "\npgsteal_direct %" PRIu64 "\npgfault 0\npgmajfault 0\n",
                          anon, file, anon, file, refault / 2, refault - refault / 2, scan, scan / 4 * 3, scan / 2,
                          scan / 8 * 3);
}

static int fake_psi(const char *dir, uint64_t some, uint64_t full) {
        return fake_write(dir, "memory.pressure",
                          "some avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n"
                          "full avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n",
                          some, full);
}

/* A fake cgroup: every file a guard opens (fixture_tree_make()), and those
 * the case reads or writes. */
static int fake_cgroup(const char *dir) {
        int r;
        if (mkdir(dir, 0755) < 0)
                return -errno;
        if ((r = fixture_tree_make(dir, NULL)) < 0 || (r = fake_stat(dir, 8 * MG_MIB, 6 * MG_MIB, 0, 0)) < 0 ||
            (r = fixture_tree_write(dir, "memory.reclaim", "")) < 0 ||
            (r = fixture_tree_write(dir, "memory.swap.current", "0\n")) < 0 ||
            (r = fixture_tree_write(dir, "memory.swap.max", "max\n")) < 0)
                return r;
        return 0;
}

static int cgroup_make(const struct abl_cfg *c, const char *path) {
        if (c->fixture) {
                (void) fixture_remove_tree(path);
                return fake_cgroup(path);
        }
        /* A case that died left its cgroup: gone before this one starts. */
        int r = mgt_cg_destroy(path, 30 * MG_USEC_PER_SEC);
        if (r < 0)
                return r;
        return mkdir(path, 0755) < 0 ? -errno : 0;
}

static void cgroup_remove(const struct abl_cfg *c, const char *path) {
        int r = c->fixture ? (fixture_remove_tree(path) < 0 ? -errno : 0) : mgt_cg_destroy(path, 30 * MG_USEC_PER_SEC);
        if (r < 0)
                say("cannot remove %s: %s", path, strerror(-r));
}

static int cgroup_limits(struct run *x) {
        const struct abl_cfg *c = x->c;
        int r;

        if (!c->swapless)
                return mgt_cg_writef(x->bg, "memory.max", "%" PRIu64, c->bg_limit_mib * MG_MIB);
        if ((r = mgt_cg_writef(x->fg, "memory.max", "%" PRIu64, c->fg_limit_mib * MG_MIB)) < 0)
                return r;
        return mgt_cg_write(x->fg, "memory.swap.max", "0");
}

/* ---- counters -------------------------------------------------------------- */

static uint64_t key(const char *buf, ssize_t n, const char *k) {
        uint64_t v = 0;
        if (n > 0)
                (void) mgt_key_value(buf, (size_t) n, k, &v); /* a key this kernel lacks reads as 0 */
        return v;
}

static void snapshot(const struct run *x, struct counters *s) {
        static char buf[STAT_BUF];
        struct mg_psi psi;
        ssize_t n;

        memset(s, 0, sizeof(*s));
        if (mgt_cg_read_psi(x->pressured, "memory.pressure", &psi) == 0) {
                s->some = psi.some.total_usec;
                s->full = psi.full.total_usec;
        }
        if (mgt_cg_read_psi(x->fg, "memory.pressure", &psi) == 0) {
                s->fg_some = psi.some.total_usec;
                s->fg_full = psi.full.total_usec;
        }
        n = mgt_cg_read(x->pressured, "memory.stat", buf, sizeof(buf));
        s->refault_anon = key(buf, n, "workingset_refault_anon");
        s->refault_file = key(buf, n, "workingset_refault_file");
        s->pgscan_direct = key(buf, n, "pgscan_direct");
        s->pgsteal_direct = key(buf, n, "pgsteal_direct");
        s->pgscan_proactive = key(buf, n, "pgscan_proactive");
        s->pgsteal_proactive = key(buf, n, "pgsteal_proactive");
        n = mgt_cg_read(x->c->proc, "vmstat", buf, sizeof(buf));
        s->pswpout = key(buf, n, "pswpout");
}

static uint64_t delta(uint64_t a, uint64_t b) {
        return b > a ? b - a : 0;
}

/* The fixture's fake kernel, every sample of the pressure phase: the
 * pressured cgroup stalls 25 ms a second (the predicate's windows count),
 * scans, refaults and swaps; the swapless actor sits inside its headroom
 * with clean cache (the headroom rule fires). */
static void fake_kernel(struct run *x) {
        const struct abl_cfg *c = x->c;
        x->fake_some += 2500;
        x->fake_scan += 256;
        x->fake_refault += 32;
        x->fake_pswpout += 64;
        x->fake_zram += UINT64_C(256) * 1024;
        (void) fake_psi(x->pressured, x->fake_some, x->fake_some / 2);
        if (c->swapless) {
                uint64_t limit = c->fg_limit_mib * MG_MIB;
                (void) fake_stat(x->fg, limit / 4, limit / 2, x->fake_refault, x->fake_scan);
                (void) fake_write(x->fg, "memory.current", "%" PRIu64 "\n", limit - c->headroom_mib * MG_MIB / 2);
                return;
        }
        (void) fake_stat(x->bg, c->bg_limit_mib * MG_MIB, 0, x->fake_refault, x->fake_scan);
        (void) fake_write(x->bg, "memory.swap.current", "%" PRIu64 "\n", x->fake_pswpout * 4096);
        (void) fake_write(c->proc, "vmstat", "pswpin 0\npswpout %" PRIu64 "\n", x->fake_pswpout);
        if (x->zram_on)
                (void) fake_write(c->zram_sys, "mm_stat", "%" PRIu64 " %" PRIu64 " 0 0 0 0 0 0 0\n", x->fake_zram,
                                  x->fake_zram / 3);
}

static void sample(struct run *x, uint64_t now) {
        uint64_t v, orig, compr;

        if (x->c->fixture && now >= x->tw && now < x->tp)
                fake_kernel(x);
        if (x->c->swapless)
                return;
        if (mgt_cg_read_u64(x->bg, "memory.swap.current", &v) == 0 && v > x->swap_peak)
                x->swap_peak = v;
        if (mgt_zram_stat(x->c->zram_sys, &orig, &compr) == 0) {
                if (orig > x->zram_orig_peak)
                        x->zram_orig_peak = orig;
                if (compr > x->zram_compr_peak)
                        x->zram_compr_peak = compr;
        }
}

/* One second's window of seed 002's predicate on bg (swap ablation). */
static void window(struct run *x, uint64_t now) {
        struct mg_psi psi;

        if (x->c->swapless || mgt_cg_read_psi(x->bg, "memory.pressure", &psi) < 0)
                return;
        if (!mg_policy_reclaim_window(&x->rule, &x->win, psi.some.total_usec, psi.full.total_usec, psi.has_full,
                                      true) ||
            x->trigger_usec)
                return;
        x->trigger_usec = now;
        say("%s %s: the predicate fired %.1f s into the pressure phase", abl_arm_names[x->arm], x->g->name,
            now >= x->tw ? (double) (now - x->tw) / 1e6 : -(double) (x->tw - now) / 1e6);
        if (x->arm == ABL_DELAYED && !x->zram_on) {
                int r = x->c->fixture ? 0 : mgt_swapon(x->c->zram_dev, x->c->zram_prio);
                if (r < 0)
                        set_status(x, "swapon-zram", r);
                else
                        x->zram_on = true;
        }
}

/* ---- the children ------------------------------------------------------------ */

#define ARGS 16
struct argv_buf {
        char s[ARGS][PATH_MAX + 16];
        char *v[ARGS + 1];
        int n;
};

static void arg(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void arg(struct argv_buf *a, const char *fmt, ...) {
        va_list ap;
        if (a->n >= ARGS)
                return;
        va_start(ap, fmt);
        vsnprintf(a->s[a->n], sizeof(a->s[0]), fmt, ap);
        va_end(ap);
        a->v[a->n] = a->s[a->n];
        a->v[++a->n] = NULL;
}

static int start(struct run *x, struct mgt_proc *p, const char *cg, struct argv_buf *a) {
        return mgt_proc_start(p, x->c->fixture ? NULL : cg, a->v[0], (const char *const *) a->v + 1, x->c->work);
}

/* Whether its output holds a line "ready" (a role is set up). */
static bool proc_ready(const struct mgt_proc *p) {
        char buf[256];
        size_t n = mgt_proc_output(p, buf, sizeof(buf));

        return n > 0 && (strncmp(buf, "ready\n", 6) == 0 || strstr(buf, "\nready\n") != NULL);
}

/* The same seed for every arm of a triplet: the same keys, the same contents. */
static uint64_t seed_of(const struct run *x, unsigned repeat) {
        return (uint64_t) repeat * 1000 + (uint64_t) (x->g - x->c->regimes) * 10 + 1;
}

static int canaries_start(struct run *x, unsigned repeat) {
        const struct abl_cfg *c = x->c;
        uint32_t max_s = c->warmup_s + c->pressure_s + c->recovery_s + c->ready_timeout_s + 120;
        static struct argv_buf a;
        int r;

        a.n = 0;
        arg(&a, "%s", c->exe);
        arg(&a, "--role");
        arg(&a, "compute");
        arg(&a, "hot_mib=%" PRIu32, c->hot_mib);
        arg(&a, "scratch_kib=%" PRIu32, c->scratch_kib);
        arg(&a, "iters=%" PRIu32, c->compute_iters);
        arg(&a, "period_ms=%" PRIu32, c->period_ms);
        arg(&a, "max_s=%" PRIu32, max_s);
        arg(&a, "seed=%" PRIu64, seed_of(x, repeat));
        if ((r = start(x, &x->canary[ABL_COMPUTE], x->fg, &a)) < 0)
                return r;
        a.n = 0;
        arg(&a, "%s", c->exe);
        arg(&a, "--role");
        arg(&a, "sqlite");
        arg(&a, "db=%s", c->db);
        arg(&a, "rows=%" PRIu32, c->rows);
        arg(&a, "queries=%" PRIu32, c->queries);
        arg(&a, "period_ms=%" PRIu32, c->period_ms);
        arg(&a, "max_s=%" PRIu32, max_s);
        arg(&a, "seed=%" PRIu64, seed_of(x, repeat));
        return start(x, &x->canary[ABL_SQLITE], x->fg, &a);
}

static int canaries_ready(struct run *x) {
        uint64_t end = mg_mono_usec() + (uint64_t) x->c->ready_timeout_s * MG_USEC_PER_SEC;
        for (;;) {
                bool all = true;
                for (int k = 0; k < ABL_CANARY_N; k++) {
                        if (mgt_proc_check(&x->canary[k]))
                                return -ECHILD;
                        all = all && proc_ready(&x->canary[k]);
                }
                if (all)
                        return 0;
                if (mg_mono_usec() >= end)
                        return -ETIMEDOUT;
                (void) poll(NULL, 0, 50);
        }
}

static int load_start(struct run *x, unsigned repeat) {
        const struct abl_cfg *c = x->c;
        static struct argv_buf a;

        a.n = 0;
        arg(&a, "%s", c->exe);
        arg(&a, "--role");
        if (c->swapless) {
                arg(&a, "reader");
                arg(&a, "file=%s", c->stream);
                arg(&a, "rate=%" PRIu32, x->g->rate_mibps);
                arg(&a, "anon_mib=%" PRIu64, c->reader_anon_mib);
                arg(&a, "anon_rate=%" PRIu64, c->reader_anon_rate);
                return start(x, &x->load, x->fg, &a);
        }
        arg(&a, "bg");
        arg(&a, "ring_mib=%" PRIu64, c->bg_alloc_mib);
        arg(&a, "active_mib=%" PRIu64, c->active_mib);
        arg(&a, "rate=%" PRIu32, x->g->rate_mibps);
        arg(&a, "contents=%c", x->g->contents);
        arg(&a, "seed=%" PRIu64, seed_of(x, repeat));
        return start(x, &x->load, x->bg, &a);
}

/* Stops the generator (or reader) and keeps what it says it did. */
static void load_stop(struct run *x) {
        char *out;
        const char *p;
        unsigned long long v;

        if (x->load.pid <= 0)
                return;
        bool died = mgt_proc_check(&x->load);
        (void) mgt_proc_stop(&x->load, SIGTERM, 20 * MG_USEC_PER_SEC);
        out = mgt_proc_output_all(&x->load);
        p = out ? strstr(out, x->c->swapless ? "read_mib=" : "written_mib=") : NULL;
        /* NOLINTNEXTLINE(cert-err34-c): a count, checked */
        if (p && sscanf(strchr(p, '=') + 1, "%llu", &v) == 1)
                x->res->bg_written_mib = v;
        if (died)
                say("%s %s: the %s ended before its time (%s)", abl_arm_names[x->arm], x->g->name,
                    x->c->swapless ? "reader" : "generator",
                    WIFSIGNALED(x->load.status) ? strsignal(WTERMSIG(x->load.status)) : "exit");
        free(out);
}

static void canaries_collect(struct run *x, uint64_t t0) {
        const struct abl_cfg *c = x->c;
        size_t max = ((size_t) c->warmup_s + c->pressure_s + c->recovery_s + c->ready_timeout_s + 240) * 1000 /
                     c->period_ms;
        struct abl_rec *recs = calloc(max, sizeof(*recs));

        for (int k = 0; k < ABL_CANARY_N; k++) {
                struct mgt_proc *p = &x->canary[k];
                bool died = mgt_proc_check(p);
                int st = mgt_proc_stop(p, SIGTERM, 60 * MG_USEC_PER_SEC);
                char *out = mgt_proc_output_all(p);
                int n = recs && out ? abl_parse_trace(out, recs, max) : -ENOMEM;
                if (died || st < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
                        set_status(x, k == ABL_COMPUTE ? "compute-died" : "sqlite-died", 0);
                if (n < 0)
                        set_status(x, "trace", n);
                else
                        abl_lat_compute(recs, (size_t) n, (uint64_t) c->period_ms * MG_USEC_PER_MSEC, t0, x->tw,
                                        x->tp, x->tp + (uint64_t) c->recovery_s * MG_USEC_PER_SEC, &x->res->lat[k]);
                free(out);
        }
        free(recs);
}

/* ---- the case ------------------------------------------------------------------- */

static int swap_prepare(struct run *x) {
        const struct abl_cfg *c = x->c;
        int r;

        if (c->swapless)
                return 0;
        if (c->fixture) {
                x->zram_on = x->arm != ABL_DELAYED;
                return fake_write(c->zram_sys, "mm_stat", "0 0 0 0 0 0 0 0 0\n");
        }
        if ((r = mgt_zram_reset(c->zram_dev, c->zram_sys, c->zram_mib)) < 0)
                return r;
        if (x->arm != ABL_DELAYED) {
                if ((r = mgt_swapon(c->zram_dev, c->zram_prio)) < 0)
                        return r;
                x->zram_on = true;
        }
        return 0;
}

static void wait_a_little(struct run *x, uint64_t now, uint64_t due) {
        uint64_t t;
        int ms;

        if (x->set && mg_set_get_timeout(x->set, &t) == 0 && t < due)
                due = t;
        ms = due > now ? (int) ((due - now + 999) / 1000) : 0;
        if (x->set) {
                struct pollfd pfd = { .fd = mg_set_get_fd(x->set), .events = POLLIN };
                (void) poll(&pfd, 1, ms);
                (void) mg_set_process(x->set);
        } else {
                (void) poll(NULL, 0, ms);
        }
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c) {
        uint64_t m = a < b ? a : b;
        return m < c ? m : c;
}

/* The phases: warm-up, pressure (the load runs), recovery. */
static void phases(struct run *x, unsigned repeat, struct counters *pre, struct counters *post) {
        const struct abl_cfg *c = x->c;
        uint64_t t0 = mg_mono_usec(), te, now, next_sample = t0, next_window = t0;
        bool started = false, stopped = false;
        int r;

        x->tw = t0 + (uint64_t) c->warmup_s * MG_USEC_PER_SEC;
        x->tp = x->tw + (uint64_t) c->pressure_s * MG_USEC_PER_SEC;
        te = x->tp + (uint64_t) c->recovery_s * MG_USEC_PER_SEC;
        while ((now = mg_mono_usec()) < te) {
                if (!started && now >= x->tw) {
                        snapshot(x, pre);
                        if ((r = load_start(x, repeat)) < 0)
                                set_status(x, "load-start", r);
                        started = true;
                }
                if (started && !stopped && now >= x->tp) {
                        snapshot(x, post);
                        load_stop(x);
                        stopped = true;
                }
                if (now >= next_window) {
                        window(x, now);
                        /* a window that ran long counts as one, as the guard's */
                        next_window = next_window + WINDOW_USEC > now ? next_window + WINDOW_USEC : now + WINDOW_USEC;
                }
                if (now >= next_sample) {
                        sample(x, now);
                        next_sample = next_sample + SAMPLE_USEC > now ? next_sample + SAMPLE_USEC : now + SAMPLE_USEC;
                }
                for (int k = 0; k < ABL_CANARY_N; k++)
                        if (mgt_proc_check(&x->canary[k])) {
                                set_status(x, k == ABL_COMPUTE ? "compute-died" : "sqlite-died", 0);
                                goto out;
                        }
                wait_a_little(x, mg_mono_usec(),
                              min3(next_window, next_sample, !started ? x->tw : !stopped ? x->tp : te));
        }
out:
        if (!started)
                snapshot(x, pre);
        if (!stopped) {
                snapshot(x, post);
                load_stop(x);
        }
        canaries_collect(x, t0);
}

int abl_case_run(const struct abl_cfg *c, enum abl_arm arm, const struct abl_regime *g, unsigned repeat,
                 struct abl_result *res) {
        static struct run x;
        struct counters pre = { 0 }, post = { 0 };
        unsigned pos = res->pos;
        uint64_t v;
        int r;

        memset(res, 0, sizeof(*res));
        res->pos = pos;
        res->trigger_ms = res->dose_first_ms = -1;
        snprintf(res->status, sizeof(res->status), "ok");
        memset(&x, 0, sizeof(x));
        x.c = c;
        x.arm = arm;
        x.g = g;
        x.res = res;
        x.load = (struct mgt_proc) { .pid = -1, .pidfd = -1 };
        for (int k = 0; k < ABL_CANARY_N; k++)
                x.canary[k] = (struct mgt_proc) { .pid = -1, .pidfd = -1 };
        x.rule = (struct mg_reclaim_rule) { .some_usec = 1000, .windows = 3 };
        if ((size_t) snprintf(x.bg, sizeof(x.bg), "%s/bg", c->parent) >= sizeof(x.bg) ||
            (size_t) snprintf(x.fg, sizeof(x.fg), "%s/fg", c->parent) >= sizeof(x.fg)) {
                set_status(&x, "cgroup", -ENAMETOOLONG);
                return -ENAMETOOLONG;
        }
        x.pressured = c->swapless ? x.fg : x.bg;

        mgt_drop_cache(c->db);
        if (c->swapless)
                mgt_drop_cache(c->stream);
        if ((r = cgroup_make(c, x.bg)) < 0 || (r = cgroup_make(c, x.fg)) < 0) {
                set_status(&x, "cgroup", r);
                goto out;
        }
        if (!c->fixture && (r = cgroup_limits(&x)) < 0) {
                set_status(&x, "limits", r);
                goto out;
        }
        if ((r = swap_prepare(&x)) < 0) {
                set_status(&x, "swap", r);
                goto out;
        }
        if ((r = canaries_start(&x, repeat)) < 0 || (r = canaries_ready(&x)) < 0) {
                set_status(&x, "canary-setup", r);
                goto out;
        }
        if ((arm == ABL_RECLAIM || arm == ABL_HEADROOM) && (r = guard_start(&x)) < 0) {
                set_status(&x, "guard", r);
                goto out;
        }
        phases(&x, repeat, &pre, &post);

        res->psi_some_us = delta(pre.some, post.some);
        res->psi_full_us = delta(pre.full, post.full);
        res->fg_some_us = delta(pre.fg_some, post.fg_some);
        res->fg_full_us = delta(pre.fg_full, post.fg_full);
        res->refaults = delta(pre.refault_anon + pre.refault_file, post.refault_anon + post.refault_file);
        res->pgscan_direct = delta(pre.pgscan_direct, post.pgscan_direct);
        res->pgsteal_direct = delta(pre.pgsteal_direct, post.pgsteal_direct);
        res->pgscan_proactive = delta(pre.pgscan_proactive, post.pgscan_proactive);
        res->pgsteal_proactive = delta(pre.pgsteal_proactive, post.pgsteal_proactive);
        res->swapout_kib = delta(pre.pswpout, post.pswpout) * (uint64_t) sysconf(_SC_PAGESIZE) / 1024;
        res->swap_peak_kib = x.swap_peak / 1024;
        res->zram_orig_kib = x.zram_orig_peak / 1024;
        res->zram_compr_kib = x.zram_compr_peak / 1024;
        if (x.trigger_usec)
                res->trigger_ms = ((int64_t) x.trigger_usec - (int64_t) x.tw) / 1000;
        if (x.first_dose_usec)
                res->dose_first_ms = ((int64_t) x.first_dose_usec - (int64_t) x.tw) / 1000;
        for (int i = 0; i < 2; i++) {
                const char *cg = i ? x.fg : x.bg;
                if (mgt_cg_read_key(cg, "memory.events", "oom_kill", &v) == 0)
                        res->oom_kills += v;
        }
out:
        /* the set first: its worker may be writing a dose to bg */
        x.set = mg_set_free(x.set);
        for (int k = 0; k < ABL_CANARY_N; k++)
                mgt_proc_end(&x.canary[k]);
        mgt_proc_end(&x.load);
        cgroup_remove(c, x.bg);
        cgroup_remove(c, x.fg);
        if (!c->fixture && !c->swapless && (r = mgt_swapoff(c->zram_dev)) < 0)
                say("swapoff %s: %s", c->zram_dev, strerror(-r));
        return strcmp(res->status, "ok") == 0 ? 0 : -EIO;
}
