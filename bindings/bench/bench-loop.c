/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The C side of the bindings' benchmark (bindings/bench/run): the loop a
 * worker runs, so that the Go and Rust programs doing the same through
 * their bindings can be compared with it in the same run.
 *
 *   bench-loop calls N              an empty set: N mg_set_process() calls,
 *                                   the thread's CPU time per call
 *   bench-loop guards DIR N SECONDS N cgroups made under DIR, a guard on each
 *                                   ticking every 50 ms, poll + process for
 *                                   SECONDS; the thread's CPU time per tick
 *
 * Prints one line of key=value pairs.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <memguard/memguard.h>

static uint64_t clock_ns(clockid_t c) {
        struct timespec ts;
        clock_gettime(c, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int calls(long n) {
        mg_set *s;
        int r = mg_set_new(NULL, &s);
        if (r < 0)
                return fprintf(stderr, "mg_set_new: %s\n", strerror(-r)), 1;
        /* The thread's CPU time, not wall time: other load on the host
         * delays the loop without costing it CPU. */
        uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        for (long i = 0; i < n; i++)
                mg_set_process(s);
        uint64_t t1 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        printf("lang=c mode=calls calls=%ld ns_per_call=%.1f\n", n, (double) (t1 - t0) / (double) n);
        mg_set_free(s);
        return 0;
}

static void on_event(mg_guard *g, const struct mg_event *ev, void *ud) {
        (void) g;
        (void) ud;
        if (ev->type == MG_EVENT_ERROR)
                fprintf(stderr, "bench-loop: %s: %s: %s\n", ev->cgroup, ev->what, strerror(-ev->error));
}

static int guards(const char *dir, int n, int seconds) {
        struct mg_guard_options o;
        char path[4096];
        mg_set *s;
        int r = mg_set_new(NULL, &s);
        if (r < 0)
                return fprintf(stderr, "mg_set_new: %s\n", strerror(-r)), 1;
        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/c-%d", dir, i);
                if (mkdir(path, 0755) < 0 && errno != EEXIST)
                        return fprintf(stderr, "%s: %s\n", path, strerror(errno)), 1;
                mg_guard_options_init(&o, 64u << 20);
                o.tick_usec = 50000; /* 10 ms would need a stall window under 0.63 s (the ring) */
                o.on_event = on_event;
                r = mg_set_add(s, path, &o, NULL);
                if (r < 0)
                        return fprintf(stderr, "%s: %s\n", path, strerror(-r)), 1;
        }
        uint64_t end = clock_ns(CLOCK_MONOTONIC) + (uint64_t) seconds * 1000000000u;
        uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID), t0 = clock_ns(CLOCK_MONOTONIC);
        long loops = 0;
        while (clock_ns(CLOCK_MONOTONIC) < end) {
                struct pollfd p = { .fd = mg_set_get_fd(s), .events = POLLIN };
                poll(&p, 1, 100);
                mg_set_process(s);
                loops++;
        }
        uint64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0, wall = clock_ns(CLOCK_MONOTONIC) - t0;
        double ticks = (double) n * (double) wall / 50e6;
        printf("lang=c mode=guards guards=%d seconds=%d loops=%ld cpu_ms=%.1f ns_per_tick=%.0f ns_per_loop=%.0f\n", n,
               seconds, loops, (double) cpu / 1e6, (double) cpu / ticks, (double) cpu / (double) loops);
        mg_set_free(s);
        for (int i = 0; i < n; i++) {
                snprintf(path, sizeof(path), "%s/c-%d", dir, i);
                rmdir(path);
        }
        return 0;
}

int main(int argc, char **argv) {
        if (argc == 3 && strcmp(argv[1], "calls") == 0)
                return calls(atol(argv[2]));
        if (argc == 5 && strcmp(argv[1], "guards") == 0)
                return guards(argv[2], atoi(argv[3]), atoi(argv[4]));
        fprintf(stderr, "usage: bench-loop calls N | guards DIR N SECONDS\n");
        return 2;
}
