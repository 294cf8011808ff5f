/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guard suite's sized structs (the options of a guard and of a set,
 * struct mg_report, struct mg_kill_record): what an older or a newer
 * caller's struct gets, on the fixture tree (guard-suite.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"
#include "guard-suite.h"
#include "guard.h"
#include "lend.h"
#include "tick.h"
#include "set.h"
#include "util.h"

TestSuite(guard, .init = setup, .fini = teardown);

Test(guard, options_abi) {
        struct {
                struct mg_guard_options o;
                uint64_t future;
        } big = {};
        mg_guard *g = NULL;
        mg_guard_options_init(&big.o, 256 * MG_MIB);
        big.o.size = sizeof(big);
        big.future = 1;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &big.o, MG_CGROUP_ANY_FS, &fx.io, &g), -E2BIG);
        big.future = 0;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &big.o, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        cr_expect_eq(g->params.margin_bytes, 16 * MG_MIB);
        cr_expect_eq(g->opt.tick_usec, 250 * MG_USEC_PER_MSEC);
        mg_guard_free(g);

        struct mg_guard_options o = { .size = sizeof(o), .limit_bytes = 256 * MG_MIB };
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), 0, "zeros take defaults");
        cr_expect_eq(g->params.stall_window_usec, 3000 * MG_USEC_PER_MSEC);
        mg_guard_free(g);
        o.margin_bytes = o.limit_bytes;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EINVAL);
        o = (struct mg_guard_options) { .size = 8, .limit_bytes = 1 };
        cr_expect_eq(mg_guard_new_internal(fx.dir, &o, MG_CGROUP_ANY_FS, &fx.io, &g), -EINVAL);
        cr_expect_eq(mg_guard_options_init(&o, 0), -EINVAL);
}

/* n bytes that end where an inaccessible page starts: a read or write past
 * them is a SIGSEGV.  Left mapped (the test's process ends). */
static void *at_page_end(size_t n) {
        size_t page = (size_t) sysconf(_SC_PAGESIZE);
        char *p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        cr_assert_neq(p, MAP_FAILED);
        cr_assert_eq(mprotect(p + page, page, PROT_NONE), 0);
        return p + page - n;
}

/* Sized structs, one rule (memguard/sized.h): the library reads or fills
 * min(the caller's .size, its sizeof) bytes; a larger input with unknown
 * non-zero bytes is -E2BIG; an output gets what fits, zeros where the
 * caller's struct is longer, nothing past the caller's .size. */
Test(guard, options_of_an_older_caller_are_read_to_their_size) {
        size_t cut = offsetof(struct mg_guard_options, on_event);
        struct mg_guard_options full;
        mg_guard *g = NULL;
        mg_guard_options_init(&full, 256 * MG_MIB);
        full.size = cut;
        void *old = at_page_end(cut);
        memcpy(old, &full, cut);
        cr_assert_eq(mg_guard_new_internal(fx.dir, old, MG_CGROUP_ANY_FS, &fx.io, &g), 0);
        cr_expect_eq(g->opt.tick_usec, 250 * MG_USEC_PER_MSEC);
        cr_expect_null(g->opt.on_event);
        mg_guard_free(g);
}

