/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench-scale: one thread guarding N actors through a guard set, the way a
 * host embeds it (poll on mg_set_get_fd(), mg_set_process()), mostly on the
 * fast path; and what each guard costs in memory and fds.
 *
 *   bench-scale --fixture [DIR] | --cgroup ROOT  [-n N (1000)] [--seconds S (20)]
 *               [--slow K (N/100)] [--tick-ms MS (250)] [--align-ms MS] [--floor]
 *
 * Fixture: N fake cgroup trees (256 MiB actors), K of them at their limit
 * (the slow path, verdict NEAR), the others at rest.  Cgroup: N empty
 * cgroups under ROOT (16 MiB guard limit), K of them holding 15.25 MiB of
 * anon (the slow path); K is capped at 10 there to fit the VM.
 *
 * Figures: CPU share of one core over the run (getrusage, user + system,
 * over wall time), preads and wakeups per second, fds per guard (added, and
 * after the run with the K at their limit), resident
 * memory per guard ((VmRSS after the run - VmRSS before the guards) / N),
 * heap bytes allocated per guard, the kernel's slab growth per guard
 * (/proc/meminfo Slab, noisy), time to add a guard, sizeof(struct mg_guard)
 * and its big parts.  Under callgrind (tools/bench/run), only the measured loop is
 * counted, dumped as "scale:run".
 *
 * --floor also runs the floor (floor_run() below) for S seconds after the
 * set, on the same files: the CPU share of the reads alone.
 *
 * --align-ms is a what-if, not the library's behaviour: after adding the
 * guards it moves their first ticks onto MS-wide slots (mg_set_reschedule),
 * so the set wakes once per slot instead of once per guard; it shows what
 * coalescing due ticks in the set would save.
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
#include "set.h"

static uint64_t tv_usec(struct timeval tv) {
        return (uint64_t) tv.tv_sec * 1000000 + (uint64_t) tv.tv_usec;
}

/* CPU time of this process; *ret_sys gets the system part. */
static uint64_t cpu_usec(uint64_t *ret_sys) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        *ret_sys = tv_usec(ru.ru_stime);
        return tv_usec(ru.ru_utime) + tv_usec(ru.ru_stime);
}

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

/* Runs the set for usec, as a host loop would.  Returns the wakeups. */
static uint64_t run_set(mg_set *s, uint64_t usec) {
        uint64_t end = mg_mono_nsec() + usec * 1000, wakeups = 0;
        struct pollfd pfd = { .fd = mg_set_get_fd(s), .events = POLLIN };

        for (;;) {
                uint64_t now = mg_mono_nsec(), next_usec;
                int ms;

                if (now >= end)
                        break;
                ms = (int) ((end - now) / 1000000 + 1);
                if (mg_set_get_timeout(s, &next_usec) == 0 && next_usec != UINT64_MAX) {
                        uint64_t now_usec = mg_mono_usec();
                        int until = next_usec > now_usec ? (int) ((next_usec - now_usec + 999) / 1000) : 0;
                        if (until < ms)
                                ms = until;
                }
                (void) poll(&pfd, 1, ms);
                (void) mg_set_process(s);
                wakeups++;
        }
        return wakeups;
}

/*
 * The floor: the same N memory.current files read at the same rate and in
 * the same 25 ms batches by a loop that does nothing else (a pread into a
 * stack buffer, strtoull, a compare), in the same process once the set is
 * freed (its fds and the floor's fit under a hard RLIMIT_NOFILE of 20,000
 * with 10,000 actors).  What no design that reads memory.current once per
 * actor per tick can go below; memguard's share is measured against it.
 */
