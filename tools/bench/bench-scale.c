/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-scale: one thread guarding N actors through a guard set, the way a
 * host embeds it (poll on mg_set_get_fd(), mg_set_process()), mostly on the
 * fast path; and what each guard costs in memory and fds.
 *
 *   bench-scale --fixture [DIR] | --cgroup ROOT  [-n N (1000)] [--seconds S (20)]
 *               [--slow K (N/100)] [--tick-ms MS (250)] [--align-ms MS] [--floor [--rounds R]]
 *
 * Fixture: N fake cgroup trees (256 MiB actors), K of them at their limit
 * (the slow path, verdict NEAR), the others at rest.  Cgroup: N empty
 * cgroups under ROOT (16 MiB guard limit), K of them holding 15.25 MiB of
 * anon (the slow path); K is capped at 10 there to fit the VM.
 *
 * Figures: CPU share of one core over the run (getrusage, user + system,
 * over wall time), CPU per tick (the set's count, mg_set_get_stats()),
 * preads per second (the process's read syscalls from /proc/self/io, less
 * the set's timerfd reads: the guards read through no seam), wakeups per
 * second, fds per guard (added, and after the run with the K at their
 * limit), resident memory per guard ((VmRSS after the run - VmRSS before
 * the guards) / N), heap bytes allocated per guard, the kernel's slab
 * growth per guard (/proc/meminfo Slab, noisy), time to add a guard,
 * sizeof(struct mg_guard) and its big parts.  Under callgrind
 * (tools/bench/run), only the measured loop is counted, dumped as
 * "scale:run".
 *
 * --floor also runs the floor (floor_run() below) on the same open files:
 * the CPU of the reads alone.  The two take turns, R rounds (--rounds, 5)
 * of S/R seconds each, each set round after one unmeasured period, so that
 * a shared host's noise falls on both alike; the ratio of CPU per read of
 * each round's pair is printed (median, range, and of the totals).  When
 * the set's fds and the floor's do not fit together (10,000 actors under a
 * hard RLIMIT_NOFILE of 20,000), the floor runs once for S seconds after
 * the set is freed, on files opened anew.
 *
 * --align-ms is a what-if, not the library's behaviour: after adding the
 * guards it moves their first ticks onto MS-wide slots (mg_set_reschedule)
 * instead of the set's own (mg_set_slot_usec()), and the floor reads in
 * those slots too.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "cgdir.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"

static uint64_t meminfo_kib(const char *key) {
        char line[256];
        uint64_t v = 0;
        size_t kl = strlen(key);
        FILE *f = fopen("/proc/meminfo", "re");

        if (!f)
                return 0;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
                        v = strtoull(line + kl + 1, NULL, 10);
                        break;
                }
        fclose(f);
        return v;
}

/* Runs the set for usec, as a host loop would: poll on its fd, which the
 * set's timerfd makes readable when a tick is due (one timer: a timeout to
 * mg_set_get_timeout() as well would arm a second).  Returns the wakeups. */
static uint64_t run_set(mg_set *s, uint64_t usec) {
        uint64_t end = mg_mono_nsec() + usec * 1000, wakeups = 0;
        struct pollfd pfd = { .fd = mg_set_get_fd(s), .events = POLLIN };

        for (;;) {
                uint64_t now = mg_mono_nsec();

                if (now >= end)
                        break;
                if (poll(&pfd, 1, (int) ((end - now) / 1000000 + 1)) > 0) {
                        (void) mg_set_process(s);
                        wakeups++;
                }
        }
        return wakeups;
}

/*
 * The floor: the same files read at the same rate and in the same batches
 * (each actor in the slot of its first tick, floor_batch(); no wakeup for
 * a slot that holds none) by a loop that does nothing else: each actor's
 * memory.current (a pread into a stack buffer, strtoull, a compare), and
 * for the K at their limit also the four files a slow tick reads
 * (memory.stat, memory.pressure, io.pressure, memory.events.local),
 * unparsed.  What no design that reads those files once per tick in those
 * batches can go below; memguard's share is measured against it.
 */
static const enum mg_cgfile floor_slow_files[] = { MG_CG_STAT, MG_CG_PRESSURE, MG_CG_IO_PRESSURE,
                                                   MG_CG_EVENTS_LOCAL };
#define FLOOR_SLOW_FILES (sizeof(floor_slow_files) / sizeof(floor_slow_files[0]))

struct floor {
        uint64_t n, limit, tick_ms, slots;
        int *fds;       /* n memory.current, then FLOOR_SLOW_FILES per actor (-1 unless slow) */
        uint64_t *order; /* the actors, batch by batch: batch b is order[start[b]] to order[start[b + 1] - 1] */
        uint64_t *start; /* slots + 1 */
        uint64_t below;
};

static void floor_close(struct floor *f) {
        if (f->fds)
                for (uint64_t i = 0; i < f->n * (1 + FLOOR_SLOW_FILES); i++)
                        if (f->fds[i] >= 0)
                                close(f->fds[i]);
        free(f->fds);
        free(f->order);
        free(f->start);
        f->fds = NULL;
        f->order = f->start = NULL;
}

/* The floor's batch of actor i: the slot of its first tick as spread()
 * places it (actors 200b to 200b + 199 of 1,000 in batch b at 250 ms),
 * so that it reads the same actors together as the set does.  With
 * --align-ms, i % slots. */
static uint64_t floor_batch(uint64_t i, uint64_t slots, uint64_t tick_ms, uint64_t align_ms) {
        uint64_t slot = mg_set_slot_usec(tick_ms * 1000);

        return align_ms ? i % slots : slot ? mg_set_spread_usec(i, tick_ms * 1000) / slot : 0;
}

/* f->order and f->start: the actors batch by batch, one pass over them
 * per batch (once, before the first round). */
static int floor_order(struct floor *f, uint64_t align_ms) {
        uint64_t k = 0;

        f->order = malloc(f->n * sizeof(*f->order));
        f->start = malloc((f->slots + 1) * sizeof(*f->start));
        if (!f->order || !f->start)
                return -ENOMEM;
        for (uint64_t b = 0; b < f->slots; b++) {
                f->start[b] = k;
                for (uint64_t i = 0; i < f->n; i++)
                        if (floor_batch(i, f->slots, f->tick_ms, align_ms) == b)
                                f->order[k++] = i;
        }
        f->start[f->slots] = k;
        return 0;
}

/* Guard i's file, or -1: its open file itself where the guard has it open
 * (a dup: the same struct file, so the kernel does the same work for both
 * loops), else opened anew by path. */
static int floor_fd(const char *dir, uint64_t i, mg_guard *g, enum mg_cgfile f) {
        char path[4200];
        int fd = g ? mg_guard_file_fd(g, f) : -1;

        if (fd >= 0)
                return fcntl(fd, F_DUPFD_CLOEXEC, 0);
        snprintf(path, sizeof(path), "%s/a%" PRIu64 "/%s", dir, i, mg_cgfile_name(f));
        return open(path, O_RDONLY | O_CLOEXEC);
}

static unsigned floor_fds(const struct floor *f) {
        unsigned k = 0;
        for (uint64_t i = 0; f->fds && i < f->n * (1 + FLOOR_SLOW_FILES); i++)
                k += f->fds[i] >= 0;
        return k;
}

/* guards: NULL once the set is freed. */
static int floor_open(struct floor *f, const char *dir, uint64_t n, mg_guard **guards, const bool *is_slow,
                      uint64_t limit, uint64_t tick_ms, uint64_t align_ms) {
        uint64_t slots = align_ms ? tick_ms / align_ms : tick_ms * 1000 / mg_set_slot_usec(tick_ms * 1000);

        *f = (struct floor) { .n = n, .limit = limit, .tick_ms = tick_ms, .slots = slots };
        f->fds = malloc(n * (1 + FLOOR_SLOW_FILES) * sizeof(int));
        if (!f->fds)
                return -ENOMEM;
        memset(f->fds, 0xff, n * (1 + FLOOR_SLOW_FILES) * sizeof(int)); /* every fd -1 */
        if (floor_order(f, align_ms) < 0) {
                floor_close(f);
                return -ENOMEM;
        }
        for (uint64_t i = 0; i < n; i++) {
                mg_guard *g = guards ? guards[i] : NULL;
                f->fds[i] = floor_fd(dir, i, g, MG_CG_CURRENT);
                for (size_t k = 0; is_slow[i] && f->fds[i] >= 0 && k < FLOOR_SLOW_FILES; k++) {
                        int *fd = &f->fds[n + i * FLOOR_SLOW_FILES + k];
                        *fd = floor_fd(dir, i, g, floor_slow_files[k]);
                        if (*fd < 0)
                                break;
                }
                if (f->fds[i] < 0 || (is_slow[i] && f->fds[n + (i + 1) * FLOOR_SLOW_FILES - 1] < 0)) {
                        int r = -errno;
                        floor_close(f);
                        return r;
                }
        }
        return 0;
}

/* Reads for usec; adds the CPU and wall time spent and the preads made. */
static void floor_run(struct floor *f, uint64_t usec, uint64_t *cpu, uint64_t *sys, uint64_t *wall,
                      uint64_t *reads) {
        uint64_t slots = f->slots, sys0, sys1;
        static char stat_buf[MG_STAT_BUF_SIZE];

        uint64_t cpu0 = bench_cpu_usec(&sys0), t0 = mg_mono_nsec(), end = t0 + usec * 1000, slot = 0;
        for (uint64_t next = t0;; slot++, next += f->tick_ms * 1000000 / slots) {
                uint64_t now = mg_mono_nsec();
                if (now >= end)
                        break;
                if (f->start[slot % slots] == f->start[slot % slots + 1])
                        continue; /* an empty batch: no wakeup */
                if (next > now)
                        (void) poll(NULL, 0, (int) ((next - now) / 1000000));
                if (mg_mono_nsec() >= end)
                        break; /* not one batch more than the set had */
                for (uint64_t a = f->start[slot % slots]; a < f->start[slot % slots + 1]; a++) {
                        uint64_t i = f->order[a];
                        char buf[32];
                        ssize_t k = pread(f->fds[i], buf, sizeof(buf) - 1, 0);
                        if (k <= 0)
                                continue;
                        buf[k] = '\0';
                        f->below += strtoull(buf, NULL, 10) < f->limit - f->limit / 16;
                        (*reads)++;
                        for (size_t j = 0; j < FLOOR_SLOW_FILES; j++) {
                                int fd = f->fds[f->n + i * FLOOR_SLOW_FILES + j];
                                if (fd >= 0 && pread(fd, stat_buf, sizeof(stat_buf), 0) >= 0)
                                        (*reads)++;
                        }
                }
        }
        *wall += mg_mono_nsec() - t0;
        *cpu += bench_cpu_usec(&sys1) - cpu0;
        *sys += sys1 - sys0;
}

/* Ticks made so far, fast and slow (mg_set_get_stats()). */
static uint64_t set_ticks(const mg_set *s) {
        struct mg_stats st = { .size = sizeof(st) };
        return mg_set_get_stats(s, &st) == 0 ? st.fast_ticks + st.slow_ticks : 0;
}

static bool nofile_fits(uint64_t n) {
        struct rlimit rl;
        return getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= n;
}

/* First ticks over one period, as mg_set_add_guard() spreads them; with
 * --align-ms on MS-wide slots instead.  After the floor's turn too: the
 * guards it kept waiting would otherwise all be due at once. */
static void spread(mg_set *s, mg_guard **guards, uint64_t n, uint64_t tick_ms, uint64_t align_ms) {
        uint64_t t0 = mg_mono_usec(), slots = align_ms ? tick_ms / align_ms : 0;

        for (uint64_t i = 0; i < n; i++)
                mg_set_reschedule(s, guards[i],
                                  slots ? t0 + (i % slots) * align_ms * 1000 : t0 + mg_set_spread_usec(i, tick_ms * 1000));
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
        const char *fixture = NULL, *root = NULL;
        uint64_t n = 1000, seconds = 20, tick_ms = 250, slow = UINT64_MAX, limit, align_ms = 0, rounds = 5;
        mg_guard **guards = NULL;
        bool *slow_of = NULL;
        struct floor fl = {};
        bool use_fixture = false, own_dir = false, floor = false;
        char dir[4096] = "", path[4200];
        pid_t *holders = NULL;
        mg_set *s = NULL;
        struct utsname u;
        int r, failed = 0;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--fixture") == 0) {
                        use_fixture = true;
                        if (i + 1 < argc && argv[i + 1][0] != '-')
                                fixture = argv[++i];
                } else if (strcmp(argv[i], "--cgroup") == 0 && i + 1 < argc) {
                        root = argv[++i];
                } else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
                        n = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
                        seconds = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--slow") == 0 && i + 1 < argc) {
                        slow = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--tick-ms") == 0 && i + 1 < argc) {
                        tick_ms = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--align-ms") == 0 && i + 1 < argc) {
                        align_ms = strtoull(argv[++i], NULL, 10);
                } else if (strcmp(argv[i], "--floor") == 0) {
                        floor = true;
                } else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
                        rounds = strtoull(argv[++i], NULL, 10);
                } else {
                        fprintf(stderr, "usage: bench-scale (--fixture [DIR] | --cgroup ROOT) [-n N] [--seconds S] "
                                        "[--slow K] [--tick-ms MS] [--align-ms MS] [--floor [--rounds R]]\n");
                        return 2;
                }
        }
        if (use_fixture == !!root || n == 0 || tick_ms == 0 || (align_ms && tick_ms % align_ms) || rounds == 0) {
                fprintf(stderr, "bench-scale: give one of --fixture and --cgroup, n > 0, tick > 0, rounds > 0\n");
                return 2;
        }
        if (slow == UINT64_MAX)
                slow = n / 100;
        if (root && slow > 10)
                slow = 10;
        if (slow > n)
                slow = n;
        limit = root ? 16 * MG_MIB : BENCH_LIMIT;
        setvbuf(stdout, NULL, _IOLBF, 0);

        /* A guard at rest keeps 2 files open at most, one at its limit its
         * directory and every file; the floor one each, five at the limit
         * (beside the set if that fits, else after it). */
        uint64_t nofile = n * 3 + slow * (1 + MG_CG_N + FLOOR_SLOW_FILES) + 256;
        r = bench_raise_nofile(nofile);
        if (r < 0) {
                fprintf(stderr, "bench-scale: RLIMIT_NOFILE to %" PRIu64 ": %s\n", nofile, strerror(-r));
                return 1;
        }
        holders = calloc(slow + 1, sizeof(*holders));
        guards = calloc(n, sizeof(*guards)); /* NOLINT(bugprone-sizeof-expression): an array of guard pointers */
        slow_of = calloc(n, sizeof(*slow_of));
        if (!holders || !guards || !slow_of) {
                free(holders);
                free(guards);
                free(slow_of);
                return 1;
        }

        /* The actors; the slow ones spread evenly. */
        uint64_t t_make = mg_mono_nsec();
        if (root) {
                snprintf(dir, sizeof(dir), "%s/memguard-bench-scale-%d", root, (int) getpid());
                r = mgt_cg_make_parent(root, dir, "+memory");
                if (r < 0) {
                        fprintf(stderr, "bench-scale: cgroup %s: %s\n", dir, strerror(-r));
                        free(holders);
                        free(guards);
                        free(slow_of);
                        return 1;
                }
        } else if (fixture) {
                snprintf(dir, sizeof(dir), "%s", fixture);
                if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "bench-scale: %s: %s\n", dir, strerror(errno));
                        free(holders);
                        free(guards);
                        free(slow_of);
                        return 1;
                }
        } else {
                if (bench_tmpdir_new(dir, sizeof(dir), "scale") < 0) {
                        fprintf(stderr, "bench-scale: temp dir: %s\n", strerror(errno));
                        free(holders);
                        free(guards);
                        free(slow_of);
                        return 1;
                }
                own_dir = true;
        }
        uint64_t n_made = 0, n_slow = 0;
        for (uint64_t i = 0; i < n; i++, n_made++) {
                bool is_slow = slow && i % (n / slow) == 0 && n_slow < slow;
                snprintf(path, sizeof(path), "%s/a%" PRIu64, dir, i);
                if (root) {
                        r = mkdir(path, 0755) < 0 ? -errno : 0;
                        if (r == 0 && is_slow) {
                                pid_t pid = bench_spawn_holder(path, 15 * 1024 + 256, 0);
                                r = pid < 0 ? (int) pid : 0;
                                if (pid > 0)
                                        holders[n_slow] = pid;
                        }
                } else {
                        r = bench_fixture_make(path, is_slow ? BENCH_AT_LIMIT : BENCH_AT_REST);
                }
                if (r < 0) {
                        fprintf(stderr, "bench-scale: actor %s: %s\n", path, strerror(-r));
                        failed = 1;
                        goto out;
                }
                n_slow += is_slow;
                slow_of[i] = is_slow;
        }
        t_make = mg_mono_nsec() - t_make;

        /* The guards. */
        uint64_t rss0 = bench_rss_bytes(), slab0 = meminfo_kib("Slab");
        unsigned fds0 = bench_count_fds();
        struct bench_allocs a0, a1;
        bench_allocs_get(&a0);
        r = mg_set_new(NULL, &s);
        if (r < 0) {
                fprintf(stderr, "bench-scale: mg_set_new: %s\n", strerror(-r));
                failed = 1;
                goto out;
        }
        uint64_t t_add = mg_mono_nsec();
        for (uint64_t i = 0; i < n; i++) {
                struct mg_guard_options o;
                mg_guard *g;
                mg_guard_options_init(&o, limit);
                o.tick_usec = tick_ms * 1000;
                snprintf(path, sizeof(path), "%s/a%" PRIu64, dir, i);
                r = mg_set_add_internal(s, path, &o, root ? 0 : MG_CGROUP_ANY_FS, NULL, &g);
                if (r == 0)
                        guards[i] = g;
                if (r < 0) {
                        fprintf(stderr, "bench-scale: guard %s: %s\n", path, strerror(-r));
                        failed = 1;
                        goto out;
                }
        }
        t_add = mg_mono_nsec() - t_add;
        bench_allocs_get(&a1);
        unsigned fds1 = bench_count_fds();
        uint64_t rss1 = bench_rss_bytes(), slab1 = meminfo_kib("Slab");

        /* The floor's files beside the set's, so that the two run in turns
         * (noise on a shared host moves both alike); 10,000 actors do not
         * fit under a hard RLIMIT_NOFILE of 20,000 that way, and their
         * floor runs once, after the set is freed. */
        bool turns = floor && nofile_fits(nofile);
        if (!turns)
                rounds = 1;
        double *ratios = calloc(rounds, sizeof(double));
        uint64_t cpu = 0, sys = 0, wall = 0, preads = 0, wakeups = 0, ticks = 0, f_cpu = 0, f_sys = 0, f_wall = 0, f_reads = 0;
        if (!ratios) {
                failed = 1;
                goto out;
        }
        for (uint64_t k = 0; k < rounds; k++) {
                uint64_t usec = seconds * 1000000 / rounds, fc = 0, fw = 0;
                spread(s, guards, n, tick_ms, align_ms);
                /* One period for every guard to tick once, then the measure. */
                (void) run_set(s, tick_ms * 1000 + 50000);
                /* After that period: the guards at their limits have every file open. */
                if (turns && k == 0 && (r = floor_open(&fl, dir, n, guards, slow_of, limit, tick_ms, align_ms)) < 0) {
                        fprintf(stderr, "bench-scale: floor: %s\n", strerror(-r));
                        turns = false; /* the set's rounds go on; the floor after them */
                }
                uint64_t sys0, sys1, ticks0 = set_ticks(s), syscr0 = bench_syscr(), cpu0 = bench_cpu_usec(&sys0),
                         wall0 = mg_mono_nsec();
                bench_cg_on();
                uint64_t wk = run_set(s, usec);
                bench_cg_off();
                uint64_t w = mg_mono_nsec() - wall0, c = bench_cpu_usec(&sys1) - cpu0;
                /* the reads the guards made: every read(2) and pread(2) of
                 * this process, less the set's of its timerfd (one per
                 * wakeup) and the first bench_syscr()'s own */
                uint64_t pr = bench_syscr() - syscr0 - wk - 1;
                cpu += c, sys += sys1 - sys0, wall += w, preads += pr, wakeups += wk, ticks += set_ticks(s) - ticks0;
                if (turns) {
                        uint64_t fr = 0;
                        floor_run(&fl, usec, &fc, &f_sys, &fw, &fr);
                        f_cpu += fc, f_wall += fw, f_reads += fr;
                        /* CPU per read: the two read the same files at the
                         * same rate, give or take a batch */
                        ratios[k] = fc && fr && pr ? ((double) c / (double) pr) / ((double) fc / (double) fr) : 0;
                }
        }
        bench_cg_dump("scale:run");
        uint64_t rss2 = bench_rss_bytes();
        unsigned fds2 = bench_count_fds() - floor_fds(&fl); /* the set's alone */
        double secs = (double) wall / 1e9;

        uname(&u);
        struct rlimit nl = {};
        (void) getrlimit(RLIMIT_NOFILE, &nl);
        printf("env bench=scale where=%s kernel=%s n=%" PRIu64 " slow=%" PRIu64 " tick_ms=%" PRIu64
               " seconds=%" PRIu64 " alloc_counting=%d nofile_limit=%" PRIu64 "\n",
               root ? "cgroup" : "fixture", u.release, n, n_slow, tick_ms, seconds, bench_alloc_counting(),
               (uint64_t) nl.rlim_cur);
        printf("result bench=scale where=%s n=%" PRIu64 " slow=%" PRIu64 " tick_ms=%" PRIu64 " align_ms=%" PRIu64
               " seconds=%.1f cpu_us_per_wakeup=%.2f sys_pct_of_cpu=%.1f "
               "cpu_pct=%.3f cpu_us_per_tick=%.2f preads_per_sec=%.0f ticks_per_sec=%.0f expected_ticks_per_sec=%.0f "
               "wakeups_per_sec=%.1f fds_per_guard=%.2f fds_per_guard_running=%.2f rss_per_guard_bytes=%.0f rss_added_per_guard_bytes=%.0f "
               "heap_bytes_per_guard=%.0f heap_allocs_per_guard=%.2f slab_kib_per_guard=%.2f "
               "add_us_per_guard=%.2f make_us_per_actor=%.1f\n",
               root ? "cgroup" : "fixture", n, n_slow, tick_ms, align_ms, secs,
               wakeups ? (double) cpu / (double) wakeups : 0, cpu ? 100.0 * (double) sys / (double) cpu : 0,
               100.0 * (double) cpu / 1000.0 / (secs * 1000.0),
               ticks ? (double) cpu / (double) ticks : 0, (double) preads / secs, (double) ticks / secs,
               (double) n * 1000.0 / (double) tick_ms, (double) wakeups / secs, (double) (fds1 - fds0) / (double) n,
               (double) (fds2 - fds0) / (double) n,
               (double) (rss2 - rss0) / (double) n, (double) (rss1 - rss0) / (double) n,
               (double) (a1.bytes - a0.bytes) / (double) n, (double) (a1.allocs - a0.allocs) / (double) n,
               ((double) slab1 - (double) slab0) / (double) n, (double) t_add / 1000.0 / (double) n,
               (double) t_make / 1000.0 / (double) n);
        s = mg_set_free(s);
        if (floor && !turns) {
                r = floor_open(&fl, dir, n, NULL, slow_of, limit, tick_ms, align_ms);
                if (r < 0)
                        fprintf(stderr, "bench-scale: floor: %s\n", strerror(-r));
                else
                        floor_run(&fl, seconds * 1000000, &f_cpu, &f_sys, &f_wall, &f_reads);
        }
        if (f_wall) {
                qsort(ratios, rounds, sizeof(double), cmp_double);
                printf("result bench=scale-floor n=%" PRIu64 " slow=%" PRIu64 " tick_ms=%" PRIu64
                       " seconds=%.1f rounds=%" PRIu64 " in_turns=%d cpu_pct=%.3f cpu_us_per_read=%.2f "
                       "sys_pct_of_cpu=%.1f reads_per_sec=%.0f below=%" PRIu64,
                       n, n_slow, tick_ms, (double) f_wall / 1e9, turns ? rounds : 1, turns,
                       100.0 * (double) f_cpu / ((double) f_wall / 1000.0),
                       f_reads ? (double) f_cpu / (double) f_reads : 0,
                       f_cpu ? 100.0 * (double) f_sys / (double) f_cpu : 0,
                       (double) f_reads / ((double) f_wall / 1e9), fl.below);
                if (turns)
                        printf(" ratio_median=%.3f ratio_min=%.3f ratio_max=%.3f ratio_total=%.3f",
                               ratios[rounds / 2], ratios[0], ratios[rounds - 1],
                               ((double) cpu / (double) preads) / ((double) f_cpu / (double) f_reads));
                printf("\n");
        }
        free(ratios);
        floor_close(&fl);
        printf("result bench=sizeof guard=%zu slow_state=%zu stat_buf_per_set=%zu small_buf_per_set=%zu "
               "policy_state=%zu kill_record=%zu report=%zu options=%zu\n",
               sizeof(struct mg_guard), sizeof(struct mg_slow), (size_t) MG_STAT_BUF_SIZE, (size_t) MG_SMALL_BUF_SIZE,
               sizeof(struct mg_policy_state), sizeof(struct mg_kill_record), sizeof(struct mg_report),
               sizeof(struct mg_guard_options));

out:
        mg_set_free(s);
        if (root) {
                /* the holders are our children: kill, reap, then remove */
                for (uint64_t i = 0; i < n_made; i++) {
                        snprintf(path, sizeof(path), "%s/a%" PRIu64, dir, i);
                        (void) mgt_cg_kill_all(path);
                }
                for (uint64_t i = 0; i < n_slow; i++)
                        (void) waitpid(holders[i], NULL, 0);
                for (uint64_t i = 0; i < n_made; i++) {
                        snprintf(path, sizeof(path), "%s/a%" PRIu64, dir, i);
                        (void) mgt_cg_destroy(path, 5 * MG_USEC_PER_SEC);
                }
                (void) rmdir(dir);
        } else if (own_dir) {
                bench_tmpdir_remove(dir);
        }
        floor_close(&fl);
        free(holders);
        free(guards);
        free(slow_of);
        return failed;
}