Test(guard, get_options_fills_what_fits) {
        union {
                struct mg_guard_options o;
                unsigned char b[sizeof(struct mg_guard_options) + 64];
        } u;
        size_t cut = offsetof(struct mg_guard_options, on_event);
        mg_guard *g = new_guard();

        /* an older caller's struct, without the callbacks */
        memset(&u, 0xa5, sizeof(u));
        u.o.size = cut;
        cr_assert_eq(mg_guard_get_options(g, &u.o), 0);
        cr_expect_eq(u.o.size, cut, "the caller's .size is kept");
        cr_expect_eq(u.o.limit_bytes, 256 * MG_MIB);
        cr_expect_eq(u.o.tick_usec, 250 * MG_USEC_PER_MSEC);
        cr_expect_eq(u.o.post_kill_holdoff_usec, 2250 * MG_USEC_PER_MSEC);
        for (size_t i = cut; i < sizeof(u); i++)
                cr_assert_eq(u.b[i], 0xa5, "byte %zu written past the caller's %zu", i, cut);

        /* .size alone: nothing to fill, nothing written */
        memset(&u, 0xa5, sizeof(u));
        u.o.size = sizeof(uint64_t);
        cr_assert_eq(mg_guard_get_options(g, &u.o), 0);
        for (size_t i = sizeof(uint64_t); i < sizeof(u); i++)
                cr_assert_eq(u.b[i], 0xa5, "byte %zu written past .size", i);
        u.o.size = 7;
        cr_expect_eq(mg_guard_get_options(g, &u.o), -EINVAL);
        u.o.size = 0;
        cr_expect_eq(mg_guard_get_options(g, &u.o), -EINVAL);

        /* a newer caller's: the fields this library lacks are zeroed */
        memset(&u, 0xa5, sizeof(u));
        u.o.size = sizeof(u.o) + 16;
        cr_assert_eq(mg_guard_get_options(g, &u.o), 0);
        cr_expect_eq(u.o.size, sizeof(u.o) + 16);
        cr_expect_eq(u.o.on_event, on_event);
        for (size_t i = sizeof(u.o); i < sizeof(u.o) + 16; i++)
                cr_assert_eq(u.b[i], 0, "byte %zu of the caller's newer fields not zeroed", i);
        for (size_t i = sizeof(u.o) + 16; i < sizeof(u); i++)
                cr_assert_eq(u.b[i], 0xa5, "byte %zu written past the caller's struct", i);
        /* and what it filled is good options */
        mg_guard *h = NULL;
        cr_expect_eq(mg_guard_new_internal(fx.dir, &u.o, MG_CGROUP_ANY_FS, &fx.io, &h), 0);
        mg_guard_free(h);
        mg_guard_free(g);
}

Test(guard, set_options_abi) {
        struct {
                struct mg_set_options o;
                uint64_t future;
        } big = { .o = { .size = sizeof(big) }, .future = 1 };
        mg_set *s = NULL;
        cr_expect_eq(mg_set_new(&big.o, &s), -E2BIG, "unknown non-zero bytes past the struct");
        cr_expect_null(s);
        big.future = 0;
        cr_expect_eq(mg_set_new(&big.o, &s), 0, "a zero tail is fine");
        mg_set_free(s);
        s = NULL;
        struct mg_set_options o = { .size = 7 };
        cr_expect_eq(mg_set_new(&o, &s), -EINVAL);
        o.size = 0;
        cr_expect_eq(mg_set_new(&o, &s), -EINVAL);
        cr_expect_null(s);
        /* an older caller's: .size alone, at the end of a page */
        uint64_t *old = at_page_end(sizeof(uint64_t));
        *old = sizeof(uint64_t);
        cr_expect_eq(mg_set_new((const struct mg_set_options *) old, &s), 0);
        mg_set_free(s);
}

/* struct mg_report records its size like the other sized structs: an
 * older caller's, shorter struct is filled to its .size and no further. */