static int floor_run(const char *dir, uint64_t n, uint64_t limit, uint64_t tick_ms, uint64_t seconds) {
        uint64_t slots = tick_ms >= 25 ? tick_ms / 25 : 1, reads = 0, below = 0, sys0, sys1;
        int *fds = calloc(n, sizeof(*fds));
        char path[4200];

        if (!fds)
                return -ENOMEM;
        for (uint64_t i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/a%" PRIu64 "/memory.current", dir, i);
                fds[i] = open(path, O_RDONLY | O_CLOEXEC);
                if (fds[i] < 0) {
                        int r = -errno;
                        while (i > 0)
                                close(fds[--i]);
                        free(fds);
                        return r;
                }
        }
        uint64_t cpu0 = cpu_usec(&sys0), t0 = mg_mono_nsec(), end = t0 + seconds * 1000000000, slot = 0;
        for (uint64_t next = t0;; slot++, next += tick_ms * 1000000 / slots) {
                uint64_t now = mg_mono_nsec();
                if (now >= end)
                        break;
                if (next > now)
                        (void) poll(NULL, 0, (int) ((next - now) / 1000000));
                for (uint64_t i = slot % slots; i < n; i += slots) {
                        char buf[32];
                        ssize_t k = pread(fds[i], buf, sizeof(buf) - 1, 0);
                        if (k <= 0)
                                continue;
                        buf[k] = '\0';
                        below += strtoull(buf, NULL, 10) < limit - limit / 16;
                        reads++;
                }
        }
        uint64_t wall = mg_mono_nsec() - t0, cpu = cpu_usec(&sys1) - cpu0;
        for (uint64_t i = 0; i < n; i++)
                close(fds[i]);
        free(fds);
        printf("result bench=scale-floor n=%" PRIu64 " tick_ms=%" PRIu64 " seconds=%.1f cpu_pct=%.3f "
               "cpu_us_per_read=%.2f sys_pct_of_cpu=%.1f reads_per_sec=%.0f below=%" PRIu64 "\n",
               n, tick_ms, (double) wall / 1e9, 100.0 * (double) cpu / ((double) wall / 1000.0),
               reads ? (double) cpu / (double) reads : 0, cpu ? 100.0 * (double) (sys1 - sys0) / (double) cpu : 0,
               (double) reads / ((double) wall / 1e9), below);
        return 0;
}

