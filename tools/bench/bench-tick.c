/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-tick: the cost of one tick for one actor, memguard's guard against
 * two baselines that make the same decision (baseline.h), on the fast path
 * and on the slow path.
 *
 *   bench-tick --fixture [DIR]   fake cgroup trees (regular files; tmpfs
 *                                under /dev/shm unless TMPDIR says otherwise)
 *   bench-tick --cgroup ROOT     real cgroups made under ROOT (cgroup2 with
 *                                the memory controller; the VM)
 *   options: --ticks N (100000; measured ticks per round) --rounds R (5)
 *            --warmup N (50) --only ACTOR:MODE --modes a,b
 *
 * Modes:
 *   fast       memory.current well below the limit
 *   slow       at the limit (current >= limit - limit/16), steady: verdict NEAR
 *   slow-ws    fixture: at the limit and losing its working set
 *              (workingset_restore_file and memory.events.local max rise
 *              every tick): the guard also reads memory.pressure and io.pressure
 *   slow-high  at memory.high with memory.events.local high rising: the guard
 *              also reads PSI, memory.high and cpu.stat.  Fixture: files
 *              rewritten between ticks.  Cgroup: a child churning 1 MiB
 *              over memory.high.
 * Baselines run fast and slow only (they have no other paths).
 *
 * Per actor and mode, one "result" line: median ns per tick over the
 * rounds, preads/opens per tick (memguard: through its I/O seam; baselines:
 * counted in their code), read syscalls per tick as the kernel counts them
 * (/proc/self/io syscr), allocations per tick, share of ticks that took the
 * slow path.  Under callgrind (tools/bench/run), only the tick calls are counted,
 * dumped as "tick:ACTOR:MODE".  Files the fixtures rewrite between ticks are
 * written outside the measured calls.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "baseline.h"
#include "bench.h"
#include "cgdir.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"

enum actor_kind { A_MEMGUARD, A_STDIO, A_OPENAT, A_N };
static const char *const actor_names[A_N] = { "memguard", "stdio", "openat" };

enum mode { M_FAST, M_SLOW, M_SLOW_WS, M_SLOW_HIGH, M_N };
static const char *const mode_names[M_N] = { "fast", "slow", "slow-ws", "slow-high" };

struct target {
        bool on;
        char dir[4200];
        pid_t holder;
        uint64_t restore, max_events, high_events; /* fixture counters that rise */
};

struct pair {
        enum actor_kind a;
        enum mode m;
        mg_guard *g;
        struct bench_io io;
        struct base b;
        double *ns_round;
        uint64_t ticks, slow, preads, opens, syscr, allocs, alloc_bytes;
        int errors;
};

static bool cgroup_env;
static uint64_t limit_bytes = BENCH_LIMIT;
static struct target targets[M_N];
static uint64_t fake_now = 1000000;

static uint64_t fake_clock(void *ud) {
        (void) ud;
        return fake_now;
}

/* Fixture files that change between ticks, written outside the measure. */
static void prepare(enum mode m) {
        struct target *t = &targets[m];
        char buf[8192];

        fake_now += 250000;
        if (cgroup_env)
                return;
        if (m == M_SLOW_WS) {
                t->restore++;
                t->max_events++;
                bench_memstat_format(buf, sizeof(buf), 180 * MG_MIB, 50 * MG_MIB, 12 * MG_MIB, 8 * MG_MIB, 0,
                                     t->restore);
                (void) fixture_tree_write(t->dir, "memory.stat", buf);
        } else if (m == M_SLOW_HIGH) {
                t->high_events += 17;
        } else {
                return;
        }
        snprintf(buf, sizeof(buf), "low 0\nhigh %" PRIu64 "\nmax %" PRIu64 "\noom 0\noom_kill 0\noom_group_kill 0\n",
                 t->high_events, t->max_events);
        (void) fixture_tree_write(t->dir, "memory.events.local", buf);
}