Test(guard, report_of_an_older_caller_is_filled_to_its_size) {
        union {
                struct mg_report r;
                unsigned char b[sizeof(struct mg_report) + 64];
        } u;
        size_t cut = offsetof(struct mg_report, stat);
        mg_guard *g = new_guard();
        fixture_current(&fx, 100 * MG_MIB);
        memset(&u, 0xa5, sizeof(u));
        u.r.size = cut;
        cr_assert_eq(mg_guard_report(g, &u.r), 0);
        cr_expect_eq(u.r.size, cut, "the caller's .size is kept");
        for (size_t i = cut; i < sizeof(u); i++)
                cr_assert_eq(u.b[i], 0xa5, "byte %zu written past the caller's %zu", i, cut);
        cr_expect_eq(u.r.time_usec, fx.now_usec);
        cr_expect_eq(u.r.limit_bytes, 256 * MG_MIB);
        cr_expect_eq(u.r.current_bytes, 100 * MG_MIB);
        cr_expect_eq(u.r.max_bytes, MG_UNLIMITED);

        /* at the end of a page: a byte past it would be a SIGSEGV */
        struct mg_report *old = at_page_end(cut);
        old->size = cut;
        cr_assert_eq(mg_guard_report(g, old), 0);
        cr_expect_eq(old->high_bytes, MG_UNLIMITED);

        /* the smallest: .size and time_usec; below it -EINVAL, nothing read */
        memset(&u, 0xa5, sizeof(u));
        u.r.size = 16;
        cr_assert_eq(mg_guard_report(g, &u.r), 0);
        cr_expect_eq(u.r.time_usec, fx.now_usec);
        for (size_t i = 16; i < sizeof(u); i++)
                cr_assert_eq(u.b[i], 0xa5, "byte %zu written past .size 16", i);
        fixture_reset_counts(&fx);
        static const uint64_t bad[] = { 15, 8, 0 };
        for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
                memset(&u, 0xa5, sizeof(u));
                u.r.size = bad[k];
                cr_expect_eq(mg_guard_report(g, &u.r), -EINVAL, ".size %" PRIu64, bad[k]);
                for (size_t i = sizeof(uint64_t); i < sizeof(u); i++)
                        cr_assert_eq(u.b[i], 0xa5, "byte %zu written for .size %" PRIu64, i, bad[k]);
        }
        cr_expect_eq(fx.reads, 0, "read before refusing the struct");

        /* a newer caller's: the fields this library lacks are zeroed */
        memset(&u, 0xa5, sizeof(u));
        u.r.size = sizeof(u.r) + 16;
        cr_assert_eq(mg_guard_report(g, &u.r), 0);
        cr_expect_eq(u.r.size, sizeof(u.r) + 16);
        cr_expect_eq(u.r.verdict, MG_VERDICT_OK);
        for (size_t i = sizeof(u.r); i < sizeof(u.r) + 16; i++)
                cr_assert_eq(u.b[i], 0, "byte %zu of the caller's newer fields not zeroed", i);
        for (size_t i = sizeof(u.r) + 16; i < sizeof(u); i++)
                cr_assert_eq(u.b[i], 0xa5, "byte %zu written past the caller's struct", i);
        mg_guard_free(g);
}

/* A kill record says how large it is, and so does its report; the
 * formatter reads a record no further than they say. */
Test(guard, kill_record_records_its_size) {
        mg_guard *g = new_guard();
        fixture_current(&fx, 300 * MG_MIB);
        fixture_stat(&fx, 280 * MG_MIB, 10 * MG_MIB, 3 * MG_MIB, 0, 0, 0, 0);
        cr_expect_eq(tick_at(g, 250 * MG_USEC_PER_MSEC), 1);
        fixture_write(&fx, "cgroup.events", "populated 0\nfrozen 0\n");
        tick_at(g, 250 * MG_USEC_PER_MSEC);
        cr_assert_eq(seen.n[MG_EVENT_KILL], 1);
        cr_expect_eq(seen.kill.size, sizeof(struct mg_kill_record));
        cr_expect_eq(seen.kill.report.size, sizeof(struct mg_report));
        char whole[1024], cut[1024];
        cr_assert_gt(mg_kill_record_format(&seen.kill, whole, sizeof(whole)), 0);
        cr_expect(strstr(whole, "limit 262144kB, used 289792kB") != NULL, "%s", whole);

        /* a copy cut after the report's limits (an older caller's), at the
         * end of a page: what it lacks reads as 0 */
        size_t at = offsetof(struct mg_kill_record, report) + offsetof(struct mg_report, stat);
        struct mg_kill_record *k = at_page_end(at);
        memcpy(k, &seen.kill, at);
        k->size = at;
        cr_assert_gt(mg_kill_record_format(k, cut, sizeof(cut)), 0);
        cr_expect(strstr(cut, "limit 262144kB, used 289792kB (anon 0kB") != NULL, "%s", cut);
        /* its report's .size cuts it as well */
        struct mg_kill_record c = seen.kill;
        c.report.size = offsetof(struct mg_report, stat);
        cr_assert_gt(mg_kill_record_format(&c, cut, sizeof(cut)), 0);
        cr_expect(strstr(cut, "(anon 0kB") != NULL, "%s", cut);
        c.size = offsetof(struct mg_kill_record, report);
        cr_expect_eq(mg_kill_record_format(&c, cut, sizeof(cut)), -EINVAL, "no room for the report's .size");
        mg_guard_free(g);
}
