/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The ablation's children (ablation.h), each this program run again as
 * "bench-ablation --role NAME KEY=VALUE...":
 *   bg       the pressure generator: a ring of anon memory written at a
 *            fixed rate (each chunk dropped first, so every write is a new
 *            allocation the cgroup must find room for) while the most
 *            recently written part, its active set, is touched once a second
 *   compute  a canary: every period touches its hot region and computes
 *            over a small scratch buffer it allocates for the request
 *   reader   the swapless pair's actor: reads a file into the page cache at
 *            a fixed rate while its anon grows in steps and is dropped again
 *   sqlite   a canary: point queries (ablation-sqlite.c)
 * Each prints "ready" once set up, runs until SIGTERM, then its results.
 *
 * Kernel behaviour the generator relies on: a cgroup at memory.max charges
 * every new page by reclaiming from itself first (try_charge() ->
 * try_to_free_mem_cgroup_pages(), in the allocating task); with swap,
 * anon goes to the highest-priority swap device with room, zram before the
 * swapfile.  MADV_DONTNEED on a swapped page frees its swap slot (the
 * zap of the swap entry), so the ring's footprint stays the ring's size.
 * zram stores a page of one repeated word as that word (same_pages), so
 * the structured contents repeat a 64-byte record instead: they compress
 * (lzo-rle, lz4) without being that special case.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "ablation.h"
#include "util.h"

#define PAGE 4096
#define STEP_USEC (10 * MG_USEC_PER_MSEC) /* the generator's and the reader's pace */

volatile sig_atomic_t abl_stop;

static void on_term(int sig) {
        (void) sig;
        abl_stop = 1;
}

void abl_on_sigterm(void) {
        struct sigaction sa = { .sa_handler = on_term };
        /* No SA_RESTART: a sleep ends at once.  Reads of regular files are
         * not interrupted by a handled signal anyway. */
        sigemptyset(&sa.sa_mask);
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
}

uint64_t abl_rand(uint64_t *state) {
        uint64_t x = *state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *state = x;
        return x * UINT64_C(2685821657736338717);
}

const char *abl_arg_str(int argc, char **argv, const char *key, const char *def) {
        size_t kl = strlen(key);
        for (int i = 0; i < argc; i++)
                if (strncmp(argv[i], key, kl) == 0 && argv[i][kl] == '=')
                        return argv[i] + kl + 1;
        return def;
}

uint64_t abl_arg_u64(int argc, char **argv, const char *key, uint64_t def) {
        const char *s = abl_arg_str(argc, argv, key, NULL);
        char *end;
        unsigned long long v;

        if (!s)
                return def;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end)
                return def;
        return (uint64_t) v;
}