static int one_tick(struct pair *p, bool *ret_slow) {
        uint64_t before = p->io.preads;
        int r;

        if (p->a == A_MEMGUARD) {
                r = mg_guard_tick(p->g);
                *ret_slow = p->io.preads - before > 1;
                return r;
        }
        r = base_tick(&p->b);
        *ret_slow = r > 0;
        return r;
}

static void run_pair(struct pair *p, unsigned round, uint64_t ticks, uint64_t warmup, bool dump) {
        struct bench_allocs a0, a1;
        uint64_t ns = 0, preads0, opens0, s0, s1;
        char mark[64];
        bool slow;

        for (uint64_t i = 0; i < warmup; i++) {
                prepare(p->m);
                (void) one_tick(p, &slow);
        }
        preads0 = p->io.preads;
        opens0 = p->a == A_MEMGUARD ? p->io.opens : p->b.opens;
        snprintf(mark, sizeof(mark), "%s-%s-begin", actor_names[p->a], mode_names[p->m]);
        bench_mark(mark);
        s0 = bench_syscr();
        for (uint64_t i = 0; i < ticks; i++) {
                uint64_t t0, t1;
                int r;

                prepare(p->m);
                bench_allocs_get(&a0);
                t0 = mg_mono_nsec();
                bench_cg_on();
                r = one_tick(p, &slow);
                bench_cg_off();
                t1 = mg_mono_nsec();
                bench_allocs_get(&a1);
                ns += t1 - t0;
                p->allocs += a1.allocs - a0.allocs;
                p->alloc_bytes += a1.bytes - a0.bytes;
                p->slow += slow;
                if (r < 0)
                        p->errors++;
        }
        s1 = bench_syscr();
        snprintf(mark, sizeof(mark), "%s-%s-end", actor_names[p->a], mode_names[p->m]);
        bench_mark(mark);
        if (dump) {
                snprintf(mark, sizeof(mark), "tick:%s:%s", actor_names[p->a], mode_names[p->m]);
                bench_cg_dump(mark);
        }
        p->ticks += ticks;
        p->preads += p->io.preads - preads0;
        p->opens += (p->a == A_MEMGUARD ? p->io.opens : p->b.opens) - opens0;
        if (s0 != UINT64_MAX && s1 != UINT64_MAX)
                p->syscr += s1 - s0 - 1; /* the second pread of /proc/self/io */
        p->ns_round[round] = ticks ? (double) ns / (double) ticks : 0;
}

