/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * bench-ablation: seed 002's ablation of a bounded reclaim actuator, at a
 * size a 1 GiB TCG guest can run, and the swapless pair of seed 003
 * (docs/benchmarks.md, "Seed 002's ablation, reproduced").  The parts:
 *   bench-ablation.c    options, the guest's set-up (qualification), the
 *                       schedule of matched cases, one CSV line per case
 *   ablation-case.c     one case: cgroups, the arm, the phases, the counters
 *   ablation-roles.c    the child processes (the pressure generator, the
 *                       compute canary, the swapless actor's reader) and the
 *                       canaries' periodic loop
 *   ablation-sqlite.c   the SQLite canary and its database
 *   (tools/common/swap.c: zram and the swapfile: headers, swapon, statistics)
 *   ablation-stats.c    canary traces into percentiles, the CSV line
 * Fallible calls return 0 or a negative errno.
 */

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

enum abl_arm {
        ABL_STATIC,             /* zram on before the case, no action */
        ABL_DELAYED,            /* zram off at start, swapped on once the predicate fires */
        ABL_RECLAIM,            /* zram on; one dose to bg's memory.reclaim when it fires */
        ABL_NONE,               /* swapless: nothing */
        ABL_HEADROOM,           /* swapless: the headroom rule on the actor */
        ABL_ARM_N,
};
extern const char *const abl_arm_names[ABL_ARM_N];

/* A pressure regime.  Swap ablation: bg's page contents ('s' structured,
 * 'r' random) and allocation rate; swapless pair: 'f', the rate at which
 * the actor reads its file into cache.  Named as given ("s16", "r64"). */
struct abl_regime {
        char name[16];
        char contents;
        uint32_t rate_mibps;
};

#define ABL_MAX_ARMS 3
#define ABL_MAX_REGIMES 8

struct abl_cfg {
        bool fixture;                   /* a fake cgroup tree: no kernel, no swap */
        bool swapless;
        bool header;
        bool guard_on_bg;
        bool allow_host;
        char root[PATH_MAX];            /* the cgroup2 mount, or the fixture's directory */
        char parent[PATH_MAX];          /* root/memguard-ablation */
        char dir[PATH_MAX];             /* the database, the swapfile, the actor's file */
        char work[PATH_MAX];            /* the children's output */
        char exe[PATH_MAX];             /* this program, for the children */
        char db[PATH_MAX], swapfile[PATH_MAX], stream[PATH_MAX];
        char zram_dev[PATH_MAX], zram_sys[PATH_MAX];
        char proc[PATH_MAX];            /* /proc, or the fixture's fake one (vmstat) */
        char kernel[80];
        enum abl_arm arms[ABL_MAX_ARMS];
        unsigned n_arms;
        struct abl_regime regimes[ABL_MAX_REGIMES];
        unsigned n_regimes;
        unsigned repeat0, repeats;
        uint32_t warmup_s, pressure_s, recovery_s, period_ms, ready_timeout_s;
        /* the swap ablation */
        uint64_t bg_limit_mib, bg_alloc_mib, active_mib, dose_mib, zram_mib, swapfile_mib;
        uint32_t zram_prio, swapfile_prio;
        /* the canaries */
        uint32_t rows, payload, queries, hot_mib, compute_iters, scratch_kib;
        /* the swapless pair */
        uint64_t fg_limit_mib, headroom_mib, headroom_dose_mib, stream_mib, reader_anon_mib, reader_anon_rate;
        uint64_t fg_guard_limit_mib;    /* the foreground guard's limit in the reclaim arm */
};

/* One canary's figures over a case, microseconds. */
struct abl_lat {
        unsigned n;                     /* requests scheduled in the pressure phase */
        uint64_t p50, p95, p99;         /* response: completion - scheduled start */
        uint64_t wake50, wake95, wake99;/* wake - scheduled start */
        uint64_t svc50, svc95, svc99;   /* completion - wake */
        unsigned misses;                /* not done before the next period */
        uint64_t warm_p99, rec_p99;     /* response p99 in warm-up and recovery */
        uint64_t majflt, nivcsw, nvcsw; /* over the pressure phase */
};

enum { ABL_COMPUTE, ABL_SQLITE, ABL_CANARY_N };
extern const char *const abl_canary_names[ABL_CANARY_N];

struct abl_result {
        char status[96];                /* "ok", or what made the case invalid */
        unsigned pos;                   /* its place in the triplet's rotated order */
        struct abl_lat lat[ABL_CANARY_N];
        /* over the pressure phase, of the pressured cgroup (bg; the actor,
         * fg, in the swapless pair) and of fg */
        uint64_t psi_some_us, psi_full_us, fg_some_us, fg_full_us;
        uint64_t refaults, pgscan_direct, pgsteal_direct;
        /* 7.x counts memory.reclaim's own reclaim apart (pg*_proactive);
         * before, it is in pg*_direct, the doses' with the actor's */
        uint64_t pgscan_proactive, pgsteal_proactive;
        uint64_t swapout_kib, swap_peak_kib, zram_orig_kib, zram_compr_kib;
        int64_t trigger_ms;             /* the predicate's first firing after the pressure began; -1 */
        unsigned doses, doses_counted;
        uint64_t dose_asked_kib, dose_achieved_kib, dose_max_us;
        int64_t dose_first_ms;          /* -1: none */
        int dose_error;                 /* the first non-zero error of a dose */
        uint64_t bg_written_mib;        /* what the generator (or reader) wrote, read */
        uint64_t oom_kills;
        unsigned dry_kills;             /* kills the dry-run guard would have made */
};

/* ---- ablation-case.c */
int abl_case_run(const struct abl_cfg *c, enum abl_arm arm, const struct abl_regime *g, unsigned repeat,
                 struct abl_result *res);

/* ---- ablation-stats.c */
struct abl_rec {
        uint64_t sched, wake, done;     /* CLOCK_MONOTONIC usec */
        uint64_t majflt, nvcsw, nivcsw; /* getrusage() after the request */
};
/* Parses a canary's output ("rec ..." lines), at most max records into
 * recs.  Returns how many, or a negative errno. */
int abl_parse_trace(const char *text, struct abl_rec *recs, size_t max);
/* The figures of recs whose scheduled start falls in [pressure_from,
 * pressure_to), with p99 of those in the warm-up [warm_from, pressure_from)
 * and the recovery [pressure_to, rec_to). */
void abl_lat_compute(const struct abl_rec *recs, size_t n, uint64_t period_usec, uint64_t warm_from,
                     uint64_t pressure_from, uint64_t pressure_to, uint64_t rec_to, struct abl_lat *ret);
void abl_csv_header(FILE *f);
void abl_csv_line(FILE *f, const struct abl_cfg *c, enum abl_arm arm, const struct abl_regime *g, unsigned repeat,
                  const struct abl_result *r);

/* ---- ablation-roles.c: the children (bench-ablation --role NAME KEY=VALUE...) */
int abl_role_main(int argc, char **argv);
/* KEY=VALUE of a role's arguments: the value, or def. */
uint64_t abl_arg_u64(int argc, char **argv, const char *key, uint64_t def);
const char *abl_arg_str(int argc, char **argv, const char *key, const char *def);
/* Set by SIGTERM: a child finishes what it does and prints its results. */
extern volatile sig_atomic_t abl_stop;
void abl_on_sigterm(void);
/*
 * The canaries' loop: work(ud) once every period_ms on the CLOCK_MONOTONIC
 * grid, until SIGTERM; then every request as "rec SCHED WAKE DONE MAJFLT
 * NVCSW NIVCSW" on stdout.  A request that runs past the next start makes
 * the next one late (its wake counts the wait): the grid is kept, so a
 * stall shows in every request it delays.  Returns 0 or a negative errno.
 */
int abl_canary_loop(const char *name, int (*work)(void *ud), void *ud, uint32_t period_ms, uint32_t max_s);
/* xorshift64*: the children's contents and keys. */
uint64_t abl_rand(uint64_t *state);

/* ---- ablation-sqlite.c */
/* Makes the database at path (rows rows of payload bytes, a key column
 * with its index) unless one with that shape is there.  1 if made, 0 if
 * kept, or a negative errno. */
int abl_db_make(const char *path, uint32_t rows, uint32_t payload);
int abl_role_sqlite(int argc, char **argv);