static void sleep_until(uint64_t usec) {
        struct timespec ts = { .tv_sec = (time_t) (usec / MG_USEC_PER_SEC),
                               .tv_nsec = (long) (usec % MG_USEC_PER_SEC) * 1000 };
        (void) clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

/* The next step of a role's pace: STEP_USEC on, slept until.  Behind by
 * more than 100 ms (its own reclaim stalled it), the debt is dropped, not
 * paid in a burst, and counted in *lag_usec. */
static void pace(uint64_t *next, uint64_t *lag_usec) {
        uint64_t now;

        *next += STEP_USEC;
        now = mg_mono_usec();
        if (now > *next + 100 * MG_USEC_PER_MSEC) {
                *lag_usec += now - *next;
                *next = now;
        }
        sleep_until(*next);
}

/* ---- the canaries' loop ---------------------------------------------------- */

int abl_canary_loop(const char *name, int (*work)(void *ud), void *ud, uint32_t period_ms, uint32_t max_s) {
        uint64_t period = (uint64_t) period_ms * MG_USEC_PER_MSEC, sched;
        size_t max = (size_t) max_s * 1000 / period_ms + 16, n = 0;
        struct abl_rec *recs = calloc(max, sizeof(*recs));
        int failed = 0;

        if (!recs)
                return -ENOMEM;
        /* Touched now, not in a request: the trace's pages are not what the
         * canary measures. */
        memset(recs, 0, max * sizeof(*recs));
        printf("ready\n");
        fflush(stdout);
        sched = (mg_mono_usec() / period + 1) * period;
        while (!abl_stop && n < max) {
                struct rusage ru;
                sleep_until(sched);
                if (abl_stop)
                        break;
                recs[n].sched = sched;
                recs[n].wake = mg_mono_usec();
                if (work(ud) < 0)
                        failed++;
                recs[n].done = mg_mono_usec();
                if (getrusage(RUSAGE_SELF, &ru) == 0) {
                        recs[n].majflt = (uint64_t) ru.ru_majflt;
                        recs[n].nvcsw = (uint64_t) ru.ru_nvcsw;
                        recs[n].nivcsw = (uint64_t) ru.ru_nivcsw;
                }
                n++;
                sched += period;
        }
        for (size_t i = 0; i < n; i++)
                printf("rec %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", recs[i].sched,
                       recs[i].wake, recs[i].done, recs[i].majflt, recs[i].nvcsw, recs[i].nivcsw);
        printf("canary=%s n=%zu failed=%d\n", name, n, failed);
        fflush(stdout);
        free(recs);
        return failed ? -EIO : 0;
}

/* ---- the compute canary ------------------------------------------------------ */

struct compute {
        uint8_t *hot;
        size_t hot_bytes, scratch_bytes;
        uint64_t iters, seed;
        volatile uint64_t sink;
};

/* The hot region, one word a page (it stays resident: a page reclaim took
 * comes back as a fault, which is what the canary should feel), then a
 * scratch buffer mapped, filled and mixed for the request alone: a small
 * allocation each period, as a process that rarely allocates makes. */
static int compute_work(void *ud) {
        struct compute *c = ud;
        uint64_t acc = c->seed, *s;

        for (size_t off = 0; off < c->hot_bytes; off += PAGE) {
                uint64_t *w = (uint64_t *) (void *) (c->hot + off);
                *w += acc;
                acc ^= *w;
        }
        s = mmap(NULL, c->scratch_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED)
                return -errno;
        size_t words = c->scratch_bytes / sizeof(uint64_t);
        if (words == 0) {
                munmap(s, c->scratch_bytes);
                return -EINVAL;
        }
        for (size_t i = 0; i < words; i++)
                s[i] = abl_rand(&c->seed);
        for (uint64_t i = 0; i < c->iters; i++) {
                size_t k = (size_t) (acc % words);
                acc = (acc ^ s[k]) * UINT64_C(0x9E3779B97F4A7C15) + i;
                s[k] = acc;
        }
        c->sink = acc;
        munmap(s, c->scratch_bytes);
        return 0;
}

static int role_compute(int argc, char **argv) {
        struct compute c = {
                .hot_bytes = abl_arg_u64(argc, argv, "hot_mib", 16) * MG_MIB,
                .scratch_bytes = abl_arg_u64(argc, argv, "scratch_kib", 64) * 1024,
                .iters = abl_arg_u64(argc, argv, "iters", 200000),
                .seed = abl_arg_u64(argc, argv, "seed", 1) | 1,
        };
        uint32_t period = (uint32_t) abl_arg_u64(argc, argv, "period_ms", 100);
        uint32_t max_s = (uint32_t) abl_arg_u64(argc, argv, "max_s", 600);

        if (c.hot_bytes == 0 || c.scratch_bytes < sizeof(uint64_t) || period == 0)
                return 2;
        int r = -ENOMEM;
        c.hot = mmap(NULL, c.hot_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (c.hot != MAP_FAILED) {
                for (size_t off = 0; off < c.hot_bytes; off += PAGE)
                        c.hot[off] = (uint8_t) off;
                r = abl_canary_loop("compute", compute_work, &c, period, max_s);
                munmap(c.hot, c.hot_bytes);
        }
        return r < 0 ? 1 : 0;
}

/* ---- the pressure generator -------------------------------------------------- */

/* A page of new contents: random words, or one 64-byte record drawn for
 * the page and repeated. */
static void fill_page(uint64_t *w, bool random, uint64_t *rng) {
        if (random) {
                for (size_t i = 0; i < PAGE / sizeof(*w); i++)
                        w[i] = abl_rand(rng);
                return;
        }
        uint64_t rec[8];
        for (size_t i = 0; i < 8; i++)
                rec[i] = abl_rand(rng);
        for (size_t i = 0; i < PAGE / sizeof(*w); i++)
                w[i] = rec[i % 8];
}

static int role_bg(int argc, char **argv) {
        uint64_t ring_pages = abl_arg_u64(argc, argv, "ring_mib", 240) * MG_MIB / PAGE;
        uint64_t active_pages = abl_arg_u64(argc, argv, "active_mib", 80) * MG_MIB / PAGE;
        uint64_t rate = abl_arg_u64(argc, argv, "rate", 16);
        bool random = strcmp(abl_arg_str(argc, argv, "contents", "s"), "r") == 0;
        uint64_t rng = abl_arg_u64(argc, argv, "seed", 1) * UINT64_C(0x9E3779B97F4A7C15) | 1;
        /* pages a step, in 1/1000 of a page so that slow rates keep their pace */
        uint64_t per_step_milli = rate * MG_MIB / PAGE * 1000 * STEP_USEC / MG_USEC_PER_SEC, credit = 0;
        uint64_t touch_per_step = active_pages * STEP_USEC / MG_USEC_PER_SEC, head = 0, filled = 0, cursor = 0;
        uint64_t written = 0, touched = 0, lag_usec = 0, next;
        uint8_t *m;

        if (ring_pages == 0 || active_pages == 0 || active_pages > ring_pages || rate == 0)
                return 2;
        m = mmap(NULL, ring_pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED)
                return 1;
        /* 4 KiB pages throughout: a huge page is reclaimed and swapped as a
         * unit or split, either of which changes what a step costs. */
        (void) madvise(m, ring_pages * PAGE, MADV_NOHUGEPAGE);
        if (touch_per_step == 0)
                touch_per_step = 1;
        abl_on_sigterm();
        printf("ready\n");
        fflush(stdout);
        next = mg_mono_usec();
        while (!abl_stop) {
                credit += per_step_milli;
                for (; credit >= 1000; credit -= 1000) {
                        uint8_t *p = m + head * PAGE;
                        if (filled >= ring_pages)
                                (void) madvise(p, PAGE, MADV_DONTNEED);
                        else
                                filled++;
                        fill_page((uint64_t *) (void *) p, random, &rng);
                        head = (head + 1) % ring_pages;
                        written++;
                }
                uint64_t window = filled < active_pages ? filled : active_pages;
                for (uint64_t i = 0; i < touch_per_step && window; i++, cursor++) {
                        uint64_t idx = (head + ring_pages - window + cursor % window) % ring_pages;
                        uint64_t *w = (uint64_t *) (void *) (m + idx * PAGE);
                        w[cursor % (PAGE / sizeof(*w))] += 1;
                        touched++;
                }
                pace(&next, &lag_usec);
        }
        printf("bg written_mib=%" PRIu64 " touched_mib=%" PRIu64 " lag_ms=%" PRIu64 "\n", written * PAGE / MG_MIB,
               touched * PAGE / MG_MIB, lag_usec / 1000);
        fflush(stdout);
        munmap(m, ring_pages * PAGE);
        return 0;
}

/* ---- the swapless actor's reader ------------------------------------------ */

static int role_reader(int argc, char **argv) {
        const char *file = abl_arg_str(argc, argv, "file", NULL);
        uint64_t rate = abl_arg_u64(argc, argv, "rate", 16);
        uint64_t anon_pages = abl_arg_u64(argc, argv, "anon_mib", 64) * MG_MIB / PAGE;
        uint64_t anon_rate = abl_arg_u64(argc, argv, "anon_rate", 8);
        uint64_t read_per_step = rate * MG_MIB * STEP_USEC / MG_USEC_PER_SEC;
        uint64_t anon_milli = anon_rate * MG_MIB / PAGE * 1000 * STEP_USEC / MG_USEC_PER_SEC, credit = 0;
        uint64_t off = 0, size, total = 0, anon = 0, cycles = 0, lag_usec = 0, next;
        static char buf[256 * 1024];
        uint8_t *m;
        int fd;

        if (!file || rate == 0 || anon_pages == 0)
                return 2;
        fd = open(file, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 1;
        size = (uint64_t) lseek(fd, 0, SEEK_END);
        m = size < sizeof(buf) ? MAP_FAILED
                               : mmap(NULL, anon_pages * PAGE, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
                close(fd);
                return 1;
        }
        (void) madvise(m, anon_pages * PAGE, MADV_NOHUGEPAGE);
        abl_on_sigterm();
        printf("ready\n");
        fflush(stdout);
        next = mg_mono_usec();
        while (!abl_stop) {
                for (uint64_t done = 0; done < read_per_step;) {
                        size_t len = (size_t) (read_per_step - done < sizeof(buf) ? read_per_step - done : sizeof(buf));
                        if (off + len > size)
                                off = 0;
                        ssize_t n = pread(fd, buf, len, (off_t) off);
                        if (n <= 0)
                                break;
                        off += (uint64_t) n;
                        done += (uint64_t) n;
                        total += (uint64_t) n;
                }
                credit += anon_milli;
                for (; credit >= 1000; credit -= 1000) {
                        if (anon == anon_pages) {
                                (void) madvise(m, anon_pages * PAGE, MADV_DONTNEED);
                                anon = 0;
                                cycles++;
                        }
                        m[anon++ * PAGE] = 1;
                }
                pace(&next, &lag_usec);
        }
        printf("reader read_mib=%" PRIu64 " anon_cycles=%" PRIu64 " lag_ms=%" PRIu64 "\n", total / MG_MIB, cycles,
               lag_usec / 1000);
        fflush(stdout);
        munmap(m, anon_pages * PAGE);
        close(fd);
        return 0;
}

int abl_role_main(int argc, char **argv) {
        /* argv: --role NAME KEY=VALUE... */
        const char *name = argc > 2 ? argv[2] : "";
        int kc = argc - 3;
        char **kv = argv + 3;

        setvbuf(stdout, NULL, _IOFBF, 1 << 16);
        abl_on_sigterm();
        if (strcmp(name, "bg") == 0)
                return role_bg(kc, kv);
        if (strcmp(name, "compute") == 0)
                return role_compute(kc, kv);
        if (strcmp(name, "reader") == 0)
                return role_reader(kc, kv);
        if (strcmp(name, "sqlite") == 0)
                return abl_role_sqlite(kc, kv);
        fprintf(stderr, "bench-ablation: unknown role %s\n", name);
        return 2;
}