static int setup_fixture(const char *dir) {
        for (int m = 0; m < M_N; m++) {
                struct target *t = &targets[m];
                int r;
                if (!t->on)
                        continue;
                snprintf(t->dir, sizeof(t->dir), "%s/%s", dir, mode_names[m]);
                r = bench_fixture_make(t->dir, m == M_FAST ? BENCH_AT_REST : BENCH_AT_LIMIT);
                if (r < 0)
                        return r;
                if (m == M_SLOW_HIGH) {
                        r = fixture_tree_write(t->dir, "memory.high", "251658240\n"); /* 240 MiB */
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

/* Cgroups under root/memguard-bench-PID, guard limit 64 MiB:
 *  fast: empty; slow: memory.max 64 MiB, a child holding 61 MiB of anon;
 *  slow-high: memory.high 61 MiB, memory.max 64 MiB, a child holding 63 MiB
 *  that keeps dropping and touching 1 MiB of it. */
static int setup_cgroups(const char *root, char *base, size_t size) {
        int r;

        limit_bytes = 64 * MG_MIB;
        snprintf(base, size, "%s/memguard-bench-%d", root, (int) getpid());
        r = mgt_cg_make_parent(root, base, "+memory +io +cpu");
        if (r < 0)
                return r;
        for (int m = 0; m < M_N; m++) {
                struct target *t = &targets[m];
                if (!t->on)
                        continue;
                if (m == M_SLOW_WS) {
                        t->on = false; /* needs a thrash: see the kernel suite */
                        continue;
                }
                snprintf(t->dir, sizeof(t->dir), "%s/%s", base, mode_names[m]);
                if (mkdir(t->dir, 0755) < 0)
                        return -errno;
                if (m == M_FAST)
                        continue;
                if ((r = mgt_cg_write(t->dir, "memory.max", "67108864")) < 0)
                        return r;
                if (m == M_SLOW_HIGH && (r = mgt_cg_write(t->dir, "memory.high", "63963136")) < 0)
                        return r;
                t->holder = bench_spawn_holder(t->dir, m == M_SLOW ? 61 * 1024 : 63 * 1024,
                                               m == M_SLOW_HIGH ? 1024 : 0);
                if (t->holder < 0)
                        return (int) t->holder;
        }
        return 0;
}

static bool wanted(const char *only, enum actor_kind a, enum mode m) {
        char want[64];
        if (!only)
                return true;
        snprintf(want, sizeof(want), "%s:%s", actor_names[a], mode_names[m]);
        return strcmp(only, want) == 0;
}

static void usage(void) {
        fprintf(stderr, "usage: bench-tick (--fixture [DIR] | --cgroup ROOT) [--ticks N] [--rounds R] [--warmup N]\n"
                        "                  [--only ACTOR:MODE] [--modes fast,slow,slow-ws,slow-high]\n");
        exit(2);
}

int main(int argc, char **argv) {
        const char *fixture = NULL, *root = NULL, *only = NULL, *modes = "fast,slow,slow-ws,slow-high";
        uint64_t ticks = 100000, warmup = 50;
        unsigned rounds = 5;
        bool use_fixture = false, own_dir = false;
        char dir[4096], base[4096] = "";
        struct pair pairs[A_N * M_N];
        size_t np = 0;
        struct utsname u;
        int r, failed = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--fixture") == 0) {
                        use_fixture = true;
                        if (i + 1 < argc && argv[i + 1][0] != '-')
                                fixture = argv[++i];
                } else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc) {
                        root = argv[++i];
                } else if (strcmp(argv[i], "--ticks") == 0 && i + 1 < argc) {
                        ticks = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
                        rounds = (unsigned) strtoul(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--warmup") == 0 && i + 1 < argc) {
                        warmup = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
                        only = argv[++i];
                } else if (strcmp(argv[i], "--modes") == 0 && i + 1 < argc) {
                        modes = argv[++i];
                } else {
                        usage();
                }
        }
        if (use_fixture == !!root || rounds == 0)
                usage();
        for (int m = 0; m < M_N; m++) {
                char list[256], *save = NULL;
                snprintf(list, sizeof(list), "%s", modes);
                for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save))
                        if (strcmp(w, mode_names[m]) == 0)
                                targets[m].on = true;
        }
        if (bench_under_valgrind())
                rounds = 1;
        setvbuf(stdout, NULL, _IOLBF, 0);

        cgroup_env = root != NULL;
        if (cgroup_env) {
                r = setup_cgroups(root, base, sizeof(base));
                snprintf(dir, sizeof(dir), "%s", base);
        } else {
                if (fixture) {
                        snprintf(dir, sizeof(dir), "%s", fixture);
                        r = mkdir(dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
                } else {
                        r = bench_tmpdir_new(dir, sizeof(dir), "tick");
                        own_dir = r == 0;
                }
                if (r == 0)
                        r = setup_fixture(dir);
        }
        if (r < 0) {
                fprintf(stderr, "bench-tick: setup in %s: %s\n", cgroup_env ? root : dir, strerror(-r));
                failed = 1;
                goto out;
        }

        for (int m = 0; m < M_N; m++) {
                if (!targets[m].on)
                        continue;
                for (int a = 0; a < A_N; a++) {
                        struct pair *p;
                        if ((a != A_MEMGUARD && m != M_FAST && m != M_SLOW) || !wanted(only, a, m))
                                continue;
                        p = &pairs[np++];
                        *p = (struct pair) { .a = a, .m = m };
                        p->ns_round = calloc(rounds, sizeof(double));
                        bench_io_init(&p->io);
                        if (a == A_MEMGUARD) {
                                struct mg_guard_options o;
                                mg_guard_options_init(&o, limit_bytes);
                                r = mg_guard_new_internal(targets[m].dir, &o, cgroup_env ? 0 : MG_CGROUP_ANY_FS,
                                                          &p->io.io, &p->g);
                                /* Fixture: a clock that moves one tick per tick, so
                                 * the policy's ring spans its window as in a real
                                 * run.  Cgroup: the real clock, so figures that
                                 * rise now and then (memory.high events) keep the
                                 * extra reads on for the real hold time. */
                                if (r == 0 && !cgroup_env)
                                        mg_guard_set_clock(p->g, fake_clock, NULL);
                        } else {
                                r = base_init(&p->b, a == A_STDIO ? BASE_STDIO : BASE_OPENAT, targets[m].dir,
                                              limit_bytes);
                        }
                        if (r < 0 || !p->ns_round) {
                                fprintf(stderr, "bench-tick: %s on %s: %s\n", actor_names[a], targets[m].dir,
                                        strerror(r < 0 ? -r : ENOMEM));
                                failed = 1;
                                np--;
                                goto out;
                        }
                }
        }

        uname(&u);
        printf("env bench=tick where=%s kernel=%s limit_mib=%" PRIu64 " ticks=%" PRIu64 " rounds=%u callgrind=%d "
               "alloc_counting=%d\n",
               cgroup_env ? "cgroup" : "fixture", u.release, limit_bytes / MG_MIB, ticks, rounds,
               bench_under_valgrind(), bench_alloc_counting());
        for (size_t i = 0; i < np; i++) {
                if (pairs[i].a != A_MEMGUARD)
                        continue;
                struct mg_report rep = { .size = sizeof(rep) };
                if (mg_guard_report(pairs[i].g, &rep) == 0)
                        printf("target mode=%s current_kib=%" PRIu64 " used_kib=%" PRIu64 " limit_kib=%" PRIu64
                               " verdict=%s\n",
                               mode_names[pairs[i].m], rep.current_bytes / 1024, rep.used_bytes / 1024,
                               rep.limit_bytes / 1024, mg_verdict_to_string(rep.verdict));
        }
        /* Rounds interleave the actors, so drift on a noisy machine hits
         * them alike; the order rotates each round. */
        for (unsigned round = 0; round < rounds; round++)
                for (size_t k = 0; k < np; k++)
                        run_pair(&pairs[(k + round) % np], round, ticks, warmup, true);

        for (size_t i = 0; i < np; i++) {
                struct pair *p = &pairs[i];
                double t = (double) p->ticks;
                printf("result bench=tick where=%s actor=%s mode=%s ticks=%" PRIu64 " ns_per_tick=%.1f "
                       "preads_per_tick=%.3f opens_per_tick=%.3f syscr_per_tick=%.3f allocs_per_tick=%.3f "
                       "alloc_bytes_per_tick=%.1f slow_pct=%.1f errors=%d\n",
                       cgroup_env ? "cgroup" : "fixture", actor_names[p->a], mode_names[p->m], p->ticks,
                       bench_median(p->ns_round, rounds), p->a == A_MEMGUARD ? (double) p->preads / t : 0,
                       (double) p->opens / t, (double) p->syscr / t, (double) p->allocs / t,
                       (double) p->alloc_bytes / t, 100.0 * (double) p->slow / t, p->errors);
                if (p->errors)
                        failed = 1;
        }

out:
        for (size_t i = 0; i < np; i++) {
                mg_guard_free(pairs[i].g);
                base_fini(&pairs[i].b);
                free(pairs[i].ns_round);
        }
        if (cgroup_env && base[0]) {
                for (int m = 0; m < M_N; m++)
                        if (targets[m].dir[0]) {
                                /* the holder is our child: kill, reap, then remove */
                                (void) mgt_cg_kill_all(targets[m].dir);
                                if (targets[m].holder > 0)
                                        (void) waitpid(targets[m].holder, NULL, 0);
                                (void) mgt_cg_destroy(targets[m].dir, 5 * MG_USEC_PER_SEC);
                        }
                (void) rmdir(base);
        }
        if (own_dir)
                bench_tmpdir_remove(dir);
        return failed;
}