int main(int argc, char **argv) {
        const char *fixture = NULL, *root = NULL;
        uint64_t n = 1000, seconds = 20, tick_ms = 250, slow = UINT64_MAX, limit, align_ms = 0;
        mg_guard **guards = NULL;
        bool use_fixture = false, own_dir = false, floor = false;
        char dir[4096] = "", path[4200];
        pid_t *holders = NULL;
        mg_set *s = NULL;
        struct bench_io io;
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
                } else {
                        fprintf(stderr, "usage: bench-scale (--fixture [DIR] | --cgroup ROOT) [-n N] [--seconds S] "
                                        "[--slow K] [--tick-ms MS] [--align-ms MS] [--floor]\n");
                        return 2;
                }
        }
        if (use_fixture == !!root || n == 0 || tick_ms == 0 || (align_ms && tick_ms % align_ms)) {
                fprintf(stderr, "bench-scale: give one of --fixture and --cgroup, n > 0, tick > 0\n");
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
        bench_io_init(&io);

        /* A guard at rest keeps 2 files open at most, one at its limit its
         * directory and every file; the floor (after the set) one each. */
        uint64_t nofile = n * 2 + slow * (1 + MG_CG_N) + 256;
        r = bench_raise_nofile(nofile);
        if (r < 0) {
                fprintf(stderr, "bench-scale: RLIMIT_NOFILE to %" PRIu64 ": %s\n", nofile, strerror(-r));
                return 1;
        }
        holders = calloc(slow + 1, sizeof(*holders));
        guards = calloc(n, sizeof(*guards)); /* NOLINT(bugprone-sizeof-expression): an array of guard pointers */
        if (!holders || !guards) {
                free(holders);
                free(guards);
                return 1;
        }

        /* The actors; the slow ones spread evenly. */
        uint64_t t_make = mg_mono_nsec();
        if (root) {
                snprintf(dir, sizeof(dir), "%s/memguard-bench-scale-%d", root, (int) getpid());
                (void) mgt_cg_write(root, "cgroup.subtree_control", "+memory");
                if (mkdir(dir, 0755) < 0 || mgt_cg_write(dir, "cgroup.subtree_control", "+memory") < 0) {
                        fprintf(stderr, "bench-scale: cgroup %s: %s\n", dir, strerror(errno));
                        (void) rmdir(dir);
                        free(holders);
                        free(guards);
                        return 1;
                }
        } else if (fixture) {
                snprintf(dir, sizeof(dir), "%s", fixture);
                if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
                        fprintf(stderr, "bench-scale: %s: %s\n", dir, strerror(errno));
                        free(holders);
                        free(guards);
                        return 1;
                }
        } else {
                if (bench_tmpdir_new(dir, sizeof(dir), "scale") < 0) {
                        fprintf(stderr, "bench-scale: temp dir: %s\n", strerror(errno));
                        free(holders);
                        free(guards);
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
                r = mg_set_add_internal(s, path, &o, root ? 0 : MG_CGROUP_ANY_FS, &io.io, &g);
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

        if (align_ms) {
                uint64_t t0 = mg_mono_usec(), slots = tick_ms / align_ms;
                for (uint64_t i = 0; i < n; i++)
                        mg_set_reschedule(s, guards[i], t0 + (i % slots) * align_ms * 1000);
        }

        /* One period for every guard to tick once, then the measure. */
        (void) run_set(s, tick_ms * 1000 + 50000);
        uint64_t sys0, sys1, preads0 = io.preads, cpu0 = cpu_usec(&sys0), wall0 = mg_mono_nsec();
        bench_cg_on();
        uint64_t wakeups = run_set(s, seconds * 1000000);
        bench_cg_off();
        bench_cg_dump("scale:run");
        uint64_t wall = mg_mono_nsec() - wall0, cpu = cpu_usec(&sys1) - cpu0, preads = io.preads - preads0;
        uint64_t rss2 = bench_rss_bytes();
        unsigned fds2 = bench_count_fds();
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
               "cpu_pct=%.3f cpu_us_per_tick=%.2f preads_per_sec=%.0f expected_ticks_per_sec=%.0f "
               "wakeups_per_sec=%.1f fds_per_guard=%.2f fds_per_guard_running=%.2f rss_per_guard_bytes=%.0f rss_added_per_guard_bytes=%.0f "
               "heap_bytes_per_guard=%.0f heap_allocs_per_guard=%.2f slab_kib_per_guard=%.2f "
               "add_us_per_guard=%.2f make_us_per_actor=%.1f\n",
               root ? "cgroup" : "fixture", n, n_slow, tick_ms, align_ms, secs,
               wakeups ? (double) cpu / (double) wakeups : 0, cpu ? 100.0 * (double) (sys1 - sys0) / (double) cpu : 0,
               100.0 * (double) cpu / 1000.0 / (secs * 1000.0),
               (double) cpu / (secs * (double) n * 1000.0 / (double) tick_ms), (double) preads / secs,
               (double) n * 1000.0 / (double) tick_ms, (double) wakeups / secs, (double) (fds1 - fds0) / (double) n,
               (double) (fds2 - fds0) / (double) n,
               (double) (rss2 - rss0) / (double) n, (double) (rss1 - rss0) / (double) n,
               (double) (a1.bytes - a0.bytes) / (double) n, (double) (a1.allocs - a0.allocs) / (double) n,
               ((double) slab1 - (double) slab0) / (double) n, (double) t_add / 1000.0 / (double) n,
               (double) t_make / 1000.0 / (double) n);
        s = mg_set_free(s);
        s = mg_set_free(s);
        if (floor && (r = floor_run(dir, n, limit, tick_ms, seconds)) < 0)
                fprintf(stderr, "bench-scale: floor: %s\n", strerror(-r));
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
        free(holders);
        free(guards);
        return failed;
}
